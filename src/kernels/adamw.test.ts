import { describe, expect, test } from 'vitest';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  ADAMW_CHUNK,
  GRAD_NORM_CHUNK,
  GRAD_STATUS_WORDS,
  adamw,
  adamw4,
  adamwRef,
  clipScaleRef,
  gradNormRef,
  gradNormSquares,
  recordGradNorm,
  recordGradNormOf,
  selectAdamw,
  type AdamWProblem,
  type GradNormProblem,
} from './adamw';

const HYPER = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

/** float32 sum of squares: one rounding per square and per add along a path of at most
 *  16 sequential adds plus ceil(log2 N) tree levels; the sqrt halves the relative error. */
const normTol = (n: number) => ({ atol: 0, rtol: (16 + Math.ceil(Math.log2(n)) + 2) * 2 ** -24 });

async function gpuNorm(grads: Float32Array, squaresSpec = gradNormSquares): Promise<{ norm: number; status: number[] }> {
  const rt = await testRuntime();
  const g = rt.upload(grads, 'grads');
  const norm = rt.storage(4, 'norm');
  const status = rt.upload(new Uint32Array(GRAD_STATUS_WORDS), 'status');
  const rec = rt.record(`grad norm n=${grads.length}`);
  const temps = await recordGradNorm(rt, rec, g, grads.length, norm, status, squaresSpec);
  const outs = [rec.read(norm), rec.read(status)];
  await rec.submit();
  for (const t of temps) rt.pool.release(t);
  const [n, s] = await Promise.all(outs);
  for (const b of [g, norm, status]) b.destroy();
  return { norm: new Float32Array(n!)[0]!, status: Array.from(new Uint32Array(s!)) };
}

/**
 * The norm of several buffers (one per tensor): each one's partials in its own aligned range of
 * one buffer. Sizes: a single element, one partial, 18 partials (more than one alignment block of
 * 64 floats at a 256-byte alignment: 70001 / 4096), 257 partials; a NaN in the last one.
 */
describe('global gradient norm over several buffers', () => {
  const sizes = [1, 4096, 70001, 300, 1048581];
  async function norms(grads: Float32Array[]): Promise<{ norm: number; status: number[] }> {
    const rt = await testRuntime();
    const bufs = grads.map((g, i) => rt.upload(g, `grads ${i}`));
    const norm = rt.storage(4, 'norm');
    const status = rt.upload(new Uint32Array(GRAD_STATUS_WORDS), 'status');
    const rec = rt.record('grad norm of tensors');
    const temps = await recordGradNormOf(
      rt,
      rec,
      bufs.map((buffer, i) => ({ buffer, n: grads[i]!.length })),
      norm,
      status,
    );
    const outs = [rec.read(norm), rec.read(status)];
    await rec.submit();
    for (const t of temps) rt.pool.release(t);
    const [n, s] = await Promise.all(outs);
    for (const b of [...bufs, norm, status]) b.destroy();
    return { norm: new Float32Array(n!)[0]!, status: Array.from(new Uint32Array(s!)) };
  }

  test('equals the norm of their concatenation', async () => {
    const grads = sizes.map((n, i) => new Rng(n + i).float32(n, -1, 1));
    const all = Float32Array.from(grads.flatMap((g) => Array.from(g)));
    const { norm, status } = await norms(grads);
    expectClose([norm], [gradNormRef(all, all.length)], normTol(all.length), 'norm of the tensors');
    expect(status).toEqual([0, 0, 0, 0]);
  });

  test('a NaN in any one of them sets the status', async () => {
    const grads = sizes.slice(0, 3).map((n, i) => new Rng(n + i).float32(n, -1, 1));
    grads[2]![70000] = NaN;
    const { norm, status } = await norms(grads);
    expect(norm).toBeNaN();
    expect(status).toEqual([1, 1, 0, 0]);
  });
});

describe('global gradient norm matches its float64 reference', () => {
  // 1048581 = 256 * 4096 + 5: 257 partials, then two reduce_sum passes
  test.each([1, 1000, 70001, 1048581])('n=%i', async (n) => {
    const grads = new Rng(n).float32(n, -1, 1);
    const { norm, status } = await gpuNorm(grads);
    expectClose([norm], [gradNormRef(grads, n)], normTol(n), `norm n=${n}`);
    expect(status).toEqual([0, 0, 0, 0]);
  });

  test('2-D folded dispatch of the squares pass (per-dimension limit forced to 4)', async () => {
    const dispatch = (p: GradNormProblem) =>
      linearWorkgroups(p.n, GRAD_NORM_CHUNK, { maxComputeWorkgroupsPerDimension: 4 } as GPUSupportedLimits);
    const n = 9 * GRAD_NORM_CHUNK + 123;
    expect(dispatch({ n })).toEqual([4, 3, 1]); // 10 groups folded into 12; 2 write nothing
    const grads = new Rng(9).float32(n, -3, 3);
    const { norm } = await gpuNorm(grads, { ...gradNormSquares, name: 'grad_norm_folded', dispatch });
    expectClose([norm], [gradNormRef(grads, n)], normTol(n), 'folded norm');
  });

  test.each([
    ['NaN', NaN, NaN],
    ['Inf', -Infinity, NaN],
    ['overflowing square', 3e19, Infinity],
  ])('a %s element sets the status and the norm', async (_, bad, want) => {
    const grads = new Rng(2).float32(GRAD_NORM_CHUNK + 9000, -1, 1);
    grads[GRAD_NORM_CHUNK + 5000] = bad; // in the second workgroup's chunk
    const { norm, status } = await gpuNorm(grads);
    expect(norm).toBe(want);
    expect(status).toEqual([1, 1, 0, 0]);
  });
});

interface Ref {
  param: Float64Array;
  m: Float64Array;
  v: Float64Array;
  /** max |grad * clip scale| over the steps: m and v are averages of terms up to gmax, gmax^2 */
  gmax: number;
}

interface State {
  param: Float32Array;
  m: Float32Array;
  v: Float32Array;
}

/**
 * Runs `steps` GPU steps (grad norm, then one AdamW dispatch per range) and the float64
 * reference alongside; returns both final states and the status words.
 */
async function runAdamW(
  P: number,
  ranges: { offset: number; n: number; weightDecay: number }[],
  maxNorm: number,
  stepGrads: Float32Array<ArrayBuffer>[],
  spec: KernelSpec<AdamWProblem> = adamw,
): Promise<{ gpu: State; ref: Ref; init: Float32Array; status: number[] }> {
  const rt = await testRuntime();
  const init = new Rng(P + 1).float32(P, -1, 1);
  const bufs = {
    param: rt.upload(init, 'param'),
    grad: rt.storage(P * 4, 'grad'),
    m: rt.storage(P * 4, 'm'),
    v: rt.storage(P * 4, 'v'),
    norm: rt.storage(4, 'norm'),
    status: rt.upload(new Uint32Array(GRAD_STATUS_WORDS), 'status'),
  };
  const ref: Ref = { param: Float64Array.from(init), m: new Float64Array(P), v: new Float64Array(P), gmax: 0 };
  const kernel = await rt.compile(spec);
  for (let s = 0; s < stepGrads.length; s++) {
    const grads = stepGrads[s]!;
    rt.device.queue.writeBuffer(bufs.grad, 0, grads);
    const rec = rt.record(`adamw step ${s + 1}`);
    const temps = await recordGradNorm(rt, rec, bufs.grad, P, bufs.norm, bufs.status);
    for (const r of ranges) {
      const problem: AdamWProblem = { ...HYPER, ...r, step: s + 1, maxNorm };
      rec.dispatch(kernel, bufs, problem);
    }
    await rec.submit();
    for (const t of temps) rt.pool.release(t);
    const norm = gradNormRef(grads, P);
    if (!Number.isFinite(norm)) continue;
    const gradScale = clipScaleRef(norm, maxNorm);
    for (const g of grads) ref.gmax = Math.max(ref.gmax, Math.abs(g) * gradScale);
    for (const r of ranges) {
      adamwRef(ref.param, grads, ref.m, ref.v, r.offset, r.n, { ...HYPER, weightDecay: r.weightDecay, step: s + 1, gradScale });
    }
  }
  const rec = rt.record('adamw read');
  const outs = [rec.read(bufs.param), rec.read(bufs.m), rec.read(bufs.v), rec.read(bufs.status)];
  await rec.submit();
  const [param, m, v, status] = await Promise.all(outs);
  for (const b of Object.values(bufs)) b.destroy();
  return {
    gpu: { param: new Float32Array(param!), m: new Float32Array(m!), v: new Float32Array(v!) },
    ref,
    init,
    status: Array.from(new Uint32Array(status!)),
  };
}

/**
 * Params: per-step update ~lr with ~1e-6 relative error, params rounded to float32 (6e-8 near 1).
 * m and v: averages whose terms (up to gmax, gmax^2) can cancel, so a few float32 roundings of
 * the largest term (4 ulp: 2.5e-7 * gmax) absolute, plus the clip scale's error relative.
 */
function expectState(gpu: State, ref: Ref, what: string): void {
  expectClose(gpu.param, ref.param, { atol: 2e-7, rtol: 1e-6 }, `${what}: param`);
  expectClose(gpu.m, ref.m, { atol: 2.5e-7 * ref.gmax, rtol: 4e-6 }, `${what}: m`);
  expectClose(gpu.v, ref.v, { atol: 2.5e-7 * ref.gmax ** 2, rtol: 8e-6 }, `${what}: v`);
}

const randomGrads = (P: number, steps: number, seed: number): Float32Array<ArrayBuffer>[] =>
  Array.from({ length: steps }, (_, s) => Float32Array.from(new Rng(seed + s).float32(P, -1, 1)));

describe('AdamW matches its float64 reference', () => {
  const P = 3001;
  const split = [
    { offset: 0, n: 1000, weightDecay: 0.1 },
    { offset: 1000, n: P - 1000, weightDecay: 0 },
  ];
  // |g| ~ sqrt(P / 3) ~ 32: maxNorm 1 clips (scale ~ 0.03), 1e6 does not, 0 disables
  test.each([1, 1e6, 0])('3 steps, decayed and non-decayed ranges, maxNorm=%f', async (maxNorm) => {
    const { gpu, ref } = await runAdamW(P, split, maxNorm, randomGrads(P, 3, 40));
    expectState(gpu, ref, `maxNorm=${maxNorm}`);
  });

  test('2-D folded dispatch (per-dimension limit forced to 2): the folded groups past the range write nothing', async () => {
    const dispatch = (p: AdamWProblem) => linearWorkgroups(p.n, ADAMW_CHUNK, { maxComputeWorkgroupsPerDimension: 2 } as GPUSupportedLimits);
    expect(dispatch({ ...HYPER, offset: 0, n: P, step: 1, maxNorm: 1, weightDecay: 0 })).toEqual([2, 2, 1]); // 3 groups in 4
    const spec = { ...adamw, name: 'adamw_folded', dispatch };
    const { gpu, ref } = await runAdamW(P, [{ offset: 0, n: P, weightDecay: 0.1 }], 1, randomGrads(P, 2, 70), spec);
    expectState(gpu, ref, 'folded');
  });

  test.each([1, 0])('adamw4 (ranges of multiples of 4), 3 steps, decayed and non-decayed ranges, maxNorm=%f', async (maxNorm) => {
    const P4 = 3000;
    const ranges = [
      { offset: 0, n: 1000, weightDecay: 0.1 },
      { offset: 1000, n: 2000, weightDecay: 0 },
    ];
    const { gpu, ref } = await runAdamW(P4, ranges, maxNorm, randomGrads(P4, 3, 80), adamw4);
    expectState(gpu, ref, `adamw4 maxNorm=${maxNorm}`);
  });

  test('adamw4, 2-D folded dispatch (per-dimension limit forced to 2)', async () => {
    const P4 = 2 * ADAMW_CHUNK * 4 + 400; // 3 groups of vec4s, folded into 4
    const dispatch = (p: AdamWProblem) =>
      linearWorkgroups(p.n / 4, ADAMW_CHUNK, { maxComputeWorkgroupsPerDimension: 2 } as GPUSupportedLimits);
    expect(dispatch({ ...HYPER, offset: 0, n: P4, step: 1, maxNorm: 1, weightDecay: 0 })).toEqual([2, 2, 1]);
    const spec = { ...adamw4, name: 'adamw4_folded', dispatch };
    const { gpu, ref } = await runAdamW(P4, [{ offset: 0, n: P4, weightDecay: 0.1 }], 1, randomGrads(P4, 2, 90), spec);
    expectState(gpu, ref, 'adamw4 folded');
  });

  test('selectAdamw takes adamw4 only for ranges of multiples of 4; adamw4 refuses others', () => {
    expect(selectAdamw({ offset: 8, n: 12 }).name).toBe('adamw4');
    expect(selectAdamw({ offset: 8, n: 13 }).name).toBe('adamw');
    expect(selectAdamw({ offset: 6, n: 12 }).name).toBe('adamw');
    expect(() => adamw4.uniforms!({ ...HYPER, offset: 6, n: 12, step: 1, maxNorm: 0, weightDecay: 0 })).toThrow(
      /adamw4: offset=6 and n=12 must be multiples of 4/,
    );
  });

  test('a sub-range leaves everything outside it untouched', async () => {
    const { gpu, ref, init } = await runAdamW(P, [{ offset: 100, n: 2000, weightDecay: 0.05 }], 1, randomGrads(P, 2, 50));
    expectState(gpu, ref, 'sub-range');
    for (const j of [0, 99, 2100, P - 1]) {
      expect(gpu.param[j]).toBe(init[j]);
      expect(gpu.m[j]).toBe(0);
    }
  });

  test('a non-finite gradient skips the step (params, m, v unchanged) and is counted', async () => {
    const grads = randomGrads(P, 3, 60);
    grads[1]![2500] = NaN;
    const { gpu, ref, status } = await runAdamW(P, split, 1, grads);
    expectState(gpu, ref, 'step 2 skipped'); // the reference skips step 2 as well
    expect(status).toEqual([1, 0, 0, 0]); // one non-finite step so far; the last step was fine
  });
});

describe('AdamW reference', () => {
  test('step 1 moves each parameter by lr * (sign(g) + wd * p) (PyTorch AdamW, eps ~ 0)', () => {
    const params = Float64Array.from([0.5, -2, 1]);
    const grads = [0.3, -1e-3, 2];
    const m = new Float64Array(3);
    const v = new Float64Array(3);
    adamwRef(params, grads, m, v, 0, 3, { ...HYPER, eps: 1e-12, weightDecay: 0.1, step: 1, gradScale: 1 });
    expectClose(params, [0.5 - 0.01 * (1 + 0.05), -2 - 0.01 * (-1 - 0.2), 1 - 0.01 * (1 + 0.1)], { atol: 1e-10, rtol: 0 }, 'step 1');
    expectClose(m, [0.03, -1e-4, 0.2], { atol: 1e-15, rtol: 1e-12 }, 'm');
  });

  test('clip scale', () => {
    expect(clipScaleRef(10, 1)).toBeCloseTo(0.1, 6);
    expect(clipScaleRef(0.5, 1)).toBe(1);
    expect(clipScaleRef(10, 0)).toBe(1);
  });
});
