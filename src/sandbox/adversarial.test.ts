/**
 * The JavaScript adversarial corpus through a real pool of two sandbox workers: every attack gets
 * no test credit and its expected verdict; honest programs queued after all of them, in the same
 * pool, still pass.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadSuite } from '../tasks/suite';
import type { Task } from '../tasks/types';
import { JS_ATTACKS, JS_TASK } from './adversarial/corpus';
import type { SandboxPool } from './pool';
import { createNodePool } from './pool.node';
import { DEFAULT_LIMITS, type RunResult } from './result';
import { BENCHMARKS_DIR } from '../tasks/benchmarks';

const limits = { ...DEFAULT_LIMITS, timeoutMs: 1000, graceMs: 2000 };
let pool: SandboxPool;
let attacks: RunResult[];
let honest: RunResult[];
let honestTasks: Task[];

beforeAll(async () => {
  pool = await createNodePool({ size: 2 });
  const suite = (await loadSuite(new Uint8Array(readFileSync(`${BENCHMARKS_DIR}/humaneval-x-js.jsonl.gz`)), 'x')).items;
  honestTasks = [
    JS_TASK,
    ...suite.filter((t, i) => i % 8 === 0 && !['JavaScript/112', 'JavaScript/155', 'JavaScript/162'].includes(t.task_id)),
  ];
  const a = await Promise.all(
    JS_ATTACKS.map(
      async (x) =>
        (await pool.submit({ task: JS_TASK, completion: x.completion, limits: { ...limits, timeoutMs: x.timeoutMs ?? limits.timeoutMs } }))
          .result,
    ),
  );
  const h = await Promise.all(
    honestTasks.map(
      async (t) => (await pool.submit({ task: t, completion: t.canonical_solution!, limits: { ...limits, timeoutMs: 5000 } })).result,
    ),
  );
  [attacks, honest] = await Promise.all([Promise.all(a), Promise.all(h)]);
}, 60_000);

afterAll(() => pool?.close());

describe('adversarial JavaScript programs', () => {
  test('the corpus covers every item of the threat model', () => {
    const threats = new Set(JS_ATTACKS.map((a) => a.threat));
    for (const t of [
      'overrides console.assert',
      'overrides JSON.stringify',
      'changes Object.prototype',
      'changes Array prototypes',
      'changes String prototypes',
      'changes other intrinsics',
      'calls process.exit',
      'posts fake result messages',
      'prints fake result markers',
      'throws odd objects',
      'never returns',
      'allocates without bound',
      'floods output',
      'recurses without end',
      'schedules work after the tests',
    ])
      expect(threats.has(t), t).toBe(true);
  });

  test.each(JS_ATTACKS.map((a, i) => [a.name, a.threat, a.verdict, i] as const))(
    '%s (%s): no credit, verdict %s',
    (_name, _threat, verdict, i) => {
      const r = attacks[i]!;
      expect(r.verdict).toBe(verdict);
      expect(r.passed).toBe(false);
      expect(r.tests.filter((t) => t.status === 'passed')).toEqual([]);
      expect(r.tests).toHaveLength(5);
      if (verdict !== 'failed') expect(r.message).toBeTruthy();
    },
  );

  test('tampering and limit verdicts name what happened', () => {
    const msg = (name: string): string => attacks[JS_ATTACKS.findIndex((a) => a.name === name)]!.message ?? '';
    expect(msg('console.assert = noop')).toMatch(/writes to a built-in: console\.assert = \(completion line 3\)/);
    expect(msg('console = fake')).toMatch(/assignment to the global console/);
    expect(msg('defineProperty console.assert')).toMatch(/Object\.defineProperty on console\.assert/);
    expect(msg('Reflect.set JSON.stringify')).toMatch(/Reflect\.set on JSON\.stringify/);
    expect(msg('aliased prototype write')).toMatch(/assignment to Array\.prototype\.join/);
    expect(msg('array iterator next')).toMatch(/%ArrayIteratorPrototype%\.next/);
    expect(msg('Object.prototype.toJSON')).toMatch(/completion line 3/);
    expect(msg('Promise.then after tests')).toMatch(/Promise jobs/);
    expect(msg('while(true)')).toMatch(/exceeded 1000 ms/);
    expect(msg('endless recursion')).toMatch(/stack overflow/);
    expect(msg('throw null')).toMatch(/^Uncaught null/);
    expect(msg('log flood')).toMatch(/more than 65536 characters/);
    expect(msg('huge array')).toMatch(/out of memory/);
    expect(msg('ArrayBuffer pile')).toMatch(/out of memory/);
  });

  test('honest programs queued after the attacks, in the same pool, all pass', () => {
    expect(honest.map((r) => `${r.task_id} ${r.verdict}`)).toEqual(honestTasks.map((t) => `${t.task_id} passed`));
    expect(pool.stats.completed).toBe(JS_ATTACKS.length + honestTasks.length);
  });
});
