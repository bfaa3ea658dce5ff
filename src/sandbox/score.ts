/**
 * Scoring completions against a suite with a sandbox pool: one ScoreRecord per completion, in
 * input order, and a summary with pass@1 (the unbiased pass@k estimator of the Codex paper,
 * averaged over tasks, so several samples per task count correctly).
 */
import type { Completion, Task } from '../tasks/types';
import type { SandboxPool } from './pool';
import { DEFAULT_LIMITS, type RunLimits, type RunResult, type TestResult, type Verdict } from './result';

/**
 * Fields other scorers add to a record (static analysis, AST checks, reward). Declared empty
 * here; each scorer adds its own typed fields by declaration merging:
 *   declare module '../sandbox/score' { interface ScoreExtensions { lint?: LintReport } }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface ScoreExtensions {}

export interface ScoreRecord extends ScoreExtensions {
  task_id: string;
  /** position of the completion in the completions file (0-based) */
  index: number;
  passed: boolean;
  verdict: Verdict;
  message?: string;
  tests: TestResult[];
  tests_passed: number;
  tests_total: number;
  output: string;
  duration_ms: number;
}

export interface ScoreSummary {
  completions: number;
  passed: number;
  failed: number;
  tasks: number;
  /** mean over tasks of the unbiased pass@1 estimate */
  pass_at_1: number;
  verdicts: Partial<Record<Verdict, number>>;
  wall_ms: number;
  programs_per_s: number;
}

export function toRecord(index: number, r: RunResult): ScoreRecord {
  const rec: ScoreRecord = {
    task_id: r.task_id,
    index,
    passed: r.passed,
    verdict: r.verdict,
    tests: r.tests,
    tests_passed: r.tests.filter((t) => t.status === 'passed').length,
    tests_total: r.tests.length,
    output: r.output,
    duration_ms: r.duration_ms,
  };
  if (r.message !== undefined) rec.message = r.message;
  return rec;
}

/** Unbiased pass@k for one task with n samples of which c pass: 1 - C(n-c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let p = 1;
  for (let i = n - c + 1; i <= n; i++) p *= 1 - k / i;
  return 1 - p;
}

/** Unbiased pass@k averaged over tasks, for each k (tasks with fewer than k samples are skipped for that k). */
export function passAtKs(records: readonly Pick<ScoreRecord, 'task_id' | 'passed'>[], ks: readonly number[]): Record<string, number> {
  const by = new Map<string, { n: number; c: number }>();
  for (const r of records) {
    const t = by.get(r.task_id) ?? { n: 0, c: 0 };
    t.n++;
    if (r.passed) t.c++;
    by.set(r.task_id, t);
  }
  const out: Record<string, number> = {};
  for (const k of ks) {
    const vals = [...by.values()].filter((t) => t.n >= k).map((t) => passAtK(t.n, t.c, k));
    out[`pass@${k}`] = vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : NaN;
  }
  return out;
}

export function summarize(records: readonly ScoreRecord[], wall_ms: number): ScoreSummary {
  const verdicts: Partial<Record<Verdict, number>> = {};
  for (const r of records) verdicts[r.verdict] = (verdicts[r.verdict] ?? 0) + 1;
  const passed = records.filter((r) => r.passed).length;
  return {
    completions: records.length,
    passed,
    failed: records.length - passed,
    tasks: new Set(records.map((r) => r.task_id)).size,
    pass_at_1: records.length ? passAtKs(records, [1])['pass@1']! : 0,
    verdicts,
    wall_ms: Math.round(wall_ms),
    programs_per_s: wall_ms > 0 ? Math.round((records.length / wall_ms) * 1000 * 10) / 10 : 0,
  };
}

/**
 * Runs every completion through the pool (submit waits when the pool's queue is full) and calls
 * `onRecord` as each finishes; returns the records in input order.
 */
export async function scoreCompletions(
  pool: SandboxPool,
  tasks: readonly Task[],
  completions: readonly Completion[],
  opts: { limits?: RunLimits; onRecord?: (r: ScoreRecord) => void } = {},
): Promise<ScoreRecord[]> {
  const byId = new Map(tasks.map((t) => [t.task_id, t]));
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const pending: Promise<ScoreRecord>[] = [];
  for (const [index, c] of completions.entries()) {
    const task = byId.get(c.task_id);
    if (!task) throw new Error(`completion ${index} names unknown task ${c.task_id}`);
    const { task_id, language, prompt, entry_point, tests } = task;
    const { result } = await pool.submit({ task: { task_id, language, prompt, entry_point, tests }, completion: c.completion, limits });
    pending.push(
      result.then((r) => {
        const rec = toRecord(index, r);
        opts.onRecord?.(rec);
        return rec;
      }),
    );
  }
  return Promise.all(pending);
}
