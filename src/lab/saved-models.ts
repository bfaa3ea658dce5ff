/**
 * Pure helpers of the Checkpoints panel and the store's checkpoint slice: what a stored
 * checkpoint holds (from its decoded header), storage names, and the built-in "New model" (a
 * preset, a seed, and a tokenizer trained on a small code corpus, src/tokenizer/corpus.ts).
 */
import { CheckpointError, decodeCheckpoint } from '../container';
import { loadModel, saveModel } from '../model/model-file';
import { MODEL_PRESETS, validateModelConfig, type ModelConfig } from '../model/config';
import { initParams } from '../model/init';
import { paramTable } from '../model/params';
import { Tokenizer } from '../tokenizer';
import { corpusTokenizer } from '../tokenizer/corpus';
import { errorText } from '../util/errors';

export type PresetName = keyof typeof MODEL_PRESETS;
export const PRESET_NAMES = Object.keys(MODEL_PRESETS) as PresetName[];
export const CHECKPOINT_EXT = '.crlckpt';

/** What the list shows about one checkpoint, read from its header. */
export interface CheckpointInfo {
  /** null when the header's config is not a valid model config (see configProblem) */
  config: ModelConfig | null;
  configProblem: string | null;
  /** real parameters (no slab padding); null without a valid config */
  paramCount: number | null;
  /** holds the AdamW moments (tensors optim/m and optim/v) */
  optimizer: boolean;
  /** holds a tokenizer (header.tokenizer is not null) */
  tokenizer: boolean;
  /** the stored tokenizer's vocabulary size, when it states one */
  tokenizerVocab: number | null;
  /** the header's meta object (step, preset, seed...); {} when there is none */
  meta: Record<string, unknown>;
  createdAt: string;
}

/**
 * Decodes a stored checkpoint (the CRC included, so corruption in storage shows) and sums it up.
 * Throws a CheckpointError when the bytes are not a readable checkpoint.
 */
export function summarise(bytes: Uint8Array): CheckpointInfo {
  const d = decodeCheckpoint(bytes);
  let config: ModelConfig | null = null;
  let configProblem: string | null = null;
  try {
    config = validateModelConfig(d.config, 'checkpoint config');
  } catch (e) {
    configProblem = errorText(e);
  }
  const tok = d.tokenizer as { vocabSize?: unknown } | null;
  const meta = typeof d.meta === 'object' && d.meta !== null && !Array.isArray(d.meta) ? (d.meta as Record<string, unknown>) : {};
  return {
    config,
    configProblem,
    paramCount: config ? paramTable(config).count : null,
    optimizer: 'optim/m' in d.tensors,
    tokenizer: tok !== null,
    tokenizerVocab: typeof tok?.vocabSize === 'number' ? tok.vocabSize : null,
    meta,
    createdAt: d.createdAt,
  };
}

/**
 * Validates a checkpoint file before it is stored: loadModel (container, CRC, config, every tensor
 * shape), then the tokenizer, which must rebuild and match the config's vocabulary. Throws a
 * CheckpointError naming the problem.
 */
export function validateImport(bytes: Uint8Array): void {
  const model = loadModel(bytes);
  if (model.tokenizer === null) return;
  let tokenizer: Tokenizer;
  try {
    tokenizer = Tokenizer.fromJSON(model.tokenizer);
  } catch (e) {
    throw new CheckpointError(`checkpoint tokenizer is invalid: ${errorText(e)}`);
  }
  if (tokenizer.vocabSize !== model.config.vocabSize) {
    throw new CheckpointError(`checkpoint tokenizer has ${tokenizer.vocabSize} tokens, but config.vocabSize is ${model.config.vocabSize}`);
  }
}

/** A name checkName (src/container/browser.ts) accepts: no "/", "\" or NUL, 1-200 characters, not "." or "..". */
export function sanitiseName(name: string): string {
  let s = name.replace(/[/\\\0]/g, '_').trim();
  if (s.length > 200) {
    const ext = extOf(s);
    s = s.slice(0, 200 - ext.length) + ext;
  }
  return s === '' || s === '.' || s === '..' ? `checkpoint${CHECKPOINT_EXT}` : s;
}

/** `name`, or `base-2.ext`, `base-3.ext`... : the first not in `taken` (names are already sanitised). */
export function uniqueName(name: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(name)) return name;
  const ext = extOf(name);
  const base = name.slice(0, name.length - ext.length);
  for (let i = 2; ; i++) {
    const suffix = `-${i}${ext}`;
    const candidate = base.slice(0, 200 - suffix.length) + suffix;
    if (!used.has(candidate)) return candidate;
  }
}

/** ".crlckpt" of "model.crlckpt"; "" when there is no extension (or only a leading dot). */
function extOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
}

/**
 * A fresh model: the preset's config with vocabSize set to the built-in tokenizer's real size,
 * GPT-2 initialisation from `seed`, no optimizer state; returned encoded as a checkpoint.
 */
export function newModelCheckpoint(preset: PresetName, seed: number): { name: string; bytes: Uint8Array; config: ModelConfig } {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be a non-negative integer, got ${seed}`);
  const tokenizer = corpusTokenizer(MODEL_PRESETS[preset].vocabSize);
  const config: ModelConfig = { ...MODEL_PRESETS[preset], vocabSize: tokenizer.vocabSize };
  const params = initParams(paramTable(config), seed);
  const bytes = saveModel({ config, tokenizer: tokenizer.toJSON(), params, meta: { step: 0, preset, seed, source: 'new model' } });
  return { name: `${preset}-seed${seed}${CHECKPOINT_EXT}`, bytes, config };
}

/** "2 layers, d_model 64, 4 heads, context 128, vocab 427". */
export function configSummary(c: ModelConfig): string {
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
  return `${n(c.nLayer, 'layer')}, d_model ${c.dModel}, ${n(c.nHead, 'head')}, context ${c.contextLength}, vocab ${c.vocabSize}`;
}

/** "1.4 MB", "512 B". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** The meta fields worth a glance, as "key value" pairs; nulls and long values are left out. */
export function metaEntries(meta: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(meta)) {
    if (v === null || v === undefined) continue;
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    if (s.length <= 40) out.push([k, s]);
  }
  return out;
}
