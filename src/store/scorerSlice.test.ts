/** The scratch scorer's pure parts: the lint summary and detail, and the marks a score puts in its completion. */
import { describe, expect, it } from 'vitest';
import type { AnalysisResult, Finding } from '../analysis';
import { computeReward, DEFAULT_REWARD } from '../reward/reward';
import type { RunResult } from '../sandbox/result';
import { findingSummary } from '../analysis';
import { lineSpan, scratchMarks } from './scorerSlice';

const f = (severity: Finding['severity'], source: Finding['source'] = 'eslint', start = 0, end = 1, ruleId = 'r'): Finding => ({
  ruleId,
  message: `${ruleId} ${severity}`,
  severity,
  source,
  start,
  end,
});

describe('findingSummary', () => {
  it('counts the findings and each severity, in agreement, errors first, singular and plural', () => {
    expect(findingSummary([])).toBe('no findings');
    expect(findingSummary([f('error')])).toBe('1 finding (1 error)');
    expect(findingSummary([f('error'), f('error'), f('error')])).toBe('3 findings (3 errors)');
    expect(findingSummary([f('info'), f('warning'), f('error'), f('info')])).toBe('4 findings (1 error, 1 warning, 2 info)');
    expect(findingSummary([f('warning'), f('warning')])).toBe('2 findings (2 warnings)');
  });
});

/** An analysis of a completion that does not parse: two syntax errors, ESLint's parse error, a metrics finding. */
function brokenAnalysis(): AnalysisResult {
  const ast = [f('error', 'ast', 9, 10, 'syntax/error'), f('error', 'ast', 12, 12, 'syntax/missing')];
  const lint = [f('error', 'eslint', 9, 10, 'parse-error')];
  const metrics = [f('info', 'metrics', 2, 4, 'metrics/magic-number')];
  const diagnostics = [...ast, ...lint, ...metrics];
  return {
    ast: { valid: false, errors: ast.map((a) => ({ kind: 'ERROR' as const, start: a.start, end: a.end, message: a.message })) },
    lint,
    lintFatal: true,
    metrics: { maxCyclomatic: 1 } as AnalysisResult['metrics'],
    diagnostics,
    counts: { error: 3, warning: 0, info: 1 },
  };
}

describe("the reward's lint detail", () => {
  it('counts what the penalty counts, ESLint findings in the completion, in the words of the Lint table (not every diagnostic)', () => {
    const r = computeReward('x', { verdict: 'error', tests_passed: 0, tests_total: 1 }, brokenAnalysis(), DEFAULT_REWARD);
    const lint = r.components.find((c) => c.name === 'lint')!;
    expect(lint.detail).toBe('1 finding (1 error) from ESLint in the completion, weighted 1 (cap 10)');
    expect(lint.detail).not.toMatch(/all diagnostics|3 error/);
  });
});

describe('lineSpan', () => {
  const text = 'a\n  bc\n\n\tlast';
  it('spans a line from its first non-blank character to its end, clamped to the text', () => {
    expect(lineSpan(text, 1)).toEqual({ start: 0, end: 1 });
    expect(lineSpan(text, 2)).toEqual({ start: 4, end: 6 });
    expect(lineSpan(text, 3)).toEqual({ start: 7, end: 7 });
    expect(lineSpan(text, 4)).toEqual({ start: 9, end: 13 });
    expect(lineSpan(text, 9)).toEqual({ start: 9, end: 13 });
    expect(lineSpan(text, 0)).toEqual({ start: 0, end: 1 });
  });
});

describe('scratchMarks', () => {
  const run = (p: Partial<RunResult>): RunResult => ({
    task_id: 't',
    verdict: 'error',
    passed: false,
    tests: [],
    output: '',
    duration_ms: 1,
    ...p,
  });
  it("marks every diagnostic at its offsets in the completion, the syntax errors as tree-sitter's", () => {
    const analysis = brokenAnalysis();
    const marks = scratchMarks({
      analysis,
      completion: '  return text === ;\n};\n',
      run: run({ message: 'SyntaxError', location: { in: 'completion', line: 1 } }),
    });
    expect(marks).toEqual(
      analysis.diagnostics.map((d) => ({
        start: d.start,
        end: d.end,
        severity: d.severity,
        message: d.message,
        source: d.source === 'ast' ? 'tree-sitter' : d.source,
        code: d.ruleId,
      })),
    );
  });
  it('marks the line the run failed at when it is in the completion and tree-sitter marks no syntax error', () => {
    const completion = '  const s = text;\n  return s.nope();\n};\n';
    const at = run({ message: 'TypeError: not a function', location: { in: 'completion', line: 2 } });
    expect(scratchMarks({ analysis: null, completion, run: at })).toEqual([
      { start: 20, end: 36, severity: 'error', message: 'TypeError: not a function', source: 'sandbox', code: 'error' },
    ]);
    expect(scratchMarks({ analysis: null, completion, run: run({ message: 'x', location: { in: 'tests', line: 2 } }) })).toEqual([]);
    expect(scratchMarks({ analysis: null, completion, run: run({ verdict: 'passed', passed: true }) })).toEqual([]);
  });
});
