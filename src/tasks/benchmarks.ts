/**
 * Where the benchmark files are on disk (Node only): the repository's data/benchmarks/
 * (HumanEval-X JavaScript, HumanEval Python; see its README.md), or the folder CODERL_DATA
 * names. Tests, benches and the CLI's built-in suites (tasks/builtin-suites.ts) read them here.
 *
 * The folder is found by walking up from this module: from src/tasks/ in tests and from
 * node_modules/.cache/coderl/ in the CLI bundle it is the repository's; then the current
 * directory's data/benchmarks/ (a prebuilt bundle run from a checkout, CODERL_BUNDLE).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const SUBDIR = join('data', 'benchmarks');

/** The benchmark folder: $CODERL_DATA (read at each call), else the repository's data/benchmarks. */
export function benchmarksDir(): string {
  const env = process.env.CODERL_DATA;
  if (env) return resolve(env);
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, SUBDIR))) return join(dir, SUBDIR);
    if (dirname(dir) === dir) break;
  }
  const cwd = join(process.cwd(), SUBDIR);
  if (existsSync(cwd)) return cwd;
  return resolve(import.meta.dirname, '../..', SUBDIR); // where a checkout has it, for the message that it is missing
}

/** The benchmark folder as this process started (tests read their data from it). */
export const BENCHMARKS_DIR = benchmarksDir();

/** A benchmark file's path, e.g. benchmarkPath('humaneval-x-js.jsonl.gz'). */
export function benchmarkPath(file: string): string {
  return join(benchmarksDir(), file);
}
