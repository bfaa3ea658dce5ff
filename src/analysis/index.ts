/**
 * Static analysis of generated JavaScript: ESLint (`lint.ts`), metrics (`metrics.ts`) and
 * tree-sitter's syntax check (`ast.ts`) in one pure function, `analyze`, and a cached `Analyzer`.
 * Every range is an offset range into the analysed completion (`code`), never an editor position.
 *
 *   const syntax = await loadJsSyntax(nodeWasmLoader);   // or browserWasmLoader
 *   const result = analyze(completion, { prompt, syntax });
 */
import { loadJsSyntax, syntaxIssues, type JsSyntax, type SyntaxCheck, type SyntaxIssue } from './ast';
import { LruCache, fnv1a64, normalizeCode, type CacheStats, type OffsetMap } from './cache';
import { countBySeverity, sortFindings, type Finding } from './findings';
import { lint } from './lint';
import { computeMetrics, type CodeMetrics, type Thresholds } from './metrics';
import type { WasmLoader } from './treesitter';

export type { Finding, Severity, FindingSource, ScorerResult } from './findings';
export { findingSummary } from './findings';
export type { SyntaxCheck, SyntaxIssue, OutlineNode } from './ast';
export type { CodeMetrics, Thresholds } from './metrics';
export type { FunctionMetrics } from './complexity';
export type { PrefixVerdict } from './viability';
export type { PrefixChecker } from './prefix';
export type { LintOptions, LintReport } from './lint';
export type { CacheStats } from './cache';
export type { WasmLoader } from './treesitter';
export { JsSyntax, loadJsSyntax } from './ast';
export { lint } from './lint';
export { computeMetrics, DEFAULT_THRESHOLDS } from './metrics';
export { RULES } from './rules';

export interface AnalyzeOptions {
  /** Text before the completion: analysed with it, findings reported for the completion only. */
  prompt?: string;
  /** The loaded parser (`loadJsSyntax`). */
  syntax: JsSyntax;
  thresholds?: Partial<Thresholds>;
}

export interface AnalysisResult {
  /** tree-sitter's check of `prompt + code`; issues in completion offsets (those before it at 0). */
  ast: SyntaxCheck;
  /** ESLint findings in the completion. */
  lint: Finding[];
  /** ESLint could not parse the program (its one finding is then `parse-error`). */
  lintFatal: boolean;
  metrics: CodeMetrics;
  /** Everything, sorted: syntax issues, lint findings, metric findings. */
  diagnostics: Finding[];
  counts: Record<Finding['severity'], number>;
}

/** ESLint's `complexity` and `max-depth` already report these when ESLint could parse. */
const COVERED_BY_ESLINT = new Set(['metrics/cyclomatic-complexity', 'metrics/nesting-depth']);

/** Lint + metrics + syntax check of a completion. Pure: same input, same result. */
export function analyze(code: string, opts: AnalyzeOptions): AnalysisResult {
  const prompt = opts.prompt ?? '';
  const program = prompt + code;
  const from = prompt.length;
  const tree = opts.syntax.parse(program);
  try {
    const issues = syntaxIssues(tree.rootNode, program, opts.syntax).map((e) => shiftIssue(e, from));
    const ast: SyntaxCheck = { valid: issues.length === 0, errors: issues };
    const linted = lint(code, { prompt });
    const { metrics, findings } = computeMetrics(tree.rootNode, program, { completionStart: from, thresholds: opts.thresholds });
    const metricFindings = linted.fatal ? findings : findings.filter((f) => !COVERED_BY_ESLINT.has(f.ruleId));
    const diagnostics = sortFindings([...issues.map(issueFinding), ...linted.completion, ...metricFindings]);
    return { ast, lint: linted.completion, lintFatal: linted.fatal !== null, metrics, diagnostics, counts: countBySeverity(diagnostics) };
  } finally {
    tree.delete();
  }
}

function shiftIssue(e: SyntaxIssue, from: number): SyntaxIssue {
  return { ...e, start: Math.max(e.start - from, 0), end: Math.max(e.end - from, 0) };
}

function issueFinding(e: SyntaxIssue): Finding {
  const ruleId = e.kind === 'ERROR' ? 'syntax/error' : 'syntax/missing';
  return { ruleId, message: e.message, severity: 'error', source: 'ast', start: e.start, end: e.end };
}

/** `analyze` behind an LRU cache keyed by the normalised prompt and code (see cache.ts). */
export class Analyzer {
  private readonly cache: LruCache<AnalysisResult>;

  constructor(
    readonly syntax: JsSyntax,
    private readonly opts: { cacheSize?: number; thresholds?: Partial<Thresholds> } = {},
  ) {
    this.cache = new LruCache(opts.cacheSize ?? 1024);
  }

  analyze(code: string, { prompt = '' }: { prompt?: string } = {}): AnalysisResult {
    const p = normalizeCode(prompt);
    const c = normalizeCode(code);
    const key = `${fnv1a64(p.text)}:${fnv1a64(c.text)}`;
    const result = this.cache.getOrCompute(key, () =>
      analyze(c.text, { prompt: p.text, syntax: this.syntax, thresholds: this.opts.thresholds }),
    );
    return mapResult(result, c.map, code.length);
  }

  stats(): CacheStats {
    return this.cache.stats();
  }
}

/** Loads tree-sitter with `load` and returns a cached analyzer. */
export async function createAnalyzer(
  load: WasmLoader,
  opts: { cacheSize?: number; thresholds?: Partial<Thresholds> } = {},
): Promise<Analyzer> {
  return new Analyzer(await loadJsSyntax(load), opts);
}

/** A cached result (offsets into the normalised code) in offsets of the caller's code. */
function mapResult(r: AnalysisResult, map: OffsetMap, length: number): AnalysisResult {
  const range = <T extends { start: number; end: number }>(x: T): T => {
    const start = map.start(x.start);
    return { ...x, start, end: x.end === x.start ? start : map.end(x.end) };
  };
  const functions = r.metrics.functions.map((f) => ({ ...range(f), headEnd: map.end(f.headEnd), deepest: f.deepest && range(f.deepest) }));
  return {
    ...r,
    ast: { valid: r.ast.valid, errors: r.ast.errors.map(range) },
    lint: r.lint.map(range),
    metrics: { ...r.metrics, chars: length, functions },
    diagnostics: r.diagnostics.map(range),
  };
}
