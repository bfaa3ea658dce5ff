/**
 * The server's --suite in SuiteStore.loadDefault (no server, no sandbox): a built-in name stays
 * the built-in, a file is read in any shape an upload takes (JSONL, gzipped JSONL, a JSON array,
 * HumanEval lines), refused whole naming the file and the line, pinned (uploads never evict it)
 * and found by its path; 64 hex digits are a hash to upload later; anything else is refused
 * listing the built-in names.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import type { Task } from '../tasks/types';
import { HttpError } from './config';
import { DefaultSuiteError, SuiteStore } from './suites';

const dir = mkdtempSync(join(tmpdir(), 'coderl-serve-suites-'));
const TASKS: Task[] = [
  {
    task_id: 'add',
    language: 'javascript',
    prompt: 'function add(a, b) {\n',
    entry_point: 'add',
    tests: 'console.assert(add(1, 2) === 3);\n',
  },
  {
    task_id: 'neg',
    language: 'python',
    prompt: 'def neg(x):\n',
    entry_point: 'neg',
    tests: 'def check(candidate):\n    assert candidate(1) == -1\n',
  },
];
const jsonl = TASKS.map((t) => JSON.stringify(t)).join('\n');

function file(name: string, content: string | Uint8Array): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

async function refusal(store: SuiteStore, arg: string): Promise<string> {
  const e = await store.loadDefault(arg).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(DefaultSuiteError);
  return (e as Error).message;
}

describe('SuiteStore.loadDefault (the server --suite)', () => {
  test('a built-in name stays the built-in', async () => {
    const store = new SuiteStore(1);
    const s = await store.loadDefault('humaneval-x-js');
    expect(s?.label).toBe('humaneval-x-js');
    expect(s?.tasks).toHaveLength(164);
  });

  test.each([
    ['plain JSONL', 'tasks.jsonl', jsonl],
    ['gzipped JSONL', 'tasks.jsonl.gz', gzipSync(jsonl)],
    ['a JSON array', 'tasks.json', JSON.stringify(TASKS)],
  ])('a file: %s, labelled by its path, found by it', async (_what, name, content) => {
    const path = file(name, content);
    const store = new SuiteStore(1);
    const s = await store.loadDefault(path);
    expect(s?.label).toBe(path);
    expect(s?.tasks).toEqual(TASKS);
    expect(await store.resolve(path, '--suite')).toBe(s);
    expect(await store.byName(path, 'suite')).toBe(s);
  });

  test('a HumanEval-shaped line loads as a task', async () => {
    const line = {
      task_id: 'HumanEval/x',
      prompt: 'def f(x):\n',
      entry_point: 'f',
      canonical_solution: '    return x\n',
      test: 'def check(c):\n    assert c(1) == 1\n',
    };
    const s = await new SuiteStore(1).loadDefault(file('he.jsonl', JSON.stringify(line)));
    expect(s?.tasks[0]).toMatchObject({ task_id: 'HumanEval/x', language: 'python', tests: line.test });
  });

  test('pinned: uploads past the LRU capacity never evict it', async () => {
    const path = file('pinned.jsonl', jsonl);
    const store = new SuiteStore(1);
    await store.loadDefault(path);
    for (const t of TASKS) await store.upload(new TextEncoder().encode(JSON.stringify([t])));
    expect(store.size).toBe(1);
    expect((await store.resolve(path, '--suite')).tasks).toHaveLength(2);
  });

  test('a bad line refuses the whole file, naming the file and the line', async () => {
    const path = file('bad.jsonl', `${JSON.stringify(TASKS[0])}\n{"task_id": "x", "language": "python", "prompt": ""}\n`);
    const message = await refusal(new SuiteStore(1), path);
    expect(message).toMatch(new RegExp(`^--suite ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 2: missing field 'entry_point'`));
    const notJson = await refusal(new SuiteStore(1), file('bad.json', '[{"task_id": '));
    expect(notJson).toMatch(/bad\.json: not a valid JSON array/);
    expect(await refusal(new SuiteStore(1), file('empty.jsonl', ''))).toMatch(/empty\.jsonl: the file holds no task/);
  });

  test('64 hex digits: a suite to be uploaded (404 naming it until then); anything else is refused listing the built-ins', async () => {
    const store = new SuiteStore(1);
    const hash = 'ab'.repeat(32);
    expect(await store.loadDefault(hash)).toBeUndefined();
    const missing = await store.resolve(hash, '--suite').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(HttpError);
    expect(missing).toMatchObject({ status: 404, field: '--suite' });
    expect(await refusal(store, join(dir, 'nope.jsonl'))).toMatch(
      /nope\.jsonl: not a built-in suite \(built-in: humaneval-x-js, humaneval-python\), a file/,
    );
  });
});
