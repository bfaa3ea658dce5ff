/**
 * The one diagnostic type every analyser speaks: a rule hit on a character range of the analysed
 * code. Offsets are 0-based UTF-16 code-unit indices (what `string.slice` takes), `end` exclusive;
 * a zero-width range (`start === end`) marks a point, e.g. a missing `)` or the end of the input.
 * No editor types here: the Monaco adapter turns offsets into positions with `model.getPositionAt`.
 */

export type Severity = 'error' | 'warning' | 'info';
export type FindingSource = 'eslint' | 'ast' | 'metrics';

export interface Finding {
  /** e.g. `no-undef`, `syntax/missing`, `metrics/cognitive-complexity`. */
  ruleId: string;
  message: string;
  severity: Severity;
  source: FindingSource;
  /** First code unit of the range. */
  start: number;
  /** One past the last code unit of the range. */
  end: number;
}

/** A scorer's contract: pure, `(code, task?) -> { components/metrics, diagnostics }`, offsets into `code`. */
export interface ScorerResult<C> {
  components: C;
  diagnostics: Finding[];
}

const SEVERITY_RANK: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** Sorts by start, then end, then severity (errors first), then rule id: a stable, readable order. */
export function sortFindings(findings: Finding[]): Finding[] {
  return findings.sort(
    (a, b) =>
      a.start - b.start || a.end - b.end || SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || a.ruleId.localeCompare(b.ruleId),
  );
}

/** Counts findings per severity. */
export function countBySeverity(findings: readonly Finding[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  return counts;
}

/**
 * Re-bases findings on a program `prefix + completion` to offsets into the completion, keeping
 * those whose range overlaps the completion (a zero-width range counts when it lies inside it,
 * its end included) and clipping them to it. `scope(f)` may give a wider range for a finding
 * (e.g. its whole function for `complexity`, which ESLint reports on the function's head): when
 * the finding's own range misses the completion but its scope overlaps it, the finding is kept
 * with the scope's range, clipped.
 */
export function rebaseToCompletion(
  findings: readonly Finding[],
  completionStart: number,
  completionLength: number,
  scope: (f: Finding) => { start: number; end: number } = (f) => f,
): Finding[] {
  const lo = completionStart;
  const hi = completionStart + completionLength;
  const overlaps = (r: { start: number; end: number }) => (r.start === r.end ? r.start >= lo && r.start <= hi : r.start < hi && r.end > lo);
  const out: Finding[] = [];
  for (const f of findings) {
    const range = overlaps(f) ? f : scope(f);
    if (!overlaps(range)) continue;
    const start = Math.min(Math.max(range.start, lo), hi) - lo;
    const end = Math.min(Math.max(range.end, lo), hi) - lo;
    out.push({ ...f, start, end: Math.max(start, end) });
  }
  return out;
}

const SEVERITY_NOUN: Record<Severity, [string, string]> = {
  error: ['error', 'errors'],
  warning: ['warning', 'warnings'],
  info: ['info', 'info'],
};

/** "no findings", "1 finding (1 error)", "3 findings (2 errors, 1 info)": counts by severity, errors first. */
export function findingSummary(findings: readonly Pick<Finding, 'severity'>[]): string {
  if (findings.length === 0) return 'no findings';
  const parts = (['error', 'warning', 'info'] as const).flatMap((sev) => {
    const n = findings.filter((f) => f.severity === sev).length;
    return n ? [`${n} ${SEVERITY_NOUN[sev][n === 1 ? 0 : 1]}`] : [];
  });
  return `${findings.length} finding${findings.length === 1 ? '' : 's'} (${parts.join(', ')})`;
}
