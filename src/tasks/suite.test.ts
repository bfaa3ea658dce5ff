import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { bytesToText, gunzip, isGzip } from './bytes';
import { parseCompletions } from './completions';
import { canonicalCompletions, jsEntryPoint, loadSuite, parseSuite } from './suite';
import { formatIssue } from './types';
import { BENCHMARKS_DIR } from './benchmarks';

const DATA = BENCHMARKS_DIR;
const bytes = (name: string): Uint8Array => new Uint8Array(readFileSync(`${DATA}/${name}`));

describe('loading suites', () => {
  test('HumanEval-X JavaScript loads as it is: 164 tasks, test -> tests, entry point from the declaration', async () => {
    const { items, issues } = await loadSuite(bytes('humaneval-x-js.jsonl.gz'), 'humaneval-x-js.jsonl.gz');
    expect(issues).toEqual([]);
    expect(items).toHaveLength(164);
    const t0 = items[0]!;
    expect(t0).toMatchObject({ task_id: 'JavaScript/0', language: 'javascript', entry_point: 'hasCloseElements' });
    expect(t0.tests).toContain('console.assert(hasCloseElements(');
    expect(t0.prompt.endsWith('const hasCloseElements = (numbers, threshold) => {\n')).toBe(true);
    expect(t0.meta?.example_test).toContain('testHasCloseElements');
    // helper functions in the prompt do not fool the entry point: the last declared one wins
    expect(items.find((t) => t.task_id === 'JavaScript/38')!.entry_point).toBe('decodeCyclic');
    expect(items.every((t) => t.tests.includes(`${t.entry_point}(`))).toBe(true);
  });

  test('HumanEval Python loads as it is, with its entry points', async () => {
    const { items, issues } = await loadSuite(bytes('humaneval-python.jsonl.gz'), 'humaneval-python.jsonl.gz');
    expect(issues).toEqual([]);
    expect(items).toHaveLength(164);
    expect(items[0]).toMatchObject({ task_id: 'HumanEval/0', language: 'python', entry_point: 'has_close_elements' });
    expect(items.every((t) => t.tests.includes('def check(candidate)') && t.canonical_solution !== undefined)).toBe(true);
    expect(canonicalCompletions(items)).toHaveLength(164);
  });

  test('plain and gzipped bytes decode the same; node:zlib and DecompressionStream agree', async () => {
    const gz = bytes('humaneval-x-js.jsonl.gz');
    expect(isGzip(gz)).toBe(true);
    const viaZlib = await gunzip(gz);
    const viaStream = new Uint8Array(
      await new Response(new Blob([gz as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer(),
    );
    expect(viaStream).toEqual(viaZlib);
    const text = await bytesToText(gz);
    expect(isGzip(viaZlib)).toBe(false);
    expect(await bytesToText(viaZlib)).toBe(text);
    expect(parseSuite(text, 'x').items).toHaveLength(164);
  });

  test('the native format round-trips, gzipped too', async () => {
    const line = {
      task_id: 't/1',
      language: 'python',
      prompt: 'def f():\n',
      entry_point: 'f',
      tests: 'def check(c):\n    assert c() == 1\n',
      canonical_solution: '    return 1\n',
      meta: { level: 1 },
    };
    const { items, issues } = await loadSuite(gzipSync(`${JSON.stringify(line)}\n`), 'n.jsonl.gz');
    expect(issues).toEqual([]);
    expect(items).toEqual([line]);
  });

  test('jsEntryPoint finds const and function declarations', () => {
    expect(jsEntryPoint('\nconst fooBar = (a) => {\n')).toBe('fooBar');
    expect(jsEntryPoint('function helper() {}\nfunction main(x) {\n')).toBe('main');
    expect(jsEntryPoint('/* nothing */')).toBeUndefined();
  });
});

describe('malformed input: reported with file and line, the valid rest loads', () => {
  const good = (id: string): string =>
    JSON.stringify({
      task_id: id,
      language: 'javascript',
      prompt: 'const f = () => {\n',
      entry_point: 'f',
      tests: 'console.assert(f() === 1)\n',
    });
  const text = [
    good('a'),
    '{"task_id": "b", "language": "javascript",',
    '',
    JSON.stringify({ task_id: 'c', language: 'ruby', prompt: 'x', entry_point: 'f', tests: 't' }),
    JSON.stringify({ task_id: 'd', language: 'python', prompt: 7, entry_point: 'f' }),
    good('a'),
    '[1, 2]',
    JSON.stringify({ task_id: 'e', prompt: 'p', declaration: 'no function here', test: 't' }),
    good('f'),
  ].join('\n');

  test('suite', () => {
    const { items, issues } = parseSuite(text, 'suite.jsonl');
    expect(items.map((t) => t.task_id)).toEqual(['a', 'f']);
    const lines = issues.map(formatIssue);
    expect(lines[0]).toMatch(/^suite\.jsonl:2: bad JSON/);
    expect(lines).toContain("suite.jsonl:4: field 'language' must be one of javascript, python, got 'ruby'");
    expect(lines).toContain("suite.jsonl:5: field 'prompt' must be a string, got number");
    expect(lines).toContain("suite.jsonl:5: missing field 'tests'");
    expect(lines).toContain("suite.jsonl:6: duplicate task_id 'a' (first on line 1); this line is skipped");
    expect(lines).toContain('suite.jsonl:7: expected a JSON object, got an array');
    expect(lines).toContain('suite.jsonl:8: cannot find the entry point: the declaration declares no function');
    expect(issues.every((i) => i.line !== 3)).toBe(true); // blank lines are fine
  });

  test('completions: unknown ids, bad fields and bad JSON; several samples per task are fine', () => {
    const tasks = parseSuite(text, 's').items;
    const c = [
      JSON.stringify({ task_id: 'a', completion: ' return 1\n}' }),
      JSON.stringify({ task_id: 'zz', completion: '}' }),
      JSON.stringify({ task_id: 'a', completion: 5 }),
      'not json',
      JSON.stringify({ task_id: 'a', completion: '}' }),
      JSON.stringify({ completion: '}' }),
    ].join('\r\n');
    const { items, issues } = parseCompletions(c, 'samples.jsonl', tasks);
    expect(items).toEqual([
      { task_id: 'a', completion: ' return 1\n}' },
      { task_id: 'a', completion: '}' },
    ]);
    expect(issues.map(formatIssue)).toEqual([
      "samples.jsonl:2: unknown task_id 'zz': not in the suite",
      "samples.jsonl:3: field 'completion' must be a string, got number",
      expect.stringMatching(/^samples\.jsonl:4: bad JSON/),
      "samples.jsonl:6: missing field 'task_id'",
    ]);
  });
});
