/**
 * The worker pool, shared by Node and the browser: N sandbox workers, a bounded queue with
 * backpressure (`submit` waits while the queue is full), one job per worker at a time, and a
 * worker replaced whenever it crashes, overruns its hard timeout, asks to be recycled or sends a
 * message that does not belong to its job. The platform only supplies `spawn` (pool.node.ts,
 * pool.browser.ts). A job always resolves with a RunResult: crashes and kills become verdicts.
 *
 * Timers: after `run` is posted the worker has `startupMs` to say `started` (loading Pyodide
 * counts here); from `started` it has limits.timeoutMs + limits.graceMs to deliver the result.
 */
import type { FromWorker, RunJob, ToWorker, WorkerInit } from './protocol';
import { isFromWorker } from './protocol';
import { failedRun, type RunResult, type TestResult } from './result';

export interface WorkerHandle {
  post(message: ToWorker): void;
  terminate(): void;
}

export interface WorkerEvents {
  message(data: unknown): void;
  /** the worker died or errored; it will not be used again */
  exit(reason: string): void;
}

export type SpawnWorker = (events: WorkerEvents) => WorkerHandle;

export interface PoolOptions {
  spawn: SpawnWorker;
  /** number of workers */
  size: number;
  /** most jobs waiting for a worker before submit() waits; default 2 * size */
  queueLimit?: number;
  init?: WorkerInit;
  /** time from posting a job to the worker's `started`, ms (Pyodide loads in it); default 120 s */
  startupMs?: number;
}

export interface PoolStats {
  spawned: number;
  replaced: number;
  completed: number;
}

interface Entry {
  job: RunJob;
  resolve(r: RunResult): void;
  /** called with the worker's serial number when the job is handed to it */
  assigned(worker: number): void;
}

interface Slot {
  /** 1 for the first worker spawned, 2 for the next, ... (a replacement gets a new number) */
  serial: number;
  handle: WorkerHandle;
  ready: boolean;
  /** the worker's interrupt word (see WorkerInit.interrupt), where SharedArrayBuffer exists */
  interrupt?: Int32Array;
  active?: {
    id: number;
    nonce: string;
    entry: Entry;
    tests: TestResult[];
    timer: ReturnType<typeof setTimeout>;
    soft?: ReturnType<typeof setTimeout>;
  };
  dead: boolean;
}

function newNonce(): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export class SandboxPool {
  readonly size: number;
  readonly stats: PoolStats = { spawned: 0, replaced: 0, completed: 0 };
  private readonly queue: Entry[] = [];
  private readonly spaceWaiters: (() => void)[] = [];
  private readonly slots = new Set<Slot>();
  private readonly queueLimit: number;
  private readonly startupMs: number;
  private nextId = 1;
  private closed = false;
  /** set when workers keep failing to start: every job then fails with this message */
  private broken: string | undefined;
  private failedStarts = 0;

  constructor(private readonly opts: PoolOptions) {
    this.size = Math.max(1, Math.floor(opts.size));
    this.queueLimit = Math.max(1, opts.queueLimit ?? 2 * this.size);
    this.startupMs = opts.startupMs ?? 120_000;
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /**
   * Queues a job, waiting while the queue is full; the returned `result` settles when it ran, and
   * `worker` with the serial number of the worker that runs it (0 when no worker ever does).
   */
  async submit(job: RunJob): Promise<{ result: Promise<RunResult>; worker: Promise<number> }> {
    while (this.queue.length >= this.queueLimit && !this.closed) await new Promise<void>((r) => this.spaceWaiters.push(r));
    if (this.closed) throw new Error('the sandbox pool is closed');
    if (this.broken) return { result: Promise.resolve(failedRun(job.task.task_id, 'error', this.broken)), worker: Promise.resolve(0) };
    let assigned!: (n: number) => void;
    const worker = new Promise<number>((r) => (assigned = r));
    const result = new Promise<RunResult>((resolve) =>
      this.queue.push({
        job,
        resolve: (r) => {
          assigned(0); // a no-op once assigned
          resolve(r);
        },
        assigned,
      }),
    );
    this.pump();
    return { result, worker };
  }

  /** submit() and wait for the result. */
  async run(job: RunJob): Promise<RunResult> {
    return (await this.submit(job)).result;
  }

  /** Terminates every worker; queued jobs resolve with an error verdict. */
  close(): void {
    this.closed = true;
    for (const e of this.queue.splice(0)) e.resolve(failedRun(e.job.task.task_id, 'error', 'the sandbox pool was closed'));
    for (const w of this.spaceWaiters.splice(0)) w();
    for (const s of this.slots) this.kill(s, 'the sandbox pool was closed', 'error', false);
  }

  private spawn(): void {
    if (this.closed) return;
    const slot: Slot = { serial: this.stats.spawned + 1, handle: undefined as unknown as WorkerHandle, ready: false, dead: false };
    slot.handle = this.opts.spawn({
      message: (data) => this.onMessage(slot, data),
      exit: (reason) => this.onExit(slot, reason),
    });
    this.slots.add(slot);
    this.stats.spawned++;
    const init: WorkerInit = { ...this.opts.init };
    if (typeof SharedArrayBuffer === 'function') {
      init.interrupt = new SharedArrayBuffer(4);
      slot.interrupt = new Int32Array(init.interrupt);
    }
    slot.handle.post({ type: 'init', init });
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.active || slot.dead) continue;
      const entry = this.queue.shift();
      if (!entry) return;
      this.spaceWaiters.shift()?.();
      const id = this.nextId++;
      const nonce = newNonce();
      const timer = setTimeout(
        () => this.kill(slot, `the worker did not start the job within ${this.startupMs} ms`, 'timeout'),
        this.startupMs,
      );
      slot.active = { id, nonce, entry, tests: [], timer };
      entry.assigned(slot.serial);
      slot.handle.post({ type: 'run', id, nonce, job: entry.job });
    }
  }

  private onMessage(slot: Slot, data: unknown): void {
    if (slot.dead) return;
    if (!isFromWorker(data)) return this.kill(slot, 'the worker sent a message outside the protocol', 'tampering');
    const m: FromWorker = data;
    if (m.type === 'ready') {
      slot.ready = true;
      this.failedStarts = 0;
      return this.pump();
    }
    if (m.type === 'fatal') return this.kill(slot, m.message, 'error');
    const a = slot.active;
    if (!a || m.id !== a.id || m.nonce !== a.nonce)
      return this.kill(slot, 'the worker sent a message that does not belong to its job', 'tampering');
    if (m.type === 'started') {
      clearTimeout(a.timer);
      a.tests = m.tests;
      const { timeoutMs, graceMs } = a.entry.job.limits;
      if (slot.interrupt) {
        const word = slot.interrupt;
        a.soft = setTimeout(() => Atomics.store(word, 0, 2), timeoutMs);
      }
      a.timer = setTimeout(() => this.kill(slot, `the run exceeded ${timeoutMs} ms (worker terminated)`, 'timeout'), timeoutMs + graceMs);
      return;
    }
    clearTimeout(a.timer);
    clearTimeout(a.soft);
    slot.active = undefined;
    this.stats.completed++;
    a.entry.resolve(this.checked(m.result, a.entry.job));
    if (m.recycle) this.replace(slot);
    else this.pump();
  }

  /** A result from a worker, with `passed` recomputed from its own fields. */
  private checked(r: RunResult, job: RunJob): RunResult {
    const ok = r.task_id === job.task.task_id && Array.isArray(r.tests);
    if (!ok) return failedRun(job.task.task_id, 'tampering', 'the worker returned a result for another task');
    return { ...r, passed: r.verdict === 'passed' && r.tests.every((t) => t.status === 'passed') };
  }

  private onExit(slot: Slot, reason: string): void {
    if (slot.dead) return;
    if (!slot.ready && !slot.active) this.failedStarts++;
    this.kill(slot, `the sandbox worker crashed: ${reason}`, 'error');
  }

  /** Terminates a worker, settles its job with `verdict`, and starts a replacement. */
  private kill(slot: Slot, message: string, verdict: 'timeout' | 'error' | 'tampering', replace = true): void {
    if (slot.dead) return;
    slot.dead = true;
    this.slots.delete(slot);
    const a = slot.active;
    if (a) {
      clearTimeout(a.timer);
      clearTimeout(a.soft);
      slot.active = undefined;
      this.stats.completed++;
      a.entry.resolve(failedRun(a.entry.job.task.task_id, verdict, message, a.tests));
    }
    try {
      slot.handle.terminate();
    } catch {
      /* already gone */
    }
    if (!replace || this.closed) return;
    if (this.failedStarts > 2 * this.size + 2) {
      // workers keep dying before they are ready: stop replacing them; fail everything once none is left
      if (this.slots.size > 0) return;
      this.broken = `sandbox workers fail to start: ${message}`;
      for (const e of this.queue.splice(0)) e.resolve(failedRun(e.job.task.task_id, 'error', this.broken));
      for (const w of this.spaceWaiters.splice(0)) w();
      return;
    }
    this.stats.replaced++;
    this.spawn();
  }

  private replace(slot: Slot): void {
    slot.dead = true;
    this.slots.delete(slot);
    slot.handle.terminate();
    this.stats.replaced++;
    this.spawn();
  }
}
