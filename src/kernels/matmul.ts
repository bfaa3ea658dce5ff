/**
 * Matmul forward: out (M, N) = act(inp (M, K) · weight (N, K)^T + bias (N)), llm.c's convention
 * (weight is (OC, C)). Shaders: shaders/matmul_forward.wgsl (entry points `main` tiled, `naive`).
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * Here M = BT rows, K = C inner, N = OC columns. All tensors row-major f32.
 *
 * Variants are override constants (bias on/off, fused GELU, pre-activation output) and the tile
 * (a workgroup of WG_X x WG_Y threads computes a 4*WG_Y x 4*WG_X tile). Which one runs for which
 * shape is decided by `selectMatmulForward`, apart from the specs.
 *
 * Both float64 references live here (matmulForwardRef, matmulBackwardRef); the backward kernels
 * are in ./matmul_backward.ts.
 */
import wgsl from '../../shaders/matmul_forward.wgsl';
import type { KernelSpec, WorkgroupCount } from '../gpu/kernel';
import type { Bindings, BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { geluScalar } from './gelu';

/** Dims of out (M, N) = inp (M, K) · weight (N, K)^T; the backward kernels use the same problem. */
export interface MatmulProblem {
  M: number;
  K: number;
  N: number;
}

/** What the forward computes besides the product. */
export interface MatmulForwardVariant {
  /** add bias (N) */
  bias: boolean;
  /** apply the GPT-2 tanh GELU */
  gelu: boolean;
  /** also write the pre-activation (needs gelu; GELU's backward reads it) */
  pre: boolean;
}

/** Tiled (4x4 outputs per thread, shared-memory K slices) or one output per thread. */
export type MatmulStrategy = 'tiled' | 'naive';

/** Threads per workgroup (x: columns N, y: rows M); the tiled kernel's tile is 4x that. */
export type MatmulWorkgroup = readonly [number, number];

const MATMUL_BINDINGS = [
  { name: 'out', kind: 'storage' }, // (M, N)
  { name: 'pre', kind: 'storage' }, // (M, N) pre-activation when variant.pre, else any other buffer (unused)
  { name: 'inp', kind: 'read-only-storage' }, // (M, K)
  { name: 'weight', kind: 'read-only-storage' }, // (N, K)
  { name: 'bias', kind: 'read-only-storage' }, // (N) when variant.bias, else any buffer (unused)
  { name: 'params', kind: 'uniform' },
] as const;

/** 12 bytes: M, K, N as u32 (struct Params of the shader). */
export function matmulUniforms(p: MatmulProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.M, p.K, p.N]);
}

export function checkMatmulProblem(p: MatmulProblem, what: string): void {
  for (const k of ['M', 'K', 'N'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
}

function variantConstants(v: MatmulForwardVariant): Record<string, number> {
  if (v.pre && !v.gelu) throw new Error('matmul_forward: the pre-activation output exists only with gelu');
  return { HAS_BIAS: v.bias ? 1 : 0, GELU: v.gelu ? 1 : 0, WRITE_PRE: v.pre ? 1 : 0 };
}

/** Tiled kernel: workgroup [wx, wy] threads computes a (4*wy) x (4*wx) tile of out. */
export function matmulForwardTiled(v: MatmulForwardVariant, wg: MatmulWorkgroup = [16, 16]): KernelSpec<MatmulProblem> {
  const [wx, wy] = wg;
  return {
    name: 'matmul_forward_tiled',
    wgsl,
    entryPoint: 'main',
    bindings: MATMUL_BINDINGS,
    workgroupSize: [wx, wy],
    constants: variantConstants(v),
    dispatch: (p) => [Math.ceil(p.N / (4 * wx)), Math.ceil(p.M / (4 * wy)), 1] satisfies WorkgroupCount,
    uniforms: matmulUniforms,
  };
}

/** Naive kernel: one output per thread, workgroups of 16 x 16 outputs. */
export function matmulForwardNaive(v: MatmulForwardVariant, wg: MatmulWorkgroup = [16, 16]): KernelSpec<MatmulProblem> {
  const [wx, wy] = wg;
  return {
    name: 'matmul_forward_naive', // its own name: the pipeline cache key does not include the entry point
    wgsl,
    entryPoint: 'naive',
    bindings: MATMUL_BINDINGS,
    workgroupSize: [wx, wy],
    constants: variantConstants(v),
    dispatch: (p) => [Math.ceil(p.N / wx), Math.ceil(p.M / wy), 1] satisfies WorkgroupCount,
    uniforms: matmulUniforms,
  };
}

/**
 * The tile for a shape: 64 columns per workgroup always; 64, 32 or 16 rows, the smallest that
 * covers M (few rows, as in generation with one token per sequence, waste less of the tile).
 */
export function matmulWorkgroup(p: MatmulProblem): MatmulWorkgroup {
  if (p.M <= 16) return [16, 4];
  if (p.M <= 32) return [16, 8];
  return [16, 16];
}

/** Kernel selection: the spec to run for a shape, variant and strategy (default tiled). */
export function selectMatmulForward(
  p: MatmulProblem,
  v: MatmulForwardVariant,
  strategy: MatmulStrategy = 'tiled',
): KernelSpec<MatmulProblem> {
  return strategy === 'naive' ? matmulForwardNaive(v) : matmulForwardTiled(v, matmulWorkgroup(p));
}

/** The GPU buffers of one forward; bias and pre are optional (see the variant). */
export interface MatmulForwardBuffers {
  out: BufferBinding; // (M, N)
  pre?: BufferBinding | null; // (M, N), only with gelu
  inp: BufferBinding; // (M, K)
  weight: BufferBinding; // (N, K)
  bias?: BufferBinding | null; // (N)
}

/** The variant the buffers ask for. */
export function matmulForwardVariant(b: MatmulForwardBuffers, gelu: boolean): MatmulForwardVariant {
  return { bias: !!b.bias, gelu, pre: !!b.pre };
}

/**
 * Bindings for a forward, with stand-ins for the unused ones: the weight again for a missing bias
 * (read-only bindings may alias), a 4-byte scratch buffer for a missing pre (writable bindings
 * may not alias `out`).
 */
export function matmulForwardBindings(rt: GpuRuntime, b: MatmulForwardBuffers): Bindings {
  return { out: b.out, pre: b.pre ?? scratchBuffer(rt), inp: b.inp, weight: b.weight, bias: b.bias ?? b.weight };
}

/** Records out = act(inp · weight^T + bias): selects the kernel, compiles (cached) and dispatches. */
export async function recordMatmulForward(
  rt: GpuRuntime,
  rec: Recorder,
  b: MatmulForwardBuffers,
  p: MatmulProblem,
  opts: { gelu?: boolean; strategy?: MatmulStrategy } = {},
): Promise<void> {
  checkMatmulProblem(p, 'matmul_forward');
  const spec = selectMatmulForward(p, matmulForwardVariant(b, !!opts.gelu), opts.strategy);
  rec.dispatch(await rt.compile(spec), matmulForwardBindings(rt, b), p);
}

const scratch = new WeakMap<GpuRuntime, { buffer: GPUBuffer; generation: number }>();

/** A 4-byte storage buffer per runtime (and device generation) to fill unused writable bindings. */
export function scratchBuffer(rt: GpuRuntime): GPUBuffer {
  const s = scratch.get(rt);
  if (s && s.generation === rt.generation) return s.buffer;
  const buffer = rt.storage(4, 'unused binding');
  scratch.set(rt, { buffer, generation: rt.generation });
  return buffer;
}

/** float64 reference: out (M, N) = inp (M, K) · weight (N, K)^T + bias (N). */
export function matmulForwardRef(
  out: Float64Array,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  bias: ArrayLike<number> | null,
  M: number,
  K: number,
  N: number,
): void {
  // Four partial sums per dot product: the float64 CPU model's hot loop (the CPU backend trains
  // with it), and the result differs from a single running sum only by rounding (~1e-16).
  const K4 = K - (K % 4);
  for (let m = 0; m < M; m++) {
    const a = m * K;
    for (let n = 0; n < N; n++) {
      const w = n * K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let k = 0;
      for (; k < K4; k += 4) {
        s0 += inp[a + k]! * weight[w + k]!;
        s1 += inp[a + k + 1]! * weight[w + k + 1]!;
        s2 += inp[a + k + 2]! * weight[w + k + 2]!;
        s3 += inp[a + k + 3]! * weight[w + k + 3]!;
      }
      for (; k < K; k++) s0 += inp[a + k]! * weight[w + k]!;
      out[m * N + n] = (bias ? bias[n]! : 0) + (s0 + s1 + (s2 + s3));
    }
  }
}

/** float64 reference of the fused variants: out = gelu(pre) (or pre), pre = inp · weight^T + bias. */
export function matmulForwardFusedRef(
  out: Float64Array,
  pre: Float64Array | null,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  bias: ArrayLike<number> | null,
  M: number,
  K: number,
  N: number,
  gelu: boolean,
): void {
  const p = pre ?? new Float64Array(M * N);
  matmulForwardRef(p, inp, weight, bias, M, K, N);
  for (let i = 0; i < M * N; i++) out[i] = gelu ? geluScalar(p[i]!) : p[i]!;
}

/**
 * float64 reference (accumulates): the backward of
 *   out[m, n] = bias[n] + sum_k inp[m, k] * weight[n, k]
 * dinp[m, k] += sum_n dout[m, n] * weight[n, k]; dweight[n, k] += sum_m dout[m, n] * inp[m, k];
 * dbias[n] += sum_m dout[m, n].
 */
export function matmulBackwardRef(
  dinp: Float64Array,
  dweight: Float64Array,
  dbias: Float64Array | null,
  dout: ArrayLike<number>,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  M: number,
  K: number,
  N: number,
): void {
  // Rows of dout that are exactly 0 (masked positions of the LM head) are skipped: they add nothing.
  for (let m = 0; m < M; m++) {
    const a = m * K;
    for (let n = 0; n < N; n++) {
      const d = dout[m * N + n]!;
      if (d === 0) continue;
      if (dbias) dbias[n]! += d;
      const w = n * K;
      for (let k = 0; k < K; k++) {
        dinp[a + k]! += d * weight[w + k]!;
        dweight[w + k]! += d * inp[a + k]!;
      }
    }
  }
}
