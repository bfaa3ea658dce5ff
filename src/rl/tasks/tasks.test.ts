/** The built-in task families: splits, determinism, and every reference really passing its tests in the sandbox. */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SandboxPool } from '../../sandbox/pool';
import { createNodePool } from '../../sandbox/pool.node';
import { scoreCompletions } from '../../sandbox/score';
import { parseSuite } from '../../tasks/suite';
import { buildTaskSet, suiteJsonl, toSuite, type GeneratedTask } from './index';
import { allConcepts, operatorBugs, TEMPLATES } from './concepts';
import { FAMILIES } from './families';

let pool: SandboxPool;
beforeAll(async () => {
  pool = await createNodePool({ size: 2 });
}, 60_000);
afterAll(() => pool?.close());

const set = buildTaskSet({ seed: 1 });
const all = (): GeneratedTask[] => [...set.train, ...set.val, ...set.rl, ...set.heldout];

describe('task set', () => {
  test('covers every concept in every family, each exactly once', () => {
    expect(all()).toHaveLength(allConcepts().length * FAMILIES.length);
    expect(new Set(all().map((t) => t.task_id)).size).toBe(all().length);
    for (const f of FAMILIES) expect(set.heldout.some((t) => t.meta.family === f)).toBe(true);
  });

  test('held-out and RL concepts are disjoint from train and val and from each other', () => {
    const concepts = (ts: GeneratedTask[]) => new Set(ts.map((t) => t.meta.concept));
    const train = concepts([...set.train, ...set.val]);
    const rl = concepts(set.rl);
    const held = concepts(set.heldout);
    for (const c of held) expect(train.has(c) || rl.has(c)).toBe(false);
    for (const c of rl) expect(train.has(c)).toBe(false);
    // every template is taught in train and appears in held-out
    for (const t of TEMPLATES) {
      expect([...train].some((c) => c.startsWith(`${t.id}/`))).toBe(true);
      expect([...held].some((c) => c.startsWith(`${t.id}/`))).toBe(true);
    }
  });

  test('is deterministic in the seed, and another seed splits differently', () => {
    expect(suiteJsonl(buildTaskSet({ seed: 1 }).heldout)).toBe(suiteJsonl(set.heldout));
    const other = buildTaskSet({ seed: 2 });
    expect(other.heldout.map((t) => t.task_id)).not.toEqual(set.heldout.map((t) => t.task_id));
  });

  test('exports as a suite: solutions only for train and val; parses back', () => {
    for (const t of toSuite(set.train)) expect(t.canonical_solution).toBeTypeOf('string');
    for (const t of toSuite(set.rl)) expect(t).not.toHaveProperty('canonical_solution');
    for (const t of toSuite(set.heldout)) expect(t).not.toHaveProperty('reference');
    const parsed = parseSuite(suiteJsonl(set.heldout), 'heldout.jsonl');
    expect(parsed.issues).toEqual([]);
    expect(parsed.items).toHaveLength(set.heldout.length);
  });

  test('rejects bad options with a clear error', () => {
    expect(() => buildTaskSet({ seed: 1.5 })).toThrow(/seed must be an integer/);
    expect(() => buildTaskSet({ seed: 1, families: ['nope' as never] })).toThrow(/unknown family "nope"/);
    expect(() => buildTaskSet({ seed: 1, heldoutShare: 0.6, rlShare: 0.5 })).toThrow(/sum to < 1/);
  });

  test('prompts and solutions are short enough for the tiny preset', () => {
    for (const t of all()) expect((t.prompt + t.reference).length).toBeLessThan(200);
  });
});

describe('task set in the sandbox', () => {
  test("every reference passes all its tests; a body that returns nothing passes none; each repair task's bug fails", async () => {
    const tasks = all();
    const completions = tasks.flatMap((t) => [
      { task_id: t.task_id, completion: t.reference },
      { task_id: t.task_id, completion: '  return undefined;\n}\n' },
    ]);
    const records = await scoreCompletions(pool, tasks, completions);
    const failedRefs = records
      .filter((r, i) => i % 2 === 0 && !r.passed)
      .map((r) => `${r.task_id}: ${r.verdict} ${r.message ?? ''} ${JSON.stringify(r.tests.find((x) => x.status !== 'passed'))}`);
    expect(failedRefs).toEqual([]);
    for (const [i, r] of records.entries()) {
      if (i % 2 === 1) expect(r.tests_passed, r.task_id).toBe(0);
      else expect(r.tests_total).toBeGreaterThanOrEqual(5);
    }
    const repairs = tasks.filter((t) => t.meta.family === 'repair');
    const bugRecords = await scoreCompletions(
      pool,
      repairs,
      repairs.map((t) => ({ task_id: t.task_id, completion: `  ${String(t.meta.bug)}\n}\n` })),
    );
    expect(bugRecords.filter((r) => r.passed).map((r) => r.task_id)).toEqual([]);
  }, 240_000);
});

describe('task-level splits', () => {
  test('splitBy task: no task in two splits, every family and template in each split, concepts shared across families', () => {
    const s = buildTaskSet({ seed: 4, splitBy: 'task' });
    const ids = [...s.train, ...s.val, ...s.rl, ...s.heldout].map((t) => t.task_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(allConcepts().length * FAMILIES.length);
    for (const f of FAMILIES)
      for (const t of TEMPLATES) expect(s.heldout.some((x) => x.meta.family === f && x.meta.concept.startsWith(`${t.id}/`))).toBe(true);
    const trainConcepts = new Set([...s.train, ...s.val].map((t) => t.meta.concept));
    expect(s.heldout.some((t) => trainConcepts.has(t.meta.concept))).toBe(true);
    expect(() => buildTaskSet({ seed: 1, splitBy: 'x' as never })).toThrow(/splitBy must be concept or task/);
  });
});

describe('noisy demonstrations', () => {
  test('a seeded share of train demonstrations are plausible bugs; suites keep the correct solution', () => {
    const s = buildTaskSet({ seed: 1, noise: 0.4 });
    const train = [...s.train, ...s.val];
    const noisy = train.filter((t) => t.meta.noisy);
    expect(noisy.length / train.length).toBeGreaterThan(0.3);
    expect(noisy.length / train.length).toBeLessThan(0.5);
    for (const t of noisy) {
      expect(t.demonstration).not.toBe(t.reference);
      const suite = toSuite([t])[0]!;
      expect(suite.canonical_solution).toBe(t.reference);
      expect(suite.meta?.demonstration).toBe(t.demonstration);
    }
    for (const t of [...s.rl, ...s.heldout]) expect(t.meta.noisy).toBeUndefined();
    expect(buildTaskSet({ seed: 1 }).train.every((t) => t.demonstration === t.reference)).toBe(true);
    expect(() => buildTaskSet({ seed: 1, noise: 1 })).toThrow(/noise must be in \[0, 1\)/);
  });
  test("'operator' noise keeps the constant: a wrong operation, never an off-by-one", () => {
    for (const c of allConcepts()) {
      const bugs = operatorBugs(c);
      expect(bugs.length, c.key).toBeGreaterThan(0);
      for (const b of bugs) expect(b, c.key).not.toMatch(new RegExp(`\\b${c.c + 1}\\b`));
    }
    const add3 = allConcepts().find((c) => c.key === 'add/3')!;
    expect(operatorBugs(add3)).toEqual(['return x - 3;', 'return x * 3;']);
    const s = buildTaskSet({ seed: 2, noise: 0.5, noiseBugs: 'operator' });
    const noisy = [...s.train, ...s.val].filter((t) => t.meta.noisy);
    expect(noisy.length).toBeGreaterThan(100);
    for (const t of noisy) {
      const c = allConcepts().find((x) => x.key === t.meta.concept)!;
      expect(operatorBugs(c).map((b) => `  ${b}\n}\n`)).toContain(t.demonstration);
    }
    expect(() => buildTaskSet({ seed: 1, noise: 0.2, noiseBugs: 'x' as never })).toThrow(/noiseBugs must be any or operator/);
  });
});
