/**
 * Task suites and completions.
 *
 * A suite is JSONL, one task a line:
 *   {task_id, language: 'javascript' | 'python', prompt, entry_point, tests, canonical_solution?, meta?}
 * The program that runs is `prompt + completion` (human-eval convention), followed by the tests:
 * - javascript: `tests` is JavaScript that calls the entry point and checks it with
 *   `console.assert(...)`; each `console.assert(` call site is one test.
 * - python: `tests` defines `check(candidate)`; the runner calls `check(<entry_point>)`; each
 *   `assert` statement inside it is one test.
 * HumanEval-X JavaScript and HumanEval Python files load as they are (see suite.ts).
 *
 * Completions follow human-eval: JSONL of {task_id, completion}; a task may have several
 * completions (samples), which pass@k counts.
 */

export type Language = 'javascript' | 'python';

export interface Task {
  task_id: string;
  language: Language;
  prompt: string;
  /** the function the tests exercise */
  entry_point: string;
  tests: string;
  canonical_solution?: string;
  meta?: Record<string, unknown>;
}

export interface Completion {
  task_id: string;
  completion: string;
}

/** One problem found while loading a file; the rest of the file still loads. */
export interface LoadIssue {
  file: string;
  /** 1-based line of the JSONL file */
  line: number;
  message: string;
}

export interface Loaded<T> {
  items: T[];
  issues: LoadIssue[];
}

export function formatIssue(i: LoadIssue): string {
  return `${i.file}:${i.line}: ${i.message}`;
}
