import { describe, expect, test } from 'vitest';
import { saxpy } from '../kernels/saxpy';
import { runSelfCheck } from '../kernels/selfcheck';
import { freshRuntime, testRuntime } from '../testing/gpu';
import { NEGOTIATED_LIMITS, OPTIONAL_FEATURES } from './adapter';
import { GpuError } from './errors';
import { pipelineKey, withConstants, type KernelSpec } from './kernel';

const addOne: KernelSpec<{ n: number }> = {
  name: 'add_one',
  wgsl: `
    @group(0) @binding(0) var<storage, read_write> v: array<f32>;
    override WG_X: u32 = 64;
    override STEP: f32 = 1.0;
    @compute @workgroup_size(WG_X) fn main(@builtin(global_invocation_id) g: vec3u) {
      if (g.x < arrayLength(&v)) { v[g.x] = v[g.x] + STEP; }
    }`,
  bindings: [{ name: 'v', kind: 'storage' }],
  workgroupSize: [64],
  constants: { STEP: 1 },
  dispatch: (p) => [Math.ceil(p.n / 64), 1, 1],
};

async function rejection(p: Promise<unknown> | (() => unknown)): Promise<GpuError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(GpuError);
    return e as GpuError;
  }
  throw new Error('expected a GpuError, nothing was thrown');
}

describe('device', () => {
  test('negotiates the adapter maxima and requests the optional features it has', async () => {
    const rt = await testRuntime();
    for (const k of NEGOTIATED_LIMITS) expect(rt.limits[k], k).toBe(rt.adapter.limits[k]);
    for (const f of OPTIONAL_FEATURES) expect(rt.hasFeature(f), f).toBe(rt.adapter.features.has(f));
    expect(rt.adapterSummary.vendor.length + rt.adapterSummary.architecture.length).toBeGreaterThan(0);
  });
});

describe('pipelines', () => {
  test('are cached by name and constants', async () => {
    const rt = await testRuntime();
    const built = rt.stats.pipelinesBuilt;
    const a = await rt.compile(addOne);
    const b = await rt.compile(addOne);
    expect(b).toBe(a);
    const c = await rt.compile(withConstants(addOne, { constants: { STEP: 2 } }));
    expect(c).not.toBe(a);
    expect(pipelineKey(addOne)).toBe('add_one{STEP=1,WG_X=64}');
    expect(pipelineKey({ ...addOne, entryPoint: 'other' })).toBe('add_one.other{STEP=1,WG_X=64}');
    expect(rt.stats.pipelinesBuilt - built).toBe(2);
  });

  test('a WGSL error names the kernel and the line', async () => {
    const rt = await testRuntime();
    const bad = { ...addOne, name: 'broken', wgsl: addOne.wgsl.replace('v[g.x] + STEP', 'v[g.x] + undefined_thing') };
    const e = await rejection(rt.compile(bad));
    expect(e.kind).toBe('shader');
    expect(e.message).toMatch(/kernel "broken".*\n.*broken\.wgsl:6:\d+: .*undefined_thing/);
  });

  test('a workgroup larger than the device allows is a limit error', async () => {
    const rt = await testRuntime();
    const big = withConstants(addOne, { workgroupSize: [rt.limits.maxComputeInvocationsPerWorkgroup * 2] });
    const e = await rejection(rt.compile(big));
    expect(e.kind).toBe('limit');
    expect(e.message).toMatch(/maxComputeWorkgroupSizeX|maxComputeInvocationsPerWorkgroup/);
  });
});

describe('recording', () => {
  test('many dispatches go in one submit; reads capture their point in the sequence', async () => {
    const rt = await testRuntime();
    const k = await rt.compile(addOne);
    const v = rt.upload(new Float32Array(100), 'v');
    const before = { ...rt.stats };
    const rec = rt.record('three adds', { profile: true });
    rec.dispatch(k, { v }, { n: 100 });
    const afterOne = rec.read(v, 0, 8);
    rec.dispatch(k, { v }, { n: 100 }).dispatch(k, { v }, { n: 100 });
    const afterThree = rec.read(v);
    const report = await rec.submit();
    expect(Array.from(new Float32Array(await afterOne))).toEqual([1, 1]);
    expect(new Float32Array(await afterThree).every((x) => x === 3)).toBe(true);
    expect(rt.stats.submits - before.submits).toBe(1);
    expect(rt.stats.dispatches - before.dispatches).toBe(3);
    expect(rt.stats.readbacks - before.readbacks).toBe(2);
    if (rt.hasFeature('timestamp-query')) {
      expect(report.timings?.map((t) => t.kernel)).toEqual(['add_one', 'add_one', 'add_one']);
      expect(report.timings!.every((t) => t.ns >= 0)).toBe(true);
    } else expect(report.timings).toBeNull();
    v.destroy();
  });

  test('copy and clear run in order with dispatches', async () => {
    const rt = await testRuntime();
    const k = await rt.compile(addOne);
    const a = rt.upload(new Float32Array([5, 5, 5, 5]), 'a');
    const b = rt.storage(16, 'b');
    const rec = rt.record('copy-clear');
    rec.dispatch(k, { v: a }, { n: 4 }).copy(a, 0, b, 0, 16).clear(a, 4, 8).dispatch(k, { v: b }, { n: 4 });
    const ra = rec.read(a);
    const rb = rec.read(b);
    await rec.submit();
    expect(Array.from(new Float32Array(await ra))).toEqual([6, 0, 0, 6]);
    expect(Array.from(new Float32Array(await rb))).toEqual([7, 7, 7, 7]);
    a.destroy();
    b.destroy();
  });

  test('missing, unknown and uniform bindings are usage errors naming the binding', async () => {
    const rt = await testRuntime();
    const k = await rt.compile(addOne);
    const s = await rt.compile(saxpy);
    const v = rt.storage(16, 'v');
    const rec = rt.record('bad bindings');
    expect((await rejection(() => rec.dispatch(k, {}, { n: 4 }))).message).toMatch(/bad bindings > add_one: missing binding "v"/);
    expect((await rejection(() => rec.dispatch(k, { v, w: v }, { n: 4 }))).message).toMatch(/unknown binding "w" \(kernel has v\)/);
    expect((await rejection(() => rec.dispatch(s, { x: v, y: v, params: v }, { n: 4, a: 1 }))).message).toMatch(
      /"params" is the uniform block/,
    );
    expect((await rejection(() => rec.read(v, 2, 4))).message).toMatch(/multiples of 4/);
    expect((await rejection(() => rec.read(v, 0, 32))).message).toMatch(/outside buffer "v" of 16 bytes/);
    v.destroy();
  });

  test('a recording is submitted once', async () => {
    const rt = await testRuntime();
    const rec = rt.record('once');
    await rec.submit();
    expect((await rejection(() => rec.submit())).message).toMatch(/already submitted/);
  });
});

describe('errors', () => {
  test('a buffer above maxBufferSize is a limit error naming the buffer', async () => {
    const rt = await testRuntime();
    const e = await rejection(() => rt.storage(rt.limits.maxBufferSize + 4, 'huge'));
    expect(e.kind).toBe('limit');
    expect(e.message).toMatch(/buffer "huge": needs \d+ bytes .*maxBufferSize/);
  });

  test('validation errors inside scoped() are thrown with their place', async () => {
    const rt = await testRuntime();
    const e = await rejection(
      rt.scoped('bad usage', () => {
        rt.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE, label: 'invalid' });
      }),
    );
    expect(e.kind).toBe('validation');
    expect(e.message).toMatch(/^bad usage: /);
  });

  test('a validation error during submit rejects the submit and its reads', async () => {
    const rt = await testRuntime();
    const k = await rt.compile(addOne);
    const v = rt.storage(16, 'v');
    const rec = rt.record('bad submit');
    rec.dispatch(k, { v: { buffer: v, offset: 3 } }, { n: 4 }); // offset not aligned to 256
    const r = rec.read(v);
    const e = await rejection(rec.submit());
    expect(e.kind).toBe('validation');
    expect(e.message).toMatch(/^bad submit \(add_one\): /);
    await expect(r).rejects.toBeInstanceOf(GpuError);
    v.destroy();
  });
});

describe('pool', () => {
  test('reuses released buffers by usage and size class', async () => {
    const rt = await testRuntime();
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    const a = rt.pool.acquire(1000, usage);
    expect(a.size).toBe(1024);
    rt.pool.release(a);
    const hits = rt.pool.stats().hits;
    expect(rt.pool.acquire(900, usage)).toBe(a);
    expect(rt.pool.stats().hits).toBe(hits + 1);
    rt.pool.release(a);
    expect(() => rt.pool.release(a)).toThrow(/released twice/);
  });
});

describe('device loss', () => {
  test('is reported with its reason, blocks use, and recover() brings back a working device', async () => {
    const rt = await freshRuntime();
    const k = await rt.compile(addOne);
    const old = rt.storage(16, 'old');
    const reports: string[] = [];
    const lost = new Promise<void>((resolve) =>
      rt.onLost((r) => {
        reports.push(`${r.reason}:${r.generation}`);
        resolve();
      }),
    );
    rt.simulateLoss();
    await lost;
    expect(rt.state).toBe('lost');
    expect(reports).toEqual(['destroyed:0']);
    const e = await rejection(rt.compile(addOne));
    expect(e.kind).toBe('device-lost');
    expect(e.message).toMatch(/call recover\(\)/);

    await rt.recover();
    expect(rt.state).toBe('ready');
    expect(rt.generation).toBe(1);
    const rec = rt.record('after recovery');
    expect((await rejection(() => rec.dispatch(k, { v: rt.storage(16, 'new') }, { n: 4 }))).kind).toBe('device-lost');
    const k2 = await rt.compile(addOne);
    expect((await rejection(() => rec.dispatch(k2, { v: old }, { n: 4 }))).message).toMatch(/buffer "old" belongs to device generation 0/);
    expect((await runSelfCheck(rt)).ok).toBe(true);
    rt.dispose();
  });

  test('release() waits for submitted work, destroys the device and resolves once it is gone', async () => {
    const rt = await freshRuntime();
    const dev = rt.device;
    expect((await runSelfCheck(rt)).ok).toBe(true);
    let gone: string | null = null;
    void dev.lost.then((info) => (gone = String(info.reason)));
    await rt.release();
    expect(rt.state).toBe('disposed');
    expect(gone).toBe('destroyed');
    await rt.release(); // a second call is a no-op
  });
});
