/** Chart axes: tick labels, y and x ranges, and the x the charts show. */
import { describe, expect, test } from 'vitest';
import { displayData, displayX, stepDecimals, tickLabels, xAxisLabel, xRange, xText, yRange } from './axes';
import { chartGroups, describeChart, flattenAlarms, groupData, metricSeries, X_LABEL, type MetricRow } from './series';

/** ticks from `lo` to `hi`, `step` apart, as uPlot places them (multiples of the step, with float noise) */
const ticksOf = (lo: number, hi: number, step: number): number[] => {
  const out: number[] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(k * step);
  return out;
};
const distinct = (labels: readonly string[]) => new Set(labels).size === labels.length;

describe('tickLabels', () => {
  test('a near-constant series: [6.1470, 6.1471] gives distinct plain labels', () => {
    const ticks = ticksOf(6.147, 6.1471, 2e-5);
    const labels = tickLabels(ticks, 2e-5);
    expect(labels).toEqual(['6.14700', '6.14702', '6.14704', '6.14706', '6.14708', '6.14710']);
    expect(tickLabels(ticksOf(6.147, 6.1471, 5e-5), 5e-5)).toEqual(['6.14700', '6.14705', '6.14710']);
  });
  test('a range of 1e-14 magnitude: compact exponent form, distinct', () => {
    expect(tickLabels(ticksOf(0, 3e-14, 1e-14), 1e-14)).toEqual(['0', '1e-14', '2e-14', '3e-14']);
    const labels = tickLabels(ticksOf(5e-15, 2e-14, 2.5e-15), 2.5e-15);
    expect(labels).toEqual(['5e-15', '7.5e-15', '1e-14', '1.25e-14', '1.5e-14', '1.75e-14', '2e-14']);
  });
  test('all-zero data ranged to [-1, 1]: plain labels, no "-0"', () => {
    expect(tickLabels(ticksOf(-1, 1, 0.5), 0.5)).toEqual(['-1.0', '-0.5', '0.0', '0.5', '1.0']);
    expect(tickLabels([-0.2, -0.1, 1e-17, 0.1], 0.1)).toEqual(['-0.2', '-0.1', '0.0', '0.1']);
    expect(tickLabels([0], 1)).toEqual(['0']);
  });
  test('normal magnitudes are plain, decimals from the step; huge ones in exponent form', () => {
    expect(tickLabels([0, 50, 100], 50)).toEqual(['0', '50', '100']);
    expect(tickLabels([0.25, 0.5, 0.75], 0.25)).toEqual(['0.25', '0.50', '0.75']);
    expect(tickLabels([120, 125, 130], 5)).toEqual(['120', '125', '130']);
    expect(tickLabels([1e6, 1.5e6, 2e6], 5e5)).toEqual(['1e6', '1.5e6', '2e6']);
    expect(tickLabels([0.0002, 0.0004], 0.0002)).toEqual(['2e-4', '4e-4']);
  });
  test('never repeats adjacent labels, even for a step the ticks do not follow', () => {
    expect(distinct(tickLabels([6.14701, 6.14702, 6.14703], 0.1))).toBe(true);
    expect(distinct(tickLabels([1e-14, 1.01e-14, 1.02e-14], Number.NaN))).toBe(true);
    for (const [lo, hi, step] of [
      [0.999, 1.001, 5e-4],
      [-3e-9, 3e-9, 1e-9],
      [6.1469, 6.1472, 1e-4],
      [0, 5000, 1000],
      [-2.5, 2.5, 2.5],
    ] as const)
      expect(distinct(tickLabels(ticksOf(lo, hi, step), step)), `${lo}..${hi} by ${step}`).toBe(true);
  });
  test('stepDecimals', () => {
    expect([1, 50, 2.5, 0.5, 0.25, 2e-5, 1e-14, 0.1 + 0.2].map(stepDecimals)).toEqual([0, 0, 1, 1, 2, 5, 14, 1]);
  });
});

describe('yRange', () => {
  test('all-zero data: [-1, 1], not 0..100; a fraction chart: 0..1', () => {
    expect(yRange(0, 0)).toEqual([-1, 1]);
    expect(yRange(0, 0, 'fraction')).toEqual([0, 1]);
  });
  test('a constant c: c ± 5%, whatever its magnitude', () => {
    const [lo, hi] = yRange(6.147, 6.147);
    expect(lo).toBeCloseTo(5.83965, 10);
    expect(hi).toBeCloseTo(6.45435, 10);
    const [a, b] = yRange(-2e-14, -2e-14);
    expect(a).toBeCloseTo(-2.1e-14, 24);
    expect(b).toBeCloseTo(-1.9e-14, 24);
    // float32 noise is constant too
    const [c, d] = yRange(6.1469998, 6.1470001);
    expect(d - c).toBeGreaterThan(0.5);
  });
  test('a range: padded by 5%, not crossing 0 when the data does not', () => {
    const [lo, hi] = yRange(6.147, 6.1471);
    expect(lo).toBeCloseTo(6.146995, 9);
    expect(hi).toBeCloseTo(6.147105, 9);
    expect(yRange(0, 2e-14)).toEqual([0, 2.1e-14]);
    expect(yRange(-1, 0)).toEqual([-1.05, 0]);
    expect(yRange(-1, 1)).toEqual([-1.1, 1.1]);
  });
  test('fractions from 0, up to at most 1; outside [0, 1] as any series', () => {
    expect(yRange(0.05, 0.2, 'fraction')).toEqual([0, 0.2 * 1.1]);
    expect(yRange(0.5, 0.98, 'fraction')).toEqual([0, 1]);
    expect(yRange(-0.5, 0.5, 'fraction')).toEqual([-0.55, 0.55]);
  });
  test('no data', () => {
    expect(yRange(null, null)).toEqual([-1, 1]);
    expect(yRange(Infinity, -Infinity, 'fraction')).toEqual([0, 1]);
  });
});

describe('x', () => {
  const lines: MetricRow[] = [
    { stage: 'sft', step: 1, 'loss/train': 3 },
    { stage: 'sft', step: 2, 'loss/train': 2 },
    { stage: 'sft-eval', 'eval/heldout_pass@1': 0.1 },
    { stage: 'ppo', iteration: 0, 'env/pass_rate': 0, 'policy/entropy_avg': 6.147, alarms: [] },
    { stage: 'ppo', iteration: 1, 'env/pass_rate': 0, 'policy/entropy_avg': 6.147, alarms: ['entropy collapse'] },
    { stage: 'rl-eval', 'eval/heldout_pass@1': 0.2 },
  ];
  test('RL iterations 1..N as the Rollouts panel numbers them; the evaluation before RL at 0, never negative', () => {
    const pass = chartGroups(lines).find((g) => g.id === 'pass')!;
    const d = displayData(pass.x, groupData(pass, [lines]));
    expect(d.x).toEqual([0, 1, 2]);
    expect(d.ys).toEqual([
      [undefined, 0, 0],
      [0.1, undefined, 0.2],
    ]);
    expect(displayX('iteration', -1)).toBe(0);
    expect(displayX('iteration', flattenAlarms(lines)[0]!.iteration)).toBe(2);
  });
  test('SFT steps as logged', () => {
    const sft = chartGroups(lines).find((g) => g.id === 'sft-loss')!;
    expect(displayData(sft.x, groupData(sft, [lines])).x).toEqual(metricSeries(lines, 'loss/train').x);
    expect(displayX('sft-step', 1)).toBe(1);
  });
  test('each x-axis says what it counts; the point before RL is labelled', () => {
    expect(X_LABEL).toEqual({ iteration: 'RL iteration', 'sft-step': 'SFT step', 'rm-step': 'RM step' });
    expect(xAxisLabel('iteration', [0, 1, 2])).toBe('RL iteration (0 = before RL)');
    expect(xAxisLabel('iteration', [1, 2])).toBe('RL iteration');
    expect(xAxisLabel('sft-step', [0, 1])).toBe('SFT step');
    expect(xText('iteration', 0)).toBe('0 (before RL)');
    expect(xText('iteration', 2)).toBe('2');
    expect(xText('sft-step', 0)).toBe('0');
    const d = displayData('iteration', { x: [-1], ys: [[0.1]] });
    expect(describeChart('Pass rate', 'RL iteration', d, ['held-out pass@1'], (x) => xText('iteration', x))).toBe(
      'Pass rate: 1 point. Latest: held-out pass@1 0.1 at RL iteration 0 (before RL).',
    );
  });
  test('xRange: a lone point never puts the axis below 0', () => {
    expect(xRange(0, 0)).toEqual([0, 1]);
    expect(xRange(1, 1)).toEqual([0, 2]);
    expect(xRange(1, 5)).toEqual([1, 5]);
    expect(xRange(null, null)).toEqual([0, 1]);
  });
  test('chart groups: pass rates and clip fraction ranged as fractions', () => {
    const groups = chartGroups([...lines, { stage: 'ppo', iteration: 2, 'losses/clipfrac': 0, 'loss/policy_avg': 0, alarms: [] }]);
    expect(Object.fromEntries(groups.map((g) => [g.id, g.y]))).toEqual({
      'sft-loss': 'auto',
      pass: 'fraction',
      entropy: 'auto',
      losses: 'auto',
      clipfrac: 'fraction',
    });
  });
});
