/** Advantage estimation and the KL controller against hand-computed values. */
import { describe, expect, test } from 'vitest';
import { explainedVariance, gae, groupAdvantages, groupStdStats, KlController, meanStd, tokenRewards, whiten } from './advantages';

describe('tokenRewards', () => {
  test('penalises each token by coef * (logp - ref) and adds the score at the end', () => {
    const { rewards, kl } = tokenRewards(2, [-1, -2, -0.5], [-1.5, -2, -1], 0.1);
    expect(Array.from(kl)).toEqual([0.5, 0, 0.5]);
    expect(rewards[0]).toBeCloseTo(-0.05, 12);
    expect(rewards[1]).toBeCloseTo(0, 12);
    expect(rewards[2]).toBeCloseTo(2 - 0.05, 12);
  });
  test('rejects empty and mismatched sequences', () => {
    expect(() => tokenRewards(1, [], [], 0.1)).toThrow(/at least one action/);
    expect(() => tokenRewards(1, [0, 0], [0], 0.1)).toThrow(/2 log-probs but 1 reference/);
  });
});

describe('gae', () => {
  test('matches the recursion by hand (gamma 0.9, lambda 0.8)', () => {
    const r = [0.1, -0.2, 1];
    const v = [0.5, 0.4, 0.3];
    const g = 0.9;
    const l = 0.8;
    const d2 = r[2]! - v[2]!;
    const d1 = r[1]! + g * v[2]! - v[1]!;
    const d0 = r[0]! + g * v[1]! - v[0]!;
    const a2 = d2;
    const a1 = d1 + g * l * a2;
    const a0 = d0 + g * l * a1;
    const out = gae(r, v, g, l);
    expect(Array.from(out.advantages)).toEqual([a0, a1, a2].map((x) => expect.closeTo(x, 12)));
    expect(Array.from(out.returns)).toEqual([a0 + v[0]!, a1 + v[1]!, a2 + v[2]!].map((x) => expect.closeTo(x, 12)));
  });
  test('gamma = lambda = 1 gives Monte-Carlo returns minus the value', () => {
    const out = gae([0, 0, 1], [0.2, 0.3, 0.4], 1, 1);
    expect(Array.from(out.returns)).toEqual([1, 1, 1].map((x) => expect.closeTo(x, 12)));
    expect(Array.from(out.advantages)).toEqual([0.8, 0.7, 0.6].map((x) => expect.closeTo(x, 12)));
  });
});

describe('normalisation', () => {
  test('whiten gives zero mean and unit variance across arrays', () => {
    const a = Float64Array.from([1, 2, 3]);
    const b = Float64Array.from([10]);
    whiten([a, b]);
    const all = [...a, ...b];
    const { mean, std } = meanStd(all);
    expect(mean).toBeCloseTo(0, 12);
    expect(std).toBeCloseTo(1, 6);
  });
  test('group advantages standardise within each group only', () => {
    const adv = groupAdvantages([1, 0, 0, 0, 5, 5], [0, 0, 0, 0, 1, 1]);
    expect(adv[0]).toBeCloseTo(Math.sqrt(3), 5);
    expect(adv[1]).toBeCloseTo(-1 / Math.sqrt(3), 5);
    expect(adv[4]).toBe(0); // a group that all scored the same teaches nothing
    expect(() => groupAdvantages([1], [0, 1])).toThrow(/1 scores but 2 group ids/);
    // Dr. GRPO: centred only, so a group that differs by a hair keeps hair-sized advantages
    const dr = groupAdvantages([1, 0, 0, 0, 0.01, 0], [0, 0, 0, 0, 1, 1], false);
    expect(Array.from(dr).map((x) => +x.toFixed(6))).toEqual([0.75, -0.25, -0.25, -0.25, 0.005, -0.005]);
    expect(Math.abs(groupAdvantages([0.01, 0], [1, 1])[0]!)).toBeCloseTo(1, 3);
  });
  test('explained variance: 1 for a perfect critic, 0 for a constant at the mean, NaN for constant returns', () => {
    expect(explainedVariance([1, 2, 3], [1, 2, 3])).toBeCloseTo(1, 12);
    expect(explainedVariance([2, 2, 2], [1, 2, 3])).toBeCloseTo(0, 12);
    expect(explainedVariance([1, 2], [1, 1])).toBeNaN();
  });
});

describe('KlController', () => {
  test('fixed stays; adaptive moves toward the target by at most 20% of nSteps / horizon', () => {
    const fixed = new KlController(0.1, false, 6, 100);
    expect(fixed.update(100, 50)).toBe(0.1);
    const adaptive = new KlController(0.1, true, 6, 100);
    expect(adaptive.update(12, 50)).toBeCloseTo(0.1 * (1 + 0.2 * 0.5), 12); // KL too high: coefficient up, clipped error
    expect(adaptive.update(5.4, 100)).toBeCloseTo(0.11 * (1 - 0.1), 12); // KL below target: down
  });
});

describe('groupStdStats (TRL GRPOTrainer reward_std, frac_reward_zero_std)', () => {
  test("the mean of each completion's group sample std; the share of completions in flat groups", () => {
    // group 0: [1, 0, 1, 0] std (unbiased) = sqrt(1/3); group 1: [0.5, 0.5, 0.5, 0.5] std 0
    const xs = [1, 0, 1, 0].map((score) => ({ group: 0, score })).concat([0.5, 0.5, 0.5, 0.5].map((score) => ({ group: 1, score })));
    const r = groupStdStats(xs);
    expect(r.meanStd).toBeCloseTo(Math.sqrt(1 / 3) / 2, 12);
    expect(r.fracZero).toBe(0.5);
  });
  test('a group of one has no spread; no completions, no statistics', () => {
    expect(groupStdStats([{ group: 3, score: 0.7 }])).toEqual({ meanStd: 0, fracZero: 1 });
    expect(groupStdStats([])).toEqual({ meanStd: 0, fracZero: 0 });
  });
});
