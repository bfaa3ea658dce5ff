/** The app's built-in suites: every listed file is an asset of the app (a `?url` import from data/benchmarks/). */
import { describe, expect, test } from 'vitest';
import { BUILTIN_SUITES } from '../tasks/builtin-suites';
import { builtinSuiteUrl, missingBuiltinFiles } from './builtin-suites';

describe('built-in suites in the app', () => {
  test('each listed suite has its file among the assets, at a URL of the app itself', () => {
    expect(missingBuiltinFiles()).toEqual([]);
    for (const s of BUILTIN_SUITES) {
      const url = builtinSuiteUrl(s);
      expect(url, s.name).toMatch(/^\/[^/]/); // a path on the app's own origin, no host
      expect(url, s.name).toContain(s.file.replace(/\.jsonl(\.gz)?$/, ''));
    }
  });

  test('a suite whose file is not in the build is refused by name', () => {
    expect(() => builtinSuiteUrl({ ...BUILTIN_SUITES[0]!, name: 'x', file: 'x.jsonl.gz' })).toThrow(
      'the built-in suite x has no file data/benchmarks/x.jsonl.gz in this build',
    );
  });
});
