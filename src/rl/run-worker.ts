/**
 * The run worker: one pipeline run (run-browser.ts, runInBrowser) in a dedicated module worker,
 * so the page's main thread only relays progress. Spawned by the run slice as
 *   new Worker(new URL('../rl/run-worker.ts', import.meta.url), { type: 'module' })
 * and spoken to in run-protocol.ts's messages. Everything the run needs is created here: the GPU
 * runtime (its own device; WebGPU works in dedicated workers), the sandbox pool (nested module
 * workers) and the analyzer. The page terminates the worker after its last message.
 *
 * Every failure ends in one `error` message: the pipeline's rejection, and any error or promise
 * rejection nothing handled (a dropped promise must not leave the page waiting forever).
 */
import { holdLifeLock } from './life-lock';
import type { FromRunWorker, RunStorageKind, ToRunWorker } from './run-protocol';

interface WorkerScope {
  close(): void;
  postMessage(message: FromRunWorker): void;
  addEventListener(type: 'message', listener: (e: MessageEvent<ToRunWorker>) => void): void;
  addEventListener(type: 'error', listener: (e: ErrorEvent) => void): void;
  addEventListener(type: 'unhandledrejection', listener: (e: PromiseRejectionEvent) => void): void;
}
const scope = self as unknown as WorkerScope;

let started = false;
let stopRequested = false;
let pauseRequested = false;
/** resolves the pipeline's wait while paused */
let release: (() => void) | null = null;

/** The pipeline's gate: returns at once unless a pause was asked for, else waits for resume or stop. */
function gate(): Promise<void> {
  if (!pauseRequested || stopRequested) return Promise.resolve();
  return new Promise((resolve) => {
    release = () => {
      release = null;
      post({ type: 'resumed' });
      resolve();
    };
    post({ type: 'paused' });
  });
}
/** set by the last message (done, stopped or error); nothing is posted after it */
let ended = false;

function post(m: FromRunWorker): void {
  if (ended) return;
  if (m.type === 'done' || m.type === 'stopped' || m.type === 'error') ended = true;
  scope.postMessage(m);
  // after the last message the worker ends itself (the message still arrives); the page's
  // terminate() is the backstop (eval-worker.ts: a terminated worker was seen to linger)
  if (ended) scope.close();
}

/** A programming error rather than a failure the code reports on purpose: where it was thrown helps. */
const isBug = (e: unknown): boolean =>
  e instanceof TypeError || e instanceof ReferenceError || e instanceof RangeError || e instanceof SyntaxError;

/** The error's message; with `where`, what raised it (the stack's first frame) when the stack has one. */
function describe(e: unknown, where = isBug(e)): string {
  const text = e instanceof Error ? e.message || e.name : String(e);
  const frame =
    where && e instanceof Error
      ? e.stack
          ?.split('\n')
          .find((l) => /^\s+at /.test(l))
          ?.trim()
      : undefined;
  return (text || 'unknown error') + (frame ? ` (${frame})` : '');
}

scope.addEventListener('error', (e) => {
  e.preventDefault(); // reported here, not again as the Worker's error event on the page
  const at = e.filename ? ` (at ${e.filename}:${e.lineno}:${e.colno})` : '';
  post({ type: 'error', message: `uncaught error in the run worker: ${e.error instanceof Error ? describe(e.error) : e.message}${at}` });
});
scope.addEventListener('unhandledrejection', (e) => {
  e.preventDefault();
  post({ type: 'error', message: `unhandled rejection in the run worker: ${describe(e.reason, true)}` });
});

/**
 * The page decided where runs live (OPFS, or IndexedDB where OPFS is missing there) and reads
 * them back from there; runStorage() decides once per context, so where the page chose IndexedDB
 * this hides OPFS from this worker before runStorage() first runs.
 */
function followPageStorage(kind: RunStorageKind): void {
  if (kind === 'indexeddb' && typeof navigator !== 'undefined' && navigator.storage) {
    Object.defineProperty(navigator.storage, 'getDirectory', { value: undefined, configurable: true });
  }
}

async function start(m: Extract<ToRunWorker, { type: 'start' }>): Promise<void> {
  followPageStorage(m.storage);
  await holdLifeLock(m.lifeLock);
  const { runInBrowser, StoppedError, injectFault } = await import('./run-browser');
  // fault drills (run-browser.ts injectFault), reachable from devtools and the e2e tests; 'crash'
  // ends this worker on the spot, as a crash would, without a last message
  (self as unknown as { coderlFault: (kind: string) => string }).coderlFault = (kind) => {
    if (kind === 'crash') {
      self.close();
      return 'closed the run worker';
    }
    return injectFault(kind as Parameters<typeof injectFault>[0]);
  };
  try {
    const summary = await runInBrowser({
      cfg: m.cfg,
      seed: m.seed,
      run: m.run,
      backend: m.backend,
      storage: m.storage,
      suiteText: m.suiteText,
      reference: m.reference,
      onBackend: (backend, note) => post({ type: 'backend', backend, note }),
      onEvent: (event) => post({ type: 'event', event }),
      onMetrics: (stage, metrics) => post({ type: 'metrics', stage, metrics }),
      shouldStop: () => stopRequested,
      gate,
    });
    post({ type: 'done', summary });
  } catch (e) {
    post(e instanceof StoppedError ? { type: 'stopped', message: e.message } : { type: 'error', message: describe(e) });
  }
}

scope.addEventListener('message', (e) => {
  const m = e.data;
  if (m.type === 'stop') {
    stopRequested = true;
    release?.();
  } else if (m.type === 'pause') {
    pauseRequested = true;
  } else if (m.type === 'resume') {
    pauseRequested = false;
    release?.();
  } else if (m.type === 'start') {
    if (started) return post({ type: 'error', message: 'the run worker runs one run; this one has started already' });
    started = true;
    start(m).catch((err: unknown) => post({ type: 'error', message: `the run worker failed to start: ${describe(err, true)}` }));
  }
});
