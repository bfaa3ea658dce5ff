/**
 * Turns what a runner observed (host-side counters per assertion, the first error, the limit or
 * tampering that stopped the run) into a RunResult. Shared by the JavaScript and Python runners,
 * so both grade the same way:
 * - an assertion passes when it was evaluated at least once and never false;
 * - the assertion running when an exception escaped gets `error` with that exception; the ones
 *   the exception kept from running get `error` ("not reached");
 * - an assertion never evaluated although the tests finished is `failed` ("never evaluated");
 * - timeout, memory, output-limit and tampering take all credit away: every test is reported as
 *   `timeout` (for a timeout) or `error`, with the reason.
 */
import type { RunResult, SourceLocation, TestResult, TestStatus, Verdict } from './result';

export interface SiteInfo {
  line: number;
  source: string;
}

export interface Observed {
  sites: SiteInfo[];
  /** no assertion sites: the whole test code is one test, passed when it runs to the end */
  whole: boolean;
  evals: number[];
  fails: number[];
  /** the assertion whose evaluation was in progress when an exception escaped, or -1 */
  current: number;
  /** per assertion, the first exception raised while evaluating it (runners that go on after one) */
  siteErrors?: ({ message: string; location?: SourceLocation } | undefined)[];
  /** the program itself (prompt + completion) failed before the tests ran */
  programFailed: boolean;
  /** the tests finished without an exception escaping */
  testsFinished: boolean;
  error?: { message: string; location?: SourceLocation };
  stop?: { verdict: 'timeout' | 'memory' | 'output-limit' | 'tampering'; message: string };
}

export function siteTests(sites: readonly SiteInfo[], whole: boolean): TestResult[] {
  if (whole) return [{ name: 'tests', status: 'error', line: 1, source: '(the whole test code)', evaluations: 0 }];
  return sites.map((s, i) => ({ name: `assert ${i + 1}`, status: 'error', line: s.line, source: s.source, evaluations: 0 }));
}

function gradeSite(o: Observed, i: number, t: TestResult): TestResult {
  const evaluations = o.evals[i] ?? 0;
  const fails = o.fails[i] ?? 0;
  const base = { ...t, evaluations };
  const at: SourceLocation = { in: 'tests', line: t.line };
  if (o.programFailed)
    return {
      ...base,
      status: 'error',
      message: `the program failed before the tests: ${o.error?.message ?? 'error'}`,
      ...(o.error?.location ? { location: o.error.location } : {}),
    };
  if (i === o.current) return { ...base, status: 'error', message: o.error?.message ?? 'error', location: o.error?.location ?? at };
  const own = o.siteErrors?.[i];
  if (own) return { ...base, status: 'error', message: own.message, location: own.location ?? at };
  if (fails > 0)
    return {
      ...base,
      status: 'failed',
      message: `assertion failed${evaluations > 1 ? ` (${fails} of ${evaluations} evaluations)` : ''}: ${t.source}`,
      location: at,
    };
  if (evaluations > 0) return { ...base, status: 'passed' };
  if (o.testsFinished) return { ...base, status: 'failed', message: `never evaluated: ${t.source}`, location: at };
  return { ...base, status: 'error', message: `not reached: ${o.error?.message ?? 'an earlier error stopped the tests'}` };
}

function gradeWhole(o: Observed, t: TestResult): TestResult {
  if (o.testsFinished && !o.programFailed) return { ...t, status: 'passed', evaluations: 1 };
  return {
    ...t,
    status: 'error',
    evaluations: 1,
    message: o.error?.message ?? 'error',
    ...(o.error?.location ? { location: o.error.location } : {}),
  };
}

export function assemble(task_id: string, o: Observed, output: string, duration_ms: number): RunResult {
  let tests = siteTests(o.sites, o.whole).map((t, i) => (o.whole ? gradeWhole(o, t) : gradeSite(o, i, t)));
  let verdict: Verdict;
  let message: string | undefined;
  let location: SourceLocation | undefined;
  if (o.stop) {
    verdict = o.stop.verdict;
    message = o.stop.message;
    const status: TestStatus = verdict === 'timeout' ? 'timeout' : 'error';
    tests = tests.map((t) => ({ ...t, status, message: `${verdict}: ${message}` }));
  } else if (o.error) {
    verdict = 'error';
    message = o.error.message;
    location = o.error.location;
  } else if (tests.some((t) => t.status === 'error')) {
    verdict = 'error';
    const first = tests.find((t) => t.status === 'error');
    message = first?.message;
    location = first?.location;
  } else {
    verdict = tests.every((t) => t.status === 'passed') ? 'passed' : 'failed';
    if (verdict === 'failed') message = tests.find((t) => t.status !== 'passed')?.message;
  }
  const r: RunResult = { task_id, verdict, passed: verdict === 'passed', tests, output, duration_ms: Math.round(duration_ms * 10) / 10 };
  if (message !== undefined) r.message = message;
  if (location) r.location = location;
  return r;
}

/** Maps the first program/tests frame of a stack trace back to completion, prompt or tests lines. */
export function locate(
  stack: string,
  promptNewlines: number,
  files = { program: 'program.js', tests: 'tests.js' },
): SourceLocation | undefined {
  const re = /([\w./-]+):(\d+)(?::\d+)?\)?\s*$/;
  for (const frame of stack.split('\n')) {
    const m = re.exec(frame.trim());
    if (!m) continue;
    const line = Number(m[2]);
    if (m[1] === files.program) return line > promptNewlines ? { in: 'completion', line: line - promptNewlines } : { in: 'prompt', line };
    if (m[1] === files.tests) return { in: 'tests', line };
  }
  return undefined;
}

export function describeLocation(l: SourceLocation | undefined): string {
  return l ? ` (${l.in} line ${l.line})` : '';
}
