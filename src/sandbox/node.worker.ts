/**
 * The sandbox worker's entry in Node (worker_threads). It is bundled by esbuild before it runs
 * (worker_threads cannot load TypeScript): see node-worker-bundle.ts.
 */
import { parentPort } from 'node:worker_threads';
import type { ToWorker } from './protocol';
import type { LoadPyodide } from './python';
import { sealNodeRequire } from './node-seal';
import { createWorker } from './worker-core';

const port = parentPort;
if (!port) throw new Error('node.worker.ts must run in a worker thread');
const post = port.postMessage.bind(port); // captured before any job runs

const loadPyodide = (): LoadPyodide => async (config) => {
  const { loadPyodide: load } = await import('pyodide');
  const py = (await load(config)) as unknown as Awaited<ReturnType<LoadPyodide>>;
  sealNodeRequire(); // from here on no module loads in this worker: no child_process, no ws
  return py;
};

// the worker reports only through messages; Pyodide's own console chatter (e.g. a write refused
// at the output limit) is dropped
for (const k of ['log', 'info', 'warn', 'error', 'debug'] as const) console[k] = () => {};

const onMessage = createWorker({ post, loadPyodide });
port.on('message', (m: ToWorker) => onMessage(m));
