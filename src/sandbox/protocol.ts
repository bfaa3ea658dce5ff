/**
 * Every message between the pool and a sandbox worker: one discriminated union each way.
 *
 *   pool -> worker: init (once), run (one job at a time)
 *   worker -> pool: ready (after init), started (the job began; the deadline timers start here and
 *                   the test list lets the pool report a killed run test by test), result, fatal
 *
 * `run` carries a fresh random nonce; `started` and `result` must echo it. A worker whose
 * messages do not match its current job is terminated and the job gets `tampering`.
 */
import type { Task } from '../tasks/types';
import type { RunLimits, RunResult, TestResult } from './result';

/** What a worker needs to run one program: the task's text and the completion. */
export type JobTask = Pick<Task, 'task_id' | 'language' | 'prompt' | 'entry_point' | 'tests'>;

export interface RunJob {
  task: JobTask;
  completion: string;
  limits: RunLimits;
}

export interface WorkerInit {
  /** where Pyodide's files are served from (browser); Node finds them in node_modules */
  pyodideIndexURL?: string;
  /**
   * 4 bytes shared with the pool (where SharedArrayBuffer exists): the pool stores 2 (SIGINT) in
   * it at a Python run's deadline, Pyodide raises KeyboardInterrupt, and the run ends as a timeout
   * without the worker being replaced; a run that swallows it is killed after the grace time.
   */
  interrupt?: SharedArrayBuffer;
}

export type ToWorker = { type: 'init'; init: WorkerInit } | { type: 'run'; id: number; nonce: string; job: RunJob };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'started'; id: number; nonce: string; tests: TestResult[] }
  | { type: 'result'; id: number; nonce: string; result: RunResult; /** replace this worker after this job */ recycle: boolean }
  | { type: 'fatal'; message: string };

/** Checks the shape of a message from a worker (a compromised worker may post anything). */
export function isFromWorker(m: unknown): m is FromWorker {
  if (typeof m !== 'object' || m === null) return false;
  const t = (m as { type?: unknown }).type;
  const o = m as Record<string, unknown>;
  switch (t) {
    case 'ready':
      return true;
    case 'started':
      return typeof o.id === 'number' && typeof o.nonce === 'string' && Array.isArray(o.tests);
    case 'result':
      return typeof o.id === 'number' && typeof o.nonce === 'string' && typeof o.result === 'object' && o.result !== null;
    case 'fatal':
      return typeof o.message === 'string';
    default:
      return false;
  }
}
