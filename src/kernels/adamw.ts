/**
 * Global gradient norm (multi-pass, stays on the GPU) and AdamW with norm clipping
 * (shaders/grad_norm.wgsl, shaders/grad_norm_finish.wgsl, shaders/adamw.wgsl; the middle passes
 * reuse shaders/reduce_sum.wgsl).
 * Shape legend: N gradient elements, P parameters (flat buffers of params, grads, m, v),
 * G = ceil(N / (WG * ITEMS)) partial sums.
 *
 * The status buffer is GRAD_STATUS_WORDS u32 (it needs COPY_DST; zero it once at start):
 *   [STATUS_NONFINITE_STEPS] non-finite steps since the trainer last cleared the word (sticky:
 *                            read it on logging steps, then clear it with rec.clear(status, 0, 4))
 *   [STATUS_NONFINITE_NOW]   1 when the current step's gradient has a NaN/Inf element or its sum
 *                            of squares overflows; AdamW then skips the update (params, m, v unchanged)
 *   [2], [3]                 reserved, 0
 * A skipped step still counts for the caller's bias-correction `step` (the CPU does not know about
 * the skip without a readback); PyTorch's GradScaler skip is the same.
 */
import gradNormWgsl from '../../shaders/grad_norm.wgsl';
import finishWgsl from '../../shaders/grad_norm_finish.wgsl';
import adamwWgsl from '../../shaders/adamw.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import type { Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { reduceSumPass } from './reduce_sum';

export const GRAD_STATUS_WORDS = 4;
export const STATUS_NONFINITE_STEPS = 0;
export const STATUS_NONFINITE_NOW = 1;

export interface GradNormProblem {
  n: number;
}

const WG = 256;
const ITEMS = 64; // grad_norm: elements per invocation (fewer workgroups, fewer reduction barriers)
/** Gradient elements one workgroup of the squares pass sums into one partial. */
export const GRAD_NORM_CHUNK = WG * ITEMS;
const ADAMW_ITEMS = 4; // adamw: elements per invocation (the norm and status read once)
/** Parameters one workgroup of adamw updates. */
export const ADAMW_CHUNK = WG * ADAMW_ITEMS;

/** (N) -> (G) sums of squares; sets status[1] on a NaN/Inf element. */
export const gradNormSquares: KernelSpec<GradNormProblem> = {
  name: 'grad_norm',
  wgsl: gradNormWgsl,
  bindings: [
    { name: 'grads', kind: 'read-only-storage' }, // (N) f32
    { name: 'partial', kind: 'storage' }, // (G) f32
    { name: 'status', kind: 'storage' }, // (4) u32
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  constants: { ITEMS },
  dispatch: (p, limits) => linearWorkgroups(p.n, GRAD_NORM_CHUNK, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

/** (1) sum of squares -> (1) norm; updates status[0] and status[1]. One invocation. */
export const gradNormFinish: KernelSpec<Record<string, never>> = {
  name: 'grad_norm_finish',
  wgsl: finishWgsl,
  bindings: [
    { name: 'sumsq', kind: 'read-only-storage' }, // (1) f32
    { name: 'norm', kind: 'storage' }, // (1) f32
    { name: 'status', kind: 'storage' }, // (4) u32
  ],
  workgroupSize: [1],
  dispatch: () => [1, 1, 1],
};

/**
 * Records the global L2 norm of grads[0, n) into norm[0] (a storage buffer of >= 4 bytes) and
 * the status words, without a readback: clear status[1], sums of squares, reduce_sum passes
 * down to one value, finish. Returns pooled temporaries to release after the submit.
 * `squaresSpec` must keep gradNormSquares' chunk of WG * ITEMS elements per workgroup.
 */
export async function recordGradNorm(
  rt: GpuRuntime,
  rec: Recorder,
  grads: GPUBuffer,
  n: number,
  norm: GPUBuffer,
  status: GPUBuffer,
  squaresSpec: KernelSpec<GradNormProblem> = gradNormSquares,
): Promise<GPUBuffer[]> {
  if (!Number.isInteger(n) || n < 1) throw new Error(`grad_norm: need at least one element, got n=${n}`);
  const squares = await rt.compile(squaresSpec);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
  rec.clear(status, 4 * STATUS_NONFINITE_NOW, 4);
  const len = Math.ceil(n / (WG * ITEMS));
  const src = rt.pool.acquire(len * 4, usage, 'grad norm partials');
  rec.dispatch(squares, { grads, partial: src, status }, { n });
  return [src, ...(await recordNormFinish(rt, rec, src, len, norm, status))];
}

/**
 * recordGradNorm over several buffers, one norm of them all (the gradients of a model kept one
 * buffer per tensor, as the imported decoders' are: a slab of them all would exceed one storage
 * binding). Each tensor's squares pass writes its partial sums into its own range of one partials
 * buffer, at offsets aligned to minStorageBufferOffsetAlignment (the gaps cleared to zero); the
 * reduce passes and the finish then run once over that buffer. Returns pooled temporaries to
 * release after the submit.
 */
export async function recordGradNormOf(
  rt: GpuRuntime,
  rec: Recorder,
  tensors: readonly { buffer: GPUBuffer; n: number }[],
  norm: GPUBuffer,
  status: GPUBuffer,
): Promise<GPUBuffer[]> {
  if (!tensors.length) throw new Error('grad_norm: no tensor');
  for (const t of tensors)
    if (!Number.isInteger(t.n) || t.n < 1) throw new Error(`grad_norm: ${t.buffer.label}: need at least one element, got n=${t.n}`);
  const squares = await rt.compile(gradNormSquares);
  const align = rt.limits.minStorageBufferOffsetAlignment / 4; // floats
  const ranges: [number, number][] = []; // [offset, G] per tensor, in floats
  let len = 0;
  for (const t of tensors) {
    const G = Math.ceil(t.n / (WG * ITEMS));
    ranges.push([len, G]);
    len += Math.ceil(G / align) * align;
  }
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const src = rt.pool.acquire(len * 4, usage, 'grad norm partials');
  rec.clear(status, 4 * STATUS_NONFINITE_NOW, 4).clear(src, 0, len * 4);
  tensors.forEach((t, i) => {
    const [offset, G] = ranges[i]!;
    rec.dispatch(squares, { grads: t.buffer, partial: { buffer: src, offset: offset * 4, size: G * 4 }, status }, { n: t.n });
  });
  return [src, ...(await recordNormFinish(rt, rec, src, len, norm, status))];
}

/** reduce_sum passes over the (len) partial sums in `src` down to one, then the finish; returns the pooled temporaries. */
async function recordNormFinish(
  rt: GpuRuntime,
  rec: Recorder,
  first: GPUBuffer,
  n: number,
  norm: GPUBuffer,
  status: GPUBuffer,
): Promise<GPUBuffer[]> {
  const [reduce, finish] = await Promise.all([rt.compile(reduceSumPass), rt.compile(gradNormFinish)]);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
  const temporaries: GPUBuffer[] = [];
  let src = first;
  let len = n;
  while (len > 1) {
    const outLen = Math.ceil(len / reduceSumPass.workgroupSize[0]);
    const dst = rt.pool.acquire(outLen * 4, usage, 'grad norm partials');
    temporaries.push(dst);
    rec.dispatch(reduce, { inp: src, out: dst }, { n: len });
    src = dst;
    len = outLen;
  }
  rec.dispatch(finish, { sumsq: src, norm, status }, {});
  return temporaries;
}

export interface AdamWProblem {
  /** first element of the sub-range of the flat buffers */
  offset: number;
  /** elements in the sub-range */
  n: number;
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** decoupled weight decay (0 for biases, norms, embeddings as the caller decides) */
  weightDecay: number;
  /** 1-based optimizer step, for the bias corrections */
  step: number;
  /** clip the global norm to this; <= 0 disables clipping */
  maxNorm: number;
}

function adamwSpec(four: boolean): KernelSpec<AdamWProblem> {
  const name = four ? 'adamw4' : 'adamw';
  return {
    name,
    wgsl: adamwWgsl,
    entryPoint: four ? 'main4' : 'main',
    bindings: [
      { name: 'param', kind: 'storage' }, // (P) f32
      { name: 'grad', kind: 'read-only-storage' }, // (P) f32
      { name: 'm', kind: 'storage' }, // (P) f32
      { name: 'v', kind: 'storage' }, // (P) f32
      { name: 'norm', kind: 'read-only-storage' }, // (1) f32, from recordGradNorm
      { name: 'status', kind: 'read-only-storage' }, // (4) u32, from recordGradNorm
      { name: 'opts', kind: 'uniform' },
    ],
    workgroupSize: [WG],
    constants: { ITEMS: ADAMW_ITEMS },
    dispatch: (p, limits) => linearWorkgroups(four ? p.n / 4 : p.n, ADAMW_CHUNK, limits),
    uniforms: (p) => {
      if (!Number.isInteger(p.step) || p.step < 1) throw new Error(`adamw: step must be a positive integer, got ${p.step}`);
      if (!Number.isInteger(p.offset) || p.offset < 0 || !Number.isInteger(p.n) || p.n < 0)
        throw new Error(`adamw: bad range offset=${p.offset} n=${p.n}`);
      if (four && (p.offset % 4 !== 0 || p.n % 4 !== 0))
        throw new Error(`adamw4: offset=${p.offset} and n=${p.n} must be multiples of 4 (use adamw)`);
      const u = new DataView(new ArrayBuffer(48));
      u.setUint32(0, p.offset, true);
      u.setUint32(4, p.n, true);
      const f = [p.lr, p.beta1, p.beta2, p.eps, p.weightDecay, 1 - p.beta1 ** p.step, 1 - p.beta2 ** p.step, p.maxNorm];
      f.forEach((x, i) => u.setFloat32(8 + 4 * i, x, true));
      return new Uint8Array(u.buffer);
    },
  };
}

/** One AdamW step over [offset, offset + n), clipping with the norm buffer; skipped when status[1] != 0. */
export const adamw: KernelSpec<AdamWProblem> = adamwSpec(false);

/** adamw four elements a load: offset and n multiples of 4. */
export const adamw4: KernelSpec<AdamWProblem> = adamwSpec(true);

/** adamw4 where the range allows it, else adamw. */
export function selectAdamw(p: Pick<AdamWProblem, 'offset' | 'n'>): KernelSpec<AdamWProblem> {
  return p.offset % 4 === 0 && p.n % 4 === 0 ? adamw4 : adamw;
}

/** float64 reference: the L2 norm of grads[0, n) (NaN/Inf when an element is). */
export function gradNormRef(grads: ArrayLike<number>, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += grads[i]! * grads[i]!;
  return Math.sqrt(s);
}

/** The clip scale AdamW applies: min(1, maxNorm / (norm + 1e-6)), or 1 when maxNorm <= 0. */
export function clipScaleRef(norm: number, maxNorm: number): number {
  return maxNorm > 0 ? Math.min(1, maxNorm / (norm + 1e-6)) : 1;
}

/**
 * float64 reference of one AdamW step over [offset, offset + n) with g = grads * gradScale
 * (gradScale = clipScaleRef(norm, maxNorm)). The caller skips the call when the norm is not
 * finite, as the GPU does.
 */
export function adamwRef(
  params: Float64Array,
  grads: ArrayLike<number>,
  m: Float64Array,
  v: Float64Array,
  offset: number,
  n: number,
  opts: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; step: number; gradScale: number },
): void {
  const { lr, beta1, beta2, eps, weightDecay, step, gradScale } = opts;
  const bc1 = 1 - beta1 ** step;
  const bc2 = 1 - beta2 ** step;
  for (let j = offset; j < offset + n; j++) {
    const g = grads[j]! * gradScale;
    m[j] = beta1 * m[j]! + (1 - beta1) * g;
    v[j] = beta2 * v[j]! + (1 - beta2) * g * g;
    const mhat = m[j]! / bc1;
    const vhat = v[j]! / bc2;
    params[j] = params[j]! - lr * (mhat / (Math.sqrt(vhat) + eps) + weightDecay * params[j]!);
  }
}
