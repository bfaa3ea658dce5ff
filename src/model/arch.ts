import type { ModelConfig } from './config';
/**
 * A decoder architecture as data: which norm, which positions, which MLP, which biases, how
 * many key/value heads. GPT-2, Llama (SmolLM2) and Qwen2 are three values of `DecoderArch`, read
 * from a Hugging Face `config.json` by `archFromHfConfig`; one CPU model (decoder-cpu.ts) and one
 * GPU model (decoder-gpu.ts) run all of them, switching on these fields, not forking per model
 * (as transformers' own Llama and Qwen2 differ by `attention_bias` and a few defaults).
 *
 * Shape legend (src/model/decoder-*.ts): B batch, T time, C = dModel, NH query heads, NKV
 * key/value heads (NH % NKV == 0), HS head size, QD = NH*HS, KVD = NKV*HS, W = QD + 2*KVD the
 * packed q|k|v row, F = dFf the MLP's hidden width, V vocabSize, L nLayer, maxT maxPositions.
 */
import { LAYERNORM_EPS } from '../kernels/layernorm';
import { weightBytes, type WeightFormat } from '../kernels/weight_format';

export type ArchFamily = 'gpt2' | 'llama' | 'qwen2';

export interface DecoderArch {
  /** the Hugging Face architecture it was read from (config.json `architectures[0]`) */
  hfArchitecture: 'GPT2LMHeadModel' | 'LlamaForCausalLM' | 'Qwen2ForCausalLM';
  family: ArchFamily;
  /** L */
  nLayer: number;
  /** C */
  dModel: number;
  /** NH */
  nHead: number;
  /** NKV: grouped-query attention when < nHead */
  nKvHead: number;
  /** HS */
  headDim: number;
  /** F: the MLP's hidden width */
  dFf: number;
  /** V: the model's vocabulary (the embedding's rows; may exceed the tokenizer's) */
  vocabSize: number;
  /** maxT: positions the model was trained for (learned positions: the table's rows) */
  maxPositions: number;
  /** LayerNorm (weight and bias) or RMSNorm (weight only); eps from the config */
  norm: { kind: 'layernorm' | 'rmsnorm'; eps: number };
  /** learned position table added to the embedding, or rotary embedding of q and k */
  positions: { kind: 'learned' } | { kind: 'rope'; theta: number };
  /** GPT-2's tanh-GELU MLP (up, gelu, down) or SwiGLU (silu(gate) * up, down) */
  mlp: 'gelu' | 'swiglu';
  /** which linear layers carry a bias */
  bias: { qkv: boolean; o: boolean; mlp: boolean };
  /** the LM head is the embedding (no separate lm_head tensor) */
  tiedEmbeddings: boolean;
}

export class ArchError extends Error {
  override readonly name = 'ArchError';
}

/** What the engine runs: the limits its kernels have (attention: head size; rope: even head size). */
export const MAX_ARCH_HEAD_DIM = 256;

type Json = Record<string, unknown>;

/** Reads config.json fields with errors that name the file and the field. */
class Fields {
  constructor(
    private readonly obj: Json,
    private readonly file: string,
  ) {}

  fail(field: string, what: string): never {
    throw new ArchError(`${this.file}: ${field}: ${what}`);
  }

  raw(field: string): unknown {
    return this.obj[field];
  }

  has(field: string): boolean {
    return this.obj[field] !== undefined && this.obj[field] !== null;
  }

  int(field: string, fallback?: number, min = 1): number {
    const v = this.obj[field];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      this.fail(field, 'missing (a positive integer)');
    }
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(field, `must be an integer, got ${JSON.stringify(v)}`);
    if (v < min) this.fail(field, `must be at least ${min}, got ${v}`);
    return v;
  }

  num(field: string, fallback?: number): number {
    const v = this.obj[field];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      this.fail(field, 'missing (a positive number)');
    }
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.fail(field, `must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  }

  bool(field: string, fallback: boolean): boolean {
    const v = this.obj[field];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') this.fail(field, `must be true or false, got ${JSON.stringify(v)}`);
    return v;
  }

  str(field: string, fallback?: string): string {
    const v = this.obj[field];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      this.fail(field, 'missing (a string)');
    }
    if (typeof v !== 'string') this.fail(field, `must be a string, got ${JSON.stringify(v)}`);
    return v;
  }

  /** Refuses a value the engine does not implement, naming what it does. */
  only<T>(field: string, value: T, allowed: readonly T[], why: string): void {
    if (!allowed.includes(value)) this.fail(field, `${JSON.stringify(value)} is not supported (${why})`);
  }
}

const ARCHITECTURES = {
  GPT2LMHeadModel: 'gpt2',
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
} as const satisfies Record<DecoderArch['hfArchitecture'], ArchFamily>;

/**
 * A Hugging Face config.json (parsed) as a DecoderArch, following the fields and defaults of
 * transformers' GPT2Config, LlamaConfig and Qwen2Config. Anything the engine would compute
 * differently from transformers is refused, naming the field: another activation, rope_scaling,
 * sliding-window attention, GPT-2's layer-index attention scaling.
 */
export function archFromHfConfig(input: unknown, file = 'config.json'): DecoderArch {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ArchError(`${file}: expected a JSON object (a Hugging Face model config)`);
  }
  const f = new Fields(input as Json, file);
  const archs = (input as Json).architectures;
  if (!Array.isArray(archs) || archs.length === 0 || typeof archs[0] !== 'string') {
    f.fail('architectures', `missing: expected one of ${Object.keys(ARCHITECTURES).join(', ')}`);
  }
  const hfArchitecture = (archs as string[])[0]!;
  if (!(hfArchitecture in ARCHITECTURES)) {
    f.fail('architectures', `"${hfArchitecture}" is not supported; the lab loads ${Object.keys(ARCHITECTURES).join(', ')}`);
  }
  const family = ARCHITECTURES[hfArchitecture as keyof typeof ARCHITECTURES];
  const modelType = f.str('model_type', family);
  if (modelType !== family) f.fail('model_type', `"${modelType}" disagrees with architectures[0] ${hfArchitecture} (expected "${family}")`);
  const arch = family === 'gpt2' ? gpt2Arch(f) : llamaArch(f, family);
  return checkArch(arch, file);
}

function gpt2Arch(f: Fields): DecoderArch {
  const C = f.int('n_embd');
  const act = f.str('activation_function', 'gelu_new');
  f.only('activation_function', act, ['gelu_new', 'gelu_pytorch_tanh'], "the engine's GELU is GPT-2's tanh approximation");
  if (f.bool('scale_attn_by_inverse_layer_idx', false)) f.fail('scale_attn_by_inverse_layer_idx', 'true is not supported');
  if (!f.bool('scale_attn_weights', true)) f.fail('scale_attn_weights', 'false is not supported (scores are scaled by 1/sqrt(head size))');
  const NH = f.int('n_head');
  return {
    hfArchitecture: 'GPT2LMHeadModel',
    family: 'gpt2',
    nLayer: f.int('n_layer'),
    dModel: C,
    nHead: NH,
    nKvHead: NH,
    headDim: C / NH,
    dFf: f.int('n_inner', 4 * C),
    vocabSize: f.int('vocab_size'),
    maxPositions: f.int('n_positions'),
    norm: { kind: 'layernorm', eps: layernormEps(f) },
    positions: { kind: 'learned' },
    mlp: 'gelu',
    bias: { qkv: true, o: true, mlp: true },
    tiedEmbeddings: f.bool('tie_word_embeddings', true),
  };
}

/** GPT-2's LayerNorm eps: the engine's LayerNorm kernel has GPT-2's 1e-5 built in (kernels/layernorm.ts). */
function layernormEps(f: Fields): number {
  const eps = f.num('layer_norm_epsilon', LAYERNORM_EPS);
  if (Math.abs(eps - LAYERNORM_EPS) > 1e-12)
    f.fail('layer_norm_epsilon', `${eps} is not supported (the LayerNorm kernels use ${LAYERNORM_EPS}, as GPT-2 does)`);
  return eps;
}

function llamaArch(f: Fields, family: 'llama' | 'qwen2'): DecoderArch {
  const C = f.int('hidden_size');
  const NH = f.int('num_attention_heads');
  const act = f.str('hidden_act', 'silu');
  f.only('hidden_act', act, ['silu'], 'the SwiGLU MLP uses silu');
  if (f.has('rope_scaling')) {
    const rs = f.raw('rope_scaling');
    const type = typeof rs === 'object' && rs !== null ? ((rs as Json).rope_type ?? (rs as Json).type) : rs;
    if (type !== 'default') f.fail('rope_scaling', `${JSON.stringify(rs)} is not supported (plain RoPE only: rope_scaling null)`);
  }
  if (family === 'qwen2' && f.bool('use_sliding_window', false)) {
    f.fail('use_sliding_window', 'true is not supported (full attention only)');
  }
  const bias = family === 'qwen2' ? true : f.bool('attention_bias', false);
  return {
    hfArchitecture: family === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM',
    family,
    nLayer: f.int('num_hidden_layers'),
    dModel: C,
    nHead: NH,
    nKvHead: f.int('num_key_value_heads', NH),
    headDim: f.int('head_dim', Number.isInteger(C / NH) ? C / NH : undefined),
    dFf: f.int('intermediate_size'),
    vocabSize: f.int('vocab_size'),
    maxPositions: f.int('max_position_embeddings', 2048),
    norm: { kind: 'rmsnorm', eps: f.num('rms_norm_eps', 1e-6) },
    positions: { kind: 'rope', theta: ropeTheta(f) },
    mlp: 'swiglu',
    // Llama's attention_bias covers q, k, v and o; Qwen2 has q/k/v biases and none on o
    bias: { qkv: bias, o: family === 'qwen2' ? false : bias, mlp: family === 'llama' ? f.bool('mlp_bias', false) : false },
    tiedEmbeddings: f.bool('tie_word_embeddings', false),
  };
}

/**
 * rope_theta, top-level as checkpoints write it, or inside transformers v5's rope_parameters
 * ({rope_type, rope_theta}), where only the default rope_type is implemented.
 */
function ropeTheta(f: Fields): number {
  const rp = f.raw('rope_parameters');
  if (rp !== undefined && rp !== null) {
    if (typeof rp !== 'object' || Array.isArray(rp)) f.fail('rope_parameters', `must be an object, got ${JSON.stringify(rp)}`);
    const { rope_type: type = 'default', rope_theta: theta } = rp as Json;
    if (type !== 'default') f.fail('rope_parameters.rope_type', `${JSON.stringify(type)} is not supported (plain RoPE only)`);
    if (!f.has('rope_theta') && theta !== undefined) {
      if (typeof theta !== 'number' || !(theta > 0))
        f.fail('rope_parameters.rope_theta', `must be a positive number, got ${JSON.stringify(theta)}`);
      return theta;
    }
  }
  return f.num('rope_theta', 10000);
}

/** Shape rules every DecoderArch must satisfy (also for one built by hand, e.g. from a lab checkpoint). */
export function checkArch(a: DecoderArch, file = 'config'): DecoderArch {
  const fail = (field: string, what: string): never => {
    throw new ArchError(`${file}: ${field}: ${what}`);
  };
  const [heads, kvHeads, width] =
    a.family === 'gpt2' ? ['n_head', 'n_head', 'n_embd'] : ['num_attention_heads', 'num_key_value_heads', 'hidden_size'];
  if (a.family === 'gpt2' && a.dModel % a.nHead !== 0) fail(heads, `n_embd ${a.dModel} is not a multiple of n_head ${a.nHead}`);
  if (a.nHead % a.nKvHead !== 0) fail(kvHeads, `${a.nKvHead} does not divide ${heads} ${a.nHead}`);
  if (a.headDim > MAX_ARCH_HEAD_DIM) fail('head_dim', `${a.headDim} exceeds the ${MAX_ARCH_HEAD_DIM} the attention kernels serve`);
  if (a.positions.kind === 'rope' && a.headDim % 2 !== 0) fail('head_dim', `${a.headDim} is odd; rotary embedding needs an even head size`);
  for (const [k, v] of Object.entries({
    nLayer: a.nLayer,
    dModel: a.dModel,
    dFf: a.dFf,
    vocabSize: a.vocabSize,
    maxPositions: a.maxPositions,
  }))
    if (!Number.isInteger(v) || v < 1) fail(k === 'dModel' ? width : k, `must be a positive integer, got ${v}`);
  return a;
}

/** A few words for logs and panels: "Qwen2ForCausalLM: 24 layers, d_model 896, 14 heads (2 kv), ffn 4864, vocab 151936". */
export function describeArch(a: DecoderArch): string {
  const kv = a.nKvHead === a.nHead ? '' : ` (${a.nKvHead} kv)`;
  return `${a.hfArchitecture}: ${a.nLayer} layers, d_model ${a.dModel}, ${a.nHead} heads${kv} of ${a.headDim}, ffn ${a.dFf}, vocab ${a.vocabSize}`;
}

/** Sizes derived once: QD, KVD, W (packed q|k|v row), the MLP's first matmul's outputs. */
export function archDims(a: DecoderArch): { QD: number; KVD: number; W: number; up: number } {
  const QD = a.nHead * a.headDim;
  const KVD = a.nKvHead * a.headDim;
  return { QD, KVD, W: QD + 2 * KVD, up: a.mlp === 'swiglu' ? 2 * a.dFf : a.dFf };
}

/** One tensor of the engine's layout. */
export interface DecoderTensorSpec {
  name: string;
  shape: number[];
}

/** Names of layer l's tensors. */
export const layerTensor = (l: number, name: string): string => `layers.${l}.${name}`;

/**
 * The engine's tensors, in load order. Linear weights are (out, in) as torch.nn.Linear keeps
 * them (GPT-2's Conv1D (in, out) weights are transposed on load). q, k and v are one packed
 * `qkv` matrix (W, C) and SwiGLU's gate and up one `up` matrix (2F, C), gate rows first, as vLLM
 * fuses them (`qkv_proj`, `gate_up_proj`): one matmul each instead of three and two.
 */
export function decoderTensors(a: DecoderArch): DecoderTensorSpec[] {
  const { dModel: C, vocabSize: V, maxPositions: maxT, dFf: F } = a;
  const { QD, W, up } = archDims(a);
  const out: DecoderTensorSpec[] = [{ name: 'embed', shape: [V, C] }];
  if (a.positions.kind === 'learned') out.push({ name: 'pos', shape: [maxT, C] });
  const ln = a.norm.kind === 'layernorm';
  for (let l = 0; l < a.nLayer; l++) {
    const t = (name: string, shape: number[]) => out.push({ name: layerTensor(l, name), shape });
    t('norm1.w', [C]);
    if (ln) t('norm1.b', [C]);
    t('qkv.w', [W, C]);
    if (a.bias.qkv) t('qkv.b', [W]);
    t('o.w', [C, QD]);
    if (a.bias.o) t('o.b', [C]);
    t('norm2.w', [C]);
    if (ln) t('norm2.b', [C]);
    t('up.w', [up, C]);
    if (a.bias.mlp) t('up.b', [up]);
    t('down.w', [C, F]);
    if (a.bias.mlp) t('down.b', [C]);
  }
  out.push({ name: 'normf.w', shape: [C] });
  if (ln) out.push({ name: 'normf.b', shape: [C] });
  if (!a.tiedEmbeddings) out.push({ name: 'head', shape: [V, C] });
  return out;
}

/** Parameters of an architecture (what the tensors hold). */
export function archParameterCount(a: DecoderArch): number {
  return decoderTensors(a).reduce((s, t) => s + t.shape.reduce((x, y) => x * y, 1), 0);
}

/**
 * GPU bytes of the weights with the matrices (2-D tensors) stored in `format` and the rest f32, as
 * DecoderGpu stores them (a 16-bit embedding split into several chunks pads each to whole words:
 * at most 2 bytes a chunk more).
 */
export function archWeightBytes(a: DecoderArch, format: WeightFormat = 'f32'): number {
  return decoderTensors(a).reduce(
    (s, t) =>
      s +
      weightBytes(
        t.shape.reduce((x, y) => x * y, 1),
        t.shape.length === 2 ? format : 'f32',
      ),
    0,
  );
}

/** The lab's ModelConfig of an architecture at a run's context: layers, width, heads, the model's vocabulary. */
export function archModelConfig(a: DecoderArch, contextLength: number): ModelConfig {
  return { nLayer: a.nLayer, dModel: a.dModel, nHead: a.nHead, contextLength, vocabSize: a.vocabSize };
}
