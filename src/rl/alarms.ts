/**
 * Training alarms, checked after every iteration against the history so far:
 * - overfitting: the train reward rose since the previous held-out evaluation while held-out
 *   pass@1 fell;
 * - KL accelerating: the policy's KL to the reference more than doubled within two iterations
 *   and is above half a nat per sequence;
 * - entropy collapse: per-token entropy below a quarter of the first iteration's, or below 0.05.
 */
import type { Metrics } from './ppo-loop';

const num = (m: Metrics, k: string): number => (typeof m[k] === 'number' ? (m[k] as number) : NaN);

export function checkAlarms(history: readonly Metrics[]): string[] {
  const out: string[] = [];
  const cur = history[history.length - 1];
  if (!cur) return out;
  const evals = history.filter((m) => Number.isFinite(num(m, 'eval/heldout_pass@1')));
  if (evals.length >= 2 && evals[evals.length - 1] === cur) {
    const prev = evals[evals.length - 2]!;
    const since = history.slice(history.indexOf(prev) + 1);
    const before = history.slice(Math.max(0, history.indexOf(prev) - since.length + 1), history.indexOf(prev) + 1);
    const mean = (ms: readonly Metrics[]) => ms.reduce((a, m) => a + num(m, 'reward'), 0) / ms.length;
    const heldDrop = num(prev, 'eval/heldout_pass@1') - num(cur, 'eval/heldout_pass@1');
    if (heldDrop > 0.02 && mean(since) > mean(before)) {
      out.push(
        `overfitting: train reward rose (${mean(before).toFixed(3)} -> ${mean(since).toFixed(3)}) while held-out pass@1 fell by ${(heldDrop * 100).toFixed(1)} points`,
      );
    }
  }
  if (history.length >= 3) {
    const k0 = num(history[history.length - 3]!, 'objective/kl');
    const k2 = num(cur, 'objective/kl');
    if (k2 > 0.5 && k2 > 2 * Math.max(k0, 1e-9))
      out.push(`KL accelerating: ${k0.toFixed(3)} -> ${k2.toFixed(3)} nats per sequence in two iterations`);
  }
  const h0 = num(history[0]!, 'policy/entropy_avg');
  const h = num(cur, 'policy/entropy_avg');
  if (Number.isFinite(h) && (h < 0.05 || (Number.isFinite(h0) && h < 0.25 * h0))) {
    out.push(`entropy collapse: ${h.toFixed(3)} nats per token (first iteration ${h0.toFixed(3)})`);
  }
  return out;
}
