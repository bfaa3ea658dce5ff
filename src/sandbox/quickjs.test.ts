import { readFileSync } from 'node:fs';
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { beforeAll, describe, expect, test } from 'vitest';
import { loadSuite } from '../tasks/suite';
import type { Task } from '../tasks/types';
import { runJavaScript } from './quickjs';
import { DEFAULT_LIMITS, type RunResult } from './result';
import { BENCHMARKS_DIR } from '../tasks/benchmarks';

let mod: QuickJSWASMModule;
let suite: Task[];
const byId = (id: string): Task => suite.find((t) => t.task_id === id)!;
const run = (task: Task, completion: string, timeoutMs = 2000): RunResult =>
  runJavaScript(mod, { task, completion, limits: { ...DEFAULT_LIMITS, timeoutMs } });

beforeAll(async () => {
  mod = await newQuickJSWASMModule();
  suite = (await loadSuite(new Uint8Array(readFileSync(`${BENCHMARKS_DIR}/humaneval-x-js.jsonl.gz`)), 'humaneval-x-js')).items;
});

describe('HumanEval-X JavaScript, canonical solutions', () => {
  test('all pass except JavaScript/112 and /155 (wrong in the dataset) and /162 (needs js-md5)', () => {
    const results = suite.map((t) => run(t, t.canonical_solution!));
    const notPassed = results.filter((r) => !r.passed).map((r) => `${r.task_id} ${r.verdict}`);
    expect(notPassed).toEqual(['JavaScript/112 failed', 'JavaScript/155 failed', 'JavaScript/162 error']);
    expect(results.every((r) => r.tests.length > 0 && r.output === '')).toBe(true);
  });

  test('their failures are reported test by test, mapped to the completion where it threw', () => {
    const r155 = run(byId('JavaScript/155'), byId('JavaScript/155').canonical_solution!);
    expect(r155.tests.map((t) => t.status)).toEqual(['passed', 'passed', 'passed', 'passed', 'passed', 'passed', 'passed', 'failed']);
    expect(r155.tests[7]).toMatchObject({
      line: 15,
      location: { in: 'tests', line: 15 },
      message: expect.stringContaining('evenOddCount(0)'),
    });
    const r162 = run(byId('JavaScript/162'), byId('JavaScript/162').canonical_solution!);
    expect(r162.tests[0]).toMatchObject({
      status: 'error',
      location: { in: 'completion', line: 2 },
      message: expect.stringContaining("'require' is not defined"),
    });
    expect(r162.tests.slice(1).every((t) => t.status === 'error' && t.message?.startsWith('not reached'))).toBe(true);
  });

  test('an assertion inside a loop is one test, evaluated every time', () => {
    const r = run(byId('JavaScript/53'), byId('JavaScript/53').canonical_solution!);
    expect(r.tests).toHaveLength(6);
    expect(r.tests.map((t) => t.evaluations)).toEqual([1, 1, 1, 1, 1, 100]);
    const wrong = run(byId('JavaScript/53'), '  return x + y + (x === 3 ? 1 : 0)\n}\n');
    expect(wrong.tests[5]).toMatchObject({
      status: 'failed',
      message: expect.stringMatching(/^assertion failed \(\d+ of 100 evaluations\)/),
    });
  });
});

describe('bodies that return nothing pass none of their tests', () => {
  test.each([
    ['}', '"}", every task', 1],
    ['\n}\n', 'an empty body, every 4th task', 4],
    ['  return;\n}\n', 'a bare return, every 4th task', 4],
  ])('%j (%s)', (completion, _what, step) => {
    const results = suite.filter((_, i) => i % step === 0).map((t) => run(t, completion));
    const credited = results.filter((r) => r.tests.some((t) => t.status === 'passed')).map((r) => r.task_id);
    expect(credited).toEqual([]);
    expect(results.every((r) => !r.passed)).toBe(true);
  });
});

describe('verdicts and locations', () => {
  const task: Task = {
    task_id: 'T/1',
    language: 'javascript',
    prompt: '/* add one */\nconst inc = (x) => {\n',
    entry_point: 'inc',
    tests: 'const t = () => {\n  console.assert(inc(1) === 2)\n  console.assert(inc(2) === 3)\n}\nt()\n',
  };

  test('Math.random is seeded: the same program draws the same numbers on every run, in [0, 1)', () => {
    const draw = '  console.log(Math.random(), Math.random(), Math.random())\n  return x + 1\n}\n';
    const a = run(task, draw).output;
    const b = run(task, draw).output;
    expect(a).toBe(b);
    const xs = a.trim().split(/\s+/).map(Number);
    expect(xs).toHaveLength(6); // two calls of inc, three draws each
    expect(new Set(xs).size).toBe(6);
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
  });

  test('a passing program, its output kept', () => {
    const r = run(task, "  console.log('x is', x, [x], {x})\n  return x + 1\n}\n");
    expect(r).toMatchObject({ verdict: 'passed', passed: true, output: 'x is 1 [1] {"x":1}\nx is 2 [2] {"x":2}\n' });
  });

  test('partly right: per-test results', () => {
    const r = run(task, '  return x === 1 ? 2 : 0\n}\n');
    expect(r.verdict).toBe('failed');
    expect(r.tests.map((t) => t.status)).toEqual(['passed', 'failed']);
  });

  test("an exception on the completion's line 2, for the second call only", () => {
    const r = run(task, '  if (x === 2)\n    throw new RangeError("two")\n  return x + 1\n}\n');
    expect(r.verdict).toBe('error');
    expect(r.tests[0]!.status).toBe('passed');
    expect(r.tests[1]).toMatchObject({
      status: 'error',
      location: { in: 'completion', line: 2 },
      message: 'RangeError: two (completion line 2)',
    });
  });

  test('a syntax error in the completion fails every test, located in the completion', () => {
    const r = run(task, '  return x +* 1\n}\n');
    expect(r.verdict).toBe('error');
    expect(r.location).toEqual({ in: 'completion', line: 1 });
    expect(r.tests.every((t) => t.status === 'error' && t.message?.includes('SyntaxError'))).toBe(true);
  });

  test('test code without console.assert is one test: it passes when it runs to the end', () => {
    const whole: Task = { ...task, tests: 'if (inc(1) !== 2) throw new Error("inc(1) wrong")\n' };
    expect(run(whole, '  return x + 1\n}\n').tests).toMatchObject([{ name: 'tests', status: 'passed' }]);
    expect(run(whole, '  return x\n}\n')).toMatchObject({
      verdict: 'error',
      tests: [{ status: 'error', message: 'Error: inc(1) wrong (tests line 1)' }],
    });
  });

  test('honest code may declare top-level names that built-ins use', () => {
    expect(run(task, '  return x + 1\n}\nconst escape = (s) => s\nlet Map = 1\nfunction print() {}\n').verdict).toBe('passed');
  });

  test('honest code may still assign toString/name on its own objects (override mistake fixed)', () => {
    const r = run(
      task,
      '  class E extends Error { constructor() { super("e"); this.name = "E" } }\n  const o = {}; o.toString = () => "o"; o.constructor = 1\n  function P() {} P.prototype.valueOf = function () { return x + 1 }\n  return new E().name === "E" && String(o) === "o" ? +new P() : 0\n}\n',
    );
    expect(r.verdict).toBe('passed');
  });
});
