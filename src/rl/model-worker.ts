/**
 * The model worker: the heavy work on Hugging Face models for the Models panel, off the page's
 * main thread (model-protocol.ts). Spawned by the models slice as
 *   new Worker(new URL('../rl/model-worker.ts', import.meta.url), { type: 'module' })
 * and hosted by worker-host.ts (the life lock, the last message, every failure as one `error`).
 * - import: the folder is loaded and checked as `coderl generate --model` would (hf/load.ts, its
 *   messages) and hashed for its KL-reference record (reference-hf.ts), then its model files are
 *   streamed into the model store (hf/browser.ts); nothing is written for a folder the loader refuses.
 * - open: a stored model on the engine asked for (a GPU runtime of its own for webgpu, else the
 *   float64 cpu model, with a note why), kept for the page's samples until `close`.
 */
import { directoryFolder, asDirHandle, filesFolder, hfModelStore, summarizeHfModel, type BlobFolder } from '../hf/browser';
import { describeHfModel, loadHfFolder, type HfModel } from '../hf/load';
import { browserProvider } from '../gpu/provider';
import { GpuRuntime } from '../gpu/runtime';
import { HfPolicy } from '../policy/hf';
import { errorText } from '../util/errors';
import { MODEL_WORKER, type FromModelWorker, type ModelJob, type ModelSource, type SampleRequest } from './model-protocol';
import { promptFormatFor } from './prompt-format';
import { hfReferenceName, loadHfReferenced } from './reference-hf';
import type { RunBackend } from './run-protocol';
import { hostWorker } from './worker-host';
import { followPageStorage } from './worker-storage';

type Last = Extract<FromModelWorker, { type: 'imported' | 'closed' }>;

const sentence = (m: string): string => (/[.!?]$/.test(m.trim()) ? m.trim() : `${m.trim()}.`);
const mb = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;

const { post } = hostWorker(MODEL_WORKER, {
  run: (m) => {
    followPageStorage(m.storage);
    return m.job.kind === 'import' ? importFolder(m.job.source) : openModel(m.job);
  },
  onMessage(m) {
    if (m.type === 'sample') queue = queue.then(() => sample(m.request));
    else close?.();
  },
});

function sourceFolder(s: ModelSource): BlobFolder {
  return s.kind === 'files' ? filesFolder(s.name ?? s.label, s.files) : directoryFolder(asDirHandle(s.handle));
}

/** Loose files have no folder name: config.json's _name_or_path (what save_pretrained writes), else the architecture's family. */
async function looseName(folder: BlobFolder, m: HfModel): Promise<string> {
  try {
    const c = JSON.parse(new TextDecoder().decode(await folder.read('config.json'))) as { _name_or_path?: unknown };
    const n = typeof c._name_or_path === 'string' ? c._name_or_path.split(/[\\/]/).filter(Boolean).pop() : undefined;
    if (n) return n;
  } catch {
    // the loader read it already; a name is all that is wanted here
  }
  return m.arch.family;
}

async function importFolder(source: ModelSource): Promise<Last> {
  const folder = sourceFolder(source);
  post({ type: 'progress', message: `Checking ${folder.name}: config, tokenizer and weights`, done: 0, total: 1 });
  const loaded = await loadHfReferenced(folder);
  const name = source.kind === 'files' && source.name === null ? await looseName(folder, loaded.model) : folder.name;
  const summary = summarizeHfModel(loaded.model, { name: hfReferenceName(name), sha256: loaded.ref.sha256 }, describeHfModel(loaded.model));
  loaded.model.weights.clear(); // the float32 weights are not needed for the copy
  const store = await hfModelStore();
  let last = 0;
  const saved = await store.save(folder, {
    name,
    summary,
    onProgress: (p) => {
      const now = performance.now();
      if (now - last < 100 && p.bytesDone < p.bytes) return;
      last = now;
      post({
        type: 'progress',
        message: `Copying ${name} into this browser: ${p.file || 'manifest.json'} (${p.filesDone + 1} of ${p.files} files, ${mb(p.bytesDone)} of ${mb(p.bytes)})`,
        done: p.bytesDone,
        total: p.bytes,
      });
    },
  });
  return { type: 'imported', id: saved.id, manifest: saved.manifest, bytes: saved.bytes };
}

/** The open model, once loaded; samples wait for it. */
let opened: Promise<{ policy: HfPolicy; model: HfModel; backend: RunBackend }> | null = null;
let queue: Promise<void> = Promise.resolve();
let close: (() => void) | null = null;

async function openModel(job: Extract<ModelJob, { kind: 'open' }>): Promise<Last> {
  const closed = new Promise<void>((r) => (close = r));
  let runtime: GpuRuntime | null = null;
  let policy: HfPolicy | null = null;
  const load = async () => {
    const t0 = performance.now();
    post({ type: 'progress', message: 'Reading the stored model', done: 0, total: 1 });
    const model = await loadHfFolder(await (await hfModelStore()).open(job.id));
    let note: string | null = null;
    if (job.backend === 'webgpu') {
      try {
        runtime = await GpuRuntime.create(browserProvider(), { onUncapturedError: (e) => console.warn(`WebGPU: ${e.message}`) });
      } catch (e) {
        note = `WebGPU is not usable in the model worker: ${sentence(errorText(e))} Sampling uses the cpu backend (the float64 reference model) instead.`;
      }
    }
    const backend: RunBackend = runtime ? 'webgpu' : 'cpu';
    policy = new HfPolicy(model, { backend, runtime: runtime ?? undefined });
    post({ type: 'opened', backend, note, contextLength: policy.config.contextLength, loadMs: performance.now() - t0 });
    return { policy, model, backend };
  };
  opened = load();
  try {
    await opened;
    await closed;
    await queue; // a sample in flight finishes first
    return { type: 'closed' };
  } finally {
    (policy as HfPolicy | null)?.dispose();
    await (runtime as GpuRuntime | null)?.release();
  }
}

async function sample(req: SampleRequest): Promise<void> {
  try {
    if (!opened) throw new Error('no model is open in this worker');
    const { policy, model, backend } = await opened;
    const tok = model.tokenizer;
    const format = promptFormatFor(req.format, tok, `${model.folder}/tokenizer_config.json`);
    const ids = format.messageIds(req.prompt);
    if (ids.length === 0) throw new Error('the prompt is empty: write a few characters to continue');
    const room = policy.config.contextLength - ids.length;
    if (room < 1) throw new Error(`the prompt is ${ids.length} tokens; the model's context is ${policy.config.contextLength}`);
    const t0 = performance.now();
    const r = await policy.generate([ids], {
      maxNewTokens: Math.min(req.maxNewTokens, room),
      temperature: req.temperature,
      seed: req.seed,
      eosId: tok.eosId,
    });
    const tokens = r.tokens[0]!;
    const body = model.eosIds.includes(tokens.at(-1)!) ? tokens.slice(0, -1) : tokens;
    post({
      type: 'sampled',
      result: {
        id: req.id,
        text: tok.decode(body),
        tokens: tokens.length,
        promptTokens: ids.length,
        finish: r.finish[0]!,
        format: format.kind,
        tokensPerSecond: r.stats.tokensPerSecond,
        ms: performance.now() - t0,
        backend,
      },
    });
  } catch (e) {
    post({ type: 'sample-error', id: req.id, message: errorText(e) });
  }
}
