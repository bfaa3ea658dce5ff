/**
 * Softmax cross-entropy with a loss mask, forward and backward fused (shaders/crossentropy.wgsl).
 * Shape legend: BT rows (batch * time), V vocab. Row-major f32; token ids u32.
 */
import wgsl from '../../shaders/crossentropy.wgsl';
import softmaxRow from '../../shaders/lib/softmax_row.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

export interface CrossEntropyProblem {
  BT: number;
  V: number;
  /** gradient scale, typically 1 / sum(mask) */
  scale: number;
  /** also write dlogits (else the dlogits binding may be any dummy storage buffer) */
  writeGrad: boolean;
}

const WG = 256;

/**
 * losses (BT) = mask * -log softmax(logits)[target]; optionally dlogits (BT, V) =
 * (softmax - onehot(target)) * mask * scale, written (not accumulated). One workgroup per row.
 * A masked row (mask 0) has loss 0 and gradient 0 whatever its target; an unmasked row whose
 * target is >= V has a NaN loss.
 */
export const crossEntropy: KernelSpec<CrossEntropyProblem> = {
  name: 'crossentropy',
  wgsl: wgsl + softmaxRow,
  bindings: [
    { name: 'logits', kind: 'read-only-storage' }, // (BT, V) f32
    { name: 'targets', kind: 'read-only-storage' }, // (BT) u32
    { name: 'mask', kind: 'read-only-storage' }, // (BT) f32
    { name: 'losses', kind: 'storage' }, // (BT) f32
    { name: 'dlogits', kind: 'storage' }, // (BT, V) f32, or a dummy when !writeGrad
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.BT, 1, limits),
  uniforms: (p) => {
    checkRows('crossentropy', p.BT, p.V);
    const u = new DataView(new ArrayBuffer(16));
    u.setUint32(0, p.BT, true);
    u.setUint32(4, p.V, true);
    u.setFloat32(8, p.scale, true);
    u.setUint32(12, p.writeGrad ? 1 : 0, true);
    return new Uint8Array(u.buffer);
  },
};

/** Throws on shapes the row kernels cannot index (BT * V must fit a u32 index). */
export function checkRows(kernel: string, BT: number, V: number): void {
  if (!Number.isInteger(BT) || BT < 0 || !Number.isInteger(V) || V < 1) throw new Error(`${kernel}: bad shape BT=${BT}, V=${V}`);
  if (BT * V > 2 ** 32 - 1) throw new Error(`${kernel}: BT * V = ${BT * V} exceeds the u32 index range`);
}

/**
 * float64 reference. losses (BT); dlogits (BT, V) or null (then only losses are computed).
 * Same semantics as the kernel: masked rows give 0, an unmasked target >= V gives NaN.
 */
export function crossEntropyRef(
  losses: Float64Array,
  dlogits: Float64Array | null,
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  mask: ArrayLike<number>,
  BT: number,
  V: number,
  scale: number,
): void {
  for (let r = 0; r < BT; r++) {
    const base = r * V;
    let m = -Infinity;
    for (let i = 0; i < V; i++) m = Math.max(m, logits[base + i]!);
    let s = 0;
    for (let i = 0; i < V; i++) s += Math.exp(logits[base + i]! - m);
    const t = targets[r]!;
    const w = mask[r]!;
    // losses[r] = mask[r] * -log softmax(logits[r])[t] = mask[r] * (log s + m - logits[r, t])
    losses[r] = w === 0 ? 0 : t < V ? w * (Math.log(s) + m - logits[base + t]!) : NaN;
    if (!dlogits) continue;
    // d losses[r] / d logits[r, i] = mask[r] * (softmax[i] - (i == t)), times the caller's scale
    for (let i = 0; i < V; i++) {
      const p = Math.exp(logits[base + i]! - m) / s;
      dlogits[base + i] = (p - (i === t ? 1 : 0)) * w * scale;
    }
  }
}
