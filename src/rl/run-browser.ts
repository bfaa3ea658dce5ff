/**
 * `coderl train` in the browser: the same runPipeline, wired the way commands/train.ts wires it,
 * with the browser's pieces: the run directory in OPFS or IndexedDB (run-dir-browser.ts), the
 * sandbox pool on module Web Workers, the analyzer with the browser's wasm loader, and a GPU
 * runtime of its own (the cpu backend when WebGPU is not usable); an ONNX KL reference runs in
 * onnxruntime-web's wasm provider, kept in the run directory (reference.ts), a Hugging Face one
 * on the run's engine, copied there from the page's model store (reference-hf.ts). A run that trains
 * an imported Hugging Face model (config.pretrained) keeps its copy there too (pretrained/hf) and
 * trains it with LoRA or fully (reference-hf.ts hfPolicyRun) instead of the lab's GPT. The run worker
 * (run-worker.ts) calls runInBrowser, so all of this lives in that worker, off the page's main
 * thread; the page loads this module lazily only to read stored runs.
 */
import { createAnalyzer, type Analyzer } from '../analysis';
import { browserWasmLoader } from '../analysis/wasm-browser';
import { browserProvider } from '../gpu/provider';
import { GpuRuntime } from '../gpu/runtime';
import { labGptFactory, type OptimConfig, type Policy, type PolicyFactory } from '../policy';
import type { SandboxPool } from '../sandbox/pool';
import { createBrowserPool, phasedPoolSize } from '../sandbox/pool.browser';
import type { Ort } from '../onnx/runtime';
import type { RlConfig } from './config';
import { exploreHook } from './explore-hook';
import { runPipeline, StoppedError, type PipelineOptions, type Summary } from './pipeline';
import type { Metrics } from './ppo-loop';
import { hfModelStore } from '../hf/browser';
import type { ModelFolder } from '../hf/folder';
import { isHfReference, onnxReference, REFERENCE_TOKENIZER_FILE, runReference, type ReferenceFiles } from './reference';
import { HF_POLICY_KEPT, hfPolicyRun, hfReference, runHfReference } from './reference-hf';
import type { RunBackend, RunStorageKind } from './run-protocol';
import { readJson } from './run-dir';
import { runStorage } from './run-dir-browser';
import { errorText } from '../util/errors';

export { StoppedError, type Summary } from './pipeline';

export interface BrowserRunOptions {
  cfg: RlConfig;
  seed: number;
  /** the run directory's name */
  run: string;
  /** the backend asked for; 'webgpu' falls back to cpu when this context has no usable WebGPU */
  backend: RunBackend;
  /** where the run must be kept (the page reads it back from there); a mismatch is an error */
  storage?: RunStorageKind;
  /** the backend the run uses, once, before the pipeline starts; `note` says why it is not the one asked for */
  onBackend?: (backend: RunBackend, note: string | null) => void;
  onEvent?: PipelineOptions['onEvent'];
  onMetrics?: (stage: string, m: Metrics) => void;
  shouldStop?: () => boolean;
  gate?: () => Promise<void>;
  /** PipelineOptions.suiteText */
  suiteText?: string;
  /** the ONNX KL reference cfg.rl.reference names, when the page has it (reference.ts runReference) */
  reference?: ReferenceFiles;
  /** the stored Hugging Face model cfg.rl.reference names, when the page has it (reference-hf.ts runHfReference) */
  hfReference?: { id: string };
  /** the stored Hugging Face model cfg.pretrained names, when the page has it (copied into pretrained/hf, reference-hf.ts) */
  hfPolicy?: { id: string };
}

/** What a run directory holds. */
export interface StoredRun {
  run: string;
  kind: RunStorageKind;
  files: string[];
  /** config.json: null before a run has started there */
  config: { cfg: RlConfig; seed: number; backend: string } | null;
  /** summary.json: null until the run has finished */
  summary: Summary | null;
}

/**
 * onnxruntime-web's wasm provider (the CPU), loaded in this worker only for a run with an ONNX KL
 * reference (as the eval worker loads it for an ONNX policy); its wasm ships with the app.
 */
async function wasmOrt(): Promise<Ort> {
  const { browserOrt } = await import('../onnx/browser');
  return browserOrt('wasm');
}

let pool: SandboxPool | null = null;
let analyzer: Promise<Analyzer> | null = null;

/** The scorer's pool and analyzer, created on the first run and kept for the next. */
async function scorer(): Promise<{ pool: SandboxPool; analyzer: Analyzer }> {
  pool ??= createBrowserPool({ size: phasedPoolSize() });
  analyzer ??= createAnalyzer(browserWasmLoader).catch((e: unknown) => {
    analyzer = null; // retried on the next run
    throw e;
  });
  return { pool, analyzer: await analyzer };
}

const sentence = (m: string): string => (/[.!?]$/.test(m.trim()) ? m.trim() : `${m.trim()}.`);

/** A GPU runtime of this context's own (a device is not shared across workers), or why there is none. */
async function openRuntime(): Promise<{ runtime: GpuRuntime; note: null } | { runtime: null; note: string }> {
  try {
    const runtime = await GpuRuntime.create(browserProvider(), {
      onUncapturedError: (e) => console.warn(`WebGPU: ${e.message}`),
    });
    return { runtime, note: null };
  } catch (e) {
    return {
      runtime: null,
      note: `WebGPU is not usable in the run's worker: ${sentence(errorText(e))} The run uses the cpu backend (the float64 reference model) instead.`,
    };
  }
}

/** What a fault drill (injectFault) can reach: the run's GPU runtime and its live policies. */
const drill: { runtime: GpuRuntime | null; policies: Set<{ policy: Policy; optim: OptimConfig }> } = {
  runtime: null,
  policies: new Set(),
};

export type FaultKind = 'lose-device' | 'non-finite';

/**
 * Fault drills for the run in flight in this context, so the recovery paths can be exercised
 * for real (the e2e tests call it in the run worker through the debugger, as a user could from
 * devtools; nothing in the app calls it):
 * - 'lose-device': destroys the run's GPU device; WebGPU reports it lost, as after a driver reset;
 * - 'non-finite': sets the learning rate of every live training backend to NaN, so the next
 *   optimizer step writes NaN parameters and the numerics guard stops the run at the step after.
 * Returns what it did.
 */
export function injectFault(kind: FaultKind): string {
  if (kind === 'lose-device') {
    if (!drill.runtime) throw new Error('injectFault: this run has no GPU device (cpu backend)');
    drill.runtime.device.destroy();
    return "destroyed the run's GPU device";
  }
  if (kind === 'non-finite') {
    if (!drill.policies.size) throw new Error('injectFault: no training backend is live right now');
    for (const { policy, optim } of drill.policies) policy.setOptim({ ...optim, lr: Number.NaN });
    return `set the learning rate of ${drill.policies.size} backend(s) to NaN`;
  }
  throw new Error(`injectFault: unknown fault ${JSON.stringify(kind)} (lose-device, non-finite)`);
}

/** The factory's policies, each kept reachable for injectFault while it lives. */
function drillable(f: PolicyFactory): PolicyFactory {
  const track = (policy: Policy, optim: OptimConfig): Policy => {
    const entry = { policy, optim };
    drill.policies.add(entry);
    const setOptim = policy.setOptim.bind(policy);
    const dispose = policy.dispose.bind(policy);
    policy.setOptim = (opt) => {
      entry.optim = opt;
      setOptim(opt);
    };
    policy.dispose = () => {
      drill.policies.delete(entry);
      dispose();
    };
    return policy;
  };
  return {
    family: f.family,
    backend: f.backend,
    pretrained: f.pretrained,
    init: (spec, seed, optim) => track(f.init(spec, seed, optim), optim),
    fromParams: (spec, params, optim, optimizer) => track(f.fromParams(spec, params, optim, optimizer), optim),
    load: (spec, bytes, optim, withOptimizer) => track(f.load(spec, bytes, optim, withOptimizer), optim),
    readCheckpoint: (spec, bytes) => f.readCheckpoint(spec, bytes),
    writeCheckpoint: (spec, ckpt) => f.writeCheckpoint(spec, ckpt),
  };
}

/** The page's stored Hugging Face model (hf/browser.ts), as a folder, when it sent one. */
async function storedModel(ref: { id: string } | undefined): Promise<ModelFolder | undefined> {
  return ref && (await hfModelStore()).open(ref.id);
}

export async function runInBrowser(o: BrowserRunOptions): Promise<Summary> {
  const [storage, s] = await Promise.all([runStorage(), scorer()]);
  if (o.storage && storage.kind !== o.storage) {
    throw new Error(`run storage: the page keeps runs in ${o.storage}, but the run's worker can only reach ${storage.kind}`);
  }
  const store = storage.open(o.run);
  const named = o.cfg.rl.reference;
  const refFiles = named && isHfReference(named) ? undefined : await runReference(store, named, o.reference);
  const hfFolder = named && isHfReference(named) ? await runHfReference(store, named, await storedModel(o.hfReference)) : undefined;
  const pretrained = o.cfg.pretrained;
  const policyFolder = pretrained ? await runHfReference(store, pretrained, await storedModel(o.hfPolicy), HF_POLICY_KEPT) : undefined;
  const { runtime, note } = o.backend === 'webgpu' ? await openRuntime() : { runtime: null, note: null };
  const backend: RunBackend = runtime ? 'webgpu' : 'cpu';
  drill.runtime = runtime;
  o.onBackend?.(backend, note);
  const what = `${named?.name} (KL reference)`;
  const reference: PipelineOptions['reference'] = !named
    ? undefined
    : hfFolder
      ? hfReference(
          () => hfFolder,
          named,
          what,
          () => ({ backend, runtime: runtime ?? undefined }),
        )
      : refFiles && onnxReference(wasmOrt, { ...refFiles, file: named.name, tokenizerFile: REFERENCE_TOKENIZER_FILE }, what);
  try {
    const engine = { backend, runtime: runtime ?? undefined };
    // an imported model: the config it records is its shape with the LoRA targets resolved, as coderl train --model writes it
    const hf = policyFolder ? await hfPolicyRun(policyFolder, o.cfg, engine) : null;
    const cfg = hf?.cfg ?? o.cfg;
    return await runPipeline({
      cfg,
      seed: o.seed,
      policies: drillable(hf?.policies ?? labGptFactory(backend, runtime ?? undefined)),
      store,
      scorer: s,
      exploreFor: (tok) => exploreHook(tok, cfg.explore),
      onEvent: o.onEvent,
      onMetrics: o.onMetrics,
      shouldStop: o.shouldStop,
      gate: o.gate,
      suiteText: o.suiteText,
      reference,
    });
  } catch (e) {
    if (!runtime || e instanceof StoppedError) throw e;
    // a readback can reject before the device's loss is reported: give the report a moment
    if (runtime.state === 'ready') await new Promise((r) => setTimeout(r, 50));
    const lost = runtime.lostReport;
    if (!lost) throw e;
    throw new Error(
      `the GPU device was lost during the run (${lost.reason}: ${lost.message}): ${errorText(e)}. ` +
        'What finished is saved; start the run again to resume it.',
      { cause: e },
    );
  } finally {
    drill.runtime = null;
    drill.policies.clear();
    await runtime?.release(); // the device is gone before the worker reports its end (eval-worker.ts says why)
  }
}

export async function readStoredRun(run: string): Promise<StoredRun> {
  const storage = await runStorage();
  const store = storage.open(run);
  const files = await store.files();
  return {
    run,
    kind: storage.kind,
    files,
    config: files.includes('config.json') ? await readJson<StoredRun['config']>(store, 'config.json') : null,
    summary: files.includes('summary.json') ? await readJson<Summary>(store, 'summary.json') : null,
  };
}

export async function listStoredRuns(): Promise<string[]> {
  return (await runStorage()).runs();
}
