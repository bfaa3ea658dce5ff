/**
 * The Node worker (worker_threads) that runs plain programs (program.ts): the same protocol as
 * node.worker.ts (protocol.ts: init -> ready; run -> started, result), the same seal on module
 * loading once Pyodide is in, but its jobs are ProgramJobs: JavaScript in program-js.ts, Python
 * in program-python.ts, whose interpreter is not the test harness's. A job that is not a program
 * gets an error result. Bundled before it runs (program-pool.node.ts).
 */
import { parentPort } from 'node:worker_threads';
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { sealNodeRequire } from './node-seal';
import { isProgramJob } from './program';
import { runJsProgram } from './program-js';
import { PythonProgramRunner } from './program-python';
import type { FromWorker, RunJob, ToWorker, WorkerInit } from './protocol';
import type { LoadPyodide } from './python';
import { failedRun, type RunResult } from './result';
import { errorText } from '../util/errors';

const port = parentPort;
if (!port) throw new Error('program.worker.ts must run in a worker thread');
const post = (m: FromWorker): void => port.postMessage(m); // bound before any job runs
for (const k of ['log', 'info', 'warn', 'error', 'debug'] as const) console[k] = () => {};

const loadPyodide: LoadPyodide = async (config) => {
  const { loadPyodide: load } = await import('pyodide');
  const py = (await load(config)) as unknown as Awaited<ReturnType<LoadPyodide>>;
  sealNodeRequire(); // from here on no module loads in this worker
  return py;
};

let init: WorkerInit = {};
let quickjs: Promise<QuickJSWASMModule> | undefined;
let python: Promise<PythonProgramRunner> | undefined;
let chain: Promise<void> = Promise.resolve();

/** Runs a job once its engine is loaded; `started` is called just before (the pool's deadline starts there). */
async function runJob(job: RunJob, started: () => void): Promise<{ result: RunResult; recycle: boolean }> {
  if (!isProgramJob(job)) {
    started();
    return { result: failedRun(job.task.task_id, 'error', 'this worker runs plain programs only'), recycle: false };
  }
  if (job.task.language === 'python') {
    python ??= PythonProgramRunner.create(loadPyodide, init.interrupt);
    const runner = await python;
    started();
    return runner.run(job);
  }
  quickjs ??= newQuickJSWASMModule();
  const mod = await quickjs;
  started();
  try {
    return { result: runJsProgram(mod, job), recycle: false };
  } catch (e) {
    // the engine itself failed (e.g. the host stack ran out inside WebAssembly): replace the worker
    return { result: failedRun(job.task.task_id, 'error', `sandbox engine failure: ${errorText(e).slice(0, 300)}`), recycle: true };
  }
}

async function handle(id: number, nonce: string, job: RunJob): Promise<void> {
  try {
    const out = await runJob(job, () => post({ type: 'started', id, nonce, tests: [] }));
    post({ type: 'result', id, nonce, result: out.result, recycle: out.recycle });
  } catch (e) {
    post({ type: 'fatal', message: `program worker failed: ${String((e as Error).stack ?? e).slice(0, 1000)}` });
  }
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'init') {
    init = m.init;
    quickjs ??= newQuickJSWASMModule();
    quickjs.then(
      () => post({ type: 'ready' }),
      (e: unknown) => post({ type: 'fatal', message: `cannot load QuickJS: ${String(e)}` }),
    );
  } else if (m.type === 'run') {
    chain = chain.then(() => handle(m.id, m.nonce, m.job));
  }
});
