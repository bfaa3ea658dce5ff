/** Test data: HumanEval-X JavaScript from the repository's data/benchmarks (read in tests). */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { benchmarkPath } from '../tasks/benchmarks';

export interface HumanEvalTask {
  task_id: string;
  prompt: string;
  canonical_solution: string;
  test: string;
  declaration: string;
  example_test: string;
}

const DATA = benchmarkPath('humaneval-x-js.jsonl.gz');

let tasks: HumanEvalTask[] | null = null;

/** The 164 tasks, in file order. */
export function humanEvalJs(): HumanEvalTask[] {
  tasks ??= gunzipSync(readFileSync(DATA))
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as HumanEvalTask);
  return tasks;
}

/**
 * This process's CPU time in ms (user + system). Timings in the tests use it besides wall time:
 * on a shared 2-core machine wall time mostly measures the neighbours.
 */
export function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
