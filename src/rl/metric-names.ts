/**
 * Metric keys. The RL iteration logs TRL's keys where it computes what TRL computes (GRPOTrainer's
 * `reward`, `reward_std`, `frac_reward_zero_std`, `kl`, `completions/*`, `rewards/<name>/*`;
 * PPOTrainer's `objective/kl`, `policy/entropy_avg`, `loss/policy_avg`, `loss/value_avg`; the HF
 * Trainer's `grad_norm`), CleanRL's where TRL's estimator differs (`losses/approx_kl`,
 * `losses/clipfrac`, `losses/explained_variance`), and its own namespaced keys for what neither
 * logs (`env/*`, `time/*`, `explore/*`, `repair/*`, `eval/*`). The README's metric table lists
 * each with the framework's key and what differs.
 *
 * Runs written before the rename keep their old keys in metrics.jsonl and ppo-state.json; every
 * reader passes lines through canonicalMetrics, so old runs chart, compare and resume as before.
 */

/** Keys before the rename -> the keys logged now. */
export const LEGACY_METRIC_KEYS: Readonly<Record<string, string>> = {
  'env/reward_mean': 'reward',
  'loss/kl': 'kl',
  'policy/entropy': 'policy/entropy_avg',
  'policy/approxkl': 'losses/approx_kl',
  'policy/clipfrac': 'losses/clipfrac',
  'loss/policy': 'loss/policy_avg',
  'loss/value': 'loss/value_avg',
  'val/explained_variance': 'losses/explained_variance',
  'grad/norm_mean': 'grad_norm',
  'tokens/responses_len_mean': 'completions/mean_length',
};

/** The key of a reward component's statistic (`mean` or `std` of its contribution), TRL's shape. */
export function rewardComponentKey(name: string, stat: 'mean' | 'std'): string {
  return `rewards/${name}/${stat}`;
}

/** The component name of a `rewards/<name>/mean` key, or null. */
export function rewardComponentOf(key: string): string | null {
  return /^rewards\/(.+)\/mean$/.exec(key)?.[1] ?? null;
}

/** The key logged now for a key of any run, old or new. */
export function canonicalMetricKey(key: string): string {
  const renamed = LEGACY_METRIC_KEYS[key];
  if (renamed) return renamed;
  const component = /^reward\/(.+)_(mean|std)$/.exec(key);
  if (component) return rewardComponentKey(component[1]!, component[2] as 'mean' | 'std');
  return key;
}

/** A metrics object with every key canonical (the same object when nothing needed renaming). */
export function canonicalMetrics<T extends Record<string, unknown>>(m: T): T {
  let renamed = false;
  for (const k of Object.keys(m)) if (canonicalMetricKey(k) !== k) renamed = true;
  if (!renamed) return m;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) out[canonicalMetricKey(k)] = v;
  return out as T;
}
