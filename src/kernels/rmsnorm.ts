/**
 * RMS normalization (Llama, Qwen2, SmolLM2) over the channels of each row, forward and backward
 * on the GPU, with float64 references. Shaders: shaders/rmsnorm_forward.wgsl,
 * shaders/rmsnorm_backward.wgsl (entry points `rows` for dinp, `channels` for dweight).
 *
 *   rstd = 1 / sqrt(mean(x^2) + eps),  out = x * rstd * weight
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model).
 * Here N = BT rows of C channels. All tensors row-major f32. eps is the model's
 * `rms_norm_eps` (1e-5 for SmolLM2, 1e-6 for Qwen2), passed as an f32 uniform.
 *
 * The backward, like layernorm's, accumulates (dinp +=, dweight +=) and reads the rstd (N) the
 * forward saved; eps is not needed again.
 */
import backwardWgsl from '../../shaders/rmsnorm_backward.wgsl';
import forwardWgsl from '../../shaders/rmsnorm_forward.wgsl';
import { linearWorkgroups, rowWorkgroup, type KernelSpec } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';

/** N rows (= BT) of C channels; eps added to the mean square. */
export interface RmsnormProblem {
  N: number;
  C: number;
  eps: number;
}

/** 12 bytes: N, C as u32, eps as f32 (struct Params of the shader). */
function uniforms(p: RmsnormProblem): Uint8Array<ArrayBuffer> {
  const u = new DataView(new ArrayBuffer(12));
  u.setUint32(0, p.N, true);
  u.setUint32(4, p.C, true);
  u.setFloat32(8, p.eps, true);
  return new Uint8Array(u.buffer);
}

/** The backward's sizes (eps is not needed again: the forward saved rstd); a RmsnormProblem will do. */
export type RmsnormBackwardProblem = Pick<RmsnormProblem, 'N' | 'C'>;

function checkPow2(wg: number, what: string): void {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`${what}: workgroup size must be a power of two, got ${wg}`);
}

/** out (N, C) and rstd (N) from inp (N, C), weight (C): one workgroup of `wg` threads (a power of two) per row. */
export function rmsnormForward(wg = 256): KernelSpec<RmsnormProblem> {
  checkPow2(wg, 'rmsnorm_forward');
  return {
    name: 'rmsnorm_forward',
    wgsl: forwardWgsl,
    bindings: [
      { name: 'out', kind: 'storage' }, // (N, C)
      { name: 'rstd', kind: 'storage' }, // (N)
      { name: 'inp', kind: 'read-only-storage' }, // (N, C)
      { name: 'weight', kind: 'read-only-storage' }, // (C)
      { name: 'params', kind: 'uniform' },
    ],
    workgroupSize: [wg],
    dispatch: (p, limits) => {
      if (!(p.eps >= 0)) throw new Error(`rmsnorm_forward: eps must be >= 0, got ${p.eps}`);
      return linearWorkgroups(p.N, 1, limits);
    },
    uniforms,
  };
}

const BACKWARD_BINDINGS = [
  { name: 'dinp', kind: 'storage' }, // (N, C), accumulated
  { name: 'dweight', kind: 'storage' }, // (C), accumulated
  { name: 'dout', kind: 'read-only-storage' }, // (N, C)
  { name: 'inp', kind: 'read-only-storage' }, // (N, C) the forward's input
  { name: 'weight', kind: 'read-only-storage' }, // (C)
  { name: 'rstd', kind: 'read-only-storage' }, // (N) saved by the forward
  { name: 'params', kind: 'uniform' },
] as const;

function backwardUniforms(p: RmsnormBackwardProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.N, p.C]);
}

/** dinp (N, C) += ...: one workgroup of `wg` threads (a power of two) per row. */
export function rmsnormBackwardRows(wg = 256): KernelSpec<RmsnormBackwardProblem> {
  checkPow2(wg, 'rmsnorm_backward_rows');
  return {
    name: 'rmsnorm_backward_rows',
    wgsl: backwardWgsl,
    entryPoint: 'rows',
    bindings: BACKWARD_BINDINGS,
    workgroupSize: [wg],
    dispatch: (p, limits) => linearWorkgroups(p.N, 1, limits),
    uniforms: backwardUniforms,
  };
}

/** dweight (C) += ...: workgroups of [channels, row lanes] own `channels` channels each (row lanes a power of two). */
export function rmsnormBackwardChannels(wg: readonly [number, number] = [32, 8]): KernelSpec<RmsnormBackwardProblem> {
  checkPow2(wg[1], 'rmsnorm_backward_channels (row lanes)');
  return {
    name: 'rmsnorm_backward_channels',
    wgsl: backwardWgsl,
    entryPoint: 'channels',
    bindings: BACKWARD_BINDINGS,
    workgroupSize: wg,
    dispatch: (p, limits) => linearWorkgroups(p.C, wg[0], limits),
    uniforms: backwardUniforms,
  };
}

export interface RmsnormBackwardBuffers {
  dinp: BufferBinding; // (N, C), accumulated
  dweight: BufferBinding; // (C), accumulated
  dout: BufferBinding; // (N, C)
  inp: BufferBinding; // (N, C) the forward's input
  weight: BufferBinding; // (C)
  rstd: BufferBinding; // (N) saved by the forward
}

/** Kernel selection: threads per row for C channels (one per channel, 32 to 256). */
export function rmsnormWorkgroup(C: number): number {
  return rowWorkgroup(C);
}

/** Records the backward: the per-row (dinp) and the per-channel (dweight) dispatch. */
export async function recordRmsnormBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: RmsnormBackwardBuffers,
  p: RmsnormBackwardProblem,
): Promise<void> {
  const bindings = { ...b };
  const size = { N: p.N, C: p.C };
  rec.dispatch(await rt.compile(rmsnormBackwardRows(rmsnormWorkgroup(p.C))), bindings, size);
  rec.dispatch(await rt.compile(rmsnormBackwardChannels()), bindings, size);
}

/** float64 reference: out (N, C), rstd (N) from inp (N, C), weight (C). */
export function rmsnormForwardRef(
  out: Float64Array,
  rstd: Float64Array,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    const x0 = n * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += inp[x0 + c]! * inp[x0 + c]!;
    const r = 1 / Math.sqrt(ss / C + eps);
    for (let c = 0; c < C; c++) out[x0 + c] = inp[x0 + c]! * r * weight[c]!;
    rstd[n] = r;
  }
}

/**
 * float64 reference of the backward (accumulates into dinp (N, C), dweight (C)) from dout (N, C),
 * inp (N, C), weight (C) and the saved rstd (N). Differentiates out_c = x_c * r * w_c with
 * r = (sum_k x_k^2 / C + eps)^(-1/2), so dr/dx_c = -r^3 x_c / C:
 *   dweight_c += dout_c x_c r
 *   dinp_c    += r (dout_c w_c - x_c r^2 sum_k(dout_k w_k x_k) / C)
 */
export function rmsnormBackwardRef(
  dinp: Float64Array,
  dweight: Float64Array,
  dout: ArrayLike<number>,
  inp: ArrayLike<number>,
  weight: ArrayLike<number>,
  rstd: ArrayLike<number>,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const x0 = n * C;
    const r = rstd[n]!;
    let dot = 0; // sum_k dout_k w_k x_k
    for (let c = 0; c < C; c++) dot += dout[x0 + c]! * weight[c]! * inp[x0 + c]!;
    const k = (r * r * dot) / C;
    for (let c = 0; c < C; c++) {
      dweight[c]! += dout[x0 + c]! * inp[x0 + c]! * r;
      dinp[x0 + c]! += r * (dout[x0 + c]! * weight[c]! - inp[x0 + c]! * k);
    }
  }
}
