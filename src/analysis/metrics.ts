/**
 * Code metrics of a completion from tree-sitter's tree of `prompt + completion` (the tree of the
 * whole program, so a function whose head is in the prompt is measured whole), and the findings
 * for metrics past their thresholds. Everything is reported in offsets into the completion.
 */
import type { Node } from 'web-tree-sitter';
import { complexity, type FunctionMetrics } from './complexity';
import { rebaseToCompletion, sortFindings, type Finding } from './findings';

export interface Thresholds {
  /** Per function, above this: warning (ESLint's `complexity` uses the same limit). */
  cyclomatic: number;
  /** Per function, above this: warning (SonarQube's default is 15). */
  cognitive: number;
  /** Per function, above this: warning (ESLint's `max-depth` uses the same limit). */
  nesting: number;
  /** Lines per function, above this: info. */
  functionLines: number;
  /** A repeated line counts as duplicated when its normalised text is at least this long. */
  duplicateMinLength: number;
  /** Numeric literals that are never magic. */
  allowedNumbers: readonly number[];
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  cyclomatic: 10,
  cognitive: 15,
  nesting: 4,
  functionLines: 60,
  duplicateMinLength: 12,
  allowedNumbers: [-1, 0, 1, 2],
};

export interface CodeMetrics {
  /** Lines of the completion. */
  lines: number;
  /** Lines with code (not blank, not only a comment). */
  codeLines: number;
  /** tree-sitter leaves in the completion, comments excluded: a token count. */
  tokens: number;
  chars: number;
  /** Functions that overlap the completion; offsets into it, clipped. */
  functions: FunctionMetrics[];
  maxCyclomatic: number;
  maxCognitive: number;
  /** Sum of the cognitive increments located in the completion (Sonar's file-level number). */
  cognitiveTotal: number;
  /** Deepest nesting in any function overlapping the completion, or in its top-level code. */
  maxNesting: number;
  /** Completion lines whose normalised text (long enough) occurs more than once in it. */
  duplicatedLines: number;
  /** Numeric literals in the completion outside `const` declarations, other than the allowed ones. */
  magicNumbers: number;
}

export interface MetricsOptions {
  /** Offset of the completion in the parsed text (0: the whole text is the completion). */
  completionStart?: number;
  thresholds?: Partial<Thresholds>;
}

/** Metrics and threshold findings for the completion `text.slice(completionStart)`. */
export function computeMetrics(root: Node, text: string, opts: MetricsOptions = {}): { metrics: CodeMetrics; findings: Finding[] } {
  const t = thresholds(opts.thresholds);
  const from = opts.completionStart ?? 0;
  const code = text.slice(from);
  const report = complexity(root, from, text.length);
  const touching = report.functions.filter((f) => f.end > from || (f.start === f.end && f.start >= from));
  const leaves = completionLeaves(root, from);
  const magic = leaves.filter((n) => n.type === 'number' && isMagic(n, t.allowedNumbers));
  const duplicates = duplicateLines(code, t.duplicateMinLength);
  const findings: Finding[] = [];
  const scopes = new Map<Finding, { start: number; end: number }>();
  for (const f of touching) {
    for (const finding of functionFindings(f, text, t)) {
      scopes.set(finding, f); // a function's finding counts for the completion if the function does
      findings.push(finding);
    }
  }
  for (const n of magic)
    findings.push(metricFinding('magic-number', `magic number ${n.text}: name it with a const`, 'info', n.startIndex, n.endIndex));
  for (const d of duplicates.findings) findings.push({ ...d, start: d.start + from, end: d.end + from });
  const metrics: CodeMetrics = {
    lines: lineCount(code),
    codeLines: codeLineCount(code, leaves, from),
    tokens: leaves.length,
    chars: code.length,
    functions: touching.map((f) => clipFunction(f, from, text.length)),
    maxCyclomatic: Math.max(0, ...touching.map((f) => f.cyclomatic)),
    maxCognitive: Math.max(0, ...touching.map((f) => f.cognitive)),
    cognitiveTotal: report.cognitiveInRange,
    maxNesting: Math.max(report.topLevelNesting, ...touching.map((f) => f.maxNesting)),
    duplicatedLines: duplicates.count,
    magicNumbers: magic.length,
  };
  const completionFindings = rebaseToCompletion(findings, from, code.length, (f) => scopes.get(f) ?? f);
  return { metrics, findings: sortFindings(completionFindings) };
}

/** The defaults overridden by `overrides`; unknown keys and negative or non-numeric limits throw. */
export function thresholds(overrides: Partial<Thresholds> = {}): Thresholds {
  for (const [key, value] of Object.entries(overrides)) {
    if (!(key in DEFAULT_THRESHOLDS)) throw new Error(`unknown metrics threshold '${key}'`);
    const ok =
      key === 'allowedNumbers' ? Array.isArray(value) && value.every(Number.isFinite) : Number.isFinite(value) && (value as number) >= 0;
    if (!ok)
      throw new Error(
        `metrics threshold '${key}' must be ${key === 'allowedNumbers' ? 'a list of numbers' : 'a number >= 0'}, got ${JSON.stringify(value)}`,
      );
  }
  return { ...DEFAULT_THRESHOLDS, ...overrides };
}

function functionFindings(f: FunctionMetrics, text: string, t: Thresholds): Finding[] {
  const headEnd = f.start + text.slice(f.start, f.headEnd).trimEnd().length;
  const head = (id: string, message: string, severity: Finding['severity']) => metricFinding(id, message, severity, f.start, headEnd);
  const out: Finding[] = [];
  if (f.cyclomatic > t.cyclomatic)
    out.push(head('cyclomatic-complexity', `${f.name} has a cyclomatic complexity of ${f.cyclomatic} (max ${t.cyclomatic})`, 'warning'));
  if (f.cognitive > t.cognitive)
    out.push(head('cognitive-complexity', `${f.name} has a cognitive complexity of ${f.cognitive} (max ${t.cognitive})`, 'warning'));
  if (f.maxNesting > t.nesting && f.deepest) {
    out.push(
      metricFinding('nesting-depth', `${f.name} nests ${f.maxNesting} deep (max ${t.nesting})`, 'warning', f.deepest.start, f.deepest.end),
    );
  }
  if (f.lines > t.functionLines) out.push(head('function-length', `${f.name} is ${f.lines} lines long (max ${t.functionLines})`, 'info'));
  return out;
}

function metricFinding(id: string, message: string, severity: Finding['severity'], start: number, end: number): Finding {
  return { ruleId: `metrics/${id}`, message, severity, source: 'metrics', start, end };
}

function clipFunction(f: FunctionMetrics, from: number, to: number): FunctionMetrics {
  const clip = (o: number) => Math.min(Math.max(o, from), to) - from;
  const deepest = f.deepest && { start: clip(f.deepest.start), end: clip(f.deepest.end) };
  return { ...f, start: clip(f.start), end: clip(f.end), headEnd: clip(f.headEnd), deepest };
}

/** Leaves (tokens) starting in the completion, comments excluded. */
function completionLeaves(root: Node, from: number): Node[] {
  const out: Node[] = [];
  const visit = (n: Node): void => {
    if (n.endIndex <= from && n.startIndex < from) return;
    if (n.childCount === 0) {
      if (n.startIndex >= from && n.type !== 'comment' && !n.isMissing) out.push(n);
      return;
    }
    if (n.type === 'number' || n.type === 'string' || n.type === 'regex') {
      if (n.startIndex >= from) out.push(n); // one token each, not their inner pieces
      return;
    }
    for (const c of n.children) visit(c);
  };
  visit(root);
  return out;
}

/** Where the search for an enclosing `const` stops: the number belongs to code, not to a constant. */
const STOP_TYPES = new Set(['statement_block', 'arrow_function', 'function_expression', 'class_body']);

function isMagic(n: Node, allowed: readonly number[]): boolean {
  const value = Number(n.text.replaceAll('_', ''));
  const negated = n.parent?.type === 'unary_expression' && n.parent.child(0)?.type === '-';
  if (allowed.includes(negated ? -value : value)) return false;
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'lexical_declaration') return p.childForFieldName('kind')?.type !== 'const';
    if (p.type.endsWith('_statement') || STOP_TYPES.has(p.type)) return true;
  }
  return true;
}

/** Lines of text; a final line break ends the last line rather than starting an empty one. */
function lineCount(code: string): number {
  if (code === '') return 0;
  return code.split(/\r\n|\r|\n/).length - (/(\r\n|\r|\n)$/.test(code) ? 1 : 0);
}

function codeLineCount(code: string, leaves: Node[], from: number): number {
  const lineOf = lineIndexer(code);
  const rows = new Set<number>();
  for (const n of leaves) {
    const first = lineOf(n.startIndex - from);
    const last = lineOf(Math.max(n.startIndex, n.endIndex - 1) - from);
    for (let r = first; r <= last; r++) rows.add(r);
  }
  return rows.size;
}

function lineIndexer(code: string): (offset: number) => number {
  const starts = [0];
  for (const m of code.matchAll(/\r\n|\r|\n/g)) starts.push(m.index + m[0].length);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
}

/** Lines repeated (after trimming and collapsing whitespace) that are long enough and not comments. */
export function duplicateLines(code: string, minLength: number): { count: number; findings: Finding[] } {
  const seen = new Map<string, { line: number; count: number }>();
  const findings: Finding[] = [];
  let count = 0;
  let offset = 0;
  const lines = code.split(/(\r\n|\r|\n)/);
  for (let i = 0; i < lines.length; i += 2) {
    const raw = lines[i] ?? '';
    const norm = raw.trim().replace(/\s+/g, ' ');
    const lineNo = i / 2 + 1;
    if (norm.length >= minLength && !/^(\/\/|\/\*|\*)/.test(norm)) {
      const first = seen.get(norm);
      if (first) {
        count += first.count === 1 ? 2 : 1;
        first.count++;
        const start = offset + raw.length - raw.trimStart().length;
        const message = `line ${lineNo} repeats line ${first.line}`;
        findings.push(metricFinding('duplicate-line', message, 'info', start, offset + raw.trimEnd().length));
      } else {
        seen.set(norm, { line: lineNo, count: 1 });
      }
    }
    offset += raw.length + (lines[i + 1]?.length ?? 0);
  }
  return { count, findings };
}
