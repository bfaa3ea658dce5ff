/** The sandbox pool in the browser: module Web Workers running browser.worker.ts (bundled by Vite). */
import { SandboxPool, type PoolOptions, type SpawnWorker } from './pool';

/** Cores minus one, at least 1. */
export function defaultPoolSize(): number {
  return Math.max(1, (globalThis.navigator?.hardwareConcurrency ?? 2) - 1);
}

/**
 * Every core: for a run or evaluation worker, which samples and then waits while the pool runs
 * the samples' tests, as `coderl train` does (pool.node.ts phasedPoolSize), so the app scores at
 * the CLI's speed.
 */
export function phasedPoolSize(): number {
  return Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 2);
}

export const browserSpawner: SpawnWorker = (events) => {
  const w = new Worker(new URL('./browser.worker.ts', import.meta.url), { type: 'module' });
  w.addEventListener('message', (e: MessageEvent) => events.message(e.data));
  w.addEventListener('error', (e: ErrorEvent) => events.exit(e.message || 'worker error'));
  w.addEventListener('messageerror', () => events.exit('a message from the worker could not be read'));
  return { post: (m) => w.postMessage(m), terminate: () => w.terminate() };
};

/** Where the app serves Pyodide's runtime files (vite.config.ts, pyodideRuntime): `<base>pyodide/`. */
export function pyodideIndexURL(): string {
  return new URL(`${import.meta.env.BASE_URL.replace(/\/?$/, '/')}pyodide/`, location.href).href;
}

export function createBrowserPool(opts: Partial<Omit<PoolOptions, 'spawn'>> = {}): SandboxPool {
  return new SandboxPool({
    ...opts,
    init: { pyodideIndexURL: pyodideIndexURL(), ...opts.init },
    size: opts.size ?? defaultPoolSize(),
    spawn: browserSpawner,
  });
}
