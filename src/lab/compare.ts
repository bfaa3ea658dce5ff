/**
 * Comparing two rollouts (app/panels/RolloutCompare.tsx): side A and side B, each a record of some
 * iteration of some run; matching the same prompt across iterations, a side's place in its prompt
 * group, and the per-component reward difference under the what-if weights (the arithmetic is
 * whatif.ts: contribution = sign * weight * raw, a null raw counting 0).
 *
 * Pure functions over RolloutRecord; no DOM, no React, no editor types.
 */
import type { RewardComponent } from '../reward/reward';
import type { RolloutRecord } from '../rl/ppo-loop';
import { groupKey, groupStats, rescore, type RewardWeights } from './whatif';

/** One side of a comparison: a rollout of iteration `iteration` of run `run`. */
export interface CompareSide {
  run: string;
  /** 1-based, as the rollout file is named */
  iteration: number;
  /** index into that iteration's records */
  index: number;
  record: RolloutRecord;
  /** the records of its prompt group (same group and turn, itself included), in record order */
  peers: readonly RolloutRecord[];
}

export interface ComparePair {
  a: CompareSide | null;
  b: CompareSide | null;
}

/** Which side. */
export type SideName = 'a' | 'b';

/** A side's identity: `run/iteration/index`. */
export const sideKey = (s: Pick<CompareSide, 'run' | 'iteration' | 'index'>): string => `${s.run}/${s.iteration}/${s.index}`;

/** Side of record `index` of an iteration's `records`; throws when there is no such record. */
export function sideOf(run: string, iteration: number, records: readonly RolloutRecord[], index: number): CompareSide {
  const record = records[index];
  if (!record) throw new Error(`rollout ${index} of iteration ${iteration} of run "${run}": there are ${records.length} rollouts`);
  const key = groupKey(record);
  return { run, iteration, index, record, peers: records.filter((r) => groupKey(r) === key) };
}

/** A rollout of another iteration for the same task: `samePrompt` false when its prompt text differs (a repair turn). */
export interface PromptMatch {
  index: number;
  samePrompt: boolean;
}

/**
 * The rollouts in `records` of `target`'s task (same task id), those with the very same prompt
 * text first, each part in record order.
 */
export function matchPrompt(records: readonly RolloutRecord[], target: Pick<RolloutRecord, 'task_id' | 'prompt'>): PromptMatch[] {
  const out: PromptMatch[] = [];
  records.forEach((r, index) => {
    if (r.task_id === target.task_id) out.push({ index, samePrompt: r.prompt === target.prompt });
  });
  return out.sort((x, y) => Number(y.samePrompt) - Number(x.samePrompt) || x.index - y.index);
}

/** A side's sample number in its prompt group: 1-based, in record order, of `of`. */
export function sampleNumber(side: Pick<CompareSide, 'record' | 'peers'>): { k: number; of: number } {
  return { k: side.peers.indexOf(side.record) + 1, of: side.peers.length };
}

/** A side's numbers under `weights` (null: as recorded). */
export interface SideScore {
  /** the reward under the weights */
  total: number;
  /** the recorded reward */
  recorded: number;
  /** group-normalised advantage under the weights, (total - group mean) / group std (whatif.ts groupStats) */
  groupAdvantage: number;
  /** the recorded per-token advantages' mean and last value (NaN when there are none) */
  meanAdvantage: number;
  finalAdvantage: number;
}

export function sideScore(side: Pick<CompareSide, 'record' | 'peers'>, weights: RewardWeights | null): SideScore {
  const { record: r, peers } = side;
  const k = peers.indexOf(r);
  const stats = groupStats(k < 0 ? [r] : peers, weights);
  const at = k < 0 ? 0 : k;
  const adv = r.advantages;
  return {
    total: stats.totals[at]!,
    recorded: r.reward.total,
    groupAdvantage: stats.advantages[at]!,
    meanAdvantage: adv.length ? adv.reduce((s, x) => s + x, 0) / adv.length : NaN,
    finalAdvantage: adv.length ? adv[adv.length - 1]! : NaN,
  };
}

/** One component of the reward breakdown on both sides; null where a side lacks the component. */
export interface BreakdownRow {
  name: string;
  sign: 1 | -1;
  a: RewardComponent | null;
  b: RewardComponent | null;
  /** b's contribution - a's, a missing component counting 0 */
  delta: number;
}

export interface BreakdownDiff {
  /** components in order of first appearance, A's first */
  rows: BreakdownRow[];
  totalA: number;
  totalB: number;
  /** totalB - totalA */
  delta: number;
}

/** Both sides' reward breakdowns under `weights` (null: as recorded), component by component, and B - A. */
export function breakdownDiff(
  a: Pick<RolloutRecord, 'reward'>,
  b: Pick<RolloutRecord, 'reward'>,
  weights: RewardWeights | null,
): BreakdownDiff {
  const ra = rescore(a, weights);
  const rb = rescore(b, weights);
  const names = [...new Set([...ra.components, ...rb.components].map((c) => c.name))];
  const rows = names.map((name): BreakdownRow => {
    const ca = ra.components.find((c) => c.name === name) ?? null;
    const cb = rb.components.find((c) => c.name === name) ?? null;
    return { name, sign: (ca ?? cb)!.sign, a: ca, b: cb, delta: (cb?.contribution ?? 0) - (ca?.contribution ?? 0) };
  });
  return { rows, totalA: ra.total, totalB: rb.total, delta: rb.total - ra.total };
}

/** The editor language for a prompt: Python when it defines a function with `def`, else JavaScript. */
export function promptLanguage(prompt: string): 'python' | 'javascript' {
  return /^\s*def\s+\w+\s*\(/m.test(prompt) ? 'python' : 'javascript';
}
