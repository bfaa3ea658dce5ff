/**
 * The policy-gradient losses of PPO and GRPO, per token, as the float64 reference both backends
 * follow (the cpu backend runs it; the GPU kernel shaders/ppo_loss.wgsl, wrapped by ppo_loss.ts,
 * is checked against it).
 *
 * Given, for each token of a minibatch, the new log-prob, entropy and value from the forward
 * pass and the rollout's old log-prob, old value, advantage, return and reference log-prob, it
 * writes the loss's derivatives with respect to the new log-prob, the entropy and the value.
 * The backward of the log-prob/entropy kernel and of the value head carries them into the model.
 *
 * Losses (CleanRL / TRL conventions), each a mean over the masked tokens N:
 *   ratio      = exp(logp - oldLogp)
 *   policy     = max(-A ratio, -A clip(ratio, 1 - clip, 1 + clip))
 *   value      = 0.5 max((v - R)^2, (oldV + clip(v - oldV, -vclip, vclip) - R)^2)   (vclip 0: unclipped)
 *   kl (GRPO)  = exp(ref - logp) - (ref - logp) - 1                                  (k3 estimator)
 *   loss       = policy + vfCoef value - entCoef entropy + klCoef kl
 * Stats: approxkl = mean((ratio - 1) - log ratio) (CleanRL), clipfrac = mean(|ratio - 1| > clip).
 */

export interface RlLossConfig {
  /** PPO clip range epsilon */
  clip: number;
  /** value-loss clip range around the old value; 0 = unclipped */
  vclip: number;
  /** weight of the value loss (0 for GRPO: no critic) */
  vfCoef: number;
  /** weight of the entropy bonus */
  entCoef: number;
  /** weight of the in-loss KL to the reference (GRPO); 0 when the KL is a reward penalty (PPO) */
  klCoef: number;
  /** logits are divided by the sampling temperature before the softmax (1 / temperature) */
  invTemp: number;
}

/**
 * The per-token rollout data of a policy-gradient minibatch, each (B, T); model/optim.ts RlBatch
 * adds the tokens, targets and loss mask of a TokenBatch.
 */
export interface RlRollout {
  /** (B, T) log-prob of the target under the policy that sampled it */
  oldLogp: Float32Array<ArrayBuffer>;
  /** (B, T) value-head output at sampling time */
  oldValues: Float32Array<ArrayBuffer>;
  /** (B, T) advantages (already whitened where wanted) */
  advantages: Float32Array<ArrayBuffer>;
  /** (B, T) value targets */
  returns: Float32Array<ArrayBuffer>;
  /** (B, T) log-prob under the frozen reference (used when klCoef > 0) */
  refLogp: Float32Array<ArrayBuffer>;
}

/** The per-token rollout fields of an RlBatch, each (B, T). */
export const RL_ROLLOUT_FIELDS = ['oldLogp', 'oldValues', 'advantages', 'returns', 'refLogp'] as const;

/** Sums over the masked tokens; divide by `tokens` for means. */
export interface RlLossSums {
  tokens: number;
  policyLoss: number;
  valueLoss: number;
  entropy: number;
  kl: number;
  approxKl: number;
  clipped: number;
}

export function emptyRlSums(): RlLossSums {
  return { tokens: 0, policyLoss: 0, valueLoss: 0, entropy: 0, kl: 0, approxKl: 0, clipped: 0 };
}

/** Per-token statistics in this order (the GPU kernel writes the same rows). */
export const RL_STAT_FIELDS = ['policyLoss', 'valueLoss', 'entropy', 'kl', 'approxKl', 'clipped'] as const;

/**
 * float64 reference. Writes dlogp, dentropy, dvalue (n) for a loss that is a mean over
 * `tokens` masked tokens (scale = 1 / tokens over the whole optimizer step, so micro-batches
 * add up); adds this batch's sums to `sums` (unscaled). `b`: the rollout fields and the (B, T)
 * loss mask of an RlBatch.
 */
export function rlTokenGradsRef(
  out: { dlogp: Float64Array; dentropy: Float64Array; dvalue: Float64Array },
  logp: ArrayLike<number>,
  entropy: ArrayLike<number>,
  values: ArrayLike<number>,
  b: RlRollout & { mask: Float32Array<ArrayBuffer> },
  n: number,
  cfg: RlLossConfig,
  scale: number,
  sums: RlLossSums,
): void {
  for (let i = 0; i < n; i++) {
    const w = b.mask[i]!;
    if (w === 0) {
      out.dlogp[i] = 0;
      out.dentropy[i] = 0;
      out.dvalue[i] = 0;
      continue;
    }
    const A = b.advantages[i]!;
    const logRatio = logp[i]! - b.oldLogp[i]!;
    const ratio = Math.exp(logRatio);
    const clipped = Math.min(Math.max(ratio, 1 - cfg.clip), 1 + cfg.clip);
    const t1 = -A * ratio;
    const t2 = -A * clipped;
    // the unclipped term carries the gradient unless the clipped one is strictly larger
    let dlogp = t1 >= t2 ? -A * ratio : 0;
    const policy = Math.max(t1, t2);

    // value loss
    const v = values[i]!;
    const R = b.returns[i]!;
    let valueLoss = 0;
    let dv = 0;
    if (cfg.vfCoef > 0) {
      const du = v - R;
      if (cfg.vclip > 0) {
        const oldV = b.oldValues[i]!;
        const delta = v - oldV;
        const vc = oldV + Math.min(Math.max(delta, -cfg.vclip), cfg.vclip);
        const dc = vc - R;
        if (du * du >= dc * dc) {
          valueLoss = 0.5 * du * du;
          dv = du;
        } else {
          valueLoss = 0.5 * dc * dc;
          dv = Math.abs(delta) < cfg.vclip ? dc : 0;
        }
      } else {
        valueLoss = 0.5 * du * du;
        dv = du;
      }
    }

    // k3 KL to the reference, in the loss (GRPO)
    let kl = 0;
    if (cfg.klCoef > 0) {
      const d = b.refLogp[i]! - logp[i]!;
      const e = Math.exp(d);
      kl = e - d - 1;
      dlogp += cfg.klCoef * (1 - e);
    }

    out.dlogp[i] = w * scale * dlogp;
    out.dentropy[i] = w * scale * -cfg.entCoef;
    out.dvalue[i] = w * scale * cfg.vfCoef * dv;

    sums.tokens += w;
    sums.policyLoss += w * policy;
    sums.valueLoss += w * valueLoss;
    sums.entropy += w * entropy[i]!;
    sums.kl += w * kl;
    sums.approxKl += w * (ratio - 1 - logRatio);
    sums.clipped += w * (Math.abs(ratio - 1) > cfg.clip ? 1 : 0);
  }
}

export function validateRlLossConfig(c: RlLossConfig): void {
  const bad = (k: keyof RlLossConfig, why: string) => new Error(`rl loss: ${k} ${why}, got ${c[k]}`);
  for (const k of ['clip', 'vclip', 'vfCoef', 'entCoef', 'klCoef'] as const) {
    if (!(Number.isFinite(c[k]) && c[k] >= 0)) throw bad(k, 'must be a finite number >= 0');
  }
  if (!(c.clip > 0 && c.clip < 1)) throw bad('clip', 'must be in (0, 1)');
  if (!(c.invTemp > 0 && Number.isFinite(c.invTemp))) throw bad('invTemp', 'must be > 0');
}
