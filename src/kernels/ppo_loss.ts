/**
 * PPO / GRPO loss derivatives per token and the loss statistics (shaders/ppo_loss.wgsl). Its
 * float64 reference is rlTokenGradsRef in ppo_loss_ref.ts, which the cpu backend runs.
 *
 * Shape legend: N tokens (B * T rows), S plane stride in floats. Per-token inputs and outputs
 * that travel together are "planes" of one buffer, plane k at floats [k S, k S + N): S is N
 * rounded up to the storage offset alignment, so each plane can also be bound as a range (the
 * log-prob backward reads dlogp and dentropy that way). That keeps the kernel at 8 storage
 * bindings, the WebGPU minimum of maxStorageBuffersPerShaderStage.
 */
import wgsl from '../../shaders/ppo_loss.wgsl';
import type { KernelSpec } from '../gpu/kernel';
import type { BufferBinding } from '../gpu/recorder';
import { RL_ROLLOUT_FIELDS, RL_STAT_FIELDS, type RlLossConfig, type RlRollout } from './ppo_loss_ref';

/** The planes of the `rollout` binding, in order: an RlBatch's rollout fields. */
export const ROLLOUT_FIELDS = RL_ROLLOUT_FIELDS;
/** The planes of the `dtok` binding, in order. */
export const DTOK_FIELDS = ['dlogp', 'dentropy'] as const;
/** Floats of the `sums` binding: one per RL_STAT_FIELDS entry. */
export const PPO_STATS = RL_STAT_FIELDS.length;

export interface PpoLossProblem extends Omit<RlLossConfig, 'invTemp'> {
  /** tokens N */
  n: number;
  /** plane stride S in floats (>= N) */
  stride: number;
  /** gradient scale: 1 / masked tokens of the whole optimizer step */
  scale: number;
}

const WG = 256;

/**
 * dtok (2, S) = dlogp, dentropy and dvalue (N), written (0 where the mask is 0); the six
 * statistics (unscaled, mask-weighted, RL_STAT_FIELDS order) are added to sums (6). One workgroup.
 */
export const ppoLoss: KernelSpec<PpoLossProblem> = {
  name: 'ppo_loss',
  wgsl,
  bindings: [
    { name: 'logp', kind: 'read-only-storage' }, // (N)
    { name: 'entropy', kind: 'read-only-storage' }, // (N)
    { name: 'values', kind: 'read-only-storage' }, // (N)
    { name: 'mask', kind: 'read-only-storage' }, // (N)
    { name: 'rollout', kind: 'read-only-storage' }, // (5, S) ROLLOUT_FIELDS
    { name: 'dtok', kind: 'storage' }, // (2, S) DTOK_FIELDS, written
    { name: 'dvalue', kind: 'storage' }, // (N), written
    { name: 'sums', kind: 'storage' }, // (6), accumulated
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: () => [1, 1, 1],
  uniforms: (p) => {
    if (!Number.isInteger(p.n) || p.n < 1 || p.n > 2 ** 31) throw new Error(`ppo_loss: bad token count n=${p.n}`);
    if (!Number.isInteger(p.stride) || p.stride < p.n || p.stride * ROLLOUT_FIELDS.length > 2 ** 32 - 1) {
      throw new Error(`ppo_loss: plane stride ${p.stride} must be an integer >= n=${p.n}`);
    }
    const u = new DataView(new ArrayBuffer(32));
    u.setUint32(0, p.n, true);
    u.setUint32(4, p.stride, true);
    [p.clip, p.vclip, p.vfCoef, p.entCoef, p.klCoef, p.scale].forEach((x, k) => u.setFloat32(8 + 4 * k, x, true));
    return new Uint8Array(u.buffer);
  },
};

/** S: N rounded up to the device's storage offset alignment, in floats. */
export function planeStride(n: number, limits: GPUSupportedLimits): number {
  const a = Math.max(1, limits.minStorageBufferOffsetAlignment / 4);
  return Math.max(a, Math.ceil(n / a) * a);
}

/** Plane k (N floats) of a planar buffer, as a binding. */
export function plane(buffer: GPUBuffer, k: number, n: number, stride: number): BufferBinding {
  return { buffer, offset: 4 * k * stride, size: 4 * n };
}

/** The rollout planes (5, S) of a batch's first N tokens; throws when a field is not N long. */
export function packRollout(b: Pick<RlRollout, (typeof ROLLOUT_FIELDS)[number]>, n: number, stride: number): Float32Array<ArrayBuffer> {
  const out = new Float32Array(ROLLOUT_FIELDS.length * stride);
  ROLLOUT_FIELDS.forEach((f, k) => {
    if (b[f].length !== n) throw new Error(`ppo_loss: ${f} has ${b[f].length} values, expected B * T = ${n}`);
    out.set(b[f], k * stride);
  });
  return out;
}
