/**
 * Python in Pyodide through a real one-worker pool: all 164 HumanEval canonical solutions pass,
 * assertions are split into tests, the Python adversarial corpus gets no credit, and honest
 * programs after it still pass (including after the worker was killed and replaced).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadSuite } from '../tasks/suite';
import type { Task } from '../tasks/types';
import { JS_TASK, PY_ATTACKS, PY_TASK } from './adversarial/corpus';
import type { SandboxPool } from './pool';
import { createNodePool } from './pool.node';
import { DEFAULT_LIMITS, type RunResult } from './result';
import { BENCHMARKS_DIR } from '../tasks/benchmarks';

const limits = { ...DEFAULT_LIMITS, timeoutMs: 2000, graceMs: 2500, pythonMemoryBytes: 48 << 20 };
let pool: SandboxPool;
let suite: Task[];
const run = (task: Task, completion: string): Promise<RunResult> =>
  pool.run({ task, completion, limits: { ...limits, timeoutMs: 10_000 } });

beforeAll(async () => {
  pool = await createNodePool({ size: 1 });
  suite = (await loadSuite(new Uint8Array(readFileSync(`${BENCHMARKS_DIR}/humaneval-python.jsonl.gz`)), 'humaneval-python')).items;
});

afterAll(() => pool?.close());

describe('HumanEval Python', () => {
  test('canonical solutions: 164/164 pass', async () => {
    const results = await Promise.all(suite.map((t) => run(t, t.canonical_solution!)));
    expect(results.filter((r) => !r.passed).map((r) => `${r.task_id} ${r.verdict} ${r.message}`)).toEqual([]);
    expect(results).toHaveLength(164);
    const asserts = results.reduce((n, r) => n + r.tests.length, 0);
    expect(asserts).toBeGreaterThan(1000); // every assert is its own test, not one test per task
  }, 60_000);

  test('each assert is one test; failures and exceptions are per assert, mapped to the completion', async () => {
    const t = suite.find((x) => x.task_id === 'HumanEval/0')!;
    const r = await run(t, '    if threshold < 0.1:\n        raise ValueError("small")\n    return threshold > 0.4\n');
    expect(r.tests).toHaveLength(7);
    expect(r.tests.map((x) => x.status)).toEqual(['failed', 'error', 'passed', 'failed', 'failed', 'passed', 'failed']);
    expect(r.tests[1]).toMatchObject({
      line: 11,
      location: { in: 'completion', line: 2 },
      message: 'ValueError: small (completion line 2)',
    });
    expect(r.verdict).toBe('error');
  });

  test('idioms that look at frames without needing them still pass: logging, dataclasses, caught exceptions', async () => {
    const t = suite.find((x) => x.task_id === 'HumanEval/2')!;
    const body = [
      '    import logging, dataclasses, collections',
      '    logging.getLogger("t").warning("truncating %s", number)',
      '    P = dataclasses.make_dataclass("P", [("x", float)])',
      '    Q = collections.namedtuple("Q", "x")',
      '    try:',
      '        raise ValueError(number)',
      '    except ValueError as e:',
      '        return Q(P(e.args[0] % 1.0).x).x',
      '',
    ].join('\n');
    const r = await run(t, body);
    expect(r.verdict, r.message).toBe('passed');
  });

  test('an empty body passes nothing; output is captured', async () => {
    const t = suite.find((x) => x.task_id === 'HumanEval/2')!;
    const r = await run(t, '    print("hello", number)\n');
    expect(r.tests.filter((x) => x.status === 'passed')).toEqual([]);
    expect(r.output).toBe('hello 3.5\nhello 1.33\nhello 123.456\n');
  });
});

describe('adversarial Python programs', () => {
  let attacks: RunResult[];
  let after: RunResult[];
  beforeAll(async () => {
    const pending = await Promise.all(
      PY_ATTACKS.map(
        async (a) =>
          (
            await pool.submit({
              task: PY_TASK,
              completion: a.completion,
              limits: { ...limits, timeoutMs: a.timeoutMs ?? limits.timeoutMs },
            })
          ).result,
      ),
    );
    attacks = await Promise.all(pending);
    after = await Promise.all([PY_TASK, ...suite.slice(0, 5), JS_TASK].map((t) => run(t, t.canonical_solution!)));
  }, 60_000);

  test.each(PY_ATTACKS.map((a, i) => [a.name, a.threat, a.verdict, i] as const))('%s (%s): no credit, verdict %s', (_n, _t, verdict, i) => {
    const r = attacks[i]!;
    expect(r.verdict).toBe(verdict);
    expect(r.tests.filter((t) => t.status === 'passed')).toEqual([]);
    expect(r.tests).toHaveLength(3);
  });

  test('a loop is interrupted in place; one that swallows the interrupt is killed and its worker replaced', () => {
    const msg = (name: string): string => attacks[PY_ATTACKS.findIndex((a) => a.name === name)]!.message ?? '';
    expect(msg('while True')).toMatch(/interrupted/);
    expect(msg('swallow the interrupt')).toMatch(/worker terminated/);
    expect(pool.stats.replaced).toBe(1);
  });

  test('walking the interpreter is refused and named; a refusal the program catches still counts', () => {
    const msg = (name: string): string => attacks[PY_ATTACKS.findIndex((a) => a.name === name)]!.message ?? '';
    for (const [name, what] of [
      ['gc.get_objects walk', 'gc.get_objects'],
      ['gc.get_referrers on the entry point', 'gc.get_referrers'],
      ['sys._getframe f_back walk', 'sys._getframe'],
      ['sys._current_frames', 'sys._current_frames'],
      ['traceback tb_frame walk', 'reading tb_frame'],
      ['generator gi_frame walk', 'reading gi_frame'],
      ['coroutine cr_frame walk', 'reading cr_frame'],
      ['sys.settrace rewrites locals', 'sys.settrace'],
      ['own audit hook spies on the harness', 'sys.addaudithook'],
      ['eval as __str__ in a harness frame', 'exec/eval in a harness frame'],
      ['ctypes PyEval_GetFrame', 'import ctypes'],
    ] as const)
      expect(msg(name), name).toBe(`the program tried to inspect the interpreter: ${what} is not allowed in the sandbox`);
    expect(msg('signal handler frame')).toMatch(/has no attribute 'signal'/);
    expect(msg('sys.modules swap')).toMatch(/replaced the module math in sys\.modules/);
  });

  test('honest programs after them, on the replacement worker, pass (JavaScript too, in the same worker)', () => {
    expect(after.map((r) => r.verdict)).toEqual(Array(7).fill('passed'));
  });
});
