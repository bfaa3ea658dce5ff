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
 * Output stride: a problem may set `ldo` (row stride of out and pre, default N) and `col0` (first
 * column written, default 0), so the forward fills the column block [col0, col0 + N) of a wider
 * (M, ldo) matrix: the LM head of a vocabulary stored in chunks writes each chunk's logits into
 * one (M, V) buffer. The backward's matrix products (./matmul_backward.ts) read dout with the
 * same stride (each chunk's block of dlogits); dbias assumes a dense dout, and checkMatmulProblem
 * refuses a strided problem unless told the caller handles it.
 *
 * Weight storage: f32, or a frozen weight packed as f16 / bf16 (./weight_format.ts), read widened to
 * f32 (MatmulForwardBuffers.weightFormat; each format is its own pipeline, `matmul_forward_tiled_f16`).
 *
 * Both float64 references live here (matmulForwardRef, matmulBackwardRef); the backward kernels
 * are in ./matmul_backward.ts.
 */
import epilogue from '../../shaders/lib/matmul_epilogue.wgsl';
import direct4Wgsl from '../../shaders/matmul_forward_direct4.wgsl';
import forwardWgsl from '../../shaders/matmul_forward.wgsl';
import { SUBGROUP_LANES, subgroupForwardWgsl, subgroupTile, type SubgroupLanes, type SubgroupTile } from './matmul_subgroup';

const wgsl = epilogue + forwardWgsl;
import type { KernelSpec, WorkgroupCount } from '../gpu/kernel';
import type { Bindings, BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { geluScalar } from './gelu';
import { formatName, weightReader, weightReader4, type WeightFormat } from './weight_format';

/** Dims of out (M, N) = inp (M, K) · weight (N, K)^T; the backward kernels use the same problem. */
export interface MatmulProblem {
  M: number;
  K: number;
  N: number;
  /** row stride of out and pre (the backward: of dout), >= col0 + N (default N) */
  ldo?: number;
  /** first column of out and pre written (the backward: of dout read) (default 0) */
  col0?: number;
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

/**
 * tiled: 4x4 outputs per thread, K in workgroup-memory slices (GPUs); direct: 4x4 contiguous
 * outputs per thread read straight from global memory, no barriers (software adapters, where a
 * barrier costs more than a cached load: 1.5-2.8x the tiled kernel on lavapipe and SwiftShader);
 * subgroup4 / subgroup8: direct's layout with the loads shared across a subgroup of 4 or 8 lanes
 * by subgroupBroadcast (./matmul_subgroup.ts; software adapters whose subgroup size is fixed at
 * that, where it falls back to direct for shapes it does not take); naive: one output per thread
 * (the baseline).
 */
export type MatmulStrategy = 'tiled' | 'direct' | 'naive' | SubgroupStrategy;
export type SubgroupStrategy = `subgroup${SubgroupLanes}`;

const STRATEGIES: readonly MatmulStrategy[] = ['tiled', 'direct', 'naive', ...SUBGROUP_LANES.map((l) => `subgroup${l}` as const)];

/** Whether `s` names a strategy (CODERL_MATMUL, the self-check's check names). */
export function isMatmulStrategy(s: string): s is MatmulStrategy {
  return (STRATEGIES as readonly string[]).includes(s);
}

/** The lanes of a subgroup strategy, or null for the others. */
export function subgroupLanes(s: MatmulStrategy): SubgroupLanes | null {
  return s.startsWith('subgroup') ? (Number(s.slice('subgroup'.length)) as SubgroupLanes) : null;
}

/**
 * The subgroup strategy a runtime can run: it has the `subgroups` feature and a fixed subgroup
 * size (adapter info's subgroupMinSize = subgroupMaxSize, so a workgroup of that many invocations
 * is one subgroup) that the kernels are written for; null otherwise.
 */
export function subgroupStrategy(rt: GpuRuntime): SubgroupStrategy | null {
  const { subgroupMinSize: min, subgroupMaxSize: max } = rt.adapterSummary;
  if (!rt.hasFeature('subgroups') || min === undefined || min !== max) return null;
  return (SUBGROUP_LANES as readonly number[]).includes(min) ? (`subgroup${min}` as SubgroupStrategy) : null;
}

/**
 * The strategy for an adapter: on a software adapter the subgroup kernels where it can run them,
 * else direct; tiled on a GPU. CODERL_MATMUL (Node) overrides it, to test a path on an adapter
 * that would not choose it (a subgroup strategy only where the runtime can run it).
 */
export function defaultMatmulStrategy(rt: GpuRuntime): MatmulStrategy {
  const forced = typeof process !== 'undefined' ? process.env?.CODERL_MATMUL : undefined;
  if (forced) {
    if (!isMatmulStrategy(forced)) throw new Error(`CODERL_MATMUL must be ${STRATEGIES.join(', ')}, got '${forced}'`);
    const s = forced;
    if (subgroupLanes(s) && subgroupStrategy(rt) !== s)
      throw new Error(
        `CODERL_MATMUL=${s}: this adapter's subgroups are ${rt.hasFeature('subgroups') ? `${rt.adapterSummary.subgroupMinSize ?? '?'}-${rt.adapterSummary.subgroupMaxSize ?? '?'} lanes` : 'not available'}`,
      );
    return s;
  }
  return rt.adapterSummary.software ? (subgroupStrategy(rt) ?? 'direct') : 'tiled';
}

/** Threads per workgroup (x: columns N, y: rows M); the tiled kernel's tile is 4x that. */
export type MatmulWorkgroup = readonly [number, number];

const MATMUL_BINDINGS = [
  { name: 'out', kind: 'storage' }, // (M, ldo), columns [col0, col0 + N) written
  { name: 'pre', kind: 'storage' }, // (M, ldo) pre-activation when variant.pre (as out), else any other buffer (unused)
  { name: 'inp', kind: 'read-only-storage' }, // (M, K)
  { name: 'weight', kind: 'read-only-storage' }, // (N, K), f32 or packed 16-bit (weightReader)
  { name: 'bias', kind: 'read-only-storage' }, // (N) when variant.bias, else any buffer (unused)
  { name: 'params', kind: 'uniform' },
] as const;

/** 20 bytes: M, K, N, ldo, col0 as u32 (struct Params of the shader). */
export function matmulUniforms(p: MatmulProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.M, p.K, p.N, p.ldo ?? p.N, p.col0 ?? 0]);
}

/**
 * Throws unless M, K, N are positive integers and the output block fits its stride
 * (checkMatmulOutput). A strided output (ldo != N or col0 != 0) is refused unless `strided`
 * says the caller's kernels handle one (the forward and the backward's products do; dbias does not).
 */
export function checkMatmulProblem(p: MatmulProblem, what: string, strided = false): void {
  for (const k of ['M', 'K', 'N'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
  checkMatmulOutput(p, what);
  if (!strided && ((p.ldo ?? p.N) !== p.N || (p.col0 ?? 0) !== 0)) {
    throw new Error(`${what}: assumes a dense (M, N) output; got ldo=${p.ldo}, col0=${p.col0}`);
  }
}

/** Throws unless col0 >= 0 and col0 + N <= ldo (integers), so the column block fits each row of out. */
export function checkMatmulOutput(p: MatmulProblem, what: string): void {
  const ldo = p.ldo ?? p.N;
  const col0 = p.col0 ?? 0;
  if (!Number.isInteger(col0) || col0 < 0) throw new Error(`${what}: col0 must be a non-negative integer, got ${col0}`);
  if (!Number.isInteger(ldo) || ldo < col0 + p.N) throw new Error(`${what}: ldo=${ldo} must be an integer >= col0 + N = ${col0 + p.N}`);
}

function variantConstants(v: MatmulForwardVariant): Record<string, number> {
  if (v.pre && !v.gelu) throw new Error('matmul_forward: the pre-activation output exists only with gelu');
  return { HAS_BIAS: v.bias ? 1 : 0, GELU: v.gelu ? 1 : 0, WRITE_PRE: v.pre ? 1 : 0 };
}

/**
 * The spec of a forward kernel in which each thread computes a `per` x `per` block of out, so a
 * workgroup [wx, wy] covers (per * wy) x (per * wx) outputs (or, with `tile`, [columns, rows] a
 * workgroup); `needsK4`: K must be a multiple of 4.
 */
function forwardSpec(
  name: string,
  source: string,
  entryPoint: string,
  per: number,
  v: MatmulForwardVariant,
  wg: MatmulWorkgroup | readonly [number],
  needsK4 = false,
  tile: readonly [number, number] = [per * wg[0], per * (wg[1] ?? 1)],
): KernelSpec<MatmulProblem> {
  return {
    name,
    wgsl: source,
    entryPoint,
    bindings: MATMUL_BINDINGS,
    workgroupSize: wg,
    constants: variantConstants(v),
    dispatch: (p) => {
      checkMatmulOutput(p, name);
      if (needsK4 && p.K % 4 !== 0) throw new Error(`${name}: K=${p.K} is not a multiple of 4 (use matmul_forward_direct)`);
      return [Math.ceil(p.N / tile[0]), Math.ceil(p.M / tile[1]), 1] satisfies WorkgroupCount;
    },
    uniforms: matmulUniforms,
  };
}

/** Tiled kernel: workgroup [wx, wy] threads computes a (4*wy) x (4*wx) tile of out; the weight stored in `format`. */
export function matmulForwardTiled(
  v: MatmulForwardVariant,
  wg: MatmulWorkgroup = [16, 16],
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  return forwardSpec(formatName('matmul_forward_tiled', format), wgsl + weightReader('weight', 3, format), 'main', 4, v, wg);
}

/** Direct kernel: workgroup [wx, wy] threads computes a (4*wy) x (4*wx) block, each thread 4 x 4 contiguous outputs; the weight stored in `format`. */
export function matmulForwardDirect(
  v: MatmulForwardVariant,
  wg: MatmulWorkgroup = [16, 16],
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  return forwardSpec(formatName('matmul_forward_direct', format), wgsl + weightReader('weight', 3, format), 'direct', 4, v, wg);
}

/**
 * The direct kernel for K a multiple of 4 (shaders/matmul_forward_direct4.wgsl): the input and
 * the weight read four elements a load (on lavapipe 1.4-1.9x the scalar direct kernel).
 */
export function matmulForwardDirect4(
  v: MatmulForwardVariant,
  wg: MatmulWorkgroup = [16, 16],
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  const name = formatName('matmul_forward_direct4', format);
  return forwardSpec(name, epilogue + direct4Wgsl + weightReader4('weight', 3, format), 'main', 4, v, wg, true);
}

/**
 * The subgroup kernel (./matmul_subgroup.ts) for K a multiple of 4: a workgroup is one subgroup
 * of `lanes` invocations (the adapter's fixed subgroup size, or it computes garbage) owning
 * tile.rows * lanes rows and tile.cols * lanes columns.
 */
export function matmulForwardSubgroup(
  v: MatmulForwardVariant,
  lanes: SubgroupLanes,
  tile: SubgroupTile,
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  const name = formatName(`matmul_forward_sg${lanes}_${tile.rows}x${tile.cols}`, format);
  const source = 'enable subgroups;\n' + epilogue + subgroupForwardWgsl(lanes, tile) + weightReader4('weight', 3, format);
  return forwardSpec(name, source, 'main', 1, v, [lanes], true, [lanes * tile.cols, lanes * tile.rows]);
}

/** Naive kernel: one output per thread, workgroups of 16 x 16 outputs; the weight stored in `format`. */
export function matmulForwardNaive(
  v: MatmulForwardVariant,
  wg: MatmulWorkgroup = [16, 16],
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  // its own name: the pipeline cache key does not include the entry point
  return forwardSpec(formatName('matmul_forward_naive', format), wgsl + weightReader('weight', 3, format), 'naive', 1, v, wg);
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

/** Kernel selection: the spec to run for a shape, variant, strategy (default tiled) and weight format. */
export function selectMatmulForward(
  p: MatmulProblem,
  v: MatmulForwardVariant,
  strategy: MatmulStrategy = 'tiled',
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  if (strategy === 'naive') return matmulForwardNaive(v, [16, 16], format);
  const lanes = subgroupLanes(strategy);
  if (lanes && p.K % 4 === 0) return matmulForwardSubgroup(v, lanes, subgroupTile('forward', lanes, p.M), format);
  if (strategy === 'direct' || lanes)
    return p.K % 4 === 0 ? matmulForwardDirect4(v, matmulWorkgroup(p), format) : matmulForwardDirect(v, matmulWorkgroup(p), format);
  return matmulForwardTiled(v, matmulWorkgroup(p), format);
}

/** The GPU buffers of one forward; bias and pre are optional (see the variant). */
export interface MatmulForwardBuffers {
  out: BufferBinding; // (M, ldo), columns [col0, col0 + N) written (dense (M, N) by default)
  pre?: BufferBinding | null; // (M, ldo) as out, only with gelu
  inp: BufferBinding; // (M, K)
  weight: BufferBinding; // (N, K)
  /** how `weight` is stored (default f32; ./weight_format.ts) */
  weightFormat?: WeightFormat;
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
  checkMatmulProblem(p, 'matmul_forward', true);
  const spec = selectMatmulForward(p, matmulForwardVariant(b, !!opts.gelu), opts.strategy ?? defaultMatmulStrategy(rt), b.weightFormat);
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
  // The float64 CPU model's hot loop (the CPU backend trains and samples with it): outputs are
  // computed in blocks of 4 rows x 2 columns, so each loaded element of inp and weight serves
  // several products (about 1.9x the speed of one dot product at a time in V8). Each output is
  // one running sum over k in order; blocking changes which outputs share loads, not the sums.
  const M4 = M - (M % 4);
  const N2 = N - (N % 2);
  let m = 0;
  for (; m < M4; m += 4) {
    const a0 = m * K;
    const a1 = a0 + K;
    const a2 = a1 + K;
    const a3 = a2 + K;
    const o0 = m * N;
    let n = 0;
    for (; n < N2; n += 2) {
      const w0 = n * K;
      const w1 = w0 + K;
      let s00 = 0,
        s01 = 0,
        s10 = 0,
        s11 = 0,
        s20 = 0,
        s21 = 0,
        s30 = 0,
        s31 = 0;
      for (let k = 0; k < K; k++) {
        const x0 = weight[w0 + k]!;
        const x1 = weight[w1 + k]!;
        const i0 = inp[a0 + k]!;
        const i1 = inp[a1 + k]!;
        const i2 = inp[a2 + k]!;
        const i3 = inp[a3 + k]!;
        s00 += i0 * x0;
        s01 += i0 * x1;
        s10 += i1 * x0;
        s11 += i1 * x1;
        s20 += i2 * x0;
        s21 += i2 * x1;
        s30 += i3 * x0;
        s31 += i3 * x1;
      }
      const b0 = bias ? bias[n]! : 0;
      const b1 = bias ? bias[n + 1]! : 0;
      out[o0 + n] = b0 + s00;
      out[o0 + n + 1] = b1 + s01;
      out[o0 + N + n] = b0 + s10;
      out[o0 + N + n + 1] = b1 + s11;
      out[o0 + 2 * N + n] = b0 + s20;
      out[o0 + 2 * N + n + 1] = b1 + s21;
      out[o0 + 3 * N + n] = b0 + s30;
      out[o0 + 3 * N + n + 1] = b1 + s31;
    }
    for (; n < N; n++) for (let r = 0; r < 4; r++) out[o0 + r * N + n] = dot(inp, a0 + r * K, weight, n * K, K, bias ? bias[n]! : 0);
  }
  for (; m < M; m++) for (let n = 0; n < N; n++) out[m * N + n] = dot(inp, m * K, weight, n * K, K, bias ? bias[n]! : 0);
}

/** b0 + sum_k x[a + k] * y[w + k], one running sum in order (the blocked loop's edge rows and columns) */
function dot(x: ArrayLike<number>, a: number, y: ArrayLike<number>, w: number, K: number, b0: number): number {
  let s = 0;
  for (let k = 0; k < K; k++) s += x[a + k]! * y[w + k]!;
  return b0 + s;
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
  dweight: Float64Array | null,
  dbias: Float64Array | null,
  dout: ArrayLike<number>,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  M: number,
  K: number,
  N: number,
): void {
  // Rows are taken 4 at a time, so each weight element loaded serves 4 rows of dinp and each
  // dweight element is loaded and stored once per 4 rows (about 1.5-2x the speed of a row at a
  // time in V8). Entries of dout that are 0 in all 4 rows (masked positions of the LM head) are
  // skipped: they add nothing.
  if (!dweight) {
    // a frozen weight (LoRA's base): only the input's gradient
    matmulBackwardInputRef(dinp, dbias, dout, weight, M, K, N);
    return;
  }
  const M4 = M - (M % 4);
  let m = 0;
  for (; m < M4; m += 4) {
    const a0 = m * K;
    const a1 = a0 + K;
    const a2 = a1 + K;
    const a3 = a2 + K;
    const o = m * N;
    for (let n = 0; n < N; n++) {
      const d0 = dout[o + n]!;
      const d1 = dout[o + N + n]!;
      const d2 = dout[o + 2 * N + n]!;
      const d3 = dout[o + 3 * N + n]!;
      if (d0 === 0 && d1 === 0 && d2 === 0 && d3 === 0) continue;
      if (dbias) dbias[n]! += d0 + d1 + d2 + d3;
      const w = n * K;
      for (let k = 0; k < K; k++) {
        const x = weight[w + k]!;
        dinp[a0 + k]! += d0 * x;
        dinp[a1 + k]! += d1 * x;
        dinp[a2 + k]! += d2 * x;
        dinp[a3 + k]! += d3 * x;
        dweight[w + k]! += d0 * inp[a0 + k]! + d1 * inp[a1 + k]! + d2 * inp[a2 + k]! + d3 * inp[a3 + k]!;
      }
    }
  }
  for (; m < M; m++) {
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

/**
 * matmulBackwardRef without a weight gradient: dinp (M, K) += dout (M, N) . weight (N, K), and
 * dbias. Blocks of 4 rows by 2 output columns, so each dinp element is loaded and stored once per
 * 2 columns and each weight element serves 4 rows; a block whose dout is all 0 is skipped.
 */
function matmulBackwardInputRef(
  dinp: Float64Array,
  dbias: Float64Array | null,
  dout: ArrayLike<number>,
  weight: ArrayLike<number>,
  M: number,
  K: number,
  N: number,
): void {
  const M4 = M - (M % 4);
  const N2 = N - (N % 2);
  let m = 0;
  for (; m < M4; m += 4) {
    const a0 = m * K;
    const a1 = a0 + K;
    const a2 = a1 + K;
    const a3 = a2 + K;
    const o0 = m * N;
    const o1 = o0 + N;
    const o2 = o1 + N;
    const o3 = o2 + N;
    let n = 0;
    for (; n < N2; n += 2) {
      const d00 = dout[o0 + n]!;
      const d10 = dout[o1 + n]!;
      const d20 = dout[o2 + n]!;
      const d30 = dout[o3 + n]!;
      const d01 = dout[o0 + n + 1]!;
      const d11 = dout[o1 + n + 1]!;
      const d21 = dout[o2 + n + 1]!;
      const d31 = dout[o3 + n + 1]!;
      if (d00 === 0 && d10 === 0 && d20 === 0 && d30 === 0 && d01 === 0 && d11 === 0 && d21 === 0 && d31 === 0) continue;
      if (dbias) {
        dbias[n]! += d00 + d10 + d20 + d30;
        dbias[n + 1]! += d01 + d11 + d21 + d31;
      }
      const w0 = n * K;
      const w1 = w0 + K;
      for (let k = 0; k < K; k++) {
        const x0 = weight[w0 + k]!;
        const x1 = weight[w1 + k]!;
        dinp[a0 + k]! += d00 * x0 + d01 * x1;
        dinp[a1 + k]! += d10 * x0 + d11 * x1;
        dinp[a2 + k]! += d20 * x0 + d21 * x1;
        dinp[a3 + k]! += d30 * x0 + d31 * x1;
      }
    }
    for (; n < N; n++) {
      const d0 = dout[o0 + n]!;
      const d1 = dout[o1 + n]!;
      const d2 = dout[o2 + n]!;
      const d3 = dout[o3 + n]!;
      if (d0 === 0 && d1 === 0 && d2 === 0 && d3 === 0) continue;
      if (dbias) dbias[n]! += d0 + d1 + d2 + d3;
      const w = n * K;
      for (let k = 0; k < K; k++) {
        const x = weight[w + k]!;
        dinp[a0 + k]! += d0 * x;
        dinp[a1 + k]! += d1 * x;
        dinp[a2 + k]! += d2 * x;
        dinp[a3 + k]! += d3 * x;
      }
    }
  }
  for (; m < M; m++) {
    const a = m * K;
    for (let n = 0; n < N; n++) {
      const d = dout[m * N + n]!;
      if (d === 0) continue;
      if (dbias) dbias[n]! += d;
      const w = n * K;
      for (let k = 0; k < K; k++) dinp[a + k]! += d * weight[w + k]!;
    }
  }
}
