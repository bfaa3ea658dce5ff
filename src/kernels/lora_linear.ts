/**
 * LoRA on a block of a linear layer's output columns, forward and backward on the GPU, with
 * float64 references (shaders/lora_linear.wgsl, entry points `add`, `dxa`, `db`). PEFT's
 * `Linear.forward` adds scale * B(A x) after the base layer; the engine packs several modules
 * into one matrix (q|k|v, gate|up: src/model/lora.ts), so a module owns the columns
 * [col0, col0 + N) of that matmul's output:
 *
 *   xa = inp · A^T                             (M, r)  the matmul forward (kernels/matmul.ts)
 *   out[:, col0 : col0 + N] += scale * xa · B^T        `add` (the matmul writes, it cannot add)
 *
 * Backward, from dout (M, ldo) of the base layer's output:
 *   dxa = scale * dout[:, block] · B           (M, r)  `dxa`, written
 *   dB += scale * dout[:, block]^T · xa        (N, r)  `db`
 *   dA += dxa^T · inp, dinp += dxa · A                 the matmul backward with dout = dxa
 *
 * Shape legend: M rows (= BT), K the layer's input width (in_features), r the rank, N the
 * module's out_features, ldo the width of the packed output (W for q|k|v, 2F for gate|up; N when
 * the module is the whole layer), col0 the block's first column; scale = alpha / r. A (r, K) and
 * B (N, r) as PEFT stores lora_A.weight and lora_B.weight. Row-major f32.
 */
import wgsl from '../../shaders/lora_linear.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { matmulForwardRef, recordMatmulForward } from './matmul';
import { recordMatmulBackward } from './matmul_backward';

/** One adapter on rows M of a layer K -> ldo, adding to the columns [col0, col0 + N). */
export interface LoraLinearProblem {
  M: number;
  K: number;
  r: number;
  N: number;
  ldo: number;
  col0: number;
  scale: number;
}

const WG = 256;

/** Throws unless the sizes are positive integers and the block fits each row of out. */
export function checkLoraProblem(p: LoraLinearProblem, what = 'lora_linear'): void {
  for (const k of ['M', 'K', 'r', 'N', 'ldo'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
  if (!Number.isInteger(p.col0) || p.col0 < 0 || p.col0 + p.N > p.ldo)
    throw new Error(`${what}: the block [${p.col0}, ${p.col0 + p.N}) does not fit rows of ldo = ${p.ldo}`);
  if (!Number.isFinite(p.scale)) throw new Error(`${what}: scale must be finite, got ${p.scale}`);
}

/** 24 bytes: M, r, N, ldo, col0 as u32, scale as f32 (struct Params of the shader). */
function uniforms(p: LoraLinearProblem): Uint8Array<ArrayBuffer> {
  const u = new DataView(new ArrayBuffer(24));
  [p.M, p.r, p.N, p.ldo, p.col0].forEach((v, i) => u.setUint32(4 * i, v, true));
  u.setFloat32(20, p.scale, true);
  return new Uint8Array(u.buffer);
}

function spec(
  entryPoint: 'add' | 'dxa' | 'db',
  names: readonly [string, string, string],
  items: (p: LoraLinearProblem) => number,
): KernelSpec<LoraLinearProblem> {
  return {
    name: `lora_linear_${entryPoint}`,
    wgsl,
    entryPoint,
    bindings: [
      { name: names[0], kind: 'storage' },
      { name: names[1], kind: 'read-only-storage' },
      { name: names[2], kind: 'read-only-storage' },
      { name: 'params', kind: 'uniform' },
    ],
    workgroupSize: [WG],
    dispatch: (p, limits) => {
      checkLoraProblem(p, `lora_linear_${entryPoint}`);
      return linearWorkgroups(items(p), WG, limits);
    },
    uniforms,
  };
}

/** out (M, ldo) columns [col0, col0 + N) += scale * xa (M, r) · B (N, r)^T. */
export const loraAdd = spec('add', ['out', 'xa', 'B'], (p) => p.M * p.N);
/** dxa (M, r) = scale * dout (M, ldo)[:, block] · B (N, r), written. */
export const loraDxa = spec('dxa', ['dxa', 'dout', 'B'], (p) => p.M * p.r);
/** dB (N, r) += scale * dout (M, ldo)[:, block]^T · xa (M, r). */
export const loraDb = spec('db', ['dB', 'dout', 'xa'], (p) => p.N * p.r);

export interface LoraForwardBuffers {
  out: BufferBinding; // (M, ldo), columns [col0, col0 + N) +=
  inp: BufferBinding; // (M, K)
  A: BufferBinding; // (r, K)
  B: BufferBinding; // (N, r)
  xa: BufferBinding; // (M, r) written: inp · A^T, kept for the backward
}

/** Records the adapter's forward: xa = inp · A^T, then out[:, block] += scale * xa · B^T. */
export async function recordLoraForward(rt: GpuRuntime, rec: Recorder, b: LoraForwardBuffers, p: LoraLinearProblem): Promise<void> {
  checkLoraProblem(p);
  await recordMatmulForward(rt, rec, { out: b.xa, inp: b.inp, weight: b.A }, { M: p.M, K: p.K, N: p.r });
  rec.dispatch(await rt.compile(loraAdd), { out: b.out, xa: b.xa, B: b.B }, p);
}

export interface LoraBackwardBuffers {
  dinp: BufferBinding; // (M, K), accumulated
  dA: BufferBinding; // (r, K), accumulated
  dB: BufferBinding; // (N, r), accumulated
  dout: BufferBinding; // (M, ldo), its columns [col0, col0 + N) read
  inp: BufferBinding; // (M, K) the forward's input
  A: BufferBinding; // (r, K)
  B: BufferBinding; // (N, r)
  xa: BufferBinding; // (M, r) from the forward
  dxa: BufferBinding; // (M, r) scratch, written
}

/** Records the adapter's backward: dxa, dB, then dA and dinp through the matmul backward (dout = dxa). */
export async function recordLoraBackward(rt: GpuRuntime, rec: Recorder, b: LoraBackwardBuffers, p: LoraLinearProblem): Promise<void> {
  checkLoraProblem(p);
  const [dxa, db] = await Promise.all([rt.compile(loraDxa), rt.compile(loraDb)]);
  rec.dispatch(dxa, { dxa: b.dxa, dout: b.dout, B: b.B }, p);
  rec.dispatch(db, { dB: b.dB, dout: b.dout, xa: b.xa }, p);
  await recordMatmulBackward(rt, rec, { dinp: b.dinp, dweight: b.dA, dout: b.dxa, inp: b.inp, weight: b.A }, { M: p.M, K: p.K, N: p.r });
}

/** float64 reference of `add`: out (M, ldo) columns [col0, col0 + N) += scale * xa (M, r) · B (N, r)^T. */
export function loraAddRef(out: Float64Array, xa: ArrayLike<number>, B: ArrayLike<number>, p: LoraLinearProblem): void {
  const { M, r, N, ldo, col0, scale } = p;
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let j = 0; j < r; j++) s += xa[m * r + j]! * B[n * r + j]!;
      out[m * ldo + col0 + n]! += scale * s;
    }
}

/** float64 reference of `dxa`: dxa (M, r) = scale * dout (M, ldo)[:, block] · B (N, r) (written). */
export function loraDxaRef(dxa: Float64Array, dout: ArrayLike<number>, B: ArrayLike<number>, p: LoraLinearProblem): void {
  const { M, r, N, ldo, col0, scale } = p;
  for (let m = 0; m < M; m++)
    for (let j = 0; j < r; j++) {
      let s = 0;
      for (let n = 0; n < N; n++) s += dout[m * ldo + col0 + n]! * B[n * r + j]!;
      dxa[m * r + j] = scale * s;
    }
}

/** float64 reference of `db` (accumulates): dB (N, r) += scale * dout (M, ldo)[:, block]^T · xa (M, r). */
export function loraDbRef(dB: Float64Array, dout: ArrayLike<number>, xa: ArrayLike<number>, p: LoraLinearProblem): void {
  const { M, r, N, ldo, col0, scale } = p;
  for (let n = 0; n < N; n++)
    for (let j = 0; j < r; j++) {
      let s = 0;
      for (let m = 0; m < M; m++) s += dout[m * ldo + col0 + n]! * xa[m * r + j]!;
      dB[n * r + j]! += scale * s;
    }
}

/** float64 reference of the whole forward: xa = inp · A^T (returned), out[:, block] += scale * xa · B^T. */
export function loraForwardRef(
  out: Float64Array,
  inp: ArrayLike<number>,
  A: ArrayLike<number>,
  B: ArrayLike<number>,
  p: LoraLinearProblem,
): Float64Array {
  const xa = new Float64Array(p.M * p.r);
  matmulForwardRef(xa, inp, A, null, p.M, p.K, p.r);
  loraAddRef(out, xa, B, p);
  return xa;
}
