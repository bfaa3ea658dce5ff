import { beforeAll, describe, expect, test } from 'vitest';
import { loadJsSyntax, type JsSyntax } from './ast';
import { analyze } from './index';
import { lint } from './lint';
import { cpuMs, humanEvalJs } from './testdata';
import { nodeWasmLoader } from './wasm-node';

let syntax: JsSyntax;
beforeAll(async () => {
  syntax = await loadJsSyntax(nodeWasmLoader);
});

describe('analyze', () => {
  test('combines syntax, lint and metrics in completion offsets', () => {
    const prompt = '/* Sum the even numbers. */\nconst sumEven = (xs) => {\n';
    const code = '  let s = 0;\n  for (const x of xs) if (x % 2 == 0) s += x * 3;\n  return s;\n}\n';
    const r = analyze(code, { prompt, syntax });
    expect(r.ast).toEqual({ valid: true, errors: [] });
    expect(r.lintFatal).toBe(false);
    expect(r.lint.map((f) => [f.ruleId, code.slice(f.start, f.end)])).toEqual([['eqeqeq', '==']]);
    expect(r.diagnostics.map((f) => [f.source, f.ruleId, code.slice(f.start, f.end)])).toEqual([
      ['eslint', 'eqeqeq', '=='],
      ['metrics', 'metrics/magic-number', '3'],
    ]);
    expect(r.metrics).toMatchObject({ lines: 4, maxCyclomatic: 3, maxCognitive: 3, maxNesting: 2, magicNumbers: 1 });
    expect(r.counts).toEqual({ error: 0, warning: 1, info: 1 });
  });

  test('code that does not parse: syntax errors from both parsers, metrics from tree-sitter', () => {
    const prompt = 'const f = (xs) => {\n';
    const code = '  if (xs.length > 0 {\n    return xs[0];\n  }\n  return null;\n}\n';
    const r = analyze(code, { prompt, syntax });
    expect(r.ast.valid).toBe(false);
    expect(r.lintFatal).toBe(true);
    const sources = new Set(r.diagnostics.filter((d) => d.severity === 'error').map((d) => d.source));
    expect(sources).toEqual(new Set(['ast', 'eslint']));
    expect(r.diagnostics.every((d) => d.start >= 0 && d.end <= code.length && d.start <= d.end)).toBe(true);
    expect(r.metrics.functions).toHaveLength(1);
  });
});

describe('all 164 HumanEval-X JavaScript canonical programs', () => {
  test('are AST-valid and lint without fatal errors; timings', () => {
    const tasks = humanEvalJs();
    expect(tasks).toHaveLength(164);
    const time = { ast: 0, lint: 0, analyze: 0 };
    const clock = <T>(key: keyof typeof time, f: () => T): T => {
      const t0 = cpuMs();
      const out = f();
      time[key] += cpuMs() - t0;
      return out;
    };
    // Warm-up, untimed: ESLint loads its rules on first use and the JIT needs a few runs.
    for (const task of tasks.slice(0, 10)) analyze(task.canonical_solution, { prompt: task.prompt, syntax });
    let findings = 0;
    for (const task of tasks) {
      const program = task.prompt + task.canonical_solution;
      const check = clock('ast', () => syntax.validate(program));
      expect(check, task.task_id).toEqual({ valid: true, errors: [] });
      const report = clock('lint', () => lint(task.canonical_solution, { prompt: task.prompt }));
      expect(report.fatal, task.task_id).toBeNull();
      findings += report.completion.length;
    }
    const sample = tasks.slice(0, 40);
    for (const task of sample) clock('analyze', () => analyze(task.canonical_solution, { prompt: task.prompt, syntax }));
    const per = (ms: number, n = tasks.length) => `${(ms / n).toFixed(2)} ms`;
    console.log(
      `HumanEval-X JS, CPU time per program: AST ${per(time.ast)}, lint ${per(time.lint)} (${findings} findings in 164 completions), analyze (all three) ${per(time.analyze, sample.length)}`,
    );
    // A known fact of the data: JavaScript/162 needs require('js-md5'), which is no global here.
    const md5 = tasks.find((t) => t.task_id === 'JavaScript/162');
    const undef = md5 && lint(md5.canonical_solution, { prompt: md5.prompt }).completion.filter((f) => f.ruleId === 'no-undef');
    expect(undef?.map((f) => md5?.canonical_solution.slice(f.start, f.end))).toEqual(['require']);
  });
});
