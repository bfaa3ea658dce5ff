/**
 * What-if reward arithmetic for the rollout browser: a recorded reward is a weighted sum of
 * components (reward/reward.ts: contribution = sign * weight * raw, raw null counts 0), so a
 * rollout's reward under other weights, its rank in its prompt group and its group-relative
 * advantage follow from the recorded raw values alone, without rescoring anything.
 *
 * Pure functions over RolloutRecord (rl/ppo-loop.ts); no DOM, no React. A group is one prompt's
 * samples of one turn: identity (group, turn), as the GRPO update forms them (rl/ppo-loop.ts
 * groups by `group * 2 + turn - 1`), so a repair turn is ranked apart from its first attempts.
 */
import type { RewardComponent } from '../reward/reward';
import type { RolloutRecord } from '../rl/ppo-loop';

/** What-if weights by component name; a component not named keeps the weight it was recorded with. */
export type RewardWeights = Readonly<Record<string, number>>;

/** A reward breakdown under what-if weights. */
export interface Rescored {
  /** sum of the components' contributions */
  total: number;
  /** the recorded components with `weight` and `contribution` replaced */
  components: RewardComponent[];
}

/** Throws an Error naming the component when a weight is negative or not a finite number. */
export function validateWeights(weights: RewardWeights): void {
  for (const [name, w] of Object.entries(weights)) {
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0) {
      throw new Error(`reward weight "${name}": must be a finite number >= 0, got ${String(w)}`);
    }
  }
}

function rescoreChecked(record: Pick<RolloutRecord, 'reward'>, weights: RewardWeights | null): Rescored {
  const components = record.reward.components.map((c): RewardComponent => {
    const weight = weights && Object.hasOwn(weights, c.name) ? weights[c.name]! : c.weight;
    return { ...c, weight, contribution: c.raw === null ? 0 : c.sign * weight * c.raw };
  });
  // the same sum, in the same order, as computeReward: recorded weights give the recorded total exactly
  return { total: components.reduce((a, c) => a + c.contribution, 0), components };
}

/**
 * The record's reward under `weights` (null: as recorded): total = sum(sign * weight * raw), a
 * null raw counting 0. Throws (naming the component) on a negative or non-finite weight.
 */
export function rescore(record: Pick<RolloutRecord, 'reward'>, weights: RewardWeights | null): Rescored {
  if (weights) validateWeights(weights);
  return rescoreChecked(record, weights);
}

/** A group's identity: `${group}:${turn}`. */
export function groupKey(r: Pick<RolloutRecord, 'group' | 'turn'>): string {
  return `${r.group}:${r.turn}`;
}

/** One prompt group of an iteration (one prompt's samples of one turn) under what-if weights. */
export interface RolloutGroup {
  /** groupKey: `${group}:${turn}` */
  key: string;
  group: number;
  turn: 1 | 2;
  /** the first member's task id and prompt (a group has one prompt) */
  task_id: string;
  prompt: string;
  /** indices into the records, best first: total descending, ties by index */
  ranked: number[];
  /** how many members passed */
  passed: number;
  /** mean and population standard deviation of the members' totals */
  mean: number;
  std: number;
}

/** An iteration's rollouts under what-if weights; per-record arrays are indexed like the records. */
export interface GroupStats {
  /** per record: its reward under the weights */
  scores: Rescored[];
  /** per record: scores[i].total */
  totals: number[];
  /** per record: its 1-based rank in its group (1: highest total; ties by index) */
  ranks: number[];
  /**
   * per record: the GRPO-style group-normalised advantage, (total - group mean) / group std
   * (population std, as rl/advantages.ts groupAdvantages), and 0 when the group's totals are all
   * equal (a one-member group included). rl/advantages.ts adds eps = 1e-6 to the std; this does not.
   */
  advantages: number[];
  /** per record: the index of its group in `groups` */
  groupOf: number[];
  /** the groups, ordered by (group, turn) */
  groups: RolloutGroup[];
}

/** Totals, ranks within each (group, turn) and group-relative advantages under `weights` (null: as recorded). */
export function groupStats(records: readonly RolloutRecord[], weights: RewardWeights | null): GroupStats {
  if (weights) validateWeights(weights);
  const scores = records.map((r) => rescoreChecked(r, weights));
  const totals = scores.map((s) => s.total);
  const members = new Map<string, number[]>();
  records.forEach((r, i) => {
    const k = groupKey(r);
    const m = members.get(k);
    if (m) m.push(i);
    else members.set(k, [i]);
  });
  const groups = [...members.values()]
    .map((idx): RolloutGroup => {
      const first = records[idx[0]!]!;
      const xs = idx.map((i) => totals[i]!);
      const mean = xs.reduce((a, x) => a + x, 0) / xs.length;
      const std = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length);
      const ranked = [...idx].sort((a, b) => totals[b]! - totals[a]! || a - b);
      const passed = idx.filter((i) => records[i]!.passed).length;
      return {
        key: groupKey(first),
        group: first.group,
        turn: first.turn,
        task_id: first.task_id,
        prompt: first.prompt,
        ranked,
        passed,
        mean,
        std,
      };
    })
    .sort((a, b) => a.group - b.group || a.turn - b.turn);
  const ranks = new Array<number>(records.length).fill(0);
  const advantages = new Array<number>(records.length).fill(0);
  const groupOf = new Array<number>(records.length).fill(0);
  groups.forEach((g, gi) => {
    const distinct = new Set(g.ranked.map((i) => totals[i]!)).size > 1;
    g.ranked.forEach((i, r) => {
      ranks[i] = r + 1;
      groupOf[i] = gi;
      advantages[i] = distinct ? (totals[i]! - g.mean) / g.std : 0;
    });
  });
  return { scores, totals, ranks, advantages, groupOf, groups };
}

/** A component as the run recorded it: name, weight and sign (+1 bonus, -1 penalty). */
export interface RecordedWeight {
  name: string;
  weight: number;
  sign: 1 | -1;
}

/** The components present in the records, in order of first appearance, with their first recorded weight. */
export function recordedWeights(records: readonly RolloutRecord[]): RecordedWeight[] {
  const out = new Map<string, RecordedWeight>();
  for (const r of records) {
    for (const c of r.reward.components) if (!out.has(c.name)) out.set(c.name, { name: c.name, weight: c.weight, sign: c.sign });
  }
  return [...out.values()];
}

/** Mean of the per-token advantages (NaN when there are none). */
export function meanAdvantage(r: Pick<RolloutRecord, 'advantages'>): number {
  return r.advantages.length ? r.advantages.reduce((a, x) => a + x, 0) / r.advantages.length : NaN;
}

/** The last token's advantage (NaN when there are none). */
export function finalAdvantage(r: Pick<RolloutRecord, 'advantages'>): number {
  return r.advantages.length ? r.advantages[r.advantages.length - 1]! : NaN;
}

/** What rows can be sorted by; `component:<name>` sorts by that component's what-if contribution. */
export type SortKey = 'total' | 'mean_advantage' | 'final_advantage' | 'tests_passed' | `component:${string}`;

/** Record i's value for a sort key (NaN when it has none, e.g. a component it lacks). */
export function sortValue(records: readonly RolloutRecord[], stats: GroupStats, i: number, key: SortKey): number {
  const r = records[i]!;
  switch (key) {
    case 'total':
      return stats.totals[i]!;
    case 'mean_advantage':
      return meanAdvantage(r);
    case 'final_advantage':
      return finalAdvantage(r);
    case 'tests_passed':
      return r.tests_passed;
    default: {
      const name = key.slice('component:'.length);
      return stats.scores[i]!.components.find((c) => c.name === name)?.contribution ?? NaN;
    }
  }
}

/** Which rows to show: each checked condition must hold (all unchecked: every row). */
export interface RolloutFilter {
  /** not passed */
  failed: boolean;
  /** ast_valid === false (unknown validity does not match) */
  astInvalid: boolean;
  /** turn 2, the error-driven repair */
  repaired: boolean;
}

export const NO_FILTER: RolloutFilter = { failed: false, astInvalid: false, repaired: false };

export function matchesFilter(r: Pick<RolloutRecord, 'passed' | 'ast_valid' | 'turn'>, f: RolloutFilter): boolean {
  return (!f.failed || !r.passed) && (!f.astInvalid || r.ast_valid === false) && (!f.repaired || r.turn === 2);
}

export interface ViewOptions {
  sort: SortKey;
  descending: boolean;
  filter: RolloutFilter;
}

/** Rows of one group as shown: record indices in sort order. */
export interface ArrangedGroup {
  group: RolloutGroup;
  rows: number[];
}

/** Orders two values in the direction asked, NaN last either way; 0 when equal. */
function compareValues(x: number, y: number, descending: boolean): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return Number(Number.isNaN(x)) - Number(Number.isNaN(y));
  return descending ? y - x : x - y;
}

/**
 * The table's layout: the rows that pass the filter, sorted within each group (ties by index);
 * groups ordered by their first row (the group's best under the sort), ties in (group, turn)
 * order; groups with no row left are dropped.
 */
export function arrange(records: readonly RolloutRecord[], stats: GroupStats, view: ViewOptions): ArrangedGroup[] {
  const value = (i: number): number => sortValue(records, stats, i, view.sort);
  const arranged = stats.groups
    .map((group, gi) => ({
      gi,
      group,
      rows: group.ranked
        .filter((i) => matchesFilter(records[i]!, view.filter))
        .sort((a, b) => compareValues(value(a), value(b), view.descending) || a - b),
    }))
    .filter((g) => g.rows.length > 0);
  arranged.sort((a, b) => compareValues(value(a.rows[0]!), value(b.rows[0]!), view.descending) || a.gi - b.gi);
  return arranged.map(({ group, rows }) => ({ group, rows }));
}

const COMMENT = /^\s*(?:\/\/+|#+|\/\*+|\*+\/?|"""|''')\s*(.*?)\s*(?:\*\/|"""|''')?\s*$/;

/** The prompt's first comment line's text (`//`, `#`, `/*`, docstring), else its first non-empty line. */
export function firstCommentLine(prompt: string): string {
  const lines = prompt.split('\n');
  for (const l of lines) {
    const m = COMMENT.exec(l);
    if (m && m[1]) return m[1];
  }
  return firstLine(prompt);
}

/** The first non-empty line, trimmed at the end ('' when there is none). */
export function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trimEnd() ?? ''
  );
}
