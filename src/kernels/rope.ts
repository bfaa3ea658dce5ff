/**
 * Rotary position embedding (RoPE) in Hugging Face's rotate-half layout (Llama, Qwen2,
 * SmolLM2), applied in place to the leading heads of packed qkv rows. Shader: shaders/rope.wgsl.
 *
 * For each rotated head and i < HS/2: x1 = x[i], x2 = x[i + HS/2],
 *   x[i] = x1 cos(a) - x2 sin(a),  x[i + HS/2] = x2 cos(a) + x1 sin(a),
 *   a = position * invFreq[i],  invFreq[i] = theta^(-2i/HS).
 * `inverse` = 1 rotates by -a: the backward of the rotation (it is orthogonal), which also
 * undoes the forward.
 *
 * Shape legend: N rows (= BT), HS head size (even), H = HS/2, NH query heads, NKV kv heads,
 * W row width ((NH + 2 NKV) HS for packed qkv rows [q NH*HS | k NKV*HS | v NKV*HS]), nHeads the
 * heads rotated at the start of each row (NH + NKV: q and k in one dispatch), maxPos the
 * positions the cos/sin tables cover. Row-major f32; positions u32.
 *
 * The GPU kernel reads cos and sin from tables built here (WGSL's sin and cos are
 * only accurate on [-pi, pi]; the angles reach maxPos radians).
 */
import ropeWgsl from '../../shaders/rope.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** N rows of width W; heads [0, nHeads) of HS floats each are rotated; inverse 0 or 1. */
export interface RopeProblem {
  N: number;
  W: number;
  nHeads: number;
  HS: number;
  inverse: number;
}

const WG = 64;

/** Throws unless the problem is a valid rotation of whole heads inside the rows. */
export function checkRopeProblem(p: RopeProblem, what = 'rope'): void {
  for (const k of ['N', 'W', 'nHeads', 'HS'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
  if (p.HS % 2 !== 0) throw new Error(`${what}: head size HS=${p.HS} must be even`);
  if (p.nHeads * p.HS > p.W) throw new Error(`${what}: ${p.nHeads} heads of ${p.HS} do not fit in rows of W=${p.W}`);
  if (p.inverse !== 0 && p.inverse !== 1) throw new Error(`${what}: inverse must be 0 or 1, got ${p.inverse}`);
}

/**
 * x (N, W) rotated in place by positions (N) u32, from the tables cos, sin (maxPos, HS/2) of
 * ropeTables. A position >= maxPos leaves its row unchanged (the shader cannot throw).
 */
export const rope: KernelSpec<RopeProblem> = {
  name: 'rope',
  wgsl: ropeWgsl,
  bindings: [
    { name: 'x', kind: 'storage' }, // (N, W), rotated in place
    { name: 'positions', kind: 'read-only-storage' }, // (N) u32
    { name: 'cos', kind: 'read-only-storage' }, // (maxPos, HS/2)
    { name: 'sin', kind: 'read-only-storage' }, // (maxPos, HS/2)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => {
    checkRopeProblem(p);
    return linearWorkgroups(p.N * p.nHeads * (p.HS / 2), WG, limits);
  },
  uniforms: (p) => new Uint32Array([p.N, p.W, p.nHeads, p.HS, p.inverse]),
};

/**
 * invFreq (HS/2) = theta^(-2i/HS) as transformers computes it (default rope_type): in float32,
 * `1.0 / (theta ** (arange(0, HS, 2).float() / HS))`, each step rounded to f32. The angles are
 * float32 products too (ropeAngle). Taking both in float64 instead drifts from transformers with
 * the position: 4e-4 in cos at position 32767 (HS 64, theta 1e4), 1.1e-3 at theta 1e6; emulating
 * the float32 steps matches its tables within one f32 ulp at every position
 * (data/hf-fixtures/rope-tables.json, from PyTorch).
 */
export function ropeInvFreq(HS: number, theta: number): Float64Array {
  const f = new Float64Array(HS / 2);
  for (let i = 0; i < HS / 2; i++) f[i] = Math.fround(1 / Math.fround(theta ** Math.fround((2 * i) / HS)));
  return f;
}

/** The rotation angle of frequency `invFreq` at position p: their float32 product, as transformers takes it. */
export function ropeAngle(p: number, invFreq: number): number {
  return Math.fround(p * invFreq);
}

/**
 * The tables the GPU kernel reads: cos, sin (maxPos, HS/2) of ropeAngle(p, invFreq[i]) for
 * positions p < maxPos, the cosine and sine in float64 rounded once to f32. `invFreq` (HS/2) defaults to
 * ropeInvFreq(HS, theta); pass another for a scaled rope (e.g. Llama 3's rope_scaling).
 */
export function ropeTables(
  maxPos: number,
  HS: number,
  theta: number,
  invFreq: ArrayLike<number> = ropeInvFreq(HS, theta),
): { cos: Float32Array<ArrayBuffer>; sin: Float32Array<ArrayBuffer> } {
  if (!Number.isInteger(maxPos) || maxPos < 1) throw new Error(`ropeTables: maxPos must be a positive integer, got ${maxPos}`);
  if (!Number.isInteger(HS) || HS < 2 || HS % 2 !== 0) throw new Error(`ropeTables: HS must be a positive even integer, got ${HS}`);
  const H = HS / 2;
  if (invFreq.length !== H) throw new Error(`ropeTables: ${invFreq.length} frequencies for HS/2 = ${H}`);
  const cos = new Float32Array(maxPos * H);
  const sin = new Float32Array(maxPos * H);
  for (let p = 0; p < maxPos; p++) {
    for (let i = 0; i < H; i++) {
      const a = ropeAngle(p, invFreq[i]!);
      cos[p * H + i] = Math.cos(a);
      sin[p * H + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

/**
 * float64 reference: x (N, W) rotated in place, heads [0, nHeads) of each row, by the angles
 * ropeAngle(positions[n], ropeInvFreq(HS, theta)[i]) (their negatives when inverse is 1 or
 * true), cos and sin in float64 of the angle itself (the GPU reads them from f32 tables).
 */
export function ropeRef(
  x: Float64Array,
  positions: ArrayLike<number>,
  N: number,
  W: number,
  nHeads: number,
  HS: number,
  theta: number,
  inverse: number | boolean,
): void {
  checkRopeProblem({ N, W, nHeads, HS, inverse: Number(inverse) }, 'ropeRef');
  const H = HS / 2;
  const invFreq = ropeInvFreq(HS, theta);
  const sign = inverse ? -1 : 1;
  for (let n = 0; n < N; n++) {
    for (let h = 0; h < nHeads; h++) {
      const a0 = n * W + h * HS;
      for (let i = 0; i < H; i++) {
        const a = ropeAngle(positions[n]!, invFreq[i]!);
        const c = Math.cos(a);
        const s = sign * Math.sin(a);
        const x1 = x[a0 + i]!;
        const x2 = x[a0 + i + H]!;
        x[a0 + i] = x1 * c - x2 * s;
        x[a0 + i + H] = x2 * c + x1 * s;
      }
    }
  }
}
