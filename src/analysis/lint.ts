/**
 * ESLint on generated code, in the browser and in Node: `Linter` from `eslint/universal` with the
 * flat config of `rules.ts`. A completion is linted in the context of its prompt (the program is
 * `prompt + code`, so the prompt's declarations are in scope), and the report says which
 * findings fall in the completion, with offsets into it.
 */
import { Linter } from 'eslint/universal';
import { rebaseToCompletion, sortFindings, type Finding } from './findings';
import { LineIndex } from './offsets';
import { FUNCTION_SCOPED_RULES, eslintConfig, severityOf } from './rules';

export interface LintOptions {
  /** Text before the completion; linted with it, its findings reported in `findings` only. */
  prompt?: string;
}

export interface LintReport {
  /** The linted program, `prompt + code`. */
  program: string;
  /** Offset of the completion (`code`) in `program`. */
  completionStart: number;
  /** Every finding, offsets into `program`, sorted. */
  findings: Finding[];
  /** Findings that touch the completion, offsets into `code`, clipped to it. */
  completion: Finding[];
  /** Set when ESLint could not parse the program: then it is the only finding and no rule ran. */
  fatal: Finding | null;
}

type EslintNode = { type: string; range?: [number, number]; parent?: EslintNode; value?: EslintNode };

const FILENAME = 'completion.js';
const FUNCTION_TYPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

let shared: { linter: Linter; config: Linter.Config } | null = null;
function eslint(): { linter: Linter; config: Linter.Config } {
  shared ??= { linter: new Linter({ cwd: '/' }), config: eslintConfig() };
  return shared;
}

/** Lints `code` (after `opts.prompt`, if given). Pure apart from ESLint's reused instance. */
export function lint(code: string, opts: LintOptions = {}): LintReport {
  const prompt = opts.prompt ?? '';
  const program = prompt + code;
  const { linter, config } = eslint();
  const messages = linter.verify(program, config, { filename: FILENAME });
  const index = new LineIndex(program);
  const findings = sortFindings(messages.map((m) => toFinding(m, index)));
  const fatal = findings.find((f) => f.ruleId === 'parse-error') ?? null;
  const scopes = fatal ? null : functionScopes(linter, findings);
  const scope = (f: Finding) => scopes?.get(f) ?? f;
  const completion = rebaseToCompletion(findings, prompt.length, code.length, scope);
  return { program, completionStart: prompt.length, findings, completion, fatal };
}

/** One ESLint message as a finding; ESLint's lines and columns are 1-based, end exclusive. */
export function toFinding(m: Linter.LintMessage, index: LineIndex): Finding {
  const start = index.offsetAt(m.line, m.column);
  if (m.fatal) {
    const end = Math.min(start + 1, index.text.length);
    return { ruleId: 'parse-error', message: m.message, severity: 'error', source: 'eslint', start, end };
  }
  const end = m.endLine === undefined ? start : index.offsetAt(m.endLine, m.endColumn ?? m.column);
  // ruleId null and not fatal: ESLint's notice that an inline `eslint-disable` had no effect.
  const ruleId = m.ruleId ?? 'eslint/inline-config';
  const severity = m.ruleId ? severityOf(m.ruleId) : 'warning';
  return { ruleId, message: m.message, severity, source: 'eslint', start, end: Math.max(start, end) };
}

/** For function-scoped rules (reported on a function's head), the whole function's range. */
function functionScopes(linter: Linter, findings: Finding[]): Map<Finding, { start: number; end: number }> {
  const scopes = new Map<Finding, { start: number; end: number }>();
  const sourceCode = linter.getSourceCode();
  for (const f of findings) {
    if (!FUNCTION_SCOPED_RULES.has(f.ruleId)) continue;
    const fn = enclosingFunction(sourceCode.getNodeByRangeIndex(f.start) as EslintNode | null);
    if (fn?.range) scopes.set(f, { start: fn.range[0], end: fn.range[1] });
  }
  return scopes;
}

function enclosingFunction(node: EslintNode | null): EslintNode | null {
  for (let n = node; n; n = n.parent ?? null) {
    if (FUNCTION_TYPES.has(n.type)) return n;
    if (n.value && FUNCTION_TYPES.has(n.value.type)) return n.value; // method or property head
  }
  return null;
}
