/**
 * A Hugging Face model folder (hf/load.ts) as the frozen reference of the KL penalty, the
 * counterpart of reference.ts's ONNX model, for `coderl train --reference DIR` and the app's run
 * worker:
 * - hfReferenceRef / loadHfReferenced: what config.rl.reference records of a folder;
 * - assertSameVocabulary: the reference must have the run's tokenizer (every id's bytes and the
 *   end-of-sequence id), or the KL compares log-probs of different tokens;
 * - hfReference: the pipeline's `reference` factory (an HfPolicy on the run's engine);
 * - hfPolicyRun (the app): the policies of a run that trains a folder (config.pretrained);
 * - runHfReference (the app): the run directory keeps a copy of the folder (reference/hf/ for the
 *   KL reference, pretrained/hf/ for the model a run trains: HF_REFERENCE_KEPT, HF_POLICY_KEPT),
 *   so a run resumes, after a reload too, without the model being imported again.
 *
 * The record of a folder is { name: "<folder's base name>/", sha256 } (the "/" at the end is
 * how a folder is told from an ONNX file). Its SHA-256 is that of the text `sha256sum` prints for
 * config.json and then the safetensors files the loader reads (model.safetensors, or the shards
 * model.safetensors.index.json names, in code-unit order of their names): one line per file,
 * `<hex SHA-256 of the file>  <file name>\n`. So, in the folder:
 *     sha256sum config.json model.safetensors | sha256sum
 *     sha256sum config.json model-0000*-of-0000*.safetensors | sha256sum
 * give it. Each file is hashed on its own, never concatenated: a multi-gigabyte model is not held
 * twice. The tokenizer files are not part of it: the run checks them against its own tokenizer.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { HF_FILES, isModelFile, type ModelFolder } from '../hf/folder';
import { loadHfFolder, type HfModel } from '../hf/load';
import type { BackendKind } from '../model/backend';
import type { ModelConfig } from '../model/config';
import { MemoryPlanError, type MemoryPlan } from '../model/memory-plan';
import { readSafetensorsIndex } from '../model/safetensors';
import { hfPolicyFactory, type Policy, type PolicyFactory } from '../policy';
import { HfPolicy } from '../policy/hf';
import type { TextTokenizer } from '../tokenizer/types';
import type { RlConfig } from './config';
import { pretrainedRunConfig, runLora, runMemoryPlan, runWeightFormat } from './pretrained';
import { describeReference, type ReferenceRef } from './reference';
import { readJson, writeJson, type RunDir } from './run-dir';
import { sha256Hex } from './tasks/from-suite';

/** Where a run directory keeps a Hugging Face KL reference: its files, and last the list of them. */
export const REFERENCE_HF_DIR = 'reference/hf';
export const REFERENCE_HF_FILES = `${REFERENCE_HF_DIR}/files.json`;

/** A Hugging Face folder a run directory keeps a copy of: where, the config path that names it, and what the run uses it as. */
export interface KeptHfFolder {
  /** the copy's directory in the run directory (its files, then `<dir>/files.json` last) */
  dir: string;
  /** the dotted config path holding the folder's record ({name, sha256}) */
  configPath: string;
  /** what the run uses it as, for messages: "KL reference", "policy model" */
  role: string;
}

/** The KL reference's copy (config.rl.reference). */
export const HF_REFERENCE_KEPT: KeptHfFolder = {
  dir: REFERENCE_HF_DIR,
  configPath: 'rl.reference',
  role: 'KL reference',
};

/** The copy of the model a run trains (config.pretrained). */
export const HF_POLICY_KEPT: KeptHfFolder = {
  dir: 'pretrained/hf',
  configPath: 'pretrained',
  role: 'policy model',
};

const filesJson = (kept: KeptHfFolder): string => `${kept.dir}/files.json`;

const short = (sha: string): string => `${sha.slice(0, 12)}…`;
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const isHashed = (file: string): boolean => file === HF_FILES.config || file.endsWith('.safetensors');

/** "qwen2/" for "models/qwen2" or "models/qwen2/". */
export const hfReferenceName = (folder: string): string => `${folder.split(/[\\/]/).filter(Boolean).pop() || folder}/`;

/** The SHA-256 of a folder from its files' digests: config.json, then the weight files in code-unit order. */
export async function hfFolderSha256(digests: ReadonlyMap<string, string>, weights: readonly string[]): Promise<string> {
  const files = [HF_FILES.config, ...[...weights].sort(byCodeUnits)];
  const lines = files.map((f) => {
    const d = digests.get(f);
    if (!d) throw new Error(`hfFolderSha256: no digest of ${f}`);
    return `${d}  ${f}\n`;
  });
  return sha256Hex(lines.join(''));
}

/** The weight files the loader reads: model.safetensors when there is one, else the shards the index names. */
function weightFiles(have: ReadonlySet<string>, indexText: string | null): string[] {
  if (have.has(HF_FILES.weights)) return [HF_FILES.weights];
  return indexText === null ? [] : [...new Set(readSafetensorsIndex(indexText, HF_FILES.index).values())];
}

/**
 * Loads and checks a folder (hf/load.ts, its messages), hashing config.json and the safetensors
 * files as the loader reads them (each read once), and returns the model with its record.
 */
export async function loadHfReferenced(folder: ModelFolder): Promise<{ model: HfModel; ref: ReferenceRef }> {
  const digests = new Map<string, string>();
  const hashing: ModelFolder = {
    name: folder.name,
    files: () => folder.files(),
    async read(file) {
      const bytes = await folder.read(file);
      if (isHashed(file)) digests.set(file, await sha256Hex(bytes));
      return bytes;
    },
  };
  const model = await loadHfFolder(hashing);
  const weights = model.files.map((f) => f.name).filter((f) => f.endsWith('.safetensors'));
  return { model, ref: { name: hfReferenceName(folder.name), sha256: await hfFolderSha256(digests, weights) } };
}

/** A token's bytes for messages: the text when they are UTF-8, else hex. */
function showBytes(b: Uint8Array | null): string {
  if (!b) return 'not a token';
  try {
    return JSON.stringify(new TextDecoder('utf-8', { fatal: true }).decode(b));
  } catch {
    return `bytes ${[...b].map((x) => x.toString(16).padStart(2, '0')).join(' ')}`;
  }
}

const bytesAt = (tok: TextTokenizer, id: number): Uint8Array | null => {
  if (id >= tok.vocabSize) return null;
  try {
    return tok.tokenBytes(id);
  } catch {
    return null; // a hole in an imported vocabulary
  }
};

const same = (a: Uint8Array | null, b: Uint8Array | null): boolean =>
  a === b || (a !== null && b !== null && a.length === b.length && a.every((x, i) => x === b[i]));

/**
 * Refuses a reference whose tokenizer is not the run's: the first id whose bytes differ (or that
 * one of them lacks), else a different end-of-sequence id, named with both tokenizers. `names`:
 * what to call each (e.g. "the run's tokenizer.json", "qwen2/tokenizer.json").
 */
export function assertSameVocabulary(
  run: TextTokenizer,
  ref: TextTokenizer,
  names: { run: string; ref: string },
  what = 'the KL reference',
): void {
  const n = Math.max(run.vocabSize, ref.vocabSize);
  let detail: string | null = null;
  for (let id = 0; id < n && detail === null; id++) {
    const a = bytesAt(run, id);
    const b = bytesAt(ref, id);
    if (!same(a, b)) detail = `id ${id} is ${showBytes(b)} in ${names.ref} and ${showBytes(a)} in ${names.run}`;
  }
  if (detail === null && run.eosId !== ref.eosId)
    detail = `the end-of-sequence id is ${ref.eosId} in ${names.ref} and ${run.eosId} in ${names.run}`;
  if (detail === null) return;
  throw new Error(
    `${what}: its tokenizer (${names.ref}, ${ref.vocabSize} ids) is not the run's (${names.run}, ${run.vocabSize} ids): ${detail}. ` +
      "The KL penalty compares log-probs of the same token ids, so the reference needs the run's vocabulary (e.g. this run's SFT checkpoint exported with coderl export-hf)",
  );
}

/** Which engine the reference runs on: the run's (its GPU runtime for webgpu), asked when the reference is loaded. */
export type ReferenceEngine = () => { backend: BackendKind; runtime?: GpuRuntime };

/**
 * The pipeline's `reference` factory for a Hugging Face folder: loaded when asked (setup, then PPO),
 * refused unless it is the model the config names (`named`: its SHA-256), has the run's tokenizer
 * and covers the run's context; then a frozen HfPolicy on the run's engine.
 */
export function hfReference(
  folder: () => ModelFolder | Promise<ModelFolder>,
  named: ReferenceRef,
  what: string,
  engine: ReferenceEngine,
): (tok: TextTokenizer, model: ModelConfig) => Promise<Policy> {
  return async (tok, cfg) => {
    const { model, ref } = await loadHfReferenced(await folder());
    if (ref.sha256 !== named.sha256)
      throw new Error(
        `${what}: ${model.folder} is not the KL reference the config names, ${describeReference(named)}: its SHA-256 (config.json and its safetensors files) is ${short(ref.sha256)}`,
      );
    assertSameVocabulary(tok, model.tokenizer, { run: "the run's tokenizer.json", ref: `${model.folder}/${HF_FILES.tokenizer}` }, what);
    if (cfg.contextLength > model.arch.maxPositions)
      throw new Error(
        `${what}: the run's context of ${cfg.contextLength} tokens exceeds the ${model.arch.maxPositions} positions of ${model.folder}`,
      );
    const { backend, runtime } = engine();
    return new HfPolicy(model, { backend, runtime, contextLength: cfg.contextLength });
  };
}

/** The copy a run directory keeps in `dir`, as a folder named `name` (its files.json lists the files). */
function runDirFolder(store: RunDir, dir: string, name: string, files: readonly string[]): ModelFolder {
  return {
    name,
    files: async () => [...files],
    async read(file) {
      const b = files.includes(file) ? await store.read(`${dir}/${file}`) : null;
      if (!b) throw new Error(`${name}: no file ${file} in the run directory's copy (${dir}/${file})`);
      return b;
    },
  };
}

/** The record a stored config holds at a dotted path, if any. */
function recordAt(cfg: unknown, path: string): { name?: unknown; sha256?: unknown } | undefined {
  let v: unknown = cfg;
  for (const k of path.split('.')) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'object' && v !== null ? (v as { name?: unknown; sha256?: unknown }) : undefined;
}

/**
 * The Hugging Face folder of the run `store` holds, whose config names `named` at
 * `kept.configPath` (default: the KL reference, config.rl.reference, kept in reference/hf/; the
 * model a run trains is HF_POLICY_KEPT: config.pretrained, pretrained/hf/). The run directory's
 * copy is used when there is one (its loader checks its SHA-256 on every load); otherwise `given`
 * (the page's stored model) is copied there, its model files one at a time, hashed as they go,
 * and files.json written last, only when the copy is the model `named` names (a wrong or damaged
 * model leaves no complete copy). A directory holding another run's config is left as it is (the
 * pipeline refuses that config next).
 */
export async function runHfReference(
  store: RunDir,
  named: ReferenceRef,
  given?: ModelFolder,
  kept: KeptHfFolder = HF_REFERENCE_KEPT,
): Promise<ModelFolder> {
  const name = named.name.replace(/\/+$/, '') || named.name;
  const list = filesJson(kept);
  const have = await readJson<{ files?: unknown }>(store, list);
  if (have) {
    if (!Array.isArray(have.files) || !have.files.every((f) => typeof f === 'string'))
      throw new Error(`${list} in the run directory is not a list of files; use a new run name`);
    return runDirFolder(store, kept.dir, name, have.files as string[]);
  }
  if (!given) {
    throw new Error(
      `the run's ${kept.role} is the Hugging Face model ${describeReference(named)}, and the run directory does not hold it (${list} is missing); ` +
        `import the model in the Hugging Face models panel and pick it as the ${kept.role}`,
    );
  }
  const existing = await readJson<{ cfg?: RlConfig }>(store, 'config.json');
  const other = recordAt(existing?.cfg, kept.configPath);
  if (existing && (other?.name !== named.name || other.sha256 !== named.sha256)) return given;

  const files = (await given.files()).filter(isModelFile).sort(byCodeUnits);
  const digests = new Map<string, string>();
  let indexText: string | null = null;
  for (const f of files) {
    const bytes = await given.read(f);
    if (isHashed(f)) digests.set(f, await sha256Hex(bytes));
    if (f === HF_FILES.index) indexText = new TextDecoder().decode(bytes);
    await store.write(`${kept.dir}/${f}`, bytes);
  }
  const weights = weightFiles(new Set(files), indexText);
  const sha = weights.every((w) => digests.has(w)) && digests.has(HF_FILES.config) ? await hfFolderSha256(digests, weights) : null;
  if (sha !== named.sha256)
    throw new Error(
      `the model given as the ${kept.role} (${given.name}, SHA-256 ${sha ? short(sha) : 'of no complete folder'}) is not the one the config names, ${describeReference(named)}`,
    );
  await writeJson(store, list, { files });
  return runDirFolder(store, kept.dir, name, files);
}

/**
 * The policies of a run that trains the imported model in `folder` (the run directory's copy,
 * runHfReference with HF_POLICY_KEPT), as `coderl train --model DIR` makes them: the folder is
 * loaded and refused unless it is the model config.pretrained names (its SHA-256); the config the
 * run records is the model's shape at the run's context with the LoRA targets resolved
 * (pretrained.ts pretrainedRunConfig); the memory plan of one step must fit MEMORY_BUDGET_GIB and
 * gives the micro-batch; then hfPolicyFactory (LoRA or full fine-tuning) on the run's engine.
 * Every error names the model and what is wrong.
 */
export async function hfPolicyRun(
  folder: ModelFolder,
  cfg: RlConfig,
  engine: { backend: BackendKind; runtime?: GpuRuntime },
): Promise<{ cfg: RlConfig; plan: MemoryPlan; policies: PolicyFactory }> {
  const named = cfg.pretrained;
  if (!named) throw new Error('hfPolicyRun: the config names no imported model (config.pretrained)');
  const { model, ref } = await loadHfReferenced(folder);
  const what = `the policy model ${model.folder}`;
  if (ref.sha256 !== named.sha256)
    throw new Error(
      `${what} is not the model the config names (config.pretrained), ${describeReference(named)}: its SHA-256 (config.json and its safetensors files) is ${short(ref.sha256)}`,
    );
  if (cfg.lora?.from)
    throw new Error(
      `config.lora.from: the run starts its LoRA adapters from the PEFT adapter ${describeReference(cfg.lora.from)}, which the app cannot load; ` +
        'run it with coderl train --model DIR --adapter ADIR, or leave lora.from out',
    );
  const run = pretrainedRunConfig(cfg, model.arch, model.folder);
  let plan: MemoryPlan;
  try {
    plan = runMemoryPlan(run, model.arch, undefined, model.dtypes);
  } catch (e) {
    if (e instanceof MemoryPlanError) throw new Error(`${what}: ${e.message}`, { cause: e });
    throw e;
  }
  const policies = hfPolicyFactory(model, {
    backend: engine.backend,
    runtime: engine.runtime,
    lora: runLora(run, model.arch),
    weightFormat: runWeightFormat(run, model.dtypes),
    contextLength: run.model.contextLength,
    microBatch: plan.microBatch,
  });
  return { cfg: run, plan, policies };
}
