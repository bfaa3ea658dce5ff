/**
 * The exported policy as a Hugging Face model folder, through the same pieces as `coderl
 * export-hf`: a lab checkpoint becomes a GPT2LMHeadModel (hf/export.ts, its tokenizer through
 * tokenizer/export-hf.ts); a checkpoint of a run on an imported model (config.pretrained) becomes
 * the model with the trained weights, LoRA merged in, plus the PEFT adapter folder when the run
 * used LoRA. The base model of such a run is read from --model DIR or the run's copy
 * (pretrained/hf, which the app keeps) and checked against the config's SHA-256.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { hfFolderFiles, labArch, labWeights } from '../hf/export';
import { HF_FILES } from '../hf/folder';
import type { HfModel } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { loraAdapterFiles } from '../hf/peft';
import type { ArchFamily } from '../model/arch';
import { loadModel } from '../model/model-file';
import { hfCheckpointWeights, isHfPolicyCheckpoint } from '../policy/hf-train';
import { HF_POLICY_KEPT, hfReferenceName, loadHfReferenced } from '../rl/reference-hf';
import { Tokenizer } from '../tokenizer';
import { labTokenizerToHf } from '../tokenizer/export-hf';
import { errorText } from '../util/errors';
import { ExportError, type OpenedRun } from './run';

export interface ExportedPolicy {
  /** the model folder's files (name -> bytes) */
  model: Map<string, Uint8Array>;
  /** the PEFT adapter folder's files, for a LoRA run; else null */
  adapter: Map<string, Uint8Array> | null;
  family: ArchFamily;
  /** tokenizer_config.json's chat_template, or null */
  chatTemplate: string | null;
  /** one line: what it is */
  describe: string;
}

/**
 * A chat template that sends the messages' text as it is, with nothing added for the generation
 * prompt: veRL always renders prompts through the tokenizer's template, and a base model (the
 * lab's GPT) has none, so its prompt reaches it as the plain code the lab sent.
 */
export const PASS_THROUGH_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}";

/** The folder's files with tokenizer_config.json's chat_template set. */
export function withChatTemplate(files: ReadonlyMap<string, Uint8Array>, template: string): Map<string, Uint8Array> {
  const out = new Map(files);
  const raw = out.get(HF_FILES.tokenizerConfig);
  const config = raw ? (JSON.parse(new TextDecoder().decode(raw)) as Record<string, unknown>) : {};
  out.set(HF_FILES.tokenizerConfig, new TextEncoder().encode(`${JSON.stringify({ ...config, chat_template: template }, null, 2)}\n`));
  return out;
}

function labPolicy(run: OpenedRun): ExportedPolicy {
  const { bytes, path } = run.checkpoint;
  if (isHfPolicyCheckpoint(bytes))
    throw new ExportError(`${path}: a checkpoint of a run on an imported model, but the run's config names none (config.pretrained)`);
  let snap;
  try {
    snap = loadModel(bytes);
  } catch (e) {
    throw new ExportError(`${path}: not a lab checkpoint (${errorText(e)})`);
  }
  if (!snap.tokenizer) throw new ExportError(`${path}: carries no tokenizer`);
  const tok = Tokenizer.fromJSON(snap.tokenizer);
  const hf = labTokenizerToHf(tok);
  const model = hfFolderFiles({
    arch: labArch(snap.config),
    weights: labWeights(snap.config, snap.params),
    tokenizerJson: hf.tokenizerJson,
    tokenizerConfig: hf.tokenizerConfig,
    bosId: tok.eosId,
    eosIds: [tok.eosId],
  });
  const { nLayer, dModel, nHead } = snap.config;
  return {
    model,
    adapter: null,
    family: 'gpt2',
    chatTemplate: null,
    describe: `the lab's GPT (${nLayer} layers, d ${dModel}, ${nHead} heads) as GPT2LMHeadModel`,
  };
}

/** The imported model a run trained: --model DIR, else the run's copy; refused when its SHA-256 is not the config's. */
async function baseModel(run: OpenedRun, modelDir: string | undefined): Promise<HfModel> {
  const named = run.cfg.pretrained!;
  const kept = join(run.dir, HF_POLICY_KEPT.dir);
  const dir = modelDir ?? ((await stat(kept).catch(() => null))?.isDirectory() ? kept : undefined);
  if (!dir)
    throw new ExportError(
      `--run ${run.dir}: the run trained the Hugging Face model "${named.name}" (SHA-256 ${named.sha256.slice(0, 12)}…), and the run directory keeps no copy (${HF_POLICY_KEPT.dir}); give its folder: --model DIR`,
    );
  let loaded;
  try {
    loaded = await loadHfReferenced(await nodeFolder(dir));
  } catch (e) {
    throw new ExportError(`--model ${dir}: ${errorText(e)}`);
  }
  if (loaded.ref.sha256 !== named.sha256)
    throw new ExportError(
      `--model ${dir}: not the model the run trained (SHA-256 ${loaded.ref.sha256.slice(0, 12)}…, config.pretrained has ${named.sha256.slice(0, 12)}… for "${named.name}")`,
    );
  return loaded.model;
}

async function importedPolicy(run: OpenedRun, modelDir: string | undefined): Promise<ExportedPolicy> {
  const m = await baseModel(run, modelDir);
  const { bytes, path } = run.checkpoint;
  if (!isHfPolicyCheckpoint(bytes)) throw new ExportError(`${path}: not a checkpoint of a run on an imported model (coderl train --model)`);
  let c;
  try {
    c = hfCheckpointWeights(m, bytes, path);
  } catch (e) {
    throw new ExportError(errorText(e));
  }
  const model = hfFolderFiles({
    arch: c.arch,
    weights: c.weights,
    tokenizerJson: m.tokenizer.tokenizerJson,
    tokenizerConfig: m.tokenizer.tokenizerConfig,
    bosId: m.tokenizer.bosId,
    eosIds: [...m.eosIds],
  });
  const adapter = c.adapter ? loraAdapterFiles(c.adapter, hfReferenceName(m.folder).replace(/\/$/, ''), m.arch) : null;
  const how = c.lora ? `LoRA rank ${c.lora.rank} merged into the weights (the adapter is adapter/)` : 'fully fine-tuned weights';
  return {
    model,
    adapter,
    family: m.arch.family,
    chatTemplate: m.chatTemplate,
    describe: `${m.arch.hfArchitecture} "${run.cfg.pretrained!.name}", ${how}`,
  };
}

export function exportPolicy(run: OpenedRun, modelDir?: string): Promise<ExportedPolicy> | ExportedPolicy {
  if (!run.cfg.pretrained) {
    if (modelDir !== undefined)
      throw new ExportError(`--model ${modelDir}: the run trained the lab's GPT, not an imported model; leave --model out`);
    return labPolicy(run);
  }
  return importedPolicy(run, modelDir);
}
