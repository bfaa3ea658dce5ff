/**
 * What one sandboxed run of a program returns: a verdict, one result per test, the captured
 * output. Shared by the QuickJS (JavaScript) and Pyodide (Python) runners, the worker pool and
 * the scorer. Plain data only: every value here crosses a worker boundary.
 */

/**
 * The outcome of a whole run.
 * - `passed`: every test passed.
 * - `failed`: the program ran to the end but at least one test failed.
 * - `error`: the program or a test threw (syntax error, exception, stack overflow, crash).
 * - `timeout`: the wall-clock limit was reached.
 * - `memory`: the memory limit was reached.
 * - `output-limit`: the program printed more than the output limit.
 * - `tampering`: the program tried to change the harness or the built-ins the tests rely on,
 *   or left work scheduled to run after the tests.
 * Only `passed` earns test credit for the program as a whole; per-test credit is in `tests`,
 * and every test is reported as not passed when the verdict is `timeout`, `memory`,
 * `output-limit` or `tampering`.
 */
export type Verdict = 'passed' | 'failed' | 'error' | 'timeout' | 'memory' | 'output-limit' | 'tampering';

export type TestStatus = 'passed' | 'failed' | 'error' | 'timeout';

/** Where something happened, in the coordinates of the piece of text it belongs to (lines from 1). */
export interface SourceLocation {
  /** `completion`: the policy's own text; `prompt`: the task's prompt; `tests`: the task's tests */
  in: 'completion' | 'prompt' | 'tests';
  line: number;
}

export interface TestResult {
  /** `assert 1` ... in the order the tests appear in the test code */
  name: string;
  status: TestStatus;
  /** the test's own line in the test code */
  line: number;
  /** the source text of the assertion, shortened */
  source: string;
  /** why it did not pass */
  message?: string;
  /** where the failure happened: inside the completion when the completion threw */
  location?: SourceLocation;
  /** how often this assertion was evaluated (loops evaluate one assertion many times) */
  evaluations: number;
}

export interface RunResult {
  task_id: string;
  verdict: Verdict;
  /** true exactly when verdict is `passed` */
  passed: boolean;
  tests: TestResult[];
  /** the first error, tampering attempt or limit that decided the verdict, if any */
  message?: string;
  location?: SourceLocation;
  /** what the program printed (console.* / print), cut at the output limit */
  output: string;
  /** wall-clock time of the run inside the worker, ms */
  duration_ms: number;
}

/** Per-run resource limits. */
export interface RunLimits {
  /** wall-clock limit of one run, ms; the pool kills the worker at timeoutMs + graceMs */
  timeoutMs: number;
  /** extra time the pool waits past timeoutMs before it terminates the worker, ms */
  graceMs: number;
  /** memory of one JavaScript run, bytes: QuickJS's malloc limit and the ceiling on its heap's growth */
  memoryBytes: number;
  /** most characters of output kept; printing more ends the run with `output-limit` */
  outputChars: number;
  /** interpreter stack limit of one JavaScript run, bytes */
  stackBytes: number;
  /** how far the Python interpreter's WebAssembly heap may grow during one run, bytes */
  pythonMemoryBytes: number;
}

export const DEFAULT_LIMITS: RunLimits = {
  timeoutMs: 3000,
  graceMs: 2000,
  memoryBytes: 32 << 20,
  outputChars: 64 << 10,
  stackBytes: 256 << 10,
  pythonMemoryBytes: 128 << 20,
};

/** A result where no test ran: used for timeouts, crashes and bad input. */
export function failedRun(
  task_id: string,
  verdict: Exclude<Verdict, 'passed' | 'failed'>,
  message: string,
  tests: TestResult[] = [],
  duration_ms = 0,
): RunResult {
  const status: TestStatus = verdict === 'timeout' ? 'timeout' : 'error';
  return {
    task_id,
    verdict,
    passed: false,
    tests: tests.map((t) => ({ ...t, status, message: t.message ?? message })),
    message,
    output: '',
    duration_ms,
  };
}
