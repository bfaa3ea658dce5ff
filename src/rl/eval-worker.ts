/**
 * The eval worker: `coderl eval` in the browser (eval-suite.ts's evalSuite) in a dedicated module
 * worker, so the page's main thread only relays progress. Spawned by the eval slice as
 *   new Worker(new URL('../rl/eval-worker.ts', import.meta.url), { type: 'module' })
 * and spoken to in eval-protocol.ts's messages; hosted by worker-host.ts (the life lock, the last
 * message and the worker closing itself after it, every failure as one `error`). Like the run
 * worker (run-worker.ts) it creates everything it needs: a GPU runtime of its own (the cpu
 * backend, with a note why, when WebGPU is not usable here), the sandbox pool (nested module
 * workers) and the analyzer. An ONNX model imported in the Checkpoints panel is loaded in
 * onnxruntime-web (wasm provider) instead; a Hugging Face model of the Models panel is read from
 * this browser's model store (hf/browser.ts) and runs on our engine, its prompts in the settings'
 * format (chat through its template, or plain completion).
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
import { createBrowserPool, phasedPoolSize } from '../sandbox/pool.browser';
import { Tokenizer } from '../tokenizer';
import type { TextTokenizer } from '../tokenizer/types';
import { loadHfFolder } from '../hf/load';
import { HfPolicy } from '../policy/hf';
import type { ChatSource } from './prompt-format';
import { followPageStorage } from './worker-storage';
import { EVAL_WORKER, type FromEvalWorker, type ToEvalWorker } from './eval-protocol';
import { evalSuite } from './eval-suite';
import type { RunBackend } from './run-protocol';
import { hostWorker } from './worker-host';
import { errorText } from '../util/errors';

const sentence = (m: string): string => (/[.!?]$/.test(m.trim()) ? m.trim() : `${m.trim()}.`);

const { post } = hostWorker(EVAL_WORKER, { run: evaluate });

/** The evaluation `m` asks for; resolves with its `done` once the sandbox workers and the GPU device are released. */
async function evaluate(m: ToEvalWorker): Promise<Extract<FromEvalWorker, { type: 'done' }>> {
  const t0 = performance.now();
  const src = m.checkpoint;
  let runtime: GpuRuntime | null = null;
  let policy: PolicyBackend;
  let tok: TextTokenizer & ChatSource;
  let backend: RunBackend;
  /** a GPU runtime for our engine when asked for, or the note why the cpu backend is used */
  const engine = async (): Promise<{ backend: RunBackend; runtime: GpuRuntime | null }> => {
    let note: string | null = null;
    let rt: GpuRuntime | null = null;
    if (m.backend === 'webgpu') {
      try {
        rt = await GpuRuntime.create(browserProvider(), { onUncapturedError: (e) => console.warn(`WebGPU: ${e.message}`) });
      } catch (e) {
        note = `WebGPU is not usable in the eval worker: ${sentence(errorText(e))} The evaluation uses the cpu backend (the float64 reference model) instead.`;
      }
    }
    post({ type: 'backend', backend: rt ? 'webgpu' : 'cpu', note });
    return { backend: rt ? 'webgpu' : 'cpu', runtime: rt };
  };
  if (src instanceof Uint8Array) {
    const snap = loadModel(src);
    if (!snap.tokenizer) throw new Error('the checkpoint carries no tokenizer; it cannot be sampled from text prompts');
    tok = Tokenizer.fromJSON(snap.tokenizer);
    ({ backend, runtime } = await engine());
    policy = createBackend(backend, { config: snap.config, params: snap.params, optim: DEFAULT_OPTIM, runtime: runtime ?? undefined });
  } else if (src.kind === 'hf') {
    // a Hugging Face model of the Models panel, read from this browser's model store, on our engine
    followPageStorage(src.storage);
    const { hfModelStore } = await import('../hf/browser');
    const model = await loadHfFolder(await (await hfModelStore()).open(src.id));
    tok = model.tokenizer;
    ({ backend, runtime } = await engine());
    policy = new HfPolicy(model, { backend, runtime: runtime ?? undefined });
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

  const pool = createBrowserPool({ size: phasedPoolSize() });
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
    // the result goes out (worker-host.ts) only once the sandbox workers and the GPU device are
    // released (finally: the device reported gone, not only asked to go)
    return {
      type: 'done',
      report: {
        passAtK: r.passAtK,
        byFamily: r.byFamily,
        tasks: r.tasks,
        samples: r.samples,
        maxNewTokens: r.plan.maxNewTokens,
        contextLength: policy.config.contextLength,
        rows: r.rows,
        format: r.format,
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
}
