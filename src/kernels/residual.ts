/**
 * Residual add, out = a + b, and the in-place accumulate dst += src that backward passes use.
 * Shaders: shaders/residual_forward.wgsl, shaders/accumulate.wgsl.
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * Here N = any element count (BT * C for the residual stream). Row-major f32.
 */
import accumulateWgsl from '../../shaders/accumulate.wgsl';
import residualWgsl from '../../shaders/residual_forward.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** Shape legend: N elements. */
export interface ElementwiseProblem {
  n: number;
}

const WG = 256;

/** out (N) = a (N) + b (N). */
export const residualForward: KernelSpec<ElementwiseProblem> = {
  name: 'residual_forward',
  wgsl: residualWgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (N)
    { name: 'a', kind: 'read-only-storage' }, // (N)
    { name: 'b', kind: 'read-only-storage' }, // (N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

/** dst (N) += src (N), in place. */
export const accumulate: KernelSpec<ElementwiseProblem> = {
  name: 'accumulate',
  wgsl: accumulateWgsl,
  bindings: [
    { name: 'dst', kind: 'storage' }, // (N), accumulated
    { name: 'src', kind: 'read-only-storage' }, // (N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

/** float64 reference: out (n) = a (n) + b (n). */
export function residualForwardRef(out: Float64Array, a: ArrayLike<number>, b: ArrayLike<number>, n: number): void {
  for (let i = 0; i < n; i++) out[i] = a[i]! + b[i]!;
}

/** float64 reference: dst (n) += src (n). */
export function accumulateRef(dst: Float64Array, src: ArrayLike<number>, n: number): void {
  for (let i = 0; i < n; i++) dst[i]! += src[i]!;
}
