import { afterEach, describe, expect, test, vi } from 'vitest';
import { LIFE_LOCK_PREFIX, SELF_CLOSE_MS } from '../rl/life-lock';
import type { WorkerKind } from '../rl/worker-protocol';
import type { LabState } from './index';
import { askedBackend, autoBackend, startWorker } from './worker-client';

type In = { type: 'start'; n: number; lifeLock?: string } | { type: 'poke' };
type Out = { type: 'tick'; i: number } | { type: 'done'; n: number } | { type: 'error'; message: string };
const KIND: WorkerKind<In, Out, 'done' | 'error'> = { name: 'test worker', job: 'test', lock: 'eval', last: ['done', 'error'] };

/** A Worker that records what the page posts and lets a test play the worker's side. */
function fakeWorker() {
  const listeners = new Map<string, (e: unknown) => void>();
  const posted: { m: unknown; transfer?: Transferable[] }[] = [];
  let terminated = 0;
  const worker = {
    postMessage: (m: unknown, transfer?: Transferable[]) => posted.push({ m, transfer }),
    addEventListener: (type: string, l: (e: unknown) => void) => listeners.set(type, l),
    terminate: () => void terminated++,
  };
  const dispatch = (type: string, e: object): void => listeners.get(type)!(e);
  return {
    spawn: () => worker as unknown as Worker,
    posted,
    terminated: () => terminated,
    say: (data: Out) => dispatch('message', { data }),
    dispatch,
  };
}

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('startWorker', () => {
  test('posts the start, relays progress, and resolves with the last message; the worker closes itself, terminate is the backstop', async () => {
    vi.useFakeTimers();
    const f = fakeWorker();
    const seen: Out[] = [];
    const bytes = new Uint8Array(4);
    const w = startWorker(f.spawn, KIND, { start: { type: 'start', n: 1 }, transfer: [bytes.buffer], onMessage: (m) => seen.push(m) });
    expect(f.posted).toEqual([{ m: { type: 'start', n: 1, lifeLock: undefined }, transfer: [bytes.buffer] }]);
    w.post({ type: 'poke' });
    f.say({ type: 'tick', i: 1 });
    f.say({ type: 'done', n: 2 });
    f.say({ type: 'tick', i: 2 });
    expect(await w.done).toEqual({ type: 'done', n: 2 });
    expect(seen).toEqual([{ type: 'tick', i: 1 }]);
    w.post({ type: 'poke' });
    expect(f.posted.map((p) => p.m)).toEqual([{ type: 'start', n: 1, lifeLock: undefined }, { type: 'poke' }]);
    expect(f.terminated()).toBe(0);
    vi.advanceTimersByTime(SELF_CLOSE_MS);
    expect(f.terminated()).toBe(1);
  });

  test("the page's terminate, an error event and an unreadable message end it at once", async () => {
    const a = fakeWorker();
    const wa = startWorker(a.spawn, KIND, { start: { type: 'start', n: 1 }, onMessage: () => {} });
    wa.terminate();
    expect(await wa.done).toEqual({ type: 'terminated' });
    expect(a.terminated()).toBe(1);

    const b = fakeWorker();
    const wb = startWorker(b.spawn, KIND, { start: { type: 'start', n: 1 }, onMessage: () => {} });
    const preventDefault = vi.fn();
    b.dispatch('error', { preventDefault, message: '' });
    expect(await wb.done).toEqual({ type: 'error', message: 'the test worker failed: its script could not be loaded' });
    expect(preventDefault).toHaveBeenCalled();
    expect(b.terminated()).toBe(1);

    const c = fakeWorker();
    const wc = startWorker(c.spawn, KIND, { start: { type: 'start', n: 1 }, onMessage: () => {} });
    c.dispatch('messageerror', {});
    c.say({ type: 'done', n: 1 });
    expect(await wc.done).toEqual({ type: 'error', message: 'a message from the test worker could not be read' });
    expect(c.terminated()).toBe(1);
  });

  test('with `lost`, a worker that has spoken and then lets go of its life lock ends in that error', async () => {
    const requests: { name: string; granted: () => void }[] = [];
    vi.stubGlobal('navigator', {
      locks: { request: (name: string, cb: () => void) => (requests.push({ name, granted: cb }), new Promise(() => {})) },
    });
    const f = fakeWorker();
    const w = startWorker(f.spawn, KIND, { start: { type: 'start', n: 1 }, lost: 'it is gone', onMessage: () => {} });
    const lock = (f.posted[0]!.m as { lifeLock: string }).lifeLock;
    expect(lock.startsWith(LIFE_LOCK_PREFIX.eval)).toBe(true);
    expect(requests).toEqual([]); // not before it has spoken (it may not hold the lock yet)
    f.say({ type: 'tick', i: 1 });
    f.say({ type: 'tick', i: 2 });
    expect(requests.map((r) => r.name)).toEqual([lock]);
    requests[0]!.granted();
    expect(await w.done).toEqual({ type: 'error', message: 'it is gone' });
    expect(f.terminated()).toBe(1);
  });
});

describe('askedBackend', () => {
  test('cpu with a note why when the page has no ready GPU', async () => {
    const get = () => ({ gpu: { status: 'unavailable', problem: 'This browser has no WebGPU.' } }) as LabState;
    expect(await askedBackend(get, 'evaluation')).toEqual({
      backend: 'cpu',
      note: 'WebGPU is not usable here: This browser has no WebGPU. The evaluation uses the cpu backend (the float64 reference model) instead.',
    });
    const lost = () => ({ gpu: { status: 'lost', problem: null } }) as unknown as LabState;
    expect((await askedBackend(lost, 'run')).note).toBe(
      'WebGPU is not usable here: the GPU status is "lost". The run uses the cpu backend (the float64 reference model) instead.',
    );
  });
});

describe('autoBackend', () => {
  const ready = (software: boolean) =>
    ({
      status: 'ready',
      problem: null,
      info: {
        adapter: { software, vendor: software ? 'google' : 'nvidia', architecture: software ? 'swiftshader' : 'hopper', description: '' },
      },
    }) as unknown as LabState['gpu'];
  test('cpu on a software adapter, saying so and how to choose webgpu; webgpu on a hardware one', async () => {
    expect(autoBackend(ready(true), 'run')).toEqual({
      backend: 'cpu',
      note: 'google swiftshader is a software GPU: the run uses the cpu backend, many times faster here.',
    });
    expect(autoBackend(ready(false), 'run')).toEqual({ backend: 'webgpu', note: null });
    // an explicit cpu needs no GPU at all
    const none = () => ({ gpu: { status: 'unavailable', problem: 'no WebGPU' } }) as LabState;
    expect(await askedBackend(none, 'run', 'cpu')).toEqual({ backend: 'cpu', note: null });
    expect((await askedBackend(none, 'run', 'webgpu')).backend).toBe('cpu');
  });
});
