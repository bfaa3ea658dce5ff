/**
 * Chart data from metrics lines (a run's metrics.jsonl, or the store's live tail): pure, no DOM.
 * One metric's points, the chart groups a run has, its alarms, and several series (one run's
 * metrics, or two runs' for an overlay) aligned on one x.
 *
 * x is the PPO iteration (0-based, as logged) for PPO metrics and the step for SFT and
 * reward-model metrics. Held-out pass@1 also comes from the evaluation lines: the SFT policy's
 * ('sft-eval') at iteration -1, the policy before the first update, and the final policy's
 * ('rl-eval') at the last logged iteration, the policy after the last update. The charts show
 * iterations 1-based, the SFT evaluation at 0 ("before RL"): axes.ts displayX.
 *
 * Lines may come in any order and may repeat an x (a resumed run redoes an interrupted SFT; the
 * live view reads the stored file and the store's tail, which overlap): points are sorted by x
 * and the last line of an x wins. Three kinds of "no value", as uPlot draws them:
 * - a line without the key adds no point (val loss and held-out pass@1 are logged every few
 *   steps); aligned with other series it becomes `undefined`, which the line spans;
 * - a value that is null (NaN written to JSON), NaN, infinite or not a number is `null`: a gap;
 * - a finite number is a point.
 */
import { rewardComponentKey, rewardComponentOf } from '../../rl/metric-names';
import type { YKind } from './axes';

/** One metrics line: `stage` and any values (numbers, null where JSON had NaN, `alarms`). */
export type MetricRow = { readonly stage: string; readonly [key: string]: unknown };

/** One metric of one run: ascending, distinct x; y null where the value is not a finite number. */
export interface Series {
  x: number[];
  y: (number | null)[];
}

/** Series on a shared ascending x: `undefined` where a series has no point at that x. */
export interface Aligned {
  x: number[];
  ys: (number | null | undefined)[][];
}

export type XKind = 'iteration' | 'sft-step' | 'rm-step';

/** What a chart's x counts, as its legend and description name it. */
export const X_LABEL: Record<XKind, string> = { iteration: 'RL iteration', 'sft-step': 'SFT step', 'rm-step': 'RM step' };

const HELDOUT = 'eval/heldout_pass@1';

/** Where a metric's points come from: lines of `stage`, x read from `x`. */
function sourceOf(key: string): { stage: string; x: 'iteration' | 'step'; kind: XKind } {
  if (key === 'loss/train' || key === 'loss/val') return { stage: 'sft', x: 'step', kind: 'sft-step' };
  if (key === 'loss/rm') return { stage: 'rm', x: 'step', kind: 'rm-step' };
  return { stage: 'ppo', x: 'iteration', kind: 'iteration' };
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const yOf = (v: unknown): number | null => (finite(v) ? v : null);

/** The largest PPO iteration logged, or null without PPO lines. */
function lastIteration(lines: readonly MetricRow[]): number | null {
  let last: number | null = null;
  for (const l of lines) if (l.stage === 'ppo' && finite(l.iteration) && (last === null || l.iteration > last)) last = l.iteration;
  return last;
}

/** The x a line gives `key`'s point, or null when the line gives it none. */
function pointX(l: MetricRow, key: string, src: ReturnType<typeof sourceOf>, lastIt: number | null): number | null {
  if (!(key in l)) return null;
  if (l.stage === src.stage) return finite(l[src.x]) ? (l[src.x] as number) : null;
  if (key !== HELDOUT) return null;
  if (l.stage === 'sft-eval') return -1;
  if (l.stage === 'rl-eval') return lastIt;
  return null;
}

/** The points of `key`: x ascending and distinct (the last line of an x wins), y null where not a finite number. */
export function metricSeries(lines: readonly MetricRow[], key: string): Series {
  const src = sourceOf(key);
  const lastIt = key === HELDOUT ? lastIteration(lines) : null;
  const byX = new Map<number, number | null>();
  for (const l of lines) {
    const x = pointX(l, key, src, lastIt);
    if (x !== null) byX.set(x, yOf(l[key]));
  }
  const x = [...byX.keys()].sort((a, b) => a - b);
  return { x, y: x.map((v) => byX.get(v)!) };
}

/** The union of the series' x, each series' y on it (`undefined` where it has no point). */
export function align(series: readonly Series[]): Aligned {
  const xs = new Set<number>();
  for (const s of series) for (const x of s.x) xs.add(x);
  const x = [...xs].sort((a, b) => a - b);
  const at = new Map(x.map((v, i) => [v, i]));
  const ys = series.map((s) => {
    const y = new Array<number | null | undefined>(x.length).fill(undefined);
    s.x.forEach((v, i) => (y[at.get(v)!] = s.y[i]));
    return y;
  });
  return { x, ys };
}

// ---- chart groups

export interface SeriesSpec {
  key: string;
  label: string;
  /** logged every few x (evaluations): drawn with points */
  sparse: boolean;
}

export interface ChartGroup {
  id: string;
  title: string;
  x: XKind;
  /** how y is ranged: 'fraction' for rates in [0, 1] */
  y: YKind;
  series: SeriesSpec[];
}

const LABEL: Record<string, string> = {
  'loss/train': 'train loss',
  'loss/val': 'val loss',
  'loss/rm': 'RM loss',
  reward: 'reward mean',
  'env/pass_rate': 'pass rate',
  'env/ast_valid_rate': 'AST-valid rate',
  [HELDOUT]: 'held-out pass@1',
  'objective/kl': 'KL to reference (per sequence)',
  kl: 'KL to reference in the loss (per token)',
  'losses/approx_kl': 'approx. KL (per token)',
  'policy/entropy_avg': 'entropy (per token)',
  'loss/policy_avg': 'policy loss',
  'loss/value_avg': 'value loss',
  'losses/clipfrac': 'clip fraction',
  'losses/explained_variance': 'explained variance',
  'tokens/per_s': 'tokens/s',
};
const SPARSE = new Set([HELDOUT, 'loss/val']);

/** The reward components in the reward's order; others follow alphabetically. */
const COMPONENTS = ['test_pass', 'all_pass', 'ast_valid', 'lint', 'complexity', 'length', 'reward_model'];

/** Chart groups in pipeline order (SFT, reward model, then PPO), so charts that appear later go below. */
const GROUPS: { id: string; title: string; y?: YKind; keys: (present: ReadonlySet<string>) => string[] }[] = [
  { id: 'sft-loss', title: 'SFT loss', keys: () => ['loss/train', 'loss/val'] },
  { id: 'rm-loss', title: 'Reward-model loss', keys: () => ['loss/rm'] },
  { id: 'reward', title: 'Reward (mean, and each component’s mean contribution)', keys: (p) => ['reward', ...componentKeys(p)] },
  { id: 'pass', title: 'Pass rate', y: 'fraction', keys: () => ['env/pass_rate', 'env/ast_valid_rate', HELDOUT] },
  { id: 'kl', title: 'KL', keys: () => ['objective/kl', 'kl', 'losses/approx_kl'] },
  { id: 'entropy', title: 'Entropy', keys: () => ['policy/entropy_avg'] },
  { id: 'losses', title: 'PPO losses', keys: () => ['loss/policy_avg', 'loss/value_avg'] },
  { id: 'clipfrac', title: 'Clip fraction', y: 'fraction', keys: () => ['losses/clipfrac'] },
  { id: 'explained-variance', title: 'Explained variance', keys: () => ['losses/explained_variance'] },
  { id: 'tokens-per-s', title: 'Tokens per second (sampling)', keys: () => ['tokens/per_s'] },
];

function componentKeys(present: ReadonlySet<string>): string[] {
  const names = [...present].flatMap((k) => rewardComponentOf(k) ?? []);
  const rank = (n: string) => (COMPONENTS.includes(n) ? COMPONENTS.indexOf(n) : COMPONENTS.length);
  names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return names.map((n) => rewardComponentKey(n, 'mean'));
}

/** The keys with at least one finite value at a point of their own series. */
function presentKeys(lines: readonly MetricRow[]): Set<string> {
  const out = new Set<string>();
  for (const l of lines) {
    const evalLine = l.stage === 'sft-eval' || l.stage === 'rl-eval';
    for (const [k, v] of Object.entries(l)) {
      if (out.has(k) || !finite(v)) continue;
      if (sourceOf(k).stage === l.stage || (evalLine && k === HELDOUT)) out.add(k);
    }
  }
  return out;
}

/** The chart groups the lines have values for, each with only the series that have values. */
export function chartGroups(lines: readonly MetricRow[]): ChartGroup[] {
  const present = presentKeys(lines);
  return GROUPS.flatMap((g) => {
    const keys = g.keys(present).filter((k) => present.has(k));
    if (!keys.length) return [];
    const series = keys.map((key) => ({ key, label: LABEL[key] ?? rewardComponentOf(key) ?? key, sparse: SPARSE.has(key) }));
    return [{ id: g.id, title: g.title, x: sourceOf(keys[0]!).kind, y: g.y ?? 'auto', series }];
  });
}

/** One chart's series: which run (index into the runs given) and which metric. */
export interface ChartSeries extends SeriesSpec {
  run: number;
}

/**
 * A group's data for one run, or several overlaid: every run's series of the group that has a
 * value in that run, in run order, aligned on the union of their x.
 */
export function groupData(group: ChartGroup, runs: readonly (readonly MetricRow[])[]): Aligned & { series: ChartSeries[] } {
  const series: ChartSeries[] = [];
  const data: Series[] = [];
  runs.forEach((lines, run) => {
    for (const spec of group.series) {
      const s = metricSeries(lines, spec.key);
      if (!s.y.some((v) => v !== null)) continue;
      series.push({ ...spec, run });
      data.push(s);
    }
  });
  return { ...align(data), series };
}

// ---- alarms

export interface Alarm {
  iteration: number;
  message: string;
}

/** The alarms raised, by iteration (the last line of an iteration wins), in the order raised. */
export function flattenAlarms(lines: readonly MetricRow[]): Alarm[] {
  const byIt = new Map<number, string[]>();
  for (const l of lines) {
    if (l.stage !== 'ppo' || !finite(l.iteration) || !Array.isArray(l.alarms)) continue;
    byIt.set(
      l.iteration,
      l.alarms.filter((a): a is string => typeof a === 'string'),
    );
  }
  return [...byIt.keys()].sort((a, b) => a - b).flatMap((iteration) => byIt.get(iteration)!.map((message) => ({ iteration, message })));
}

// ---- text

/** A value for a legend or a description: 4 significant digits, exponent outside [1e-3, 1e5). */
export function formatValue(v: number): string {
  const a = Math.abs(v);
  if (a === 0 || !Number.isFinite(v)) return String(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/** What a chart shows in a sentence: its title, the number of points, and each series' latest value. */
export function describeChart(
  title: string,
  xLabel: string,
  data: Aligned,
  labels: readonly string[],
  xText: (x: number) => string = String,
): string {
  const latest = labels.map((label, i) => {
    const y = data.ys[i] ?? [];
    for (let j = y.length - 1; j >= 0; j--) {
      const v = y[j];
      if (typeof v === 'number') return `${label} ${formatValue(v)} at ${xLabel} ${xText(data.x[j]!)}`;
    }
    return `${label} no value yet`;
  });
  const n = data.x.length;
  return `${title}: ${n} point${n === 1 ? '' : 's'}. Latest: ${latest.join('; ')}.`;
}
