/**
 * Per-token log-probabilities and entropies at an inverse temperature, and their backward,
 * for PPO (shaders/logprob_forward.wgsl, shaders/logprob_backward.wgsl).
 * Shape legend: BT rows (batch * time), V vocab. Row-major f32; token ids u32.
 */
import forwardWgsl from '../../shaders/logprob_forward.wgsl';
import backwardWgsl from '../../shaders/logprob_backward.wgsl';
import softmaxRow from '../../shaders/lib/softmax_row.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import { checkRows } from './crossentropy';

export interface LogprobProblem {
  BT: number;
  V: number;
  /** logits are multiplied by this before the softmax (1 / sampling temperature) */
  invTemp: number;
}

const WG = 256;

function uniforms(p: LogprobProblem): Uint8Array<ArrayBuffer> {
  checkRows('logprob', p.BT, p.V);
  const u = new DataView(new ArrayBuffer(16));
  u.setUint32(0, p.BT, true);
  u.setUint32(4, p.V, true);
  u.setFloat32(8, p.invTemp, true);
  return new Uint8Array(u.buffer);
}

/** logp (BT) = log softmax(invTemp * logits)[target] (NaN for a target >= V); entropy (BT) = -sum p log p. */
export const logprobForward: KernelSpec<LogprobProblem> = {
  name: 'logprob_forward',
  wgsl: forwardWgsl + softmaxRow,
  bindings: [
    { name: 'logits', kind: 'read-only-storage' }, // (BT, V) f32
    { name: 'targets', kind: 'read-only-storage' }, // (BT) u32
    { name: 'logp', kind: 'storage' }, // (BT) f32
    { name: 'entropy', kind: 'storage' }, // (BT) f32
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.BT, 1, limits),
  uniforms,
};

/**
 * dlogits (BT, V), written: invTemp * [dlogp * (onehot - p) + dentropy * (-p * (log p + H))].
 * Recomputes the softmax of each row (no state kept from the forward).
 */
export const logprobBackward: KernelSpec<LogprobProblem> = {
  name: 'logprob_backward',
  wgsl: backwardWgsl + softmaxRow,
  bindings: [
    { name: 'logits', kind: 'read-only-storage' }, // (BT, V) f32
    { name: 'targets', kind: 'read-only-storage' }, // (BT) u32
    { name: 'dlogp', kind: 'read-only-storage' }, // (BT) f32
    { name: 'dentropy', kind: 'read-only-storage' }, // (BT) f32
    { name: 'dlogits', kind: 'storage' }, // (BT, V) f32
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.BT, 1, limits),
  uniforms,
};

/** Row r's scaled logits z = invTemp * logits[r], its max m, log S = log sum exp(z - m), and E = sum p (z - m). */
function rowStats(
  logits: ArrayLike<number>,
  r: number,
  V: number,
  invTemp: number,
): { z: Float64Array; m: number; logS: number; e: number } {
  const z = new Float64Array(V);
  let m = -Infinity;
  for (let i = 0; i < V; i++) {
    z[i] = invTemp * logits[r * V + i]!;
    m = Math.max(m, z[i]!);
  }
  let s = 0;
  let se = 0;
  for (let i = 0; i < V; i++) {
    const ex = Math.exp(z[i]! - m);
    s += ex;
    se += ex * (z[i]! - m);
  }
  return { z, m, logS: Math.log(s), e: se / s };
}

/** log softmax(invTemp * logits[row])[target] in float64, for one row (no entropy, no allocation). */
export function rowLogprob(logits: ArrayLike<number>, row: number, V: number, invTemp: number, target: number): number {
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, invTemp * logits[row * V + i]!);
  let s = 0;
  for (let i = 0; i < V; i++) s += Math.exp(invTemp * logits[row * V + i]! - m);
  return invTemp * logits[row * V + target]! - m - Math.log(s);
}

/** log softmax(invTemp * logits[row])[target] and the row's entropy, in float64, for one row. */
export function rowLogprobEntropy(
  logits: ArrayLike<number>,
  row: number,
  V: number,
  invTemp: number,
  target: number,
): { logp: number; entropy: number } {
  const { z, m, logS, e } = rowStats(logits, row, V, invTemp);
  return { logp: z[target]! - m - logS, entropy: logS - e };
}

/** float64 reference of logprobForward: logp (BT), entropy (BT). */
export function logprobEntropyRef(
  logp: Float64Array,
  entropy: Float64Array,
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  BT: number,
  V: number,
  invTemp: number,
): void {
  for (let r = 0; r < BT; r++) {
    const { z, m, logS, e } = rowStats(logits, r, V, invTemp);
    const t = targets[r]!;
    logp[r] = t < V ? z[t]! - m - logS : NaN;
    // H = -sum p log p with log p = (z - m) - log S:  H = log S - sum p (z - m)
    entropy[r] = logS - e;
  }
}

/** float64 reference of logprobBackward: dlogits (BT, V), written. */
export function logprobEntropyBackwardRef(
  dlogits: Float64Array,
  dlogp: ArrayLike<number>,
  dentropy: ArrayLike<number>,
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  BT: number,
  V: number,
  invTemp: number,
): void {
  for (let r = 0; r < BT; r++) {
    const { z, m, logS, e } = rowStats(logits, r, V, invTemp);
    const H = logS - e;
    const t = targets[r]!;
    for (let i = 0; i < V; i++) {
      const logpi = z[i]! - m - logS;
      const p = Math.exp(logpi);
      // d logp / d z_i = (i == t) - p_i;  d H / d z_i = -p_i (log p_i + H);  d z / d logits = invTemp
      dlogits[r * V + i] = invTemp * (dlogp[r]! * ((i === t ? 1 : 0) - p) + dentropy[r]! * (-p * (logpi + H)));
    }
  }
}
