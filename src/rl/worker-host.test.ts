import { describe, expect, test, vi } from 'vitest';
import { hostWorker, type WorkerScope } from './worker-host';
import type { WorkerKind } from './worker-protocol';

type In = { type: 'start'; n: number; lifeLock?: string } | { type: 'poke' };
type Out = { type: 'tick'; i: number } | { type: 'done'; n: number } | { type: 'error'; message: string };
const KIND: WorkerKind<In, Out, 'done' | 'error'> = { name: 'test worker', job: 'test', lock: 'run', last: ['done', 'error'] };

/** A worker global that records what the host posts and lets a test dispatch events to it. */
function fakeScope() {
  const listeners = new Map<string, (e: unknown) => void>();
  const posted: unknown[] = [];
  let closed = 0;
  const scope = {
    close: () => void closed++,
    postMessage: (m: unknown) => {
      if (m && typeof m === 'object' && 'uncloneable' in m) throw new DOMException('could not be cloned', 'DataCloneError');
      posted.push(m);
    },
    addEventListener: (type: string, l: (e: unknown) => void) => listeners.set(type, l),
  } as unknown as WorkerScope<In, Out>;
  const dispatch = (type: string, e: object): void => listeners.get(type)!(e);
  return { scope, posted, closed: () => closed, send: (data: In) => dispatch('message', { data }), dispatch };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('hostWorker', () => {
  test('runs the job once, posts its last message, closes itself and posts nothing after', async () => {
    const f = fakeScope();
    const onMessage = vi.fn();
    const { post } = hostWorker(
      KIND,
      {
        async run(m) {
          post({ type: 'tick', i: 1 });
          return { type: 'done', n: m.n * 2 };
        },
        onMessage,
      },
      f.scope,
    );
    f.send({ type: 'poke' });
    expect(onMessage).toHaveBeenCalledWith({ type: 'poke' });
    f.send({ type: 'start', n: 21 });
    await settle();
    expect(f.posted).toEqual([
      { type: 'tick', i: 1 },
      { type: 'done', n: 42 },
    ]);
    expect(f.closed()).toBe(1);
    post({ type: 'tick', i: 2 });
    f.send({ type: 'start', n: 1 });
    await settle();
    expect(f.posted).toHaveLength(2);
    expect(f.closed()).toBe(1);
  });

  test('a second start is an error, which ends the worker', async () => {
    const f = fakeScope();
    hostWorker(KIND, { run: () => new Promise<never>(() => {}) }, f.scope);
    f.send({ type: 'start', n: 1 });
    f.send({ type: 'start', n: 2 });
    await settle();
    expect(f.posted).toEqual([{ type: 'error', message: 'the test worker runs one test; this one has started already' }]);
    expect(f.closed()).toBe(1);
  });

  test("the job's rejection is its text; a programming error's says where it was raised", async () => {
    for (const [thrown, pattern] of [
      [new Error('no tokenizer'), /^no tokenizer$/],
      ['plain text', /^plain text$/],
      [undefined, /^unknown error$/],
      [new TypeError('x is not a function'), /^x is not a function \(at .+\)$/],
    ] as const) {
      const f = fakeScope();
      hostWorker(KIND, { run: () => Promise.reject(thrown) }, f.scope);
      f.send({ type: 'start', n: 1 });
      await settle();
      expect(f.posted).toHaveLength(1);
      expect(f.posted[0]).toMatchObject({ type: 'error', message: expect.stringMatching(pattern) });
      expect(f.closed()).toBe(1);
    }
  });

  test('a failed load is a failure to start, with where it was raised; the job does not run', async () => {
    const f = fakeScope();
    const run = vi.fn();
    hostWorker(KIND, { load: () => Promise.reject(new Error('chunk missing')), run }, f.scope);
    f.send({ type: 'start', n: 1 });
    await settle();
    expect(f.posted).toEqual([
      { type: 'error', message: expect.stringMatching(/^the test worker failed to start: chunk missing \(at .+\)$/) },
    ]);
    expect(run).not.toHaveBeenCalled();
  });

  test("what load gives is the job's", async () => {
    const f = fakeScope();
    hostWorker(KIND, { load: async (m) => ({ base: m.n + 1 }), run: async (m, { base }) => ({ type: 'done', n: base * 10 }) }, f.scope);
    f.send({ type: 'start', n: 1 });
    await settle();
    expect(f.posted).toEqual([{ type: 'done', n: 20 }]);
  });

  test('a last message that cannot be posted is reported as an error instead', async () => {
    const f = fakeScope();
    hostWorker(KIND, { run: async () => ({ type: 'done', n: 1, uncloneable: true }) as { type: 'done'; n: number } }, f.scope);
    f.send({ type: 'start', n: 1 });
    await settle();
    expect(f.posted).toEqual([{ type: 'error', message: 'could not be cloned' }]);
    expect(f.closed()).toBe(1);
  });

  test('an uncaught error or unhandled rejection ends the worker with one error, not reported again', () => {
    const f = fakeScope();
    hostWorker(KIND, { run: () => new Promise<never>(() => {}) }, f.scope);
    const preventDefault = vi.fn();
    f.dispatch('error', {
      preventDefault,
      error: new Error('boom'),
      message: 'Uncaught Error: boom',
      filename: 'w.js',
      lineno: 3,
      colno: 7,
    });
    f.dispatch('unhandledrejection', { preventDefault, reason: new Error('late') });
    expect(preventDefault).toHaveBeenCalledTimes(2);
    expect(f.posted).toEqual([{ type: 'error', message: 'uncaught error in the test worker: boom (at w.js:3:7)' }]);
    expect(f.closed()).toBe(1);

    const g = fakeScope();
    hostWorker(KIND, { run: () => new Promise<never>(() => {}) }, g.scope);
    g.dispatch('unhandledrejection', { preventDefault, reason: 'dropped' });
    expect(g.posted).toEqual([{ type: 'error', message: 'unhandled rejection in the test worker: dropped' }]);
  });
});
