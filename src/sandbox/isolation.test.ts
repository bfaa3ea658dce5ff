/**
 * No state passes from one program to the next: on every worker of a real pool, the state writer
 * (adversarial/state.ts) runs, then a reader on the same worker that returns the right answer only
 * if it finds any of what the writer left: it must find nothing and fail. JavaScript the same way.
 * Honest programs after them still pass.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { JS_TASK, PY_TASK } from './adversarial/corpus';
import { JS_STATE_WRITER, PY_STATE_WRITER, jsStateReader, pyStateReader } from './adversarial/state';
import type { SandboxPool } from './pool';
import { createNodePool } from './pool.node';
import type { RunJob } from './protocol';
import { DEFAULT_LIMITS, type RunResult } from './result';

const SIZE = 2;
const limits = { ...DEFAULT_LIMITS, timeoutMs: 5000, graceMs: 3000 };
/** Keeps the worker busy so that each of the SIZE jobs submitted together lands on its own worker. */
const BUSY = 'import time as _t\n_e = _t.monotonic() + 0.4\nwhile _t.monotonic() < _e:\n    pass\n';

let pool: SandboxPool;
const runOn = async (job: RunJob): Promise<{ result: RunResult; worker: number }> => {
  const { result, worker } = await pool.submit(job);
  return { result: await result, worker: await worker };
};
/** SIZE copies of a job at once: one per worker. */
const wave = (job: RunJob) => Promise.all(Array.from({ length: SIZE }, () => runOn(job)));

let pyWriters: Awaited<ReturnType<typeof wave>>;
let pyReaders: Awaited<ReturnType<typeof wave>>;
let jsWriters: Awaited<ReturnType<typeof wave>>;
let jsReaders: Awaited<ReturnType<typeof wave>>;
let honest: Awaited<ReturnType<typeof wave>>;

beforeAll(async () => {
  pool = await createNodePool({ size: SIZE });
  await wave({ task: PY_TASK, completion: `    return a + b\n${BUSY}`, limits }); // every worker has loaded Python
  pyWriters = await wave({ task: PY_TASK, completion: `${PY_STATE_WRITER}${BUSY}`, limits });
  pyReaders = await wave({ task: PY_TASK, completion: `${pyStateReader('a + b')}${BUSY}`, limits });
  jsWriters = await wave({ task: JS_TASK, completion: JS_STATE_WRITER, limits });
  jsReaders = await wave({ task: JS_TASK, completion: jsStateReader('x < y ? [x, y] : [y, x]'), limits });
  honest = await wave({ task: PY_TASK, completion: `${PY_TASK.canonical_solution!}${BUSY}`, limits });
}, 120_000);

afterAll(() => pool?.close());

describe('no state passes between programs, on every worker', () => {
  test('each wave ran once on every worker, and no worker was replaced in between', () => {
    const workers = (w: typeof pyWriters) => w.map((x) => x.worker).sort();
    const all = Array.from({ length: SIZE }, (_, i) => i + 1);
    for (const w of [pyWriters, pyReaders, jsWriters, jsReaders, honest]) expect(workers(w)).toEqual(all);
    expect(pool.stats.replaced).toBe(0);
  });

  test('the Python writer ran to the end (its tampering verdict names the first patch)', () => {
    for (const { result } of pyWriters) {
      expect(result.verdict).toBe('tampering');
      expect(result.message).toMatch(/changed the interpreter/);
    }
  });

  test('a Python reader after the writer finds none of it', () => {
    for (const { result } of pyReaders) {
      expect(result.output).toBe('[]\n'.repeat(3));
      expect(result.tests.filter((t) => t.status === 'passed')).toEqual([]);
    }
  });

  test('a JavaScript reader after the writer finds none of it', () => {
    for (const { result } of jsWriters) expect(result.verdict).toBe('tampering');
    for (const { result } of jsReaders) {
      expect(result.output).toMatch(/^(\[\]\n)+$/);
      expect(result.verdict).toBe('failed');
    }
  });

  test('honest programs after them pass on every worker', () => {
    expect(honest.map((x) => x.result.verdict)).toEqual(Array(SIZE).fill('passed'));
  });
});
