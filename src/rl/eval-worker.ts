/**
 * The eval worker: `coderl eval` in the browser (eval-suite.ts's evalSuite) in a dedicated module
 * worker, so the page's main thread only relays progress. Spawned by the eval slice as
 *   new Worker(new URL('../rl/eval-worker.ts', import.meta.url), { type: 'module' })
 * and spoken to in eval-protocol.ts's messages. Like the run worker (run-worker.ts) it creates
 * everything it needs: a GPU runtime of its own (the cpu backend, with a note why, when WebGPU is
 * not usable here), the sandbox pool (nested module workers) and the analyzer. An ONNX model
 * imported in the Checkpoints panel is loaded in onnxruntime-web (wasm provider) instead.
 *
 * Every failure ends in one `error` message: the evaluation's rejection, and any error or promise
 * rejection nothing handled (a dropped promise must not leave the page waiting forever).
 */
import { createAnalyzer } from '../analysis';
import { browserWasmLoader } from '../analysis/wasm-browser';
import { browserProvider } from '../gpu/provider';
import { GpuRuntime } from '../gpu/runtime';
import { createBackend, type PolicyBackend } from '../model/backend';
import { loadModel } from '../model/model-file';
import { DEFAULT_OPTIM } from '../model/optim';
import { browserOrt } from '../onnx/browser';
import { importOnnxModel } from '../onnx/import';
import { createBrowserPool, defaultPoolSize } from '../sandbox/pool.browser';
import { Tokenizer } from '../tokenizer';
import type { FromEvalWorker, ToEvalWorker } from './eval-protocol';
import { evalSuite } from './eval-suite';
import { holdLifeLock } from './life-lock';
import type { RunBackend } from './run-protocol';
import { errorText } from '../util/errors';

interface WorkerScope {
  postMessage(message: FromEvalWorker): void;
  close(): void;
  addEventListener(type: 'message', listener: (e: MessageEvent<ToEvalWorker>) => void): void;
  addEventListener(type: 'error', listener: (e: ErrorEvent) => void): void;
  addEventListener(type: 'unhandledrejection', listener: (e: PromiseRejectionEvent) => void): void;
}
const scope = self as unknown as WorkerScope;

let started = false;
/** set by the last message (done or error); nothing is posted after it */
let ended = false;

function post(m: FromEvalWorker): void {
  if (ended) return;
  if (m.type === 'done' || m.type === 'error') ended = true;
  scope.postMessage(m);
  // after the last message the worker ends itself (the message still arrives): a clean close, where
  // the page's terminate() is only the backstop (a terminated worker was seen to linger in the
  // page's worker list)
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

const sentence = (m: string): string => (/[.!?]$/.test(m.trim()) ? m.trim() : `${m.trim()}.`);

scope.addEventListener('error', (e) => {
  e.preventDefault(); // reported here, not again as the Worker's error event on the page
  const at = e.filename ? ` (at ${e.filename}:${e.lineno}:${e.colno})` : '';
  post({ type: 'error', message: `uncaught error in the eval worker: ${e.error instanceof Error ? describe(e.error) : e.message}${at}` });
});
scope.addEventListener('unhandledrejection', (e) => {
  e.preventDefault();
  post({ type: 'error', message: `unhandled rejection in the eval worker: ${describe(e.reason, true)}` });
});

async function start(m: ToEvalWorker): Promise<void> {
  await holdLifeLock(m.lifeLock);
  const t0 = performance.now();
  const src = m.checkpoint;
  let runtime: GpuRuntime | null = null;
  let policy: PolicyBackend;
  let tok: Tokenizer;
  let backend: RunBackend;
  if (src instanceof Uint8Array) {
    const snap = loadModel(src);
    if (!snap.tokenizer) throw new Error('the checkpoint carries no tokenizer; it cannot be sampled from text prompts');
    tok = Tokenizer.fromJSON(snap.tokenizer);
    let note: string | null = null;
    if (m.backend === 'webgpu') {
      try {
        runtime = await GpuRuntime.create(browserProvider(), { onUncapturedError: (e) => console.warn(`WebGPU: ${e.message}`) });
      } catch (e) {
        note = `WebGPU is not usable in the eval worker: ${sentence(errorText(e))} The evaluation uses the cpu backend (the float64 reference model) instead.`;
      }
    }
    backend = runtime ? 'webgpu' : 'cpu';
    post({ type: 'backend', backend, note });
    policy = createBackend(backend, { config: snap.config, params: snap.params, optim: DEFAULT_OPTIM, runtime: runtime ?? undefined });
  } else {
    // an imported ONNX model: onnxruntime-web's wasm provider (the CPU), the safe choice in a worker
    const imported = await importOnnxModel(await browserOrt('wasm'), src.bytes, src.tokenizerText, {
      file: src.file,
      contextLength: src.contextLength,
    });
    policy = imported.policy;
    tok = imported.tokenizer;
    backend = 'cpu';
    post({ type: 'backend', backend, note: `${src.file} runs in onnxruntime-web's wasm provider (on the CPU) in the eval worker.` });
  }

  const pool = createBrowserPool({ size: defaultPoolSize() });
  let done: FromEvalWorker;
  try {
    const analyzer = await createAnalyzer(browserWasmLoader);
    const r = await evalSuite(
      policy,
      tok,
      m.tasks,
      m.settings,
      { pool, analyzer },
      { onProgress: (progress) => post({ type: 'progress', progress }) },
    );
    done = {
      type: 'done',
      report: {
        passAtK: r.passAtK,
        byFamily: r.byFamily,
        tasks: r.tasks,
        samples: r.samples,
        maxNewTokens: r.plan.maxNewTokens,
        contextLength: policy.config.contextLength,
        rows: r.rows,
        backend,
        seconds: (performance.now() - t0) / 1000,
      },
    };
  } catch (e) {
    if (!runtime) throw e;
    // a readback can reject before the device's loss is reported: give the report a moment
    if (runtime.state === 'ready') await new Promise((r) => setTimeout(r, 50));
    const lost = runtime.lostReport;
    if (!lost) throw e;
    throw new Error(`the GPU device was lost during the evaluation (${lost.reason}: ${lost.message}): ${errorText(e)}. Start it again.`, {
      cause: e,
    });
  } finally {
    policy.dispose();
    pool.close();
    await runtime?.release();
  }
  // the result goes out only once the sandbox workers and the GPU device are released (the device
  // reported gone, not only asked to go); posting it closes this worker (post)
  post(done);
}

scope.addEventListener('message', (e) => {
  const m = e.data;
  if (m.type !== 'start') return;
  if (started) return post({ type: 'error', message: 'the eval worker runs one evaluation; this one has started already' });
  started = true;
  start(m).catch((err: unknown) => post({ type: 'error', message: describe(err) }));
});
