/**
 * A model checkpoint: config, tokenizer, every parameter tensor by name and shape (from the
 * parameter table, without the slab's padding), and optionally the AdamW state, in the
 * versioned binary container of src/container. Loading validates the config and checks every
 * tensor against the table the config implies.
 */
import { readSafetensors } from './safetensors';
import { assertCompatible, CheckpointError, decodeCheckpoint, encodeCheckpoint, type TensorInput } from '../container';
import { validateModelConfig, type ModelConfig } from './config';
import { paramTable, type ParamTable } from './params';
import { errorText } from '../util/errors';

export interface OptimizerState {
  /** (P) first moments, slab layout */
  m: Float32Array<ArrayBuffer>;
  /** (P) second moments, slab layout */
  v: Float32Array<ArrayBuffer>;
  step: number;
}

export interface ModelSnapshot {
  config: ModelConfig;
  /** Tokenizer.toJSON(), or null for a model without one */
  tokenizer: unknown;
  /** (P) parameters in slab layout */
  params: Float32Array;
  optimizer?: OptimizerState | null;
  meta?: Record<string, unknown>;
}

const param = (name: string) => `param/${name}`;

export function saveModel(s: ModelSnapshot): Uint8Array {
  const table = paramTable(s.config);
  checkSlab(table, s.params, 'params');
  const tensors: Record<string, TensorInput> = {};
  for (const e of table.entries) tensors[param(e.name)] = { data: s.params.subarray(e.offset, e.offset + e.size), shape: e.shape };
  if (s.optimizer) {
    checkSlab(table, s.optimizer.m, 'optimizer.m');
    checkSlab(table, s.optimizer.v, 'optimizer.v');
    tensors['optim/m'] = { data: s.optimizer.m, shape: [table.total] };
    tensors['optim/v'] = { data: s.optimizer.v, shape: [table.total] };
  }
  const meta = { ...s.meta, optimizerStep: s.optimizer?.step ?? null };
  return encodeCheckpoint({ config: { ...s.config }, tokenizer: s.tokenizer, meta, tensors });
}

/** Decodes and validates a checkpoint; `expect` (a config) turns any difference into an error that lists it. */
export function loadModel(bytes: Uint8Array, expect?: ModelConfig): ModelSnapshot {
  if (isImportedModelCheckpoint(bytes))
    throw new CheckpointError(
      "this is a checkpoint of a run on an imported Hugging Face model (coderl train --model DIR), not of the lab's GPT: " +
        'evaluate it with its base model (coderl export-hf --model DIR --checkpoint C --out A, then coderl eval --model DIR --adapter A)',
    );
  const d = decodeCheckpoint(bytes);
  let config: ModelConfig;
  try {
    config = validateModelConfig(d.config, 'checkpoint config');
  } catch (e) {
    throw new CheckpointError(errorText(e));
  }
  const table = paramTable(config);
  const shapes: Record<string, number[]> = {};
  for (const e of table.entries) shapes[param(e.name)] = e.shape;
  const hasOptim = 'optim/m' in d.tensors;
  if (hasOptim) shapes['optim/m'] = shapes['optim/v'] = [table.total];
  assertCompatible(d, { config: expect ? { ...expect } : undefined, tensors: shapes });
  for (const [name, t] of Object.entries(d.tensors)) {
    if (t.dtype !== 'f32') throw new CheckpointError(`tensor "${name}" has dtype ${t.dtype}; model tensors are f32`);
  }
  const params = new Float32Array(table.total);
  for (const e of table.entries) params.set(d.tensors[param(e.name)]!.data as Float32Array, e.offset);
  const meta = (d.meta ?? {}) as Record<string, unknown>;
  const step = typeof meta.optimizerStep === 'number' ? meta.optimizerStep : 0;
  const optimizer = hasOptim
    ? { m: Float32Array.from(d.tensors['optim/m']!.data), v: Float32Array.from(d.tensors['optim/v']!.data), step }
    : null;
  return { config, tokenizer: d.tokenizer, params, optimizer, meta };
}

function checkSlab(table: ParamTable, slab: Float32Array, what: string): void {
  if (slab.length !== table.total)
    throw new Error(`saveModel: ${what} has ${slab.length} floats, the parameter table needs ${table.total}`);
}

/** Whether bytes are a policy checkpoint of an imported model (policy/hf-train.ts: safetensors whose metadata names coderl-hf-policy). */
function isImportedModelCheckpoint(bytes: Uint8Array): boolean {
  try {
    return /^coderl-hf-policy\//.test(readSafetensors(bytes, 'checkpoint').metadata['format'] ?? '');
  } catch {
    return false;
  }
}
