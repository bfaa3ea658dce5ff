/**
 * Loads a Hugging Face model folder: config.json -> the architecture (model/arch.ts), the
 * safetensors weights (one file, or shards with model.safetensors.index.json) -> the engine's
 * tensors (model/hf-weights.ts), tokenizer.json + tokenizer_config.json -> an HfTokenizer with
 * its chat template, generation_config.json -> the stop ids. Everything is checked here, before
 * any GPU work; each refusal names the folder, the file and the field or tensor.
 */
import type { WeightFormat } from '../kernels/weight_format';
import { archFromHfConfig, describeArch, type DecoderArch } from '../model/arch';
import { weightsFromHf, type HfTensor } from '../model/hf-weights';
import { readSafetensors, readSafetensorsIndex, type SafetensorsDtype } from '../model/safetensors';
import { HfTokenizer } from '../tokenizer/hf';
import { HF_FILES, type ModelFolder } from './folder';

export class HfModelError extends Error {
  override readonly name = 'HfModelError';
}

export interface HfModel {
  /** the folder's name (a path in the CLI) */
  folder: string;
  arch: DecoderArch;
  /** the engine's tensors (arch.ts decoderTensors), float32 */
  weights: Map<string, Float32Array>;
  tokenizer: HfTokenizer;
  /** tokenizer_config.json's chat_template, or null (a base model: prompts go as plain completion) */
  chatTemplate: string | null;
  /** ids that end a generation (generation_config.json eos_token_id, else the tokenizer's eos) */
  eosIds: number[];
  /** the stored dtypes of the weights (F32, F16, BF16; widened to float32 on load) */
  dtypes: SafetensorsDtype[];
  /** the files read and their sizes */
  files: { name: string; bytes: number }[];
  /** parameters (real, no padding) */
  parameters: number;
  /** milliseconds spent reading and checking */
  loadMs: number;
}

async function readJson(
  folder: ModelFolder,
  file: string,
  have: Set<string>,
  required: boolean,
  files: HfModel['files'],
): Promise<unknown> {
  if (!have.has(file)) {
    if (!required) return null;
    throw new HfModelError(
      `${folder.name}: no ${file} (a Hugging Face model folder has config.json, model.safetensors or model.safetensors.index.json with its shards, and tokenizer.json)`,
    );
  }
  const bytes = await folder.read(file);
  files.push({ name: file, bytes: bytes.length });
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HfModelError(`${folder.name}/${file}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}

const withFolder = <T>(folder: ModelFolder, f: () => T): T => {
  try {
    return f();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new HfModelError(msg.startsWith(folder.name) ? msg : `${folder.name}/${msg}`);
  }
};

export async function loadHfFolder(folder: ModelFolder): Promise<HfModel> {
  const t0 = performance.now();
  const have = new Set(await folder.files());
  const files: { name: string; bytes: number }[] = [];
  const config = await readJson(folder, HF_FILES.config, have, true, files);
  const arch = withFolder(folder, () => archFromHfConfig(config, HF_FILES.config));

  // tokenizer
  const tokenizerJson = await readJson(folder, HF_FILES.tokenizer, have, true, files);
  const tokenizerConfig = await readJson(folder, HF_FILES.tokenizerConfig, have, false, files);
  const generationConfig = await readJson(folder, HF_FILES.generationConfig, have, false, files);
  const tokenizer = withFolder(folder, () => HfTokenizer.fromFiles({ tokenizerJson, tokenizerConfig, generationConfig }));
  if (tokenizer.vocabSize > arch.vocabSize) {
    throw new HfModelError(
      `${folder.name}/${HF_FILES.tokenizer}: the tokenizer has ids up to ${tokenizer.vocabSize - 1}, but ${HF_FILES.config} vocab_size is ${arch.vocabSize}: the tokenizer is not this model's`,
    );
  }

  // weights: one file, or the shards the index names
  let shards: string[];
  let index: Map<string, string> | null = null;
  if (have.has(HF_FILES.weights)) shards = [HF_FILES.weights];
  else if (have.has(HF_FILES.index)) {
    const bytes = await folder.read(HF_FILES.index);
    files.push({ name: HF_FILES.index, bytes: bytes.length });
    const text = new TextDecoder().decode(bytes);
    index = withFolder(folder, () => readSafetensorsIndex(text, HF_FILES.index));
    shards = [...new Set(index.values())].sort();
    for (const s of shards)
      if (!have.has(s)) throw new HfModelError(`${folder.name}/${HF_FILES.index}: names shard ${s}, which is not in the folder`);
  } else {
    const bin = [...have].find((f) => f.endsWith('.bin') || f.endsWith('.pt') || f.endsWith('.gguf'));
    throw new HfModelError(
      `${folder.name}: no ${HF_FILES.weights} or ${HF_FILES.index}` +
        (bin
          ? ` (${bin} is not read: the lab loads safetensors only; convert with transformers' save_pretrained(safe_serialization=True))`
          : ''),
    );
  }
  const tensors = new Map<string, HfTensor>();
  const dtypes = new Set<SafetensorsDtype>();
  for (const shard of shards) {
    const bytes = await folder.read(shard);
    files.push({ name: shard, bytes: bytes.length });
    const file = withFolder(folder, () => readSafetensors(bytes, shard));
    for (const [name, t] of file.tensors) {
      if (tensors.has(name)) throw new HfModelError(`${folder.name}/${shard}: tensor ${name} is also in ${tensors.get(name)!.file}`);
      if (index && index.get(name) !== shard) {
        throw new HfModelError(
          `${folder.name}/${shard}: holds tensor ${name}, which ${HF_FILES.index} puts ${index.has(name) ? `in ${index.get(name)}` : 'nowhere'}`,
        );
      }
      tensors.set(name, { shape: t.shape, data: t.data, file: shard });
      dtypes.add(t.dtype);
    }
  }
  if (index)
    for (const [name, shard] of index)
      if (!tensors.has(name)) throw new HfModelError(`${folder.name}/${shard}: has no tensor ${name}, which ${HF_FILES.index} puts there`);
  const weights = withFolder(folder, () => weightsFromHf(arch, tensors, HF_FILES.config));

  const eosIds = tokenizer.eosIds.filter((id) => id < arch.vocabSize);
  const chat = tokenizerConfig && typeof tokenizerConfig === 'object' ? (tokenizerConfig as Record<string, unknown>).chat_template : null;
  const chatTemplate = typeof chat === 'string' ? chat : null;
  let parameters = 0;
  for (const w of weights.values()) parameters += w.length;
  return {
    folder: folder.name,
    arch,
    weights,
    tokenizer,
    chatTemplate,
    eosIds,
    dtypes: [...dtypes],
    files,
    parameters,
    loadMs: performance.now() - t0,
  };
}

/**
 * How a frozen copy of the model keeps its matrices on the GPU without changing a number
 * (DecoderGpu's weightFormat): the checkpoint's own 16-bit dtype when every tensor has it (F16 or
 * BF16, as SmolLM2 and Qwen2.5 ship), else f32 (an F32 tensor among them would be rounded).
 */
export function hfWeightFormat(dtypes: readonly string[]): WeightFormat {
  if (dtypes.length === 1 && dtypes[0] === 'F16') return 'f16';
  if (dtypes.length === 1 && dtypes[0] === 'BF16') return 'bf16';
  return 'f32';
}

/** One line for logs: "Qwen2ForCausalLM: 24 layers, ... (494M parameters, BF16)". */
export function describeHfModel(m: HfModel): string {
  const p = m.parameters >= 1e6 ? `${(m.parameters / 1e6).toFixed(1)}M` : `${(m.parameters / 1e3).toFixed(1)}k`;
  return `${describeArch(m.arch)} (${p} parameters, ${m.dtypes.join('+') || 'F32'})`;
}
