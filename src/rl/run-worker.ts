/**
 * The run worker: one pipeline run (run-browser.ts, runInBrowser) in a dedicated module worker,
 * so the page's main thread only relays progress. Spawned by the run slice as
 *   new Worker(new URL('../rl/run-worker.ts', import.meta.url), { type: 'module' })
 * and spoken to in run-protocol.ts's messages; hosted by worker-host.ts (the life lock, the last
 * message and the worker closing itself after it, every failure as one `error`). Everything the
 * run needs is created here: the GPU runtime (its own device; WebGPU works in dedicated workers),
 * the sandbox pool (nested module workers) and the analyzer.
 */
import { RUN_WORKER } from './run-protocol';
import { hostWorker } from './worker-host';
import { followPageStorage } from './worker-storage';

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

const { post } = hostWorker(RUN_WORKER, {
  async load(m) {
    followPageStorage(m.storage);
    const pipeline = await import('./run-browser');
    // fault drills (run-browser.ts injectFault), reachable from devtools and the e2e tests; 'crash'
    // ends this worker on the spot, as a crash would, without a last message
    (self as unknown as { coderlFault: (kind: string) => string }).coderlFault = (kind) => {
      if (kind === 'crash') {
        self.close();
        return 'closed the run worker';
      }
      return pipeline.injectFault(kind as Parameters<typeof pipeline.injectFault>[0]);
    };
    return pipeline;
  },
  async run(m, { runInBrowser, StoppedError }) {
    try {
      const summary = await runInBrowser({
        cfg: m.cfg,
        seed: m.seed,
        run: m.run,
        backend: m.backend,
        storage: m.storage,
        suiteText: m.suiteText,
        reference: m.reference,
        hfReference: m.hfReference,
        hfPolicy: m.hfPolicy,
        onBackend: (backend, note) => post({ type: 'backend', backend, note }),
        onEvent: (event) => post({ type: 'event', event }),
        onMetrics: (stage, metrics) => post({ type: 'metrics', stage, metrics }),
        shouldStop: () => stopRequested,
        gate,
      });
      return { type: 'done', summary };
    } catch (e) {
      if (e instanceof StoppedError) return { type: 'stopped', message: e.message };
      throw e;
    }
  },
  onMessage(m) {
    if (m.type === 'stop') {
      stopRequested = true;
      release?.();
    } else if (m.type === 'pause') {
      pauseRequested = true;
    } else {
      pauseRequested = false;
      release?.();
    }
  },
});
