/**
 * The advantage side of PPO and GRPO, in float64: per-token rewards with the KL penalty,
 * generalized advantage estimation, whitening, group-relative advantages, the adaptive KL
 * controller, and explained variance.
 */

/**
 * Per-token rewards of one sequence of n actions (TRL's convention): each token is penalised by
 * klCoef * (logp - refLogp) (the k1 estimate of the KL to the reference), and the sequence's
 * scalar score is added at its last token.
 */
export function tokenRewards(
  score: number,
  logp: ArrayLike<number>,
  refLogp: ArrayLike<number>,
  klCoef: number,
): { rewards: Float64Array; kl: Float64Array } {
  const n = logp.length;
  if (n < 1) throw new Error('tokenRewards: a sequence needs at least one action');
  if (refLogp.length !== n) throw new Error(`tokenRewards: ${n} log-probs but ${refLogp.length} reference log-probs`);
  const rewards = new Float64Array(n);
  const kl = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    kl[t] = logp[t]! - refLogp[t]!;
    rewards[t] = -klCoef * kl[t]!;
  }
  rewards[n - 1]! += score;
  return { rewards, kl };
}

/**
 * Generalized advantage estimation over one finished sequence (the value after the last action
 * is 0): delta_t = r_t + gamma V_{t+1} - V_t, A_t = delta_t + gamma lambda A_{t+1}; returns
 * R_t = A_t + V_t are the value targets.
 */
export function gae(
  rewards: ArrayLike<number>,
  values: ArrayLike<number>,
  gamma: number,
  lambda: number,
): { advantages: Float64Array; returns: Float64Array } {
  const n = rewards.length;
  if (values.length !== n) throw new Error(`gae: ${n} rewards but ${values.length} values`);
  const advantages = new Float64Array(n);
  const returns = new Float64Array(n);
  let next = 0;
  let nextValue = 0;
  for (let t = n - 1; t >= 0; t--) {
    const delta = rewards[t]! + gamma * nextValue - values[t]!;
    next = delta + gamma * lambda * next;
    advantages[t] = next;
    returns[t] = next + values[t]!;
    nextValue = values[t]!;
  }
  return { advantages, returns };
}

/**
 * TRL GRPOTrainer's group statistics of one batch: `meanStd`, the mean over completions of their
 * group's sample standard deviation (Bessel-corrected, as torch's std; a group of one has none and
 * counts as 0), and `fracZero`, the fraction of completions whose group's rewards are all equal
 * (no learning signal for group-relative advantages).
 */
export function groupStdStats(xs: readonly { group: number; score: number }[]): { meanStd: number; fracZero: number } {
  if (!xs.length) return { meanStd: 0, fracZero: 0 };
  const groups = new Map<number, number[]>();
  for (const x of xs) {
    const g = groups.get(x.group);
    if (g) g.push(x.score);
    else groups.set(x.group, [x.score]);
  }
  let stdSum = 0;
  let zero = 0;
  for (const scores of groups.values()) {
    const n = scores.length;
    const mean = scores.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
    stdSum += std * n;
    if (std <= 1e-8 * Math.max(1, Math.abs(mean))) zero += n;
  }
  return { meanStd: stdSum / xs.length, fracZero: zero / xs.length };
}

/** Mean and (population) standard deviation. */
export function meanStd(xs: ArrayLike<number>): { mean: number; std: number } {
  const n = xs.length;
  if (!n) return { mean: 0, std: 0 };
  let s = 0;
  for (let i = 0; i < n; i++) s += xs[i]!;
  const mean = s / n;
  let v = 0;
  for (let i = 0; i < n; i++) v += (xs[i]! - mean) ** 2;
  return { mean, std: Math.sqrt(v / n) };
}

/** Whitens in place across all the arrays together (zero mean, unit variance). */
export function whiten(arrays: Float64Array[], eps = 1e-8): void {
  const all = Float64Array.from(arrays.flatMap((a) => Array.from(a)));
  const { mean, std } = meanStd(all);
  for (const a of arrays) for (let i = 0; i < a.length; i++) a[i] = (a[i]! - mean) / (std + eps);
}

/**
 * GRPO: each sample's advantage is its score minus its group's (same prompt's) mean, divided by
 * the group's standard deviation unless `scale` is false (Dr. GRPO).
 */
export function groupAdvantages(scores: readonly number[], groups: readonly number[], scale = true, eps = 1e-6): Float64Array {
  if (scores.length !== groups.length) throw new Error(`groupAdvantages: ${scores.length} scores but ${groups.length} group ids`);
  const by = new Map<number, number[]>();
  scores.forEach((s, i) => by.set(groups[i]!, [...(by.get(groups[i]!) ?? []), s]));
  const stats = new Map([...by].map(([g, xs]) => [g, meanStd(xs)]));
  return Float64Array.from(scores, (s, i) => {
    const { mean, std } = stats.get(groups[i]!)!;
    return scale ? (s - mean) / (std + eps) : s - mean;
  });
}

/** Ziegler et al.'s adaptive KL coefficient: moves toward the target KL, at most 20% per horizon's worth of steps. */
export class KlController {
  constructor(
    public coef: number,
    readonly adaptive: boolean,
    readonly target: number,
    readonly horizon: number,
  ) {}

  update(currentKl: number, nSteps: number): number {
    if (this.adaptive && this.target > 0) {
      const error = Math.min(Math.max(currentKl / this.target - 1, -0.2), 0.2);
      this.coef *= 1 + (error * nSteps) / this.horizon;
    }
    return this.coef;
  }
}

/** 1 - Var(returns - values) / Var(returns): how much of the return the critic explains (NaN when returns are constant). */
export function explainedVariance(values: ArrayLike<number>, returns: ArrayLike<number>): number {
  const diff = Float64Array.from(returns as ArrayLike<number>, (r, i) => r - values[i]!);
  const vr = meanStd(returns).std ** 2;
  return vr === 0 ? NaN : 1 - meanStd(diff).std ** 2 / vr;
}
