/**
 * RMS normalization (Llama, Qwen2, SmolLM2) over the channels of each row, forward on the GPU;
 * the float64 forward and backward references. Shader: shaders/rmsnorm_forward.wgsl.
 *
 *   rstd = 1 / sqrt(mean(x^2) + eps),  out = x * rstd * weight
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model).
 * Here N = BT rows of C channels. All tensors row-major f32. eps is the model's
 * `rms_norm_eps` (1e-5 for SmolLM2, 1e-6 for Qwen2), passed as an f32 uniform.
 *
 * There is no GPU backward yet: rmsnormBackwardRef is the float64 gradient the next kernel will
 * be tested against (rstd (N) saved by the forward is its input).
 */
import forwardWgsl from '../../shaders/rmsnorm_forward.wgsl';
import { linearWorkgroups, rowWorkgroup, type KernelSpec } from '../gpu/kernel';

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

/** out (N, C) and rstd (N) from inp (N, C), weight (C): one workgroup of `wg` threads (a power of two) per row. */
export function rmsnormForward(wg = 256): KernelSpec<RmsnormProblem> {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`rmsnorm_forward: workgroup size must be a power of two, got ${wg}`);
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

/** Kernel selection: threads per row for C channels (one per channel, 32 to 256). */
export function rmsnormWorkgroup(C: number): number {
  return rowWorkgroup(C);
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
