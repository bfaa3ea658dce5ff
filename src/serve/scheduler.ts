/**
 * The bounded queue in front of a sandbox pool. A request's programs are admitted together or
 * not at all: when they would take the waiting programs past `limit`, `enqueue` throws
 * QueueFull (the server answers 429 with Retry-After) instead of letting the queue grow. At most
 * `pool.size` programs are handed to the pool at a time, so the programs still waiting are ours:
 * the queue depth is exact, and a request that times out or goes away drops its waiting
 * programs (those already running finish; their results are dropped).
 */
import type { RunJob } from '../sandbox/protocol';
import type { RunResult } from '../sandbox/result';

/** What the scheduler needs of SandboxPool. */
export interface PoolLike {
  readonly size: number;
  /** SandboxPool's counts: `replaced`, the workers replaced since start */
  readonly stats?: { readonly replaced: number };
  run(job: RunJob): Promise<RunResult>;
}

export class QueueFull extends Error {
  override readonly name = 'QueueFull';
  constructor(
    readonly retryAfterS: number,
    readonly waiting: number,
    readonly limit: number,
  ) {
    super(`the queue is full (${waiting} programs waiting, limit ${limit}); retry after ${retryAfterS} s`);
  }
}

export class Cancelled extends Error {
  override readonly name = 'Cancelled';
}

interface Waiting {
  job: RunJob;
  resolve(r: RunResult): void;
  reject(e: Error): void;
  signal: AbortSignal | undefined;
}

export class Scheduler {
  private readonly waitingList: Waiting[] = [];
  private runningCount = 0;
  /** moving average of one program's time on a worker, ms (for Retry-After) */
  private meanMs = 200;
  /** called with each finished program's result */
  onResult: ((r: RunResult) => void) | undefined;

  constructor(
    private readonly pool: PoolLike,
    readonly limit: number,
  ) {}

  get waiting(): number {
    return this.waitingList.length;
  }

  get running(): number {
    return this.runningCount;
  }

  get workers(): number {
    return this.pool.size;
  }

  /** Workers the pool replaced since start (crashed, killed past the hard timeout, or recycled). */
  get replaced(): number {
    return this.pool.stats?.replaced ?? 0;
  }

  /** Seconds until the queue has room for `k` more, estimated from the mean program time (1 to 60). */
  retryAfter(k: number): number {
    const ms = ((this.waiting + k - this.limit) * this.meanMs) / this.pool.size;
    return Math.min(60, Math.max(1, Math.ceil(ms / 1000)));
  }

  /** Admits all of `jobs` or throws QueueFull; one promise per job, rejected with Cancelled if `signal` aborts first. */
  enqueue(jobs: readonly RunJob[], signal?: AbortSignal): Promise<RunResult>[] {
    if (this.waiting + jobs.length > this.limit) throw new QueueFull(this.retryAfter(jobs.length), this.waiting, this.limit);
    const out = jobs.map((job) => new Promise<RunResult>((resolve, reject) => this.waitingList.push({ job, resolve, reject, signal })));
    signal?.addEventListener('abort', () => this.drop(signal), { once: true });
    this.pump();
    return out;
  }

  private drop(signal: AbortSignal): void {
    for (let i = this.waitingList.length - 1; i >= 0; i--) {
      const w = this.waitingList[i]!;
      if (w.signal !== signal) continue;
      this.waitingList.splice(i, 1);
      w.reject(new Cancelled('the request ended before this program ran'));
    }
  }

  private pump(): void {
    while (this.runningCount < this.pool.size && this.waitingList.length) {
      const w = this.waitingList.shift()!;
      this.runningCount++;
      const t0 = performance.now();
      this.pool.run(w.job).then(
        (r) => this.finish(t0, () => w.resolve(r), r),
        (e: unknown) => this.finish(t0, () => w.reject(e instanceof Error ? e : new Error(String(e)))),
      );
    }
  }

  private finish(t0: number, settle: () => void, r?: RunResult): void {
    this.runningCount--;
    this.meanMs = 0.9 * this.meanMs + 0.1 * (performance.now() - t0);
    if (r) this.onResult?.(r);
    settle();
    this.pump();
  }
}
