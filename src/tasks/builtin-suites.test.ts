/** The built-in suites' list agrees with the files in data/benchmarks/ (and CODERL_DATA moves the folder). */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { BENCHMARKS_DIR, benchmarkPath, benchmarksDir } from './benchmarks';
import { BUILTIN_SUITES, builtinSuite, builtinSuiteLabel } from './builtin-suites';
import { loadSuite } from './suite';

const REPO = join(import.meta.dirname, '../..');
/** where the data is: the repository's, unless CODERL_DATA names another folder */
const EXPECTED_DIR = process.env.CODERL_DATA ? resolve(process.env.CODERL_DATA) : join(REPO, 'data/benchmarks');

describe('built-in suites', () => {
  test("the benchmark folder is the repository's data/benchmarks", () => {
    expect(BENCHMARKS_DIR).toBe(EXPECTED_DIR);
    expect(benchmarkPath('x.jsonl')).toBe(join(EXPECTED_DIR, 'x.jsonl'));
  });

  test('names are unique and found by name', () => {
    expect(new Set(BUILTIN_SUITES.map((s) => s.name)).size).toBe(BUILTIN_SUITES.length);
    expect(BUILTIN_SUITES.map((s) => s.name)).toEqual(expect.arrayContaining(['humaneval-x-js', 'humaneval-python']));
    for (const s of BUILTIN_SUITES) expect(builtinSuite(s.name)).toBe(s);
    expect(builtinSuite('humaneval')).toBeUndefined();
    expect(builtinSuiteLabel(builtinSuite('humaneval-x-js')!)).toBe('HumanEval-X JavaScript (164 tasks)');
    expect(builtinSuiteLabel(builtinSuite('humaneval-python')!)).toBe('HumanEval Python (164 tasks)');
  });

  test.each(BUILTIN_SUITES.map((s) => [s.name, s] as const))(
    '%s: the file is in the repository, loads cleanly, and has the listed tasks and language',
    async (_name, s) => {
      const path = benchmarkPath(s.file);
      expect(existsSync(path), path).toBe(true);
      const { items, issues } = await loadSuite(new Uint8Array(readFileSync(path)), s.file);
      expect(issues).toEqual([]);
      expect(items).toHaveLength(s.tasks);
      expect(new Set(items.map((t) => t.language))).toEqual(new Set([s.language]));
      expect(items.every((t) => t.canonical_solution !== undefined)).toBe(true);
      // the repository's README of the folder names every file
      expect(readFileSync(join(REPO, 'data/benchmarks/README.md'), 'utf8')).toContain(s.file);
    },
  );

  test('CODERL_DATA overrides the folder', () => {
    const before = process.env.CODERL_DATA;
    process.env.CODERL_DATA = '/tmp/elsewhere';
    try {
      expect(benchmarksDir()).toBe('/tmp/elsewhere');
      expect(benchmarkPath('a.jsonl')).toBe('/tmp/elsewhere/a.jsonl');
    } finally {
      if (before === undefined) delete process.env.CODERL_DATA;
      else process.env.CODERL_DATA = before;
    }
    expect(benchmarksDir()).toBe(EXPECTED_DIR);
  });
});
