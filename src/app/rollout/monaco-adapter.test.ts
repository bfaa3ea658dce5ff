import { describe, expect, it } from 'vitest';
import type { AnalysisResult, Finding } from '../../analysis';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import { diagnosisMarkers, heatDecoration, heatItems, markerCounts, offsetRange, type MarkerModel } from './monaco-adapter';

/** The part of a Monaco text model the adapter's pure functions read, over a plain string ('\n' line endings). */
function textModel(text: string): MarkerModel {
  const lines = text.split('\n');
  const starts = lines.reduce<number[]>((acc, l, i) => (i === 0 ? [0] : [...acc, acc[i - 1]! + lines[i - 1]!.length + 1]), []);
  return {
    getPositionAt(offset: number) {
      const o = Math.max(0, Math.min(Math.floor(offset), text.length));
      let i = starts.length - 1;
      while (starts[i]! > o) i--;
      return { lineNumber: i + 1, column: o - starts[i]! + 1 } as ReturnType<MarkerModel['getPositionAt']>;
    },
    getLineCount: () => lines.length,
    getLineFirstNonWhitespaceColumn: (n: number) => {
      const m = /\S/.exec(lines[n - 1] ?? '');
      return m ? m.index + 1 : 0;
    },
    getLineMaxColumn: (n: number) => (lines[n - 1] ?? '').length + 1,
  };
}

const range = (sl: number, sc: number, el: number, ec: number) => ({
  startLineNumber: sl,
  startColumn: sc,
  endLineNumber: el,
  endColumn: ec,
});

describe('offsetRange', () => {
  const m = textModel('ab\ncd\n\nef');
  it('turns character offsets into 1-based line/column ranges', () => {
    expect(offsetRange(m, 0, 2)).toEqual(range(1, 1, 1, 3));
    expect(offsetRange(m, 1, 4)).toEqual(range(1, 2, 2, 2));
    expect(offsetRange(m, 6, 6)).toEqual(range(3, 1, 3, 1));
    expect(offsetRange(m, 7, 9)).toEqual(range(4, 1, 4, 3));
  });
  it('orders reversed offsets and clamps to the text as getPositionAt does', () => {
    expect(offsetRange(m, 4, 1)).toEqual(range(1, 2, 2, 2));
    expect(offsetRange(m, 8, 99)).toEqual(range(4, 2, 4, 3));
    expect(offsetRange(m, -3, 0)).toEqual(range(1, 1, 1, 1));
  });
});

/** A record with per-token arrays for `tokens` (log-probs -0.05, -2.5, -6, ...). */
function record(prompt: string, completion: string, tokens: string[]): RolloutRecord {
  const n = tokens.length;
  const lp = [-0.05, -2.5, -6, -1, -0.2, -4].slice(0, n);
  return {
    iteration: 1,
    task_id: 't/1',
    group: 0,
    turn: 1,
    prompt,
    completion,
    tokens,
    ids: tokens.map((_, i) => 100 + i),
    logprobs: lp,
    entropies: tokens.map(() => 0.5),
    ref_logprobs: lp.map((x) => x - 0.1),
    values: tokens.map(() => 0),
    advantages: tokens.map(() => 0.5),
    returns: tokens.map(() => 0),
    raw_advantages: tokens.map(() => 0.5),
    score: 0,
    reward: { total: 0, components: [] },
    passed: false,
    verdict: 'failed',
    tests_passed: 0,
    tests_total: 1,
    tests: [],
    finish: 'stop',
  };
}

describe('heatItems and heatDecoration', () => {
  const prompt = 'function f() {\n';
  it('gives each exact token its program range and recorded text, and a trailing EOS a zero-width item at the end', () => {
    const r = record(prompt, '  return 1;\n}', ['  return', ' 1;', '\n}', '<|endoftext|>']);
    const { items, exact } = heatItems(r, prompt, r.completion);
    expect(exact).toBe(true);
    const p = prompt.length;
    expect(items.map((it) => [it.tokens, it.kind, it.start - p, it.end - p, it.text])).toEqual([
      [[0], 'exact', 0, 8, '  return'],
      [[1], 'exact', 8, 11, ' 1;'],
      [[2], 'exact', 11, 13, '\n}'],
      [[3], 'extra', 13, 13, ''],
    ]);
  });

  it('groups tokens that split a character into one item', () => {
    const r = record('', 'é!', ['\uFFFD', '\uFFFD', '!']);
    const { items, exact } = heatItems(r, '', r.completion);
    expect(exact).toBe(false);
    expect(items.map((it) => [it.tokens, it.kind, it.start, it.end])).toEqual([
      [[0, 1], 'approx', 0, 1],
      [[2], 'exact', 1, 2],
    ]);
  });

  it("colours an item by its bucket, with every token's numbers as markdown in the hover", () => {
    const r = record(prompt, '  return 1;\n}', ['  return', ' 1;', '\n}', '<|endoftext|>']);
    const { items } = heatItems(r, prompt, r.completion);
    const d = heatDecoration(items[1]!, r, 'logprob', false);
    expect(d.inlineClassName).toBe('heat-tok heat-logprob-2'); // -2.5: between -3 and -2
    expect(d.stickiness).toBe(1); // NeverGrowsWhenTypingAtEdges
    const hover = d.hoverMessage as { value: string }[];
    expect(hover).toHaveLength(1);
    expect(hover[0]!.value).toMatch(/^\*\*token 1\*\* ` " 1;" ` · id 101 {2}\nlog-prob: -2\.5000/);
    expect(heatDecoration(items[1]!, r, 'advantage', true).inlineClassName).toBe('heat-tok heat-advantage-4');
    expect((heatDecoration(items[1]!, r, 'logprob', true).hoverMessage as { value: string }[])[0]!.value).toMatch(
      /_recorded token: the completion has been edited elsewhere_$/,
    );
  });

  it('shows a zero-width EOS after the end, and one hover per token of a group', () => {
    const r = record(prompt, '  return 1;\n}', ['  return', ' 1;', '\n}', '<|endoftext|>']);
    const eos = heatDecoration(heatItems(r, prompt, r.completion).items[3]!, r, 'logprob', false); // log-prob -1
    expect(eos.inlineClassName).toBeUndefined();
    expect(eos.showIfCollapsed).toBe(true);
    expect(eos.after).toEqual({ content: '<|endoftext|>', inlineClassName: 'heat-tok heat-logprob-4 heat-extra' });
    expect((eos.hoverMessage as { value: string }[])[0]!.value).toContain('_past the end of the completion (the EOS token)_');
    const g = record('', 'é!', ['\uFFFD', '\uFFFD', '!']);
    const group = heatDecoration(heatItems(g, '', g.completion).items[0]!, g, 'logprob', false);
    expect((group.hoverMessage as { value: string }[]).map((h) => h.value.split(' ')[1])).toEqual(['0**', '1**']);
  });
});

const finding = (o: Partial<Finding>): Finding => ({
  ruleId: 'no-undef',
  message: 'm',
  severity: 'error',
  source: 'eslint',
  start: 0,
  end: 1,
  ...o,
});
const test = (o: Partial<TestResult>): TestResult => ({
  name: 'assert 1',
  status: 'failed',
  line: 1,
  source: 'console.assert(f(1) === 2)',
  evaluations: 1,
  ...o,
});

describe('diagnosisMarkers and markerCounts', () => {
  const prompt = '// add one\nfunction f(x) {\n';
  const completion = '  return x +;\n}\n';
  const m = textModel(prompt + completion);
  const analysis = {
    ast: { valid: false, errors: [{ kind: 'MISSING', start: 12, end: 12, message: 'missing expression' }] },
    diagnostics: [
      finding({ source: 'ast', ruleId: 'syntax/missing', start: 12, end: 12 }), // the syntax issue again: owner 'ast' only
      finding({ ruleId: 'no-unused-vars', severity: 'warning', message: 'unused', start: 2, end: 8 }),
      finding({ ruleId: 'metrics/length', severity: 'info', source: 'metrics' as Finding['source'], message: 'long', start: 0, end: 14 }),
    ],
  } as unknown as AnalysisResult;

  it('places syntax errors and lint findings at completion offsets shifted past the prompt, with their severities', () => {
    const { ast, lint } = diagnosisMarkers(m, { analysis, tests: [] }, prompt, 'f');
    expect(ast).toEqual([
      { ...range(3, 13, 3, 13), severity: 8, message: 'missing expression', source: 'tree-sitter', code: 'syntax/missing' },
    ]);
    expect(lint).toEqual([
      { ...range(3, 3, 3, 9), severity: 4, message: 'unused', source: 'eslint', code: 'no-unused-vars' },
      { ...range(3, 1, 4, 1), severity: 2, message: 'long', source: 'metrics', code: 'metrics/length' },
    ]);
  });

  it('puts a failing test on its line (or the function header when unknown), clamped, and skips passed tests', () => {
    const tests = [
      test({ name: 'assert 1', status: 'passed' }),
      test({ name: 'assert 2', message: 'threw', location: { in: 'completion', line: 1 } }),
      test({ name: 'assert 3', status: 'error' }),
      test({ name: 'assert 4', location: { in: 'completion', line: 40 } }),
    ];
    const { tests: markers } = diagnosisMarkers(m, { analysis: null, tests }, prompt, 'f');
    expect(markers.map((x) => [x.code, x.startLineNumber, x.startColumn, x.endLineNumber, x.endColumn, x.severity])).toEqual([
      ['assert 2', 3, 3, 3, 14, 8],
      ['assert 3', 2, 1, 2, 16, 8],
      ['assert 4', 5, 1, 5, 1, 8], // past the end: the last line (empty: column 1)
    ]);
    expect(markers[0]!.message).toBe('assert 2 failed: threw');
    expect(markers[1]!.message).toBe(
      'assert 3 error: console.assert(f(1) === 2) (shown at the function header: the failure is in the test code)',
    );
  });

  it('counts what diagnosisMarkers places, without a model', () => {
    const tests = [test({ status: 'passed' }), test({ name: 'assert 2' })];
    const d = { analysis, tests };
    const byOwner = diagnosisMarkers(m, d, prompt, 'f');
    expect(markerCounts(d)).toEqual({ ast: byOwner.ast.length, lint: byOwner.lint.length, tests: byOwner.tests.length });
    expect(markerCounts(d)).toEqual({ ast: 1, lint: 2, tests: 1 });
    expect(markerCounts(null)).toEqual({ ast: 0, lint: 0, tests: 0 });
    expect(markerCounts({ analysis: null, tests: [] })).toEqual({ ast: 0, lint: 0, tests: 0 });
  });
});
