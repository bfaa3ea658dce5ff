/**
 * Layer normalization over the channels of each row, eps = 1e-5, forward and backward.
 * Shaders: shaders/layernorm_forward.wgsl, shaders/layernorm_backward.wgsl (entry points
 * `rows` for dinp, `channels` for dweight and dbias).
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * Here N = BT rows of C channels. All tensors row-major f32.
 */
import backwardWgsl from '../../shaders/layernorm_backward.wgsl';
import forwardWgsl from '../../shaders/layernorm_forward.wgsl';
import { linearWorkgroups, rowWorkgroup, type KernelSpec } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';

/** N rows (= BT) of C channels. */
export interface LayernormProblem {
  N: number;
  C: number;
}

export const LAYERNORM_EPS = 1e-5;

function uniforms(p: LayernormProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.N, p.C]);
}

function checkPow2(wg: number, what: string): void {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`${what}: workgroup size must be a power of two, got ${wg}`);
}

/** out, mean, rstd from inp: one workgroup of `wg` threads (a power of two) per row. */
export function layernormForward(wg = 256): KernelSpec<LayernormProblem> {
  checkPow2(wg, 'layernorm_forward');
  return {
    name: 'layernorm_forward',
    wgsl: forwardWgsl,
    bindings: [
      { name: 'out', kind: 'storage' }, // (N, C)
      { name: 'mean', kind: 'storage' }, // (N)
      { name: 'rstd', kind: 'storage' }, // (N)
      { name: 'inp', kind: 'read-only-storage' }, // (N, C)
      { name: 'weight', kind: 'read-only-storage' }, // (C)
      { name: 'bias', kind: 'read-only-storage' }, // (C)
      { name: 'params', kind: 'uniform' },
    ],
    workgroupSize: [wg],
    dispatch: (p, limits) => linearWorkgroups(p.N, 1, limits),
    uniforms,
  };
}

const BACKWARD_BINDINGS = [
  { name: 'dinp', kind: 'storage' }, // (N, C), accumulated
  { name: 'dweight', kind: 'storage' }, // (C), accumulated
  { name: 'dbias', kind: 'storage' }, // (C), accumulated
  { name: 'dout', kind: 'read-only-storage' }, // (N, C)
  { name: 'inp', kind: 'read-only-storage' }, // (N, C)
  { name: 'weight', kind: 'read-only-storage' }, // (C)
  { name: 'mean', kind: 'read-only-storage' }, // (N)
  { name: 'rstd', kind: 'read-only-storage' }, // (N)
  { name: 'params', kind: 'uniform' },
] as const;

/** dinp += ...: one workgroup of `wg` threads (a power of two) per row. */
export function layernormBackwardRows(wg = 256): KernelSpec<LayernormProblem> {
  checkPow2(wg, 'layernorm_backward_rows');
  return {
    name: 'layernorm_backward_rows',
    wgsl: backwardWgsl,
    entryPoint: 'rows',
    bindings: BACKWARD_BINDINGS,
    workgroupSize: [wg],
    dispatch: (p, limits) => linearWorkgroups(p.N, 1, limits),
    uniforms,
  };
}

/** dweight, dbias += ...: workgroups of [channels, row lanes] own `channels` channels each. */
export function layernormBackwardChannels(wg: readonly [number, number] = [32, 8]): KernelSpec<LayernormProblem> {
  checkPow2(wg[1], 'layernorm_backward_channels (row lanes)');
  return {
    name: 'layernorm_backward_channels',
    wgsl: backwardWgsl,
    entryPoint: 'channels',
    bindings: BACKWARD_BINDINGS,
    workgroupSize: wg,
    dispatch: (p, limits) => linearWorkgroups(p.C, wg[0], limits),
    uniforms,
  };
}

export interface LayernormBackwardBuffers {
  dinp: BufferBinding; // (N, C), accumulated
  dweight: BufferBinding; // (C), accumulated
  dbias: BufferBinding; // (C), accumulated
  dout: BufferBinding; // (N, C)
  inp: BufferBinding; // (N, C)
  weight: BufferBinding; // (C)
  mean: BufferBinding; // (N) saved by the forward
  rstd: BufferBinding; // (N) saved by the forward
}

/** Kernel selection: threads per row for C channels (one per channel, 32 to 256). */
export function layernormWorkgroup(C: number): number {
  return rowWorkgroup(C);
}

/** Records the backward: the per-row and the per-channel dispatch. */
export async function recordLayernormBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: LayernormBackwardBuffers,
  p: LayernormProblem,
): Promise<void> {
  const bindings = { ...b };
  rec.dispatch(await rt.compile(layernormBackwardRows(layernormWorkgroup(p.C))), bindings, p);
  rec.dispatch(await rt.compile(layernormBackwardChannels()), bindings, p);
}

/** float64 reference: out (N, C), mean (N), rstd (N) from inp (N, C), weight (C), bias (C). */
export function layernormForwardRef(
  out: Float64Array,
  mean: Float64Array,
  rstd: Float64Array,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  bias: ArrayLike<number>,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const x0 = n * C;
    let m = 0;
    for (let c = 0; c < C; c++) m += inp[x0 + c]!;
    m /= C;
    let v = 0;
    for (let c = 0; c < C; c++) v += (inp[x0 + c]! - m) ** 2;
    const r = 1 / Math.sqrt(v / C + LAYERNORM_EPS);
    for (let c = 0; c < C; c++) out[x0 + c] = (inp[x0 + c]! - m) * r * weight[c]! + bias[c]!;
    mean[n] = m;
    rstd[n] = r;
  }
}

/**
 * float64 reference of the backward (accumulates into dinp (N, C), dweight (C), dbias (C)).
 * Differentiates  norm = (x - mean) * rstd;  out = norm * weight + bias.
 */
export function layernormBackwardRef(
  dinp: Float64Array,
  dweight: Float64Array,
  dbias: Float64Array,
  dout: ArrayLike<number>,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  mean: ArrayLike<number>,
  rstd: ArrayLike<number>,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const x0 = n * C;
    const m = mean[n]!;
    const r = rstd[n]!;
    let dnormMean = 0;
    let dnormNormMean = 0;
    for (let c = 0; c < C; c++) {
      const dnorm = dout[x0 + c]! * weight[c]!;
      dnormMean += dnorm;
      dnormNormMean += dnorm * (inp[x0 + c]! - m) * r;
    }
    dnormMean /= C;
    dnormNormMean /= C;
    for (let c = 0; c < C; c++) {
      const norm = (inp[x0 + c]! - m) * r;
      const dnorm = dout[x0 + c]! * weight[c]!;
      dweight[c]! += dout[x0 + c]! * norm;
      dbias[c]! += dout[x0 + c]!;
      dinp[x0 + c]! += (dnorm - dnormMean - norm * dnormNormMean) * r;
    }
  }
}
