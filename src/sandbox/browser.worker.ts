/**
 * The sandbox worker's entry in the browser: a module Web Worker that Vite bundles from
 *   new Worker(new URL('./browser.worker.ts', import.meta.url), { type: 'module' })
 * (see pool.browser.ts). Pyodide's files are loaded from `init.pyodideIndexURL`.
 */
import type { ToWorker } from './protocol';
import type { LoadPyodide } from './python';
import { createWorker } from './worker-core';

interface WorkerScope {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (e: MessageEvent<ToWorker>) => void): void;
}
const scope = self as unknown as WorkerScope;
const post = scope.postMessage.bind(scope); // captured before any job runs

const loadPyodide =
  (init: { pyodideIndexURL?: string }): LoadPyodide =>
  async (config) => {
    const { loadPyodide: load } = await import('pyodide');
    const indexURL = init.pyodideIndexURL;
    return (await load(indexURL ? { ...config, indexURL } : config)) as unknown as Awaited<ReturnType<LoadPyodide>>;
  };

// the worker reports only through messages; Pyodide's own console chatter (e.g. a write refused
// at the output limit) is dropped
for (const k of ['log', 'info', 'warn', 'error', 'debug'] as const) console[k] = () => {};

const onMessage = createWorker({ post, loadPyodide });
scope.addEventListener('message', (e: MessageEvent<ToWorker>) => onMessage(e.data));
