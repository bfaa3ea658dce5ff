/**
 * SwiGLU, the gated MLP activation of Llama, Qwen2 and SmolLM2, forward and backward on the GPU,
 * with float64 references. Shaders: shaders/swiglu_forward.wgsl, shaders/swiglu_backward.wgsl.
 *
 *   out[n, f] = silu(gu[n, f]) * gu[n, F + f],  silu(x) = x / (1 + exp(-x))
 *
 * gu is the output of one matmul with gate_proj and up_proj stacked (gate rows first in the
 * weight, so gate columns first in gu); down_proj then reads out.
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels, F hidden features
 * (intermediate_size). Here N = BT rows. All tensors row-major f32.
 *
 * The backward accumulates (dgu +=), as gelu's and every llm.c backward do, and as
 * swigluBackwardRef does: clear dgu first where nothing else adds to it.
 */
import backwardWgsl from '../../shaders/swiglu_backward.wgsl';
import forwardWgsl from '../../shaders/swiglu_forward.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** N rows (= BT) of F hidden features (gu has 2F columns). */
export interface SwigluProblem {
  N: number;
  F: number;
}

const WG = 256;

/** out (N, F) = silu(gate) * up from gu (N, 2F) = [gate (F) | up (F)] per row. */
export const swigluForward: KernelSpec<SwigluProblem> = {
  name: 'swiglu_forward',
  wgsl: forwardWgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (N, F)
    { name: 'gu', kind: 'read-only-storage' }, // (N, 2F)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.N * p.F, WG, limits),
  uniforms: (p) => new Uint32Array([p.N, p.F]),
};

/** dgu (N, 2F) += [dgate | dup] from dout (N, F) and the forward's gu (N, 2F); accumulates. */
export const swigluBackward: KernelSpec<SwigluProblem> = {
  name: 'swiglu_backward',
  wgsl: backwardWgsl,
  bindings: [
    { name: 'dgu', kind: 'storage' }, // (N, 2F), accumulated
    { name: 'dout', kind: 'read-only-storage' }, // (N, F)
    { name: 'gu', kind: 'read-only-storage' }, // (N, 2F) the forward's input
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.N * p.F, WG, limits),
  uniforms: (p) => new Uint32Array([p.N, p.F]),
};

/** sigmoid(x) in float64, from exp(-|x|) (no overflow for large |x|). */
export function sigmoidScalar(x: number): number {
  const e = Math.exp(-Math.abs(x));
  return (x >= 0 ? 1 : e) / (1 + e);
}

/** silu(x) = x sigmoid(x), in float64. */
export function siluScalar(x: number): number {
  return x * sigmoidScalar(x);
}

/** d silu / dx = s (1 + x (1 - s)) with s = sigmoid(x), in float64. */
export function siluGradScalar(x: number): number {
  const s = sigmoidScalar(x);
  return s * (1 + x * (1 - s));
}

/** float64 reference: out (N, F) = silu(gu[:, :F]) * gu[:, F:] from gu (N, 2F). */
export function swigluForwardRef(out: Float64Array, gu: ArrayLike<number>, N: number, F: number): void {
  for (let n = 0; n < N; n++) {
    for (let f = 0; f < F; f++) out[n * F + f] = siluScalar(gu[2 * F * n + f]!) * gu[2 * F * n + F + f]!;
  }
}

/**
 * float64 reference of the backward (accumulates into dgu (N, 2F)) from dout (N, F), gu (N, 2F):
 *   dgate += dout * up * silu'(gate),  dup += dout * silu(gate).
 */
export function swigluBackwardRef(dgu: Float64Array, dout: ArrayLike<number>, gu: ArrayLike<number>, N: number, F: number): void {
  for (let n = 0; n < N; n++) {
    for (let f = 0; f < F; f++) {
      const g = 2 * F * n + f;
      const u = g + F;
      const d = dout[n * F + f]!;
      dgu[g]! += d * gu[u]! * siluGradScalar(gu[g]!);
      dgu[u]! += d * siluScalar(gu[g]!);
    }
  }
}
