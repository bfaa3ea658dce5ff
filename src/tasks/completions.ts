/**
 * Loading completions (human-eval samples): JSONL of {task_id, completion}. A task may appear on
 * several lines (several samples). Unknown task ids and ill-typed fields are issues with file
 * and line; the valid rest loads.
 */
import { bytesToText } from './bytes';
import { missingStrings, parseJsonl } from './jsonl';
import type { Completion, Loaded, Task } from './types';

export function parseCompletions(text: string, file: string, tasks: readonly Task[]): Loaded<Completion> {
  const { records, issues } = parseJsonl(text, file);
  const known = new Set(tasks.map((t) => t.task_id));
  const items: Completion[] = [];
  for (const { line, value } of records) {
    const problems = missingStrings(value, ['task_id', 'completion']);
    if (problems.length) {
      for (const message of problems) issues.push({ file, line, message });
      continue;
    }
    const task_id = value.task_id as string;
    if (!known.has(task_id)) {
      issues.push({ file, line, message: `unknown task_id '${task_id}': not in the suite` });
      continue;
    }
    items.push({ task_id, completion: value.completion as string });
  }
  return { items, issues: issues.sort((a, b) => a.line - b.line) };
}

export async function loadCompletions(bytes: Uint8Array, file: string, tasks: readonly Task[]): Promise<Loaded<Completion>> {
  return parseCompletions(await bytesToText(bytes), file, tasks);
}
