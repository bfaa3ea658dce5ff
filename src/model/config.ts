/**
 * Model configuration: a GPT-2-style decoder (pre-LayerNorm blocks, causal multi-head
 * attention, GELU MLP, tied LM head) plus a scalar value head. Validated field by field.
 *
 * Shape legend used across src/model: B batch, T time, C = dModel, NH = nHead, HS = C / NH,
 * V = vocabSize, L = nLayer, maxT = contextLength.
 */
export interface ModelConfig {
  /** L: number of transformer blocks */
  nLayer: number;
  /** C: model width */
  dModel: number;
  /** NH: attention heads; dModel must be a multiple of nHead */
  nHead: number;
  /** maxT: longest sequence (positions in the position embedding and the KV cache) */
  contextLength: number;
  /** V: vocabulary size (the tokenizer's, specials included) */
  vocabSize: number;
}

const FIELDS: Record<keyof ModelConfig, { min: number; max: number; doc: string }> = {
  nLayer: { min: 1, max: 48, doc: 'transformer blocks' },
  dModel: { min: 8, max: 4096, doc: 'model width' },
  nHead: { min: 1, max: 64, doc: 'attention heads' },
  contextLength: { min: 2, max: 4096, doc: 'context length' },
  vocabSize: { min: 2, max: 65536, doc: 'vocabulary size' },
};

/** Longest head size the attention kernels support. */
export const MAX_HEAD_SIZE = 128;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Checks an untrusted object and returns it as a ModelConfig; errors name the field. */
export function validateModelConfig(input: unknown, where = 'model config'): ModelConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError(`${where}: expected an object with fields ${Object.keys(FIELDS).join(', ')}`);
  }
  const obj = input as Record<string, unknown>;
  const unknown = Object.keys(obj).filter((k) => !(k in FIELDS));
  if (unknown.length) throw new ConfigError(`${where}: unknown field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  const out = {} as ModelConfig;
  for (const [key, f] of Object.entries(FIELDS) as [keyof ModelConfig, (typeof FIELDS)[keyof ModelConfig]][]) {
    const v = obj[key];
    if (v === undefined) throw new ConfigError(`${where}.${key}: missing (${f.doc}, an integer in ${f.min}..${f.max})`);
    if (typeof v !== 'number' || !Number.isInteger(v))
      throw new ConfigError(`${where}.${key}: must be an integer, got ${JSON.stringify(v)}`);
    if (v < f.min || v > f.max) throw new ConfigError(`${where}.${key}: must be in ${f.min}..${f.max}, got ${v}`);
    out[key] = v;
  }
  if (out.dModel % out.nHead !== 0) {
    throw new ConfigError(`${where}.dModel: must be a multiple of nHead (${out.nHead}), got ${out.dModel}`);
  }
  if (out.dModel / out.nHead > MAX_HEAD_SIZE) {
    throw new ConfigError(`${where}.nHead: head size dModel/nHead = ${out.dModel / out.nHead} exceeds ${MAX_HEAD_SIZE}; use more heads`);
  }
  return out;
}

/** Named model sizes; the RL presets pick one. */
export const MODEL_PRESETS = {
  /** trains in minutes on a 2-core CPU */
  tiny: { nLayer: 2, dModel: 64, nHead: 4, contextLength: 128, vocabSize: 512 },
  /** a laptop GPU */
  small: { nLayer: 4, dModel: 128, nHead: 4, contextLength: 256, vocabSize: 1024 },
  /** a desktop GPU */
  medium: { nLayer: 6, dModel: 384, nHead: 6, contextLength: 512, vocabSize: 4096 },
} as const satisfies Record<string, ModelConfig>;
