/**
 * What a sandbox worker does, shared by the Node (worker_threads) and browser (Web Worker)
 * entries: answer `init` with `ready`, and run jobs one at a time, JavaScript in QuickJS and
 * Python in Pyodide (loaded on the first Python job). The platform entry passes the function
 * that posts to the pool, captured before any job runs, and the platform's Pyodide loader.
 */
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import type { FromWorker, RunJob, ToWorker, WorkerInit } from './protocol';
import { PythonRunner, type LoadPyodide } from './python';
import { runJavaScript } from './quickjs';
import { failedRun, type RunResult, type TestResult } from './result';
import { errorText } from '../util/errors';

export interface WorkerPlatform {
  post(message: FromWorker): void;
  loadPyodide(init: WorkerInit): LoadPyodide;
}

export function createWorker(platform: WorkerPlatform): (message: ToWorker) => void {
  const post = platform.post;
  let init: WorkerInit = {};
  let quickjs: Promise<QuickJSWASMModule> | undefined;
  let python: Promise<PythonRunner> | undefined;
  let chain: Promise<void> = Promise.resolve();

  const runJs = async (job: RunJob, started: (t: TestResult[]) => void): Promise<{ result: RunResult; recycle: boolean }> => {
    quickjs ??= newQuickJSWASMModule();
    const mod = await quickjs;
    try {
      return { result: runJavaScript(mod, job, started), recycle: false };
    } catch (e) {
      // the engine itself failed (e.g. the host stack ran out inside WebAssembly): its state is
      // suspect, so this worker is replaced
      return {
        result: failedRun(job.task.task_id, 'error', `sandbox engine failure: ${String(errorText(e) ?? e).slice(0, 300)}`),
        recycle: true,
      };
    }
  };

  const runPy = async (job: RunJob, started: (t: TestResult[]) => void): Promise<{ result: RunResult; recycle: boolean }> => {
    python ??= PythonRunner.create(platform.loadPyodide(init), init.interrupt);
    const runner = await python;
    const out = runner.run(job, started);
    return { ...out, recycle: out.recycle || runner.dead };
  };

  const handle = async (id: number, nonce: string, job: RunJob): Promise<void> => {
    const started = (tests: TestResult[]): void => post({ type: 'started', id, nonce, tests });
    let out: { result: RunResult; recycle: boolean };
    try {
      out = job.task.language === 'python' ? await runPy(job, started) : await runJs(job, started);
    } catch (e) {
      post({ type: 'fatal', message: `sandbox worker failed: ${String((e as Error).stack ?? e).slice(0, 1000)}` });
      return;
    }
    post({ type: 'result', id, nonce, result: out.result, recycle: out.recycle });
  };

  return (message: ToWorker): void => {
    if (message.type === 'init') {
      init = message.init;
      quickjs ??= newQuickJSWASMModule();
      quickjs.then(
        () => post({ type: 'ready' }),
        (e: unknown) => post({ type: 'fatal', message: `cannot load QuickJS: ${String(e)}` }),
      );
    } else if (message.type === 'run') {
      chain = chain.then(() => handle(message.id, message.nonce, message.job));
    }
  };
}
