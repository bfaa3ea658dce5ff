/**
 * PEFT LoRA adapters on disk: `adapter_config.json` and `adapter_model.safetensors`, the format
 * people exchange (peft's LoraConfig and save_and_load.py; the fixtures of scripts/hf-fixtures.py
 * were written after peft 5d602fd). Reading checks the config against what the engine computes
 * (plain LoRA: no DoRA, rsLoRA, per-module rank or alpha patterns, bias training, extra saved
 * modules) and every tensor against the base model's modules, naming the file and the field or
 * tensor. Writing gives PEFT's field set, sorted keys and 2-space indent as PEFT writes them.
 * Merging adds (alpha / r) B A into the base weights, for an HF folder of the merged model (a
 * tied lm_head's adapter unties the head).
 */
import type { DecoderArch } from '../model/arch';
import { loraModules, loraScaling, peftKeys, type LoraConfig, type LoraModule } from '../model/lora';
import { readSafetensors, writeSafetensors } from '../model/safetensors';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

export class PeftError extends Error {
  override readonly name = 'PeftError';
}

/** A LoRA adapter: its config, the modules it adapts (layer order) and A (r, in), B (out, r) for each. */
export interface LoraAdapter {
  config: LoraConfig;
  modules: LoraModule[];
  A: Float32Array[];
  B: Float32Array[];
}

/** Settings PEFT can hold that this engine does not compute; each must have its default. */
const UNSUPPORTED_IF_SET: [field: string, allowed: (v: unknown) => boolean, why: string][] = [
  ['use_dora', (v) => v === false || v == null, 'DoRA'],
  ['use_rslora', (v) => v === false || v == null, 'rsLoRA scaling (alpha / sqrt(r))'],
  ['use_qalora', (v) => v === false || v == null, 'QA-LoRA'],
  ['bias', (v) => v === 'none' || v == null, 'trained biases'],
  ['lora_bias', (v) => v === false || v == null, 'a bias on lora_B'],
  ['modules_to_save', (v) => v == null || (Array.isArray(v) && v.length === 0), 'fully trained extra modules'],
  ['rank_pattern', (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0), 'per-module ranks'],
  ['alpha_pattern', (v) => v == null || (typeof v === 'object' && Object.keys(v).length === 0), 'per-module alphas'],
  ['layers_to_transform', (v) => v == null, 'a subset of layers'],
  ['exclude_modules', (v) => v == null, 'excluded modules'],
  ['layer_replication', (v) => v == null, 'replicated layers'],
  ['trainable_token_indices', (v) => v == null, 'trained token rows'],
  ['target_parameters', (v) => v == null, 'adapters on parameters'],
];

/** adapter_config.json (parsed) as a LoraConfig, checked: only plain LoRA on linear modules named in a list. */
export function loraConfigFromPeft(json: unknown, where = ADAPTER_CONFIG): LoraConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new PeftError(`${where}: expected a JSON object (a PEFT adapter config)`);
  const c = json as Record<string, unknown>;
  const fail = (field: string, what: string): never => {
    throw new PeftError(`${where}: ${field}: ${what}`);
  };
  if (c.peft_type !== 'LORA') fail('peft_type', `${JSON.stringify(c.peft_type)} is not supported (LoRA adapters only)`);
  for (const [field, ok, why] of UNSUPPORTED_IF_SET)
    if (!ok(c[field])) fail(field, `${JSON.stringify(c[field])} asks for ${why}, which the lab does not compute`);
  // lora_dropout acts only while training (the lab trains with none); an adapter trained with it evaluates the same
  const r = c.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1) fail('r', `must be a positive integer, got ${JSON.stringify(r)}`);
  const alpha = c.lora_alpha;
  if (typeof alpha !== 'number' || !(alpha > 0)) fail('lora_alpha', `must be a positive number, got ${JSON.stringify(alpha)}`);
  const t = c.target_modules;
  if (typeof t === 'string')
    fail('target_modules', `a regular expression (${JSON.stringify(t)}) is not supported: give the module names as a list`);
  if (!Array.isArray(t) || t.length === 0 || t.some((x) => typeof x !== 'string'))
    fail('target_modules', `must be a list of module names, got ${JSON.stringify(t)}`);
  return { rank: r as number, alpha: alpha as number, targets: [...(t as string[])] };
}

/** Reads an adapter for a base architecture; every saved tensor must be one of its modules' A or B, of the right shape, and none missing. */
export function readLoraAdapter(a: DecoderArch, configJson: unknown, weights: Uint8Array, folder = 'adapter'): LoraAdapter {
  const config = loraConfigFromPeft(configJson, `${folder}/${ADAPTER_CONFIG}`);
  let modules: LoraModule[];
  try {
    modules = loraModules(a, config, `${folder}/${ADAPTER_CONFIG}`);
  } catch (e) {
    throw new PeftError(e instanceof Error ? e.message : String(e), { cause: e });
  }
  const file = `${folder}/${ADAPTER_WEIGHTS}`;
  const tensors = readSafetensors(weights, file).tensors;
  const used = new Set<string>();
  const take = (key: string, shape: [number, number], what: string): Float32Array => {
    const t = tensors.get(key);
    if (!t) throw new PeftError(`${file}: missing tensor ${key} (${what} of a module the config targets)`);
    if (t.shape.length !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1])
      throw new PeftError(
        `${file}: tensor ${key} has shape [${t.shape.join(', ')}], the base model and r = ${config.rank} give [${shape.join(', ')}]`,
      );
    used.add(key);
    return t.data;
  };
  const A = modules.map((m) => take(peftKeys(m).A, [config.rank, m.inFeatures], 'lora_A (r, in)'));
  const B = modules.map((m) => take(peftKeys(m).B, [m.outFeatures, config.rank], 'lora_B (out, r)'));
  const extra = [...tensors.keys()].filter((k) => !used.has(k));
  if (extra.length)
    throw new PeftError(
      `${file}: tensor ${extra[0]} is not an adapter of a module the config targets on ${a.hfArchitecture}${extra.length > 1 ? ` (and ${extra.length - 1} more)` : ''}`,
    );
  return { config, modules, A, B };
}

/** adapter_config.json as PEFT writes it for this adapter (its field set, sorted keys, indent 2, no trailing newline). */
export function peftConfigJson(adapter: LoraAdapter, baseModel: string, arch: DecoderArch): string {
  const fields: Record<string, unknown> = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModel,
    bias: 'none',
    exclude_modules: null,
    fan_in_fan_out: arch.family === 'gpt2', // PEFT sets it for GPT-2's Conv1D modules
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: adapter.config.alpha,
    lora_bias: false,
    lora_dropout: 0,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    r: adapter.config.rank,
    rank_pattern: {},
    revision: null,
    target_modules: [...adapter.config.targets].sort(),
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: false,
  };
  const sorted = Object.fromEntries(
    Object.keys(fields)
      .sort()
      .map((k) => [k, fields[k]]),
  );
  return JSON.stringify(sorted, null, 2);
}

/** The adapter's two files (name -> bytes). */
export function loraAdapterFiles(adapter: LoraAdapter, baseModel: string, arch: DecoderArch): Map<string, Uint8Array> {
  const tensors = adapter.modules.flatMap((m, i) => [
    { name: peftKeys(m).A, shape: [adapter.config.rank, m.inFeatures], data: adapter.A[i]! },
    { name: peftKeys(m).B, shape: [m.outFeatures, adapter.config.rank], data: adapter.B[i]! },
  ]);
  return new Map<string, Uint8Array>([
    [ADAPTER_CONFIG, new TextEncoder().encode(peftConfigJson(adapter, baseModel, arch))],
    [ADAPTER_WEIGHTS, writeSafetensors(tensors)],
  ]);
}

/**
 * The base model with the adapter merged in: W[r0:r1] += (alpha / r) B A (copies; the base is not
 * changed). An lm_head adapter on a model with tied embeddings is merged into a head of its own
 * and the returned architecture is untied: merged into the shared tensor it would change the
 * embedding lookup too, which the adapted model does not (PEFT's merge on a tied lm_head does).
 */
export function mergeLora(
  arch: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
  adapter: LoraAdapter,
): { arch: DecoderArch; weights: Map<string, Float32Array> } {
  const out = new Map(weights);
  const untie = arch.tiedEmbeddings && adapter.modules.some((m) => m.path === 'lm_head');
  if (untie) out.set('head', Float32Array.from(weights.get('embed')!));
  const s = loraScaling(adapter.config);
  const r = adapter.config.rank;
  adapter.modules.forEach((m, i) => {
    const engine = untie && m.path === 'lm_head' ? 'head' : m.engine;
    const base = out.get(engine);
    if (!base) throw new Error(`mergeLora: no engine tensor ${engine}`);
    const w = base === weights.get(engine) ? Float32Array.from(base) : base; // copy once per tensor
    out.set(engine, w);
    const K = m.inFeatures;
    const [r0, r1] = m.rows;
    const A = adapter.A[i]!;
    const B = adapter.B[i]!;
    for (let o = r0; o < r1; o++)
      for (let k = 0; k < K; k++) {
        let sum = 0;
        for (let j = 0; j < r; j++) sum += B[(o - r0) * r + j]! * A[j * K + k]!;
        w[o * K + k]! += s * sum;
      }
  });
  return { arch: untie ? { ...arch, tiedEmbeddings: false } : arch, weights: out };
}
