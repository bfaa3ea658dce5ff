/**
 * Loading task suites. Three shapes are recognised line by line:
 * - native:      {task_id, language, prompt, entry_point, tests, canonical_solution?, meta?}
 * - HumanEval-X: {task_id, prompt, declaration, canonical_solution, test, example_test}
 *   (JavaScript; `test` becomes `tests`; the entry point is the last function the declaration
 *   declares; declaration and example_test go to `meta`)
 * - HumanEval:   {task_id, prompt, canonical_solution, test, entry_point} (Python; `test`
 *   defines check(candidate), which the runner calls as check(<entry_point>))
 * A line with `declaration` is HumanEval-X, a line with `test` is HumanEval, any other is native.
 */
import { bytesToText } from './bytes';
import { missingStrings, parseJsonl } from './jsonl';
import type { Language, LoadIssue, Loaded, Task } from './types';

const LANGUAGES: readonly Language[] = ['javascript', 'python'];

type Parsed = { task: Task } | { problems: string[] };

/** The last `const NAME =` / `function NAME(` in a HumanEval-X declaration. */
export function jsEntryPoint(declaration: string): string | undefined {
  const re = /(?:^|\n)\s*(?:(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=|(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\()/g;
  let name: string | undefined;
  for (const m of declaration.matchAll(re)) name = m[1] ?? m[2];
  return name;
}

function fromHumanEvalX(o: Record<string, unknown>): Parsed {
  const problems = missingStrings(o, ['task_id', 'prompt', 'declaration', 'test']);
  if (o.canonical_solution !== undefined) problems.push(...missingStrings(o, ['canonical_solution']));
  if (problems.length) return { problems };
  const entry = jsEntryPoint(o.declaration as string) ?? jsEntryPoint(o.prompt as string);
  if (!entry) return { problems: ['cannot find the entry point: the declaration declares no function'] };
  const meta: Record<string, unknown> = { format: 'humaneval-x', declaration: o.declaration };
  if (typeof o.example_test === 'string') meta.example_test = o.example_test;
  const task: Task = {
    task_id: o.task_id as string,
    language: 'javascript',
    prompt: o.prompt as string,
    entry_point: entry,
    tests: o.test as string,
    meta,
  };
  if (typeof o.canonical_solution === 'string') task.canonical_solution = o.canonical_solution;
  return { task };
}

function fromHumanEval(o: Record<string, unknown>): Parsed {
  const problems = missingStrings(o, ['task_id', 'prompt', 'entry_point', 'test']);
  if (o.canonical_solution !== undefined) problems.push(...missingStrings(o, ['canonical_solution']));
  if (problems.length) return { problems };
  const task: Task = {
    task_id: o.task_id as string,
    language: 'python',
    prompt: o.prompt as string,
    entry_point: o.entry_point as string,
    tests: o.test as string,
    meta: { format: 'humaneval' },
  };
  if (typeof o.canonical_solution === 'string') task.canonical_solution = o.canonical_solution;
  return { task };
}

function fromNative(o: Record<string, unknown>): Parsed {
  const problems = missingStrings(o, ['task_id', 'language', 'prompt', 'entry_point', 'tests']);
  if (typeof o.language === 'string' && !LANGUAGES.includes(o.language as Language)) {
    problems.push(`field 'language' must be one of ${LANGUAGES.join(', ')}, got '${o.language}'`);
  }
  if (o.canonical_solution !== undefined) problems.push(...missingStrings(o, ['canonical_solution']));
  const meta = o.meta;
  if (meta !== undefined && (typeof meta !== 'object' || meta === null || Array.isArray(meta)))
    problems.push(`field 'meta' must be an object`);
  if (problems.length) return { problems };
  const task: Task = {
    task_id: o.task_id as string,
    language: o.language as Language,
    prompt: o.prompt as string,
    entry_point: o.entry_point as string,
    tests: o.tests as string,
  };
  if (typeof o.canonical_solution === 'string') task.canonical_solution = o.canonical_solution;
  if (meta !== undefined) task.meta = meta as Record<string, unknown>;
  return { task };
}

function toTask(o: Record<string, unknown>): Parsed {
  if ('declaration' in o) return fromHumanEvalX(o);
  if ('test' in o) return fromHumanEval(o);
  return fromNative(o);
}

/** Parses a suite's text; bad lines and duplicate task ids become issues. */
export function parseSuite(text: string, file: string): Loaded<Task> {
  const { records, issues } = parseJsonl(text, file);
  const items: Task[] = [];
  const firstLine = new Map<string, number>();
  for (const { line, value } of records) {
    const parsed = toTask(value);
    if ('problems' in parsed) {
      for (const message of parsed.problems) issues.push({ file, line, message });
      continue;
    }
    const id = parsed.task.task_id;
    const seen = firstLine.get(id);
    if (seen !== undefined) {
      issues.push({ file, line, message: `duplicate task_id '${id}' (first on line ${seen}); this line is skipped` });
      continue;
    }
    firstLine.set(id, line);
    items.push(parsed.task);
  }
  return { items, issues: sortIssues(issues) };
}

export function sortIssues(issues: LoadIssue[]): LoadIssue[] {
  return issues.sort((a, b) => a.line - b.line);
}

/** Loads a suite from a file's bytes (plain or gzipped JSONL). */
export async function loadSuite(bytes: Uint8Array, file: string): Promise<Loaded<Task>> {
  return parseSuite(await bytesToText(bytes), file);
}

/** The canonical solutions of a suite as completions; tasks without one are skipped. */
export function canonicalCompletions(tasks: readonly Task[]): { task_id: string; completion: string }[] {
  return tasks.flatMap((t) => (t.canonical_solution === undefined ? [] : [{ task_id: t.task_id, completion: t.canonical_solution }]));
}
