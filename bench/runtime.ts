/**
 * Runtime overhead: what one submit per step buys. Times K small dispatches recorded into one
 * submit against the same K dispatches submitted one by one, and the round trip of a 4-byte
 * readback. Results are validated (the buffer must hold K after K increments) before timing
 * counts. `coderl bench runtime [--json]`.
 */
import type { KernelSpec } from '../src/gpu/kernel';
import type { GpuRuntime } from '../src/gpu/runtime';

const increment: KernelSpec<{ n: number }> = {
  name: 'bench_increment',
  wgsl: `
    @group(0) @binding(0) var<storage, read_write> v: array<f32>;  // (N)
    override WG_X: u32 = 64;
    @compute @workgroup_size(WG_X) fn main(@builtin(global_invocation_id) g: vec3u) {
      if (g.x < arrayLength(&v)) { v[g.x] = v[g.x] + 1.0; }
    }`,
  bindings: [{ name: 'v', kind: 'storage' }],
  workgroupSize: [64],
  dispatch: (p) => [Math.ceil(p.n / 64), 1, 1],
};

export interface RuntimeBenchResult {
  adapter: string;
  dispatches: number;
  /** dispatches per second, all recorded into one submit */
  one_submit_dispatches_per_s: number;
  /** dispatches per second, one submit each */
  per_dispatch_submit_dispatches_per_s: number;
  /** one_submit / per_dispatch */
  ratio: number;
  /** median round trip of a 4-byte readback, ms */
  readback_ms: number;
}

export async function benchRuntime(rt: GpuRuntime, opts: { dispatches?: number; repeats?: number } = {}): Promise<RuntimeBenchResult> {
  const K = opts.dispatches ?? 200;
  const repeats = opts.repeats ?? 3;
  const n = 256;
  const k = await rt.compile(increment);
  const v = rt.storage(n * 4, 'bench v');

  const check = async (expected: number, what: string): Promise<void> => {
    const got = new Float32Array(await rt.read(v, 0, 4))[0];
    if (got !== expected) throw new Error(`bench runtime: ${what} left ${got} in the buffer, expected ${expected}`);
  };

  const oneSubmit = async (): Promise<void> => {
    const rec = rt.record('bench one submit');
    for (let i = 0; i < K; i++) rec.dispatch(k, { v }, { n });
    await rec.submit();
  };
  const perDispatch = async (): Promise<void> => {
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < K; i++) pending.push(rt.record('bench per dispatch').dispatch(k, { v }, { n }).submit());
    await Promise.all(pending);
  };

  const time = async (fn: () => Promise<void>, what: string): Promise<number> => {
    await rt.record('reset').clear(v).submit();
    await fn(); // warm-up, validated
    await check(K, what);
    let best = Infinity;
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      await fn();
      best = Math.min(best, performance.now() - t0);
    }
    await check(K * (repeats + 1), what);
    return (K / best) * 1000;
  };

  const one = await time(oneSubmit, 'one submit');
  const per = await time(perDispatch, 'one submit per dispatch');
  const trips: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    await rt.read(v, 0, 4);
    trips.push(performance.now() - t0);
  }
  trips.sort((a, b) => a - b);
  v.destroy();
  const a = rt.adapterSummary;
  return {
    adapter: `${a.vendor} ${a.architecture} ${a.description}`.trim(),
    dispatches: K,
    one_submit_dispatches_per_s: Math.round(one),
    per_dispatch_submit_dispatches_per_s: Math.round(per),
    ratio: Number((one / per).toFixed(2)),
    readback_ms: Number(trips[Math.floor(trips.length / 2)]!.toFixed(3)),
  };
}
