/**
 * A run's tasks from a suite file: the splits are disjoint, cover the file, put tasks without a
 * solution only where no solution is needed, are seeded; and a file no run can use is refused
 * with a message naming the file and the problem.
 */
import { describe, expect, test } from 'vitest';
import type { Task } from '../../tasks/types';
import { buildTaskSet, suiteJsonl } from './index';
import { readSuiteSource, sha256Hex, SuiteSourceError, taskSetFromSuite } from './from-suite';

const task = (id: string, solved: boolean): Task => ({
  task_id: id,
  language: 'javascript',
  prompt: `function f_${id.replace(/\W/g, '_')}(x) {\n`,
  entry_point: `f_${id.replace(/\W/g, '_')}`,
  tests: `console.assert(f_${id.replace(/\W/g, '_')}(1) === 2);`,
  ...(solved ? { canonical_solution: '  return x + 1;\n}\n' } : {}),
});
const jsonl = (ts: Task[]) => ts.map((t) => JSON.stringify(t)).join('\n') + '\n';
const split = { seed: 5, heldoutShare: 0.25, rlShare: 0.25, valShare: 0.1 };

describe('taskSetFromSuite', () => {
  test('splits are disjoint and cover the file; tests-only tasks never land in train or val', () => {
    const tasks = [
      ...Array.from({ length: 30 }, (_, i) => task(`s/${i}`, true)),
      ...Array.from({ length: 6 }, (_, i) => task(`u/${i}`, false)),
    ];
    const set = taskSetFromSuite(tasks, 'mine.jsonl', split);
    const ids = (k: 'train' | 'val' | 'rl' | 'heldout') => set[k].map((t) => t.task_id);
    const all = [...ids('train'), ...ids('val'), ...ids('rl'), ...ids('heldout')];
    expect(new Set(all).size).toBe(36);
    expect(all.sort()).toEqual(tasks.map((t) => t.task_id).sort());
    expect(set.heldout).toHaveLength(9);
    expect(set.rl).toHaveLength(9);
    for (const t of [...set.train, ...set.val]) {
      expect(t.canonical_solution).toBeDefined();
      expect(t.demonstration).toBe(t.canonical_solution);
    }
    expect(set.val.length).toBe(2);
    // the six tests-only tasks go to held-out first
    expect(ids('heldout').filter((id) => id.startsWith('u/'))).toHaveLength(6);
    for (const k of ['train', 'val', 'rl', 'heldout'] as const)
      for (const t of set[k]) expect(t.meta).toMatchObject({ split: k, family: 'suite', source: 'mine.jsonl' });
    expect(taskSetFromSuite(tasks, 'mine.jsonl', split)).toEqual(set);
    expect(ids('heldout')).not.toEqual(taskSetFromSuite(tasks, 'mine.jsonl', { ...split, seed: 6 }).heldout.map((t) => t.task_id));
  });

  test('an exported built-in split keeps its families and noisy demonstrations', () => {
    const b = buildTaskSet({ seed: 2, families: ['spec', 'io'], noise: 0.3 });
    const file = [...b.train, ...b.heldout];
    const set = taskSetFromSuite(
      suiteJsonl(file)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Task),
      'export.jsonl',
      split,
    );
    const families = new Set([...set.train, ...set.heldout].map((t) => t.meta.family));
    expect([...families].sort()).toEqual(['io', 'spec']);
    const noisy = set.train.find((t) => t.meta.noisy);
    expect(noisy).toBeDefined();
    expect(noisy!.demonstration).not.toBe(noisy!.reference);
    expect(noisy!.reference).toBe(
      b.train.find((t) => t.task_id === noisy!.task_id)?.reference ?? b.val.find((t) => t.task_id === noisy!.task_id)?.reference,
    );
  });

  test('a file that leaves SFT nothing is refused, naming the counts', () => {
    const tasks = [task('a', true), ...Array.from({ length: 5 }, (_, i) => task(`u${i}`, false))];
    expect(() => taskSetFromSuite(tasks, 'few.jsonl', { ...split, heldoutShare: 0.5, rlShare: 0.45 })).toThrow(
      /few\.jsonl: .*no task with a canonical_solution is left for SFT \(1 of 6 have one\)/,
    );
  });
});

describe('readSuiteSource', () => {
  test('returns the tasks and the reference the config records', async () => {
    const text = jsonl([task('a', true), task('b', false), task('c', false)]);
    const { tasks, ref } = await readSuiteSource(text, 'x.jsonl');
    expect(tasks).toHaveLength(3);
    expect(ref).toEqual({ name: 'x.jsonl', tasks: 3, sha256: await sha256Hex(text) });
    expect(ref.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  test('any load issue, too few tasks, or no solutions is an error naming the file', async () => {
    const bad = jsonl([task('a', true), task('b', false), task('c', false)]) + '{"task_id": "d"}\nnot json\n';
    await expect(readSuiteSource(bad, 'bad.jsonl')).rejects.toThrow(
      /^bad\.jsonl: 5 problems in the suite: bad\.jsonl:4: missing field .language.;.*bad\.jsonl:5: bad JSON/,
    );
    await expect(readSuiteSource(jsonl([task('a', true), task('b', true)]), 'two.jsonl')).rejects.toThrow(
      'two.jsonl: a run needs at least 3 tasks (train, RL and held-out), the file has 2',
    );
    await expect(readSuiteSource(jsonl([task('a', false), task('b', false), task('c', false)]), 'none.jsonl')).rejects.toThrow(
      SuiteSourceError,
    );
    await expect(readSuiteSource('', 'empty.jsonl')).rejects.toThrow(/empty\.jsonl/);
  });
});
