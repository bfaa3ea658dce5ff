import { describe, expect, it } from 'vitest';
import type { RewardComponent } from '../reward/reward';
import type { RolloutRecord } from '../rl/ppo-loop';
import {
  arrange,
  finalAdvantage,
  firstCommentLine,
  groupStats,
  matchesFilter,
  meanAdvantage,
  NO_FILTER,
  recordedWeights,
  rescore,
  sortValue,
} from './whatif';

/** A component as computeReward records it: contribution = sign * weight * raw (0 for a null raw). */
const comp = (name: string, sign: 1 | -1, weight: number, raw: number | null): RewardComponent => ({
  name,
  raw,
  weight,
  sign,
  contribution: raw === null ? 0 : sign * weight * raw,
  detail: '',
});

/** The usual three: test_pass (+1, weight 1), all_pass (+1, 0.5), lint (-1, 0.02). */
const parts = (testPass: number, allPass: number, lint: number | null): RewardComponent[] => [
  comp('test_pass', 1, 1, testPass),
  comp('all_pass', 1, 0.5, allPass),
  comp('lint', -1, 0.02, lint),
];

function rec(group: number, components: RewardComponent[], o: Partial<RolloutRecord> = {}): RolloutRecord {
  return {
    iteration: 1,
    task_id: `t/${group}`,
    group,
    turn: 1,
    prompt: '// add two numbers\nfunction add(a, b) {\n',
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

describe('rescore', () => {
  const r = rec(0, parts(1, 1, 5)); // 1*1 + 0.5*1 - 0.02*5 = 1.4

  it('reproduces the recorded total exactly with the recorded weights', () => {
    expect(rescore(r, null).total).toBe(r.reward.total);
    expect(rescore(r, {}).total).toBe(r.reward.total);
    expect(r.reward.total).toBeCloseTo(1.4, 12);
  });

  it('applies what-if weights; unnamed components keep their recorded weight', () => {
    const s = rescore(r, { lint: 0.3, all_pass: 0 }); // 1 + 0 - 0.3*5 = -0.5
    expect(s.total).toBeCloseTo(-0.5, 12);
    expect(s.components.map((c) => [c.name, c.weight])).toEqual([
      ['test_pass', 1],
      ['all_pass', 0],
      ['lint', 0.3],
    ]);
    expect(s.components[2]!.contribution).toBeCloseTo(-1.5, 12);
    expect(r.reward.components[2]!.weight).toBe(0.02); // the record is not mutated
  });

  it('counts a null raw as 0 whatever its weight', () => {
    const py = rec(0, parts(0.5, 0, null)); // 0.5 + 0 - 0
    expect(rescore(py, { lint: 2 }).total).toBeCloseTo(0.5, 12);
    expect(rescore(py, { lint: 2 }).components[2]!.contribution).toBe(0);
  });

  it('ignores weights of components the record lacks, and inherited names', () => {
    expect(rescore(r, { reward_model: 3 }).total).toBe(r.reward.total);
    expect(rescore(rec(0, [comp('constructor', 1, 2, 1)]), {}).total).toBe(2);
  });

  it('rejects negative or non-finite weights, naming the component', () => {
    expect(() => rescore(r, { lint: -0.1 })).toThrow(/lint/);
    expect(() => rescore(r, { test_pass: NaN })).toThrow(/"test_pass".*NaN/);
    expect(() => rescore(r, { all_pass: Infinity })).toThrow(/all_pass/);
    expect(() => groupStats([r], { length: -1 })).toThrow(/length/);
  });
});

describe('groupStats', () => {
  // group 0: totals 1.4, 0.5, 1.02 (index order); group 1: one member; group 0 turn 2: a separate group
  const records = [
    rec(0, parts(1, 1, 5), { passed: true }), // 1.4
    rec(0, parts(0.5, 0, 0)), // 0.5
    rec(0, parts(1, 0, 24)), // 1 - 0.48 = 0.52
    rec(1, parts(0, 0, 1)), // -0.02
    rec(0, parts(1, 1, 0), { turn: 2, passed: true }), // 1.5
  ];

  it('ranks within each (group, turn) by total, descending', () => {
    const s = groupStats(records, null);
    expect(s.groups.map((g) => g.key)).toEqual(['0:1', '0:2', '1:1']);
    expect(s.groups[0]!.ranked).toEqual([0, 2, 1]);
    expect(s.ranks).toEqual([1, 3, 2, 1, 1]);
    expect(s.groupOf).toEqual([0, 0, 0, 2, 1]);
    expect(s.groups.map((g) => g.passed)).toEqual([1, 1, 0]);
    expect(s.totals[2]).toBeCloseTo(0.52, 12);
  });

  it('computes the GRPO-normalised advantage: (total - mean) / population std', () => {
    const s = groupStats(records, null);
    const mean = (1.4 + 0.5 + 0.52) / 3; // 0.80667
    const std = Math.sqrt(((1.4 - mean) ** 2 + (0.5 - mean) ** 2 + (0.52 - mean) ** 2) / 3); // 0.41963
    expect(s.groups[0]!.mean).toBeCloseTo(mean, 12);
    expect(s.groups[0]!.std).toBeCloseTo(std, 12);
    expect(s.advantages[0]).toBeCloseTo((1.4 - mean) / std, 10);
    expect(s.advantages[0]).toBeCloseTo(1.4139, 3);
    expect(s.advantages[1]).toBeCloseTo(-0.7306, 3);
    expect(s.advantages.slice(0, 3).reduce((a, x) => a + x, 0)).toBeCloseTo(0, 12);
  });

  it('gives a one-member group rank 1 and advantage 0', () => {
    const s = groupStats(records, { lint: 1.7 });
    expect([s.ranks[3], s.advantages[3], s.ranks[4], s.advantages[4]]).toEqual([1, 0, 1, 0]);
  });

  it('gives a group of equal totals advantage 0 and ranks by index', () => {
    const eq = [rec(0, parts(0.1, 0, 0)), rec(0, parts(0.1, 0, 0)), rec(0, parts(0.1, 0, 0))];
    const s = groupStats(eq, null);
    expect(s.advantages).toEqual([0, 0, 0]);
    expect(s.ranks).toEqual([1, 2, 3]);
  });

  it('flips a ranking when a weight changes', () => {
    // lint weight 0.1: 1 + 0.5 - 0.5 = 1.0 vs 0.5 and 1 - 2.4 = -1.4
    const s = groupStats(records, { lint: 0.1 });
    expect(s.totals.slice(0, 3).map((t) => +t.toFixed(6))).toEqual([1, 0.5, -1.4]);
    expect(s.ranks.slice(0, 3)).toEqual([1, 2, 3]);
    // lint weight 0.3 puts the clean, half-passing sample first: 1.5 - 1.5 = 0 < 0.5
    const t = groupStats(records, { lint: 0.3 });
    expect(t.groups[0]!.ranked).toEqual([1, 0, 2]);
    expect(t.advantages[1]).toBeGreaterThan(t.advantages[0]!);
  });
});

describe('sorting and filtering', () => {
  const records = [
    rec(0, parts(1, 1, 5), { passed: true, tests_passed: 2, advantages: [0.5, 1.5], ast_valid: true }),
    rec(0, parts(0.5, 0, 0), { tests_passed: 1, advantages: [-1, -2, 0], ast_valid: false }),
    rec(1, parts(0, 0, 0), { advantages: [] }),
    rec(1, parts(1, 1, 0), { turn: 2, passed: true, tests_passed: 2, advantages: [3] }),
  ];
  const s = groupStats(records, null);

  it('reads each sort key', () => {
    expect(meanAdvantage(records[1]!)).toBe(-1);
    expect(finalAdvantage(records[0]!)).toBe(1.5);
    expect(meanAdvantage(records[2]!)).toBeNaN();
    expect(sortValue(records, s, 0, 'total')).toBeCloseTo(1.4, 12);
    expect(sortValue(records, s, 0, 'mean_advantage')).toBe(1);
    expect(sortValue(records, s, 1, 'final_advantage')).toBe(0);
    expect(sortValue(records, s, 1, 'tests_passed')).toBe(1);
    expect(sortValue(records, s, 0, 'component:lint')).toBeCloseTo(-0.1, 12);
    expect(sortValue(records, s, 0, 'component:reward_model')).toBeNaN();
    expect(sortValue(records, groupStats(records, { lint: 1 }), 0, 'component:lint')).toBe(-5);
  });

  it('sorts rows within groups and groups by their first row, NaN last', () => {
    const view = (sort: Parameters<typeof sortValue>[3], descending: boolean) =>
      arrange(records, s, { sort, descending, filter: NO_FILTER }).map((g) => [g.group.key, g.rows]);
    expect(view('total', true)).toEqual([
      ['1:2', [3]],
      ['0:1', [0, 1]],
      ['1:1', [2]],
    ]);
    expect(view('total', false)).toEqual([
      ['1:1', [2]],
      ['0:1', [1, 0]],
      ['1:2', [3]],
    ]);
    expect(view('mean_advantage', false)).toEqual([
      ['0:1', [1, 0]],
      ['1:2', [3]],
      ['1:1', [2]],
    ]);
    expect(view('mean_advantage', true)).toEqual([
      ['1:2', [3]],
      ['0:1', [0, 1]],
      ['1:1', [2]],
    ]);
  });

  it('filters: every checked condition must hold; empty groups are dropped', () => {
    const keys = (f: Partial<typeof NO_FILTER>) =>
      arrange(records, s, { sort: 'total', descending: true, filter: { ...NO_FILTER, ...f } })
        .map((g) => g.rows)
        .flat();
    expect(keys({ failed: true })).toEqual([1, 2]);
    expect(keys({ astInvalid: true })).toEqual([1]); // undefined ast_valid does not count as invalid
    expect(keys({ repaired: true })).toEqual([3]);
    expect(keys({ failed: true, repaired: true })).toEqual([]);
    expect(matchesFilter(records[2]!, { ...NO_FILTER, astInvalid: true })).toBe(false);
  });

  it('lists the components present with their recorded weights', () => {
    const extra = [...records, rec(2, [...parts(0, 0, 0), comp('reward_model', 1, 0.25, 0.3)])];
    expect(recordedWeights(extra)).toEqual([
      { name: 'test_pass', weight: 1, sign: 1 },
      { name: 'all_pass', weight: 0.5, sign: 1 },
      { name: 'lint', weight: 0.02, sign: -1 },
      { name: 'reward_model', weight: 0.25, sign: 1 },
    ]);
  });
});

describe('firstCommentLine', () => {
  it('finds the first comment of a JavaScript or Python prompt', () => {
    expect(firstCommentLine('// Sum of a list.\n// more\nfunction f(xs) {\n')).toBe('Sum of a list.');
    expect(firstCommentLine('\n/** Reverse a string. */\nconst r = (s) => {\n')).toBe('Reverse a string.');
    expect(firstCommentLine('# Count vowels\ndef f(s):\n')).toBe('Count vowels');
    expect(firstCommentLine('def f(s):\n    """Count vowels."""\n')).toBe('Count vowels.');
    expect(firstCommentLine('\nfunction f() {\n')).toBe('function f() {');
    expect(firstCommentLine('')).toBe('');
  });
});
