/**
 * GELU, GPT-2's tanh approximation, forward and backward.
 * Shaders: shaders/gelu_forward.wgsl, shaders/gelu_backward.wgsl.
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * Here N = any element count (the MLP's hidden activations are (BT, 4C)). Row-major f32.
 */
import backwardWgsl from '../../shaders/gelu_backward.wgsl';
import forwardWgsl from '../../shaders/gelu_forward.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** Shape legend: N elements. */
export interface GeluProblem {
  n: number;
}

const WG = 256;

/** out (N) = gelu(inp (N)). */
export const geluForward: KernelSpec<GeluProblem> = {
  name: 'gelu_forward',
  wgsl: forwardWgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (N)
    { name: 'inp', kind: 'read-only-storage' }, // (N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

/** dinp (N) += gelu'(inp (N)) * dout (N). */
export const geluBackward: KernelSpec<GeluProblem> = {
  name: 'gelu_backward',
  wgsl: backwardWgsl,
  bindings: [
    { name: 'dinp', kind: 'storage' }, // (N), accumulated
    { name: 'inp', kind: 'read-only-storage' }, // (N) the forward's input
    { name: 'dout', kind: 'read-only-storage' }, // (N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

const GELU_SCALE = Math.sqrt(2 / Math.PI);

/** gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in float64. */
export function geluScalar(x: number): number {
  return 0.5 * x * (1 + Math.tanh(GELU_SCALE * (x + 0.044715 * x * x * x)));
}

/** d gelu / dx, in float64. */
export function geluGradScalar(x: number): number {
  const t = Math.tanh(GELU_SCALE * (x + 0.044715 * x * x * x));
  const du = GELU_SCALE * (1 + 3 * 0.044715 * x * x);
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du;
}

/** float64 reference: out (n) = gelu(inp (n)). */
export function geluForwardRef(out: Float64Array, inp: ArrayLike<number>, n: number): void {
  for (let i = 0; i < n; i++) out[i] = geluScalar(inp[i]!);
}

/** float64 reference: dinp (n) += gelu'(inp (n)) * dout (n) (accumulates). */
export function geluBackwardRef(dinp: Float64Array, inp: ArrayLike<number>, dout: ArrayLike<number>, n: number): void {
  // differentiates out[i] = gelu(inp[i])
  for (let i = 0; i < n; i++) dinp[i]! += geluGradScalar(inp[i]!) * dout[i]!;
}
