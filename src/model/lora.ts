/**
 * LoRA on the data-described decoder, in PEFT's terms: a target module is a linear layer named
 * as transformers names it (`q_proj`, `k_proj`, `v_proj`, `o_proj`, `gate_proj`, `up_proj`,
 * `down_proj`; GPT-2's `c_attn`, `c_proj`, `c_fc`), matched as PEFT matches a list entry: the
 * module's name or its last dotted part. Each gets A (r, in) and B (out, r) and adds
 * (alpha / r) * B (A x) to its output after the base layer's (bias included), as PEFT's
 * `Linear.forward` does; GPT-2's Conv1D modules are the same math (PEFT's fan_in_fan_out only
 * changes how a merge lays the delta out).
 *
 * The engine packs q|k|v and gate|up into one matrix each (arch.ts), so a module is a block of
 * rows [r0, r1) of an engine tensor: q_proj the first QD rows of `layers.l.qkv.w`, up_proj the
 * second F rows of `layers.l.up.w`, GPT-2's c_attn all of `qkv.w`. `lm_head` (every family) is the
 * output layer, the engine's `head` or, with tied embeddings, `embed` read as the head: its adapter
 * changes the logits only, as PEFT's on a tied lm_head does (the embedding lookup stays the base's;
 * a merge unties the two, peft.ts mergeLora). Adapters are saved and read in
 * PEFT's on-disk format (adapter_config.json, adapter_model.safetensors with keys
 * `base_model.model.<module path>.lora_A.weight`; checked against the fixtures of
 * scripts/hf-fixtures.py, written after peft 5d602fd's save_and_load.py and LoraConfig).
 * Shape legend: arch.ts; r the rank.
 */
import { archDims, layerTensor, type DecoderArch } from './arch';

export interface LoraConfig {
  /** r: the adapters' rank */
  rank: number;
  /** lora_alpha: the update is scaled by alpha / rank */
  alpha: number;
  /** target modules by transformers' names (default: q_proj and v_proj; GPT-2: c_attn, as PEFT's defaults) */
  targets: string[];
}

/** One adapted linear layer. */
export interface LoraModule {
  /** the module path as the model class names it: model.layers.0.self_attn.q_proj, transformer.h.0.attn.c_attn */
  path: string;
  /** the engine tensor whose output rows it adds to (a weight, arch.ts decoderTensors) */
  engine: string;
  /** its rows [r0, r1) of that tensor's output */
  rows: [number, number];
  inFeatures: number;
  outFeatures: number;
}

export class LoraError extends Error {
  override readonly name = 'LoraError';
}

/** The modules PEFT targets by default for each family (peft/utils/constants.py). */
export const DEFAULT_LORA_TARGETS: Record<DecoderArch['family'], string[]> = {
  gpt2: ['c_attn'],
  llama: ['q_proj', 'v_proj'],
  qwen2: ['q_proj', 'v_proj'],
};

/** Every linear module of an architecture, in layer order, with where it lives in the engine's tensors. */
export function linearModules(a: DecoderArch): LoraModule[] {
  const { dModel: C, dFf: F } = a;
  const { QD, KVD, W } = archDims(a);
  const out: LoraModule[] = [];
  for (let l = 0; l < a.nLayer; l++) {
    const e = (n: string) => layerTensor(l, n);
    const m = (path: string, engine: string, r0: number, r1: number, inFeatures: number) =>
      out.push({ path, engine, rows: [r0, r1], inFeatures, outFeatures: r1 - r0 });
    if (a.family === 'gpt2') {
      const h = `transformer.h.${l}.`;
      m(`${h}attn.c_attn`, e('qkv.w'), 0, W, C);
      m(`${h}attn.c_proj`, e('o.w'), 0, C, QD);
      m(`${h}mlp.c_fc`, e('up.w'), 0, F, C);
      m(`${h}mlp.c_proj`, e('down.w'), 0, C, F);
    } else {
      const h = `model.layers.${l}.`;
      m(`${h}self_attn.q_proj`, e('qkv.w'), 0, QD, C);
      m(`${h}self_attn.k_proj`, e('qkv.w'), QD, QD + KVD, C);
      m(`${h}self_attn.v_proj`, e('qkv.w'), QD + KVD, W, C);
      m(`${h}self_attn.o_proj`, e('o.w'), 0, C, QD);
      m(`${h}mlp.gate_proj`, e('up.w'), 0, F, C);
      m(`${h}mlp.up_proj`, e('up.w'), F, 2 * F, C);
      m(`${h}mlp.down_proj`, e('down.w'), 0, C, F);
    }
  }
  out.push({ path: 'lm_head', engine: headTensor(a), rows: [0, a.vocabSize], inFeatures: C, outFeatures: a.vocabSize });
  return out;
}

/** The engine tensor the LM head reads: `head`, or `embed` with tied embeddings. */
export const headTensor = (a: DecoderArch): 'embed' | 'head' => (a.tiedEmbeddings ? 'embed' : 'head');

/** PEFT's list matching: the whole module path, or a `.`-suffix of it (check_target_module_exists). */
export function matchesTarget(path: string, target: string): boolean {
  return path === target || path.endsWith(`.${target}`);
}

/** Checks a LoRA config against an architecture and returns the modules it adapts; errors name the field. */
export function loraModules(a: DecoderArch, cfg: LoraConfig, where = 'lora'): LoraModule[] {
  if (!Number.isInteger(cfg.rank) || cfg.rank < 1 || cfg.rank > 1024)
    throw new LoraError(`${where}.rank: must be an integer in 1..1024, got ${cfg.rank}`);
  if (!(cfg.alpha > 0) || !Number.isFinite(cfg.alpha)) throw new LoraError(`${where}.alpha: must be a positive number, got ${cfg.alpha}`);
  if (!Array.isArray(cfg.targets) || cfg.targets.length === 0) throw new LoraError(`${where}.targets: give at least one module name`);
  const all = linearModules(a);
  const names = [...new Set(all.map((m) => m.path.split('.').pop()!))];
  const chosen: LoraModule[] = [];
  for (const t of cfg.targets) {
    const hit = all.filter((m) => matchesTarget(m.path, t));
    if (!hit.length)
      throw new LoraError(`${where}.targets: "${t}" names no linear module of ${a.hfArchitecture} (its modules: ${names.join(', ')})`);
    for (const m of hit) if (!chosen.includes(m)) chosen.push(m);
  }
  return all.filter((m) => chosen.includes(m)); // layer order
}

/** The keys PEFT saves for a module's adapters (the adapter name is not in them). */
export function peftKeys(m: LoraModule): { A: string; B: string } {
  return { A: `base_model.model.${m.path}.lora_A.weight`, B: `base_model.model.${m.path}.lora_B.weight` };
}

/** alpha / r (PEFT without rslora). */
export const loraScaling = (cfg: LoraConfig): number => cfg.alpha / cfg.rank;

/**
 * PEFT's default initialisation (init_lora_weights = true): A kaiming-uniform with a = sqrt(5),
 * which is uniform(-1/sqrt(in), 1/sqrt(in)), and B zero, so training starts from the base model.
 */
export function initLoraAdapters(
  modules: readonly LoraModule[],
  rank: number,
  rng: { next(): number },
): { A: Float32Array[]; B: Float32Array[] } {
  return {
    A: modules.map((m) => Float32Array.from({ length: rank * m.inFeatures }, () => (2 * rng.next() - 1) / Math.sqrt(m.inFeatures))),
    B: modules.map((m) => new Float32Array(m.outFeatures * rank)),
  };
}
