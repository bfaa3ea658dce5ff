/**
 * The page side of a run or eval worker (rl/run-worker.ts, rl/eval-worker.ts, hosted by
 * rl/worker-host.ts), for the run and eval slices: which backend to ask the worker for, and
 * startWorker, which spawns one, hands it its start message and life lock, relays its progress,
 * and resolves with how it ended.
 *
 * A worker that sent its last message is closing itself and is terminated only as a backstop
 * (rl/life-lock.ts endWorker, after SELF_CLOSE_MS); any other end (the page's terminate(), an error
 * event, an unreadable message, a worker gone without a word) terminates it at once.
 */
import { endWorker, newLifeLock } from '../rl/life-lock';
import type { RunBackend } from '../rl/run-protocol';
import type { LastOf, Message, StartOf, WorkerError, WorkerKind } from '../rl/worker-protocol';
import { currentRuntime } from './gpuSlice';
import type { LabState } from './index';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for the GPU slice to settle (the app starts it on load); gives up after `ms`. */
async function settledGpu(get: () => LabState, ms = 60_000): Promise<void> {
  for (const t0 = performance.now(); performance.now() - t0 < ms; await sleep(100)) {
    if (!['idle', 'starting', 'checking'].includes(get().gpu.status)) return;
  }
}

/**
 * Which backend a run or evaluation asks for: `auto` (the default) is webgpu on a hardware GPU
 * and cpu on a software adapter (SwiftShader, or one flagged isFallbackAdapter), where every
 * kernel is emulated and the float64 cpu model in the worker is many times faster (README,
 * "Backends"); `webgpu` and `cpu` are the user's explicit choice.
 */
export type BackendChoice = 'auto' | 'webgpu' | 'cpu';

const softwareName = (a: { vendor: string; architecture: string; description: string }): string =>
  `${a.vendor} ${a.architecture}`.trim() || a.description || 'This adapter';

/** What `auto` picks for the page's GPU state, and why when it is not webgpu (pure: the Experiment panel shows it before Start). */
export function autoBackend(gpu: LabState['gpu'], job: 'run' | 'evaluation' | 'sampling'): { backend: RunBackend; note: string | null } {
  if (gpu.status === 'ready' && gpu.info?.adapter.software)
    return {
      backend: 'cpu',
      note: `${softwareName(gpu.info.adapter)} is a software GPU: the ${job} uses the cpu backend, many times faster here.`,
    };
  if (gpu.status === 'ready') return { backend: 'webgpu', note: null };
  return {
    backend: 'cpu',
    note: `WebGPU is not usable here: ${gpu.problem ?? `the GPU status is "${gpu.status}".`} The ${job} uses the cpu backend (the float64 reference model) instead.`,
  };
}

/**
 * The backend `choice` gives for the page's GPU state (pure: the Experiment panel shows it before
 * Start): autoBackend for `auto`; webgpu only where the device is ready (`deviceReady`: the
 * page's runtime exists), else cpu with autoBackend's note why.
 */
export function chosenBackend(
  choice: BackendChoice,
  gpu: LabState['gpu'],
  job: 'run' | 'evaluation' | 'sampling',
  deviceReady = gpu.status === 'ready',
): { backend: RunBackend; note: string | null } {
  if (choice === 'cpu') return { backend: 'cpu', note: null };
  // a device that is not (or no longer) ready: cpu, with autoBackend's note why
  if (!deviceReady || gpu.status !== 'ready') return autoBackend(gpu.status === 'ready' ? { ...gpu, status: 'lost' } : gpu, job);
  return choice === 'webgpu' ? { backend: 'webgpu', note: null } : autoBackend(gpu, job);
}

/**
 * The backend a worker is asked for, once the page's GPU has settled (chosenBackend; the worker
 * falls back to cpu itself, and says so, when its own device fails). `job`: what the note names.
 */
export async function askedBackend(
  get: () => LabState,
  job: 'run' | 'evaluation' | 'sampling',
  choice: BackendChoice = 'auto',
): Promise<{ backend: RunBackend; note: string | null }> {
  if (choice !== 'cpu') await settledGpu(get);
  return chosenBackend(choice, get().gpu, job, currentRuntime() !== null);
}

/** How the page ended a worker itself (WorkerHandle.terminate). */
export interface Terminated {
  type: 'terminated';
}

export interface StartOptions<In extends Message, Out extends Message, L extends Out['type']> {
  /** the start message; its life lock is added here */
  start: Omit<StartOf<In>, 'lifeLock'>;
  /** what of `start` moves to the worker rather than being copied */
  transfer?: Transferable[];
  /**
   * The error when the worker ends without its last message (it crashed, or the browser ended it),
   * noticed through its life lock once it has spoken; unset: not watched.
   */
  lost?: string;
  /** every message but the last */
  onMessage(m: Exclude<Out, LastOf<Out, L>>): void;
}

export interface WorkerHandle<In, Last = unknown> {
  /** the worker's last message, or the page's: an `error` for a failed or lost worker, `terminated` */
  done: Promise<Last | WorkerError | Terminated>;
  /** posts to the worker; nothing once it has ended */
  post(m: In): void;
  /** ends it at once (Stop), terminating the worker; `done` resolves with `terminated` */
  terminate(): void;
}

/** Spawns a worker of `kind` (`spawn`: `new Worker(new URL(…), …)`, which Vite must see as written) and starts its job. */
export function startWorker<In extends Message & { lifeLock?: string }, Out extends Message, L extends Out['type']>(
  spawn: () => Worker,
  kind: WorkerKind<In, Out, L>,
  options: StartOptions<In, Out, L>,
): WorkerHandle<In, LastOf<Out, L>> {
  type End = LastOf<Out, L> | WorkerError | Terminated;
  const last = new Set<string>([...kind.last, 'error']); // an error always is the last
  const w = spawn();
  const lifeLock = newLifeLock(kind.lock);
  let over = false;
  let watching = false;
  let resolve!: (m: End) => void;
  const done = new Promise<End>((r) => (resolve = r));
  /** `closing`: the worker sent this as its last message and is closing itself */
  const end = (m: End, closing = false): void => {
    if (over) return;
    over = true;
    endWorker(w, closing);
    resolve(m);
  };
  /** Once the worker holds its life lock (it has spoken), getting the lock means it is gone. */
  const watch = (lost: string): void => {
    if (watching || !lifeLock) return;
    watching = true;
    void navigator.locks.request(lifeLock, () => end({ type: 'error', message: lost }));
  };
  w.addEventListener('message', (e: MessageEvent<Out>) => {
    const m = e.data;
    if (over) return;
    if (options.lost) watch(options.lost);
    if (last.has(m.type)) end(m as LastOf<Out, L>, true);
    else options.onMessage(m as Exclude<Out, LastOf<Out, L>>);
  });
  w.addEventListener('error', (e: ErrorEvent) => {
    e.preventDefault();
    end({ type: 'error', message: `the ${kind.name} failed: ${e.message || 'its script could not be loaded'}` });
  });
  w.addEventListener('messageerror', () => end({ type: 'error', message: `a message from the ${kind.name} could not be read` }));
  w.postMessage({ ...options.start, lifeLock }, options.transfer ?? []);
  return {
    done,
    post: (m) => {
      if (!over) w.postMessage(m);
    },
    terminate: () => end({ type: 'terminated' }),
  };
}
