/** Chart data from metrics lines shaped as the pipeline writes them (rl/pipeline.ts, rl/ppo-loop.ts). */
import { describe, expect, test } from 'vitest';
import { align, chartGroups, describeChart, flattenAlarms, formatValue, groupData, metricSeries, type MetricRow } from './series';

const sft = (step: number, train: number, val?: number): MetricRow => ({
  stage: 'sft',
  step,
  'loss/train': train,
  ...(val !== undefined ? { 'loss/val': val } : {}),
});

/** A PPO line as ppoIteration + the pipeline log it, as read back from metrics.jsonl (NaN written as null). */
function ppo(iteration: number, over: Record<string, unknown> = {}): MetricRow {
  return {
    stage: 'ppo',
    iteration,
    reward: 0.1 * iteration,
    'env/reward_std': 0.2,
    'env/pass_rate': 0.05 * iteration,
    'env/ast_valid_rate': 0.9,
    'rewards/test_pass/mean': 0.04 * iteration,
    'rewards/test_pass/std': 0.1,
    'rewards/lint/mean': -0.01,
    'rewards/lint/std': 0.01,
    'objective/kl': 0.01 * iteration,
    'objective/kl_coef': 0.05,
    'losses/approx_kl': 0.001,
    'losses/clipfrac': 0.1,
    'policy/entropy_avg': 1.5 - 0.1 * iteration,
    'loss/policy_avg': -0.02,
    'loss/value_avg': 0.3,
    'losses/explained_variance': null,
    'completions/mean_length': 40,
    'tokens/per_s': 120,
    'time/rollout_s': 2,
    alarms: [],
    ...over,
  };
}

const runLines: MetricRow[] = [
  sft(1, 3.2),
  sft(2, 2.9, 3.0),
  sft(3, 2.5),
  sft(4, 2.2, 2.6),
  { stage: 'sft-eval', 'eval/heldout_pass@1': 0.1, 'eval/train_pass@1': 0.2 },
  { stage: 'rm', step: 1, 'loss/rm': 0.69 },
  { stage: 'rm-eval', 'rm/heldout_pairwise_accuracy': 0.6 },
  ppo(0),
  ppo(2, { 'eval/heldout_pass@1': 0.15, alarms: ['KL accelerating: 0.100 -> 0.500 nats per sequence in two iterations'] }),
  ppo(1, { 'losses/explained_variance': 0.4 }), // out of order
  ppo(3, { reward: Number.NaN, alarms: ['entropy collapse: 0.040 nats per token (first iteration 1.500)', 'second alarm'] }),
  { stage: 'rl-eval', 'eval/heldout_pass@1': 0.2, 'eval/train_pass@1': 0.3 },
];

describe('metricSeries', () => {
  test('PPO metrics by iteration, sorted, NaN and null as gaps', () => {
    expect(metricSeries(runLines, 'reward')).toEqual({ x: [0, 1, 2, 3], y: [0, 0.1, 0.2, null] });
    expect(metricSeries(runLines, 'losses/explained_variance')).toEqual({ x: [0, 1, 2, 3], y: [null, 0.4, null, null] });
  });
  test('SFT metrics by step; a line without the key adds no point', () => {
    expect(metricSeries(runLines, 'loss/train')).toEqual({ x: [1, 2, 3, 4], y: [3.2, 2.9, 2.5, 2.2] });
    expect(metricSeries(runLines, 'loss/val')).toEqual({ x: [2, 4], y: [3.0, 2.6] });
    expect(metricSeries(runLines, 'loss/rm')).toEqual({ x: [1], y: [0.69] });
  });
  test('held-out pass@1: SFT evaluation at -1, PPO evaluations, the final one at the last iteration', () => {
    expect(metricSeries(runLines, 'eval/heldout_pass@1')).toEqual({ x: [-1, 2, 3], y: [0.1, 0.15, 0.2] });
  });
  test('non-numeric values are gaps; lines without a usable x are skipped; a repeated x keeps the last line', () => {
    const lines: MetricRow[] = [
      sft(1, 3),
      sft(2, 2.8),
      sft(3, 2.7),
      sft(1, 3.1),
      sft(2, 2.85), // SFT restarted on resume
      { stage: 'sft', 'loss/train': 9 }, // no step
      { stage: 'sft', step: null, 'loss/train': 9 },
      { stage: 'sft', step: 4, 'loss/train': 'oops' },
      { stage: 'sft', step: 5, 'loss/train': Infinity },
    ];
    expect(metricSeries(lines, 'loss/train')).toEqual({ x: [1, 2, 3, 4, 5], y: [3.1, 2.85, 2.7, null, null] });
  });
  test('a metric no line has: no points', () => {
    expect(metricSeries(runLines, 'rewards/complexity/mean')).toEqual({ x: [], y: [] });
    expect(metricSeries([], 'reward')).toEqual({ x: [], y: [] });
  });
});

describe('align', () => {
  test('union of x; undefined where a series has no point, null gaps kept', () => {
    const a = { x: [0, 1, 2, 3], y: [0, 0.1, null, 0.3] };
    const b = { x: [0, 2, 5], y: [1, 2, 5] };
    expect(align([a, b])).toEqual({
      x: [0, 1, 2, 3, 5],
      ys: [
        [0, 0.1, null, 0.3, undefined],
        [1, undefined, 2, undefined, 5],
      ],
    });
    expect(align([])).toEqual({ x: [], ys: [] });
  });
  test('thousands of points stay fast', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => ppo(4999 - i));
    const t0 = performance.now();
    const groups = chartGroups(lines);
    const data = groups.map((g) => groupData(g, [lines, lines.slice(0, 3000)]));
    expect(data[0]!.x).toHaveLength(5000);
    expect(data[0]!.x[4999]).toBe(4999);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('chartGroups', () => {
  test('only groups and series with values, in pipeline order', () => {
    const groups = chartGroups(runLines);
    expect(groups.map((g) => g.id)).toEqual([
      'sft-loss',
      'rm-loss',
      'reward',
      'pass',
      'kl',
      'entropy',
      'losses',
      'clipfrac',
      'explained-variance',
      'tokens-per-s',
    ]);
    const byId = Object.fromEntries(groups.map((g) => [g.id, g]));
    expect(byId['reward']!.series.map((s) => s.key)).toEqual(['reward', 'rewards/test_pass/mean', 'rewards/lint/mean']);
    expect(byId['reward']!.series.map((s) => s.label)).toEqual(['reward mean', 'test_pass', 'lint']);
    expect(byId['pass']!.series.map((s) => [s.key, s.sparse])).toEqual([
      ['env/pass_rate', false],
      ['env/ast_valid_rate', false],
      ['eval/heldout_pass@1', true],
    ]);
    expect(byId['sft-loss']!.x).toBe('sft-step');
    expect(byId['kl']!.x).toBe('iteration');
  });
  test('a metric that is never a finite number has no chart; reward components in the reward’s order', () => {
    const lines = [ppo(0, { 'rewards/reward_model/mean': 0.1, 'rewards/zeta/mean': 0, 'rewards/all_pass/mean': 0 }), ppo(1)];
    const groups = chartGroups(lines);
    expect(groups.some((g) => g.id === 'explained-variance')).toBe(false);
    expect(groups.find((g) => g.id === 'reward')!.series.map((s) => s.label)).toEqual([
      'reward mean',
      'test_pass',
      'all_pass',
      'lint',
      'reward_model',
      'zeta',
    ]);
  });
  test('SFT only: one chart; the SFT evaluation alone gives the pass-rate chart its held-out point', () => {
    expect(chartGroups(runLines.slice(0, 4)).map((g) => g.id)).toEqual(['sft-loss']);
    const withEval = chartGroups(runLines.slice(0, 5));
    expect(withEval.map((g) => g.id)).toEqual(['sft-loss', 'pass']);
    expect(withEval[1]!.series.map((s) => s.key)).toEqual(['eval/heldout_pass@1']);
  });
  test('nothing to chart', () => {
    expect(chartGroups([])).toEqual([]);
    expect(
      chartGroups([
        { stage: 'rm-eval', 'rm/heldout_pairwise_accuracy': 0.5 },
        { stage: 'ppo', iteration: 0, alarms: [] },
      ]),
    ).toEqual([]);
  });
});

describe('groupData', () => {
  test('two runs overlaid on a shared x, each run with its own series', () => {
    const a = [ppo(0), ppo(1), ppo(2)];
    const b = [ppo(1, { reward: 5, 'rewards/lint/mean': undefined }), ppo(3, { reward: 7 })];
    const group = chartGroups([...a, ...b]).find((g) => g.id === 'reward')!;
    const d = groupData(group, [a, b]);
    expect(d.x).toEqual([0, 1, 2, 3]);
    expect(d.series.map((s) => [s.run, s.key])).toEqual([
      [0, 'reward'],
      [0, 'rewards/test_pass/mean'],
      [0, 'rewards/lint/mean'],
      [1, 'reward'],
      [1, 'rewards/test_pass/mean'],
      [1, 'rewards/lint/mean'],
    ]);
    expect(d.ys[0]).toEqual([0, 0.1, 0.2, undefined]);
    expect(d.ys[3]).toEqual([undefined, 5, undefined, 7]);
    expect(d.ys[5]).toEqual([undefined, null, undefined, -0.01]); // key present but undefined: a gap
  });
  test('a series without values in a run is left out for that run', () => {
    const a = [ppo(0), ppo(1)];
    const b = [ppo(0, { 'losses/explained_variance': 0.5 })];
    const group = chartGroups([...a, ...b]).find((g) => g.id === 'explained-variance')!;
    const d = groupData(group, [a, b]);
    expect(d.series.map((s) => s.run)).toEqual([1]);
    expect(d).toMatchObject({ x: [0], ys: [[0.5]] });
  });
});

describe('flattenAlarms', () => {
  test('each alarm with its iteration, by iteration', () => {
    expect(flattenAlarms(runLines)).toEqual([
      { iteration: 2, message: 'KL accelerating: 0.100 -> 0.500 nats per sequence in two iterations' },
      { iteration: 3, message: 'entropy collapse: 0.040 nats per token (first iteration 1.500)' },
      { iteration: 3, message: 'second alarm' },
    ]);
  });
  test('a repeated iteration keeps its last line; malformed alarms are ignored', () => {
    const lines: MetricRow[] = [
      ppo(1, { alarms: ['old'] }),
      ppo(0, { alarms: 'not a list' }),
      ppo(1, { alarms: ['new', 3, null] }),
      { stage: 'ppo', alarms: ['no iteration'] },
      { stage: 'sft', step: 1, alarms: ['not ppo'] },
    ];
    expect(flattenAlarms(lines)).toEqual([{ iteration: 1, message: 'new' }]);
    expect(flattenAlarms([])).toEqual([]);
  });
});

describe('text', () => {
  test('formatValue', () => {
    expect([0, 1, 0.123456, -2.5, 1234.56, 123456, 0.0001234, NaN].map(formatValue)).toEqual([
      '0',
      '1',
      '0.1235',
      '-2.5',
      '1235',
      '1.23e+5',
      '1.23e-4',
      'NaN',
    ]);
  });
  test('describeChart names each series’ latest value and its x', () => {
    const d = align([
      { x: [0, 1, 2], y: [0.5, 0.25, null] },
      { x: [], y: [] },
    ]);
    expect(describeChart('Reward', 'PPO iteration', d, ['reward mean', 'lint'])).toBe(
      'Reward: 3 points. Latest: reward mean 0.25 at PPO iteration 1; lint no value yet.',
    );
    expect(describeChart('KL', 'PPO iteration', align([{ x: [4], y: [1] }]), ['KL'])).toBe('KL: 1 point. Latest: KL 1 at PPO iteration 4.');
  });
});
