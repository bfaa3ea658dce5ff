import wgsl from '../../shaders/saxpy.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** Shape legend: N elements. */
export interface SaxpyProblem {
  n: number;
  a: number;
}

/** y = a * x + y over (N). */
export const saxpy: KernelSpec<SaxpyProblem> = {
  name: 'saxpy',
  wgsl,
  bindings: [
    { name: 'x', kind: 'read-only-storage' }, // (N)
    { name: 'y', kind: 'storage' }, // (N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [64],
  dispatch: (p, limits) => linearWorkgroups(p.n, 64, limits),
  uniforms: (p) => {
    const u = new DataView(new ArrayBuffer(8));
    u.setUint32(0, p.n, true);
    u.setFloat32(4, p.a, true);
    return new Uint8Array(u.buffer);
  },
};

/** float64 reference of saxpy. */
export function saxpyRef(a: number, x: ArrayLike<number>, y: ArrayLike<number>): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = a * x[i]! + y[i]!;
  return out;
}
