/**
 * The run's tasks as the rows each trainer reads. The RL split is the training data, the
 * held-out split the validation data; every row names its task (task_id), which the scorer
 * service looks up in the suite it loaded (tasks.jsonl).
 *
 * The prompt is what the lab sent the policy: the task's code prompt to continue (the
 * completion format), or, in the chat format, the user turn of rl/prompt-format.ts chatFormat
 * (the trainers render it through the model's chat template themselves; the lab's opening of the
 * assistant's turn with the code is not part of it: the model writes the whole reply).
 */
import type { PromptFormatKind } from '../rl/prompt-format';
import type { Language, Task } from '../tasks/types';
import type { ChatMessage } from '../tokenizer/chat';

export type Split = 'train' | 'test';

/** One task of a split, with its place in the file. */
export interface TaskRow {
  task: Task;
  split: Split;
  index: number;
  /** veRL's data_source and OpenRLHF's datasource: the family (built-in tasks) or the suite */
  source: string;
}

const LANGUAGE_NAMES: Record<Language, string> = { javascript: 'JavaScript', python: 'Python' };

/** The user turn of the lab's chat format for a task (rl/prompt-format.ts chatFormat's first message). */
export function chatUserMessage(prompt: string, language: Language): ChatMessage {
  const fence = '```';
  const tag = language === 'python' ? 'python' : 'javascript';
  return {
    role: 'user',
    content: `Complete the following ${LANGUAGE_NAMES[language]} function. Reply with the whole function in one code block.\n\n${fence}${tag}\n${prompt.trimEnd()}\n${fence}`,
  };
}

/** The prompt as messages (veRL always takes messages; a completion prompt is one user turn holding the code). */
export function promptMessages(task: Task, format: PromptFormatKind): ChatMessage[] {
  return [format === 'chat' ? chatUserMessage(task.prompt, task.language) : { role: 'user', content: task.prompt }];
}

/** The prompt as TRL and OpenRLHF take it: plain text for the completion format, messages for chat. */
export function promptValue(task: Task, format: PromptFormatKind): string | ChatMessage[] {
  return format === 'chat' ? promptMessages(task, format) : task.prompt;
}

/** The rows of both splits: the RL split as `train`, the held-out split as `test`. */
export function taskRows(rl: readonly Task[], heldout: readonly Task[], suiteName: string | undefined): Record<Split, TaskRow[]> {
  const source = (t: Task) => {
    const family = t.meta?.['family'];
    return `coderl/${typeof family === 'string' ? family : (suiteName ?? 'tasks')}`;
  };
  const rows = (tasks: readonly Task[], split: Split) => tasks.map((task, index) => ({ task, split, index, source: source(task) }));
  return { train: rows(rl, 'train'), test: rows(heldout, 'test') };
}

/** The fields every trainer's row carries besides the prompt: what a reward function needs to find and score the task. */
export function taskFields(r: TaskRow, format: PromptFormatKind) {
  return {
    task_id: r.task.task_id,
    language: r.task.language,
    entry_point: r.task.entry_point,
    prompt_format: format,
    lab_split: r.split === 'train' ? 'rl' : 'heldout',
  };
}

/** A veRL row, as its examples/data_preprocess scripts write them (gsm8k.py), with the task's fields in extra_info. */
export function verlRow(r: TaskRow, format: PromptFormatKind) {
  return {
    data_source: r.source,
    prompt: promptMessages(r.task, format),
    ability: 'code',
    reward_model: { style: 'rule', ground_truth: r.task.task_id },
    extra_info: { split: r.split, index: r.index, ...taskFields(r, format) },
  };
}

/** A TRL row for load_dataset("json"): `prompt`, and columns GRPOTrainer passes to reward functions as keyword lists. */
export function trlRow(r: TaskRow, format: PromptFormatKind) {
  return { prompt: promptValue(r.task, format), ...taskFields(r, format), data_source: r.source };
}

/** An OpenRLHF row: --data.input_key input, --data.label_key label (the task id the scorer's /get_reward receives), datasource. */
export function openrlhfRow(r: TaskRow, format: PromptFormatKind) {
  return { input: promptValue(r.task, format), label: r.task.task_id, datasource: r.source, ...taskFields(r, format) };
}

/** JSONL text, one object a line. */
export function jsonl(rows: readonly unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}
