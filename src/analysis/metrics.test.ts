import { Linter } from 'eslint/universal';
import { beforeAll, describe, expect, test } from 'vitest';
import { loadJsSyntax, type JsSyntax } from './ast';
import type { FunctionMetrics } from './complexity';
import { computeMetrics, type MetricsOptions } from './metrics';
import { humanEvalJs } from './testdata';
import { nodeWasmLoader } from './wasm-node';

let syntax: JsSyntax;
beforeAll(async () => {
  syntax = await loadJsSyntax(nodeWasmLoader);
});

function measure(code: string, opts: MetricsOptions = {}) {
  const tree = syntax.parse(code);
  try {
    return computeMetrics(tree.rootNode, code, opts);
  } finally {
    tree.delete();
  }
}

function fn(code: string, name: string): FunctionMetrics {
  const f = measure(code).metrics.functions.find((x) => x.name === name);
  if (!f) throw new Error(`no function ${name}`);
  return f;
}

// Hand-computed, increment by increment, in the comments (cognitive: Sonar's rules; cyclomatic: McCabe).
const SUM_OF_PRIMES = `function sumOfPrimes(max) {
  let total = 0;
  OUT: for (let i = 1; i <= max; ++i) { // cognitive +1; cyclomatic +1
    for (let j = 2; j < i; ++j) {       // +2 (nesting 1); +1
      if (i % j === 0) {                // +3 (nesting 2); +1
        continue OUT;                   // +1 (labelled)
      }
    }
    total += i;
  }
  return total;
}`; // Sonar's white paper: cognitive 7; cyclomatic 4; nesting 3

const GET_WORDS = `function getWords(number) {
  switch (number) {        // cognitive +1
    case 1: return 'one';  // cyclomatic +1 per case with a test
    case 2: return 'a couple';
    case 3: return 'a few';
    default: return 'lots';
  }
}`; // Sonar's white paper: cognitive 1; cyclomatic 4; nesting 1

const CLASSIFY = `function classify(a, b) {
  if (a && b && a > b) {    // cognitive +1 if, +1 one run of &&; cyclomatic +1 if, +2 &&
    return 1;
  } else if (a || b) {      // +1 else if, +1 run of ||; +1 if, +1 ||
    return 2;
  } else {                  // +1 else
    return a ? 3 : 4;       // +2 ?: at nesting 1; +1
  }
}`; // cognitive 7; cyclomatic 7; nesting 1 (else-if does not nest)

const FACT = `const fact = (n) => {
  try {                                    // try: no increment, no nesting
    return n <= 1 ? 1 : n * fact(n - 1);   // +1 ?:, +1 recursion; cyclomatic +1
  } catch (e) {                            // +1 catch; cyclomatic +1
    return [n].map((x) => (x > 0 && x < 10 || x === 0 ? x : 0))[0];
    // the callback nests: its ?: is +3 for fact (nesting 2), +1 for itself; && then ||: +2 for both
  }
};`; // fact: cognitive 8, cyclomatic 3, nesting 1 (try); callback: cognitive 3, cyclomatic 4

describe('complexity, hand-computed', () => {
  test.each([
    [SUM_OF_PRIMES, 'sumOfPrimes', { cognitive: 7, cyclomatic: 4, maxNesting: 3 }],
    [GET_WORDS, 'getWords', { cognitive: 1, cyclomatic: 4, maxNesting: 1 }],
    [CLASSIFY, 'classify', { cognitive: 7, cyclomatic: 7, maxNesting: 1 }],
    [FACT, 'fact', { cognitive: 8, cyclomatic: 3, maxNesting: 1 }],
    [FACT, '(arrow function)', { cognitive: 3, cyclomatic: 4, maxNesting: 0 }],
    // operators in source order: && || && || are four runs (parentheses do not matter); cyclomatic 1 + 4
    ['const f = (a, b, c, d) => (a && b) || (c && d) || a;', 'f', { cognitive: 4, cyclomatic: 5, maxNesting: 0 }],
    // cognitive: one run of ??; cyclomatic: 1 + three defaults + two ?. + ??
    ['function g(a = 1, { b = 2 } = {}) { return a?.x ?? b?.(); }', 'g', { cognitive: 1, cyclomatic: 7, maxNesting: 0 }],
  ])('%#: %s', (code, name, expected) => {
    expect(fn(code, name)).toMatchObject(expected);
  });

  test('program-level numbers: maxima over functions, cognitive summed over the code', () => {
    const m = measure(`${SUM_OF_PRIMES}\n${GET_WORDS}\n${FACT}\n`).metrics;
    expect(m).toMatchObject({ maxCyclomatic: 4, maxCognitive: 8, maxNesting: 3, cognitiveTotal: 7 + 1 + 8 });
    expect(m.functions.map((f) => f.name)).toEqual(['sumOfPrimes', 'getWords', 'fact', '(arrow function)']);
  });

  test('metrics still come out of code that does not parse', () => {
    const m = measure('function broken(x) {\n  if (x) { for (;;) { if (x ) ) {} } }\n');
    expect(m.metrics.functions[0]?.name).toBe('broken');
    expect(m.metrics.maxCognitive).toBeGreaterThan(0);
  });
});

describe('agrees with ESLint on all 164 HumanEval-X programs', () => {
  test('per-function cyclomatic complexity = ESLint complexity; max nesting = ESLint max-depth', () => {
    const linter = new Linter({ cwd: '/' });
    const config: Linter.Config = {
      languageOptions: { ecmaVersion: 2022, sourceType: 'script' },
      rules: { complexity: ['error', 0], 'max-depth': ['error', 0] },
    };
    for (const [i, task] of humanEvalJs().entries()) {
      // Every canonical program; with its test code (more functions, callbacks) for every fourth.
      const program = task.prompt + task.canonical_solution + (i % 4 === 0 ? task.test : '');
      const messages = linter.verify(program, config);
      const number = (m: Linter.LintMessage) => Number(/(\d+)\D*$/.exec(m.message.split('.')[0] ?? '')?.[1]);
      const eslintComplexities = messages
        .filter((m) => m.ruleId === 'complexity')
        .map(number)
        .sort();
      const eslintDepth = Math.max(0, ...messages.filter((m) => m.ruleId === 'max-depth').map(number));
      const ours = measure(program).metrics;
      expect(ours.functions.map((f) => f.cyclomatic).sort(), task.task_id).toEqual(eslintComplexities);
      expect(ours.maxNesting, task.task_id).toBe(eslintDepth);
    }
  });
});

describe('lines, tokens, magic numbers, duplicates', () => {
  test('line and token counts', () => {
    const code = 'const a = 1;\n\n// c\nconst b = [a, "x y"];\n';
    expect(measure(code).metrics).toMatchObject({ lines: 4, codeLines: 2, tokens: 14, chars: code.length });
  });

  test('magic numbers: not -1, 0, 1, 2, not in const declarations', () => {
    const code = `const LIMIT = 100;
function f(x) {
  const local = 7;
  let y = x * 60;
  if (x > -1 && x < 2) return 0.5;
  return y + LIMIT + local + 1 + 2.0 + 1_000;
}`;
    const { metrics, findings } = measure(code);
    expect(metrics.magicNumbers).toBe(3);
    const magic = findings.filter((f) => f.ruleId === 'metrics/magic-number');
    expect(magic.map((f) => code.slice(f.start, f.end))).toEqual(['60', '0.5', '1_000']);
    expect(magic.every((f) => f.severity === 'info' && f.source === 'metrics')).toBe(true);
  });

  test('duplicated lines: repeated, long enough, not comments', () => {
    const code = `function g(a) {
  let total = a.length * 2;
  total = total + a.length;
  // a comment, repeated
  total = total + a.length;
  // a comment, repeated
  {
  }
  {
  }
  return total;
}`;
    const { metrics, findings } = measure(code);
    expect(metrics.duplicatedLines).toBe(2);
    const dup = findings.filter((f) => f.ruleId === 'metrics/duplicate-line');
    expect(dup).toHaveLength(1);
    expect(code.slice(dup[0]?.start, dup[0]?.end)).toBe('total = total + a.length;');
    expect(dup[0]?.start).toBe(code.lastIndexOf('total = total'));
    expect(dup[0]?.message).toBe('line 5 repeats line 3');
  });
});

describe('threshold findings', () => {
  const deep =
    'function deep(x) {\n' +
    Array.from({ length: 6 }, (_, i) => `${'  '.repeat(i + 1)}if (x > ${i}) {\n`).join('') +
    '      x++;\n' +
    Array.from({ length: 6 }, (_, i) => `${'  '.repeat(6 - i)}}\n`).join('') +
    '}\n';

  test('cognitive over 15 and nesting over 4, with ranges', () => {
    const { metrics, findings } = measure(deep);
    expect(metrics.functions[0]).toMatchObject({ cognitive: 21, maxNesting: 6, cyclomatic: 7 });
    const ids = findings.filter((f) => f.severity === 'warning').map((f) => f.ruleId);
    expect(ids).toEqual(['metrics/cognitive-complexity', 'metrics/nesting-depth']);
    const cognitive = findings.find((f) => f.ruleId === 'metrics/cognitive-complexity');
    expect(deep.slice(cognitive?.start, cognitive?.end)).toBe('function deep(x)');
    const nesting = findings.find((f) => f.ruleId === 'metrics/nesting-depth');
    expect(nesting?.start).toBe(deep.indexOf('if (x > 5)'));
    expect(deep.slice(nesting?.start, nesting?.end)).toBe('if');
  });

  test('thresholds are options, validated', () => {
    const { findings } = measure(deep, { thresholds: { cognitive: 30, nesting: 6 } });
    expect(findings.filter((f) => f.severity === 'warning')).toEqual([]);
    expect(() => measure(deep, { thresholds: { cognitiv: 3 } as never })).toThrow(/unknown metrics threshold 'cognitiv'/);
    expect(() => measure(deep, { thresholds: { nesting: -1 } })).toThrow(/must be a number >= 0/);
  });

  test('with a prompt: functions measured whole, findings clipped to the completion', () => {
    const prompt = 'const LIMIT = 3;\nlet fromPrompt = 42;\n' + deep.slice(0, deep.indexOf('\n') + 1);
    const code = deep.slice(deep.indexOf('\n') + 1);
    const { metrics, findings } = measure(prompt + code, { completionStart: prompt.length });
    expect(metrics.functions[0]).toMatchObject({ name: 'deep', cognitive: 21, start: 0, end: code.length - 1 });
    expect(metrics.magicNumbers).toBe(3); // 3, 4, 5 in the completion's ifs; not 42, in the prompt
    const cognitive = findings.find((f) => f.ruleId === 'metrics/cognitive-complexity');
    expect([cognitive?.start, cognitive?.end]).toEqual([0, code.length - 1]); // the head is in the prompt: the body
    const nesting = findings.find((f) => f.ruleId === 'metrics/nesting-depth');
    expect(code.slice(nesting?.start, nesting?.end)).toBe('if');
    expect(metrics.lines).toBe(code.split('\n').length - 1);
  });
});
