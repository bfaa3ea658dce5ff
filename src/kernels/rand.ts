/**
 * Counter-based uniform random numbers on the GPU (shaders/rand.wgsl), reproduced bit-exactly
 * on the CPU. Shape legend: N outputs.
 * u(seed, stream, i) = (pcg(pcg(i ^ key) + key) >>> 8) * 2^-24, key = pcg(pcg(seed) ^ stream),
 * where pcg is the PCG-RXS-M-XS 32-bit hash (a bijection of u32). For a fixed (seed, stream)
 * distinct indices give distinct 32-bit words; outputs are multiples of 2^-24 in [0, 1 - 2^-24].
 */
import wgsl from '../../shaders/rand.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

export interface RandProblem {
  /** N outputs, indices 0 .. N-1 */
  n: number;
  /** u32 (taken mod 2^32) */
  seed: number;
  /** u32 (taken mod 2^32): e.g. the step, so each step draws fresh numbers */
  stream: number;
}

const WG = 64;

/** out (N) = u(seed, stream, i) for i in [0, N). */
export const randUniform: KernelSpec<RandProblem> = {
  name: 'rand',
  wgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (N) f32
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n, p.seed >>> 0, p.stream >>> 0, 0]),
};

/** The PCG-RXS-M-XS 32-bit hash, as in the shader. */
export function pcgHash(v: number): number {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The 32-bit word behind u(seed, stream, index). */
export function randBits(seed: number, stream: number, index: number): number {
  const key = pcgHash((pcgHash(seed >>> 0) ^ (stream >>> 0)) >>> 0);
  return pcgHash((pcgHash((index ^ key) >>> 0) + key) >>> 0);
}

/** CPU reference, bit-exact with the GPU: u(seed, stream, i) for i in [0, n). */
export function randUniformRef(seed: number, stream: number, n: number): Float64Array {
  const out = new Float64Array(n);
  const key = pcgHash((pcgHash(seed >>> 0) ^ (stream >>> 0)) >>> 0);
  for (let i = 0; i < n; i++) out[i] = (pcgHash((pcgHash((i ^ key) >>> 0) + key) >>> 0) >>> 8) / 16777216;
  return out;
}
