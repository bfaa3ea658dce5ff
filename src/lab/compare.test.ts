import { describe, expect, it } from 'vitest';
import { create } from 'zustand';
import type { RewardComponent } from '../reward/reward';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { LabState } from '../store';
import { createRolloutSlice, type RolloutSlice } from '../store/rolloutSlice';
import { breakdownDiff, matchPrompt, promptLanguage, sampleNumber, sideKey, sideOf, sideScore } from './compare';
import { groupStats, rescore, type RewardWeights } from './whatif';

/** A component as computeReward records it: contribution = sign * weight * raw (0 for a null raw). */
const comp = (name: string, sign: 1 | -1, weight: number, raw: number | null): RewardComponent => ({
  name,
  raw,
  weight,
  sign,
  contribution: raw === null ? 0 : sign * weight * raw,
  detail: '',
});

/** test_pass (+1, weight 1), all_pass (+1, 0.5), lint (-1, 0.02). */
const parts = (testPass: number, allPass: number, lint: number | null): RewardComponent[] => [
  comp('test_pass', 1, 1, testPass),
  comp('all_pass', 1, 0.5, allPass),
  comp('lint', -1, 0.02, lint),
];

const PROMPT = '// add two numbers\nfunction add(a, b) {\n';

function rec(group: number, components: RewardComponent[], o: Partial<RolloutRecord> = {}): RolloutRecord {
  return {
    iteration: 1,
    task_id: `t/${group}`,
    group,
    turn: 1,
    prompt: PROMPT,
    completion: '  return a + b;\n}\n',
    tokens: [],
    ids: [],
    logprobs: [],
    entropies: [],
    ref_logprobs: [],
    values: [],
    advantages: [],
    returns: [],
    raw_advantages: [],
    score: 0,
    reward: { total: components.reduce((a, c) => a + c.contribution, 0), components },
    passed: false,
    verdict: 'failed',
    tests_passed: 0,
    tests_total: 2,
    tests: [],
    finish: 'stop',
    ...o,
  };
}

/** An iteration: group 0 (task t/0, three samples and a repair turn), group 1 (task t/1, two samples). */
const iteration = (it: number): RolloutRecord[] => [
  rec(0, parts(0.5, 0, 2), { iteration: it }),
  rec(1, parts(1, 1, 0), { iteration: it, task_id: 't/1', prompt: '// sub\nfunction sub(a, b) {\n', passed: true, verdict: 'passed' }),
  rec(0, parts(1, 1, 1), { iteration: it, passed: true, verdict: 'passed', advantages: [0.5, -0.25, 1] }),
  rec(0, parts(0, 0, null), { iteration: it }),
  rec(1, parts(0, 0, 4), { iteration: it, task_id: 't/1', prompt: '// sub\nfunction sub(a, b) {\n' }),
  rec(0, parts(1, 1, 0), { iteration: it, turn: 2, prompt: `${PROMPT}// attempt: return a - b;\n// failed\nfunction add(a, b) {\n` }),
];

describe('sideOf', () => {
  it('holds the record and its prompt group (same group and turn), in record order', () => {
    const records = iteration(2);
    const s = sideOf('run', 2, records, 2);
    expect(s.record).toBe(records[2]);
    expect(s.peers).toEqual([records[0], records[2], records[3]]); // the repair turn (index 5) is another group
    expect(sampleNumber(s)).toEqual({ k: 2, of: 3 });
    expect(sideKey(s)).toBe('run/2/2');
    expect(sampleNumber(sideOf('run', 2, records, 5))).toEqual({ k: 1, of: 1 });
  });

  it('throws naming the rollout when the index is out of range', () => {
    expect(() => sideOf('run', 3, iteration(3), 6)).toThrow(/rollout 6 of iteration 3 of run "run": there are 6 rollouts/);
  });
});

describe('matchPrompt', () => {
  it('finds the same task in another iteration, the same prompt text first, then its repair turns', () => {
    const target = iteration(1)[0]!;
    expect(matchPrompt(iteration(2), target)).toEqual([
      { index: 0, samePrompt: true },
      { index: 2, samePrompt: true },
      { index: 3, samePrompt: true },
      { index: 5, samePrompt: false },
    ]);
    const repair = iteration(1)[5]!;
    expect(matchPrompt(iteration(2), repair).map((m) => [m.index, m.samePrompt])).toEqual([
      [5, true],
      [0, false],
      [2, false],
      [3, false],
    ]);
  });

  it('matches by task id, not by prompt text alone', () => {
    const other = rec(7, parts(0, 0, 0), { task_id: 't/7' }); // same prompt text as t/0, another task
    expect(matchPrompt(iteration(2), other)).toEqual([]);
    expect(matchPrompt([other], iteration(1)[0]!)).toEqual([]);
  });
});

describe('breakdownDiff', () => {
  const a = rec(0, parts(0.5, 0, 2)); // 0.5 + 0 - 0.04 = 0.46
  const b = rec(0, parts(1, 1, 1)); // 1 + 0.5 - 0.02 = 1.48

  it('lists each component on both sides with B - A, the totals those of rescore', () => {
    const d = breakdownDiff(a, b, null);
    expect(d.rows.map((r) => r.name)).toEqual(['test_pass', 'all_pass', 'lint']);
    expect(d.rows.map((r) => r.delta)).toEqual([0.5, 0.5, -0.02 - -0.04]);
    expect(d.totalA).toBe(a.reward.total);
    expect(d.totalB).toBe(b.reward.total);
    expect(d.delta).toBeCloseTo(1.02, 12);
  });

  it('applies the what-if weights to both sides as whatif.ts does', () => {
    const w = { lint: 0.5, all_pass: 0 };
    const d = breakdownDiff(a, b, w);
    expect(d.totalA).toBe(rescore(a, w).total); // 0.5 - 1
    expect(d.totalB).toBe(rescore(b, w).total); // 1 - 0.5
    expect(d.delta).toBeCloseTo(1, 12);
    expect(d.rows.find((r) => r.name === 'lint')!.delta).toBeCloseTo(0.5, 12);
    expect(d.rows.find((r) => r.name === 'all_pass')!.delta).toBe(0);
  });

  it('counts a component one side lacks as 0 there, in order of first appearance', () => {
    const rm = rec(0, [...parts(1, 1, 1), comp('reward_model', 1, 0.5, 2)]);
    const d = breakdownDiff(a, rm, null);
    expect(d.rows.map((r) => r.name)).toEqual(['test_pass', 'all_pass', 'lint', 'reward_model']);
    const row = d.rows[3]!;
    expect(row.a).toBeNull();
    expect(row.b!.contribution).toBe(1);
    expect(row.delta).toBe(1);
    expect(breakdownDiff(rm, a, null).rows[3]!.delta).toBe(-1);
  });

  it('rejects invalid weights, naming the component', () => {
    expect(() => breakdownDiff(a, b, { lint: -1 })).toThrow(/lint/);
  });
});

describe('sideScore', () => {
  it('gives the reward and group advantage under the weights as groupStats does over the iteration', () => {
    const records = iteration(1);
    for (const w of [null, { lint: 2 }, { test_pass: 0 }] as (RewardWeights | null)[]) {
      const stats = groupStats(records, w);
      for (const i of [0, 2, 3, 5]) {
        const s = sideScore(sideOf('r', 1, records, i), w);
        expect(s.total).toBe(stats.totals[i]);
        expect(s.groupAdvantage).toBeCloseTo(stats.advantages[i]!, 12);
        expect(s.recorded).toBe(records[i]!.reward.total);
      }
    }
  });

  it("takes the recorded per-token advantages' mean and last value", () => {
    const s = sideScore(sideOf('r', 1, iteration(1), 2), null);
    expect(s.meanAdvantage).toBeCloseTo(1.25 / 3, 12);
    expect(s.finalAdvantage).toBe(1);
    expect(sideScore(sideOf('r', 1, iteration(1), 0), null).meanAdvantage).toBeNaN();
  });
});

describe('promptLanguage', () => {
  it('is python for a def, else javascript', () => {
    expect(promptLanguage('def add(a, b):\n    """add"""\n')).toBe('python');
    expect(promptLanguage('# sum\ndef  f (x):\n')).toBe('python');
    expect(promptLanguage(PROMPT)).toBe('javascript');
    expect(promptLanguage('// define a function\nfunction def(x) {\n')).toBe('javascript');
  });
});

describe('the rollout slice: compare', () => {
  /** The rollout slice alone, with iteration 2 of run "r" open. */
  function store() {
    const s = create<RolloutSlice>()(
      (...a) => createRolloutSlice(...(a as unknown as Parameters<typeof createRolloutSlice>)) as RolloutSlice & Partial<LabState>,
    );
    s.setState((st) => ({
      rollouts: { ...st.rollouts, status: 'ready', run: 'r', iterations: [1, 2], iteration: 2, records: iteration(2) },
    }));
    return s;
  }

  it('marks, sets, swaps and clears the sides', () => {
    const s = store();
    s.getState().markForCompare('a', 2);
    s.getState().markForCompare('b', 9); // no such rollout: ignored
    let c = s.getState().rollouts.compare;
    expect(c.a && sideKey(c.a)).toBe('r/2/2');
    expect(c.a!.record).toBe(s.getState().rollouts.records[2]);
    expect(c.b).toBeNull();
    const other = sideOf('r', 1, iteration(1), 3);
    s.getState().setCompareSide('b', other);
    s.getState().swapCompare();
    c = s.getState().rollouts.compare;
    expect(c.a).toBe(other);
    expect(c.b && sideKey(c.b)).toBe('r/2/2');
    s.getState().setCompareSide('a', null);
    expect(s.getState().rollouts.compare.a).toBeNull();
    s.getState().clearCompare();
    expect(s.getState().rollouts.compare).toEqual({ a: null, b: null });
  });

  it('keeps the sides when another iteration is listed (they hold their records)', () => {
    const s = store();
    s.getState().markForCompare('a', 0);
    const a = s.getState().rollouts.compare.a;
    s.setState((st) => ({ rollouts: { ...st.rollouts, iteration: 1, records: iteration(1), selected: null } }));
    expect(s.getState().rollouts.compare.a).toBe(a);
    expect(a!.record.iteration).toBe(2);
  });
});
