/** Test helpers for the tokenizer (Node only: reads files). */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { benchmarkPath } from '../tasks/benchmarks';
import type { Rng } from '../util/random';

export const HUMANEVAL_X_JS = benchmarkPath('humaneval-x-js.jsonl.gz');

export interface HumanEvalTask {
  task_id: string;
  prompt: string;
  canonical_solution: string;
  test: string;
  declaration: string;
  example_test: string;
}

/** The 164 HumanEval-X JavaScript tasks, in file order. */
export function loadHumanEvalJs(): HumanEvalTask[] {
  const text = gunzipSync(readFileSync(HUMANEVAL_X_JS)).toString('utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as HumanEvalTask);
}

/** Each task as one document: the prompt followed by its canonical solution. */
export function taskDocuments(tasks: HumanEvalTask[]): string[] {
  return tasks.map((t) => t.prompt + t.canonical_solution);
}

const PIECES = [
  '\r\n',
  '\n',
  '\r',
  '\t',
  ' ',
  '    ',
  '\0',
  '\uD83D\uDE00',
  '\uD800',
  '\uDFFF',
  '\uDBFF\uDBFF',
  'é',
  'e\u0301',
  '中文',
  '\u00A0',
  '\u2028',
  '\uFEFF',
  '<|endoftext|>',
  '<|pad',
  'const',
  ' x',
  '=>',
  '{}',
  '0x1F',
];

/**
 * A random string of about `n` code units mixing code-like text, control characters, emoji,
 * combining marks, lone surrogates (both halves, and high surrogates back to back) and random
 * code units from the whole 0..FFFF range.
 */
export function randomString(rng: Rng, n: number): string {
  let s = '';
  while (s.length < n) {
    const r = rng.next();
    if (r < 0.4) s += PIECES[Math.floor(rng.next() * PIECES.length)]!;
    else if (r < 0.75) s += String.fromCharCode(32 + Math.floor(rng.next() * 95));
    else if (r < 0.9) s += String.fromCharCode(Math.floor(rng.next() * 0x10000));
    else s += String.fromCharCode(0xd800 + Math.floor(rng.next() * 0x800)); // any surrogate, paired or not by chance
  }
  return s;
}
