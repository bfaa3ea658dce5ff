/**
 * Writes a Hugging Face model folder: config.json in transformers' field names for the family,
 * model.safetensors (F32, HF tensor names and layouts: model/hf-weights.ts weightsToHf),
 * tokenizer.json, tokenizer_config.json and generation_config.json. Used for a lab checkpoint
 * (a GPT2LMHeadModel: the lab's GPT is that architecture) and for an imported model.
 *
 * A lab checkpoint's value head is not part of GPT2LMHeadModel and is left out (the ONNX export
 * keeps it); its tokenizer goes out through tokenizer/export-hf.ts.
 */
import type { ModelConfig } from '../model/config';
import { checkArch, type DecoderArch } from '../model/arch';
import { LAYERNORM_EPS } from '../kernels/layernorm';
import { weightsToHf } from '../model/hf-weights';
import { layerParam, paramTable, view } from '../model/params';
import { writeSafetensors } from '../model/safetensors';
import { HF_FILES } from './folder';

/** The lab GPT of `cfg` as a GPT2LMHeadModel (pre-LayerNorm, tanh GELU, learned positions, tied head). */
export function labArch(cfg: ModelConfig): DecoderArch {
  return checkArch(
    {
      hfArchitecture: 'GPT2LMHeadModel',
      family: 'gpt2',
      nLayer: cfg.nLayer,
      dModel: cfg.dModel,
      nHead: cfg.nHead,
      nKvHead: cfg.nHead,
      headDim: cfg.dModel / cfg.nHead,
      dFf: 4 * cfg.dModel,
      vocabSize: cfg.vocabSize,
      maxPositions: cfg.contextLength,
      norm: { kind: 'layernorm', eps: LAYERNORM_EPS },
      positions: { kind: 'learned' },
      mlp: 'gelu',
      bias: { qkv: true, o: true, mlp: true },
      tiedEmbeddings: true,
    },
    'lab model config',
  );
}

/** The lab parameter slab (model/params.ts) as the engine's tensors of labArch(cfg); the value head is dropped. */
export function labWeights(cfg: ModelConfig, params: Float32Array): Map<string, Float32Array> {
  const table = paramTable(cfg);
  if (params.length !== table.total) throw new Error(`labWeights: the slab has ${params.length} floats, the table needs ${table.total}`);
  const t = (name: string) => Float32Array.from(view(table, params, name));
  const out = new Map<string, Float32Array>([
    ['embed', t('wte')],
    ['pos', t('wpe')],
  ]);
  const names: [string, string][] = [
    ['norm1.w', 'ln1w'],
    ['norm1.b', 'ln1b'],
    ['qkv.w', 'qkvw'],
    ['qkv.b', 'qkvb'],
    ['o.w', 'attprojw'],
    ['o.b', 'attprojb'],
    ['norm2.w', 'ln2w'],
    ['norm2.b', 'ln2b'],
    ['up.w', 'fcw'],
    ['up.b', 'fcb'],
    ['down.w', 'fcprojw'],
    ['down.b', 'fcprojb'],
  ];
  for (let l = 0; l < cfg.nLayer; l++) for (const [e, lab] of names) out.set(`layers.${l}.${e}`, t(layerParam(l, lab)));
  out.set('normf.w', t('lnfw'));
  out.set('normf.b', t('lnfb'));
  return out;
}

/** transformers' config.json for an architecture (the fields its Config class reads). */
export function hfConfigJson(a: DecoderArch, ids: { bos: number | null; eos: number | null }): Record<string, unknown> {
  const common = {
    architectures: [a.hfArchitecture],
    model_type: a.family,
    torch_dtype: 'float32',
    vocab_size: a.vocabSize,
    bos_token_id: ids.bos,
    eos_token_id: ids.eos,
  };
  if (a.family === 'gpt2') {
    return {
      ...common,
      n_layer: a.nLayer,
      n_embd: a.dModel,
      n_head: a.nHead,
      n_positions: a.maxPositions,
      n_ctx: a.maxPositions,
      n_inner: a.dFf === 4 * a.dModel ? null : a.dFf,
      activation_function: 'gelu_new',
      layer_norm_epsilon: a.norm.eps,
      resid_pdrop: 0,
      embd_pdrop: 0,
      attn_pdrop: 0,
      scale_attn_weights: true,
      tie_word_embeddings: a.tiedEmbeddings,
      use_cache: true,
    };
  }
  if (a.positions.kind !== 'rope') throw new Error(`hfConfigJson: ${a.hfArchitecture} needs rotary positions`);
  return {
    ...common,
    hidden_size: a.dModel,
    intermediate_size: a.dFf,
    num_hidden_layers: a.nLayer,
    num_attention_heads: a.nHead,
    num_key_value_heads: a.nKvHead,
    head_dim: a.headDim,
    hidden_act: 'silu',
    max_position_embeddings: a.maxPositions,
    rms_norm_eps: a.norm.eps,
    rope_theta: a.positions.theta,
    rope_scaling: null,
    tie_word_embeddings: a.tiedEmbeddings,
    ...(a.family === 'llama' ? { attention_bias: a.bias.qkv, mlp_bias: a.bias.mlp } : { use_sliding_window: false }),
    use_cache: true,
  };
}

export interface HfFolderContent {
  arch: DecoderArch;
  weights: ReadonlyMap<string, Float32Array>;
  /** tokenizer.json and tokenizer_config.json, as objects */
  tokenizerJson: unknown;
  tokenizerConfig: unknown;
  bosId: number | null;
  eosIds: number[];
}

/** The files of a Hugging Face model folder (name -> bytes). */
export function hfFolderFiles(c: HfFolderContent): Map<string, Uint8Array> {
  const json = (o: unknown) => new TextEncoder().encode(`${JSON.stringify(o, null, 2)}\n`);
  const eos = c.eosIds.length === 0 ? null : c.eosIds.length === 1 ? c.eosIds[0]! : c.eosIds;
  return new Map<string, Uint8Array>([
    [HF_FILES.config, json(hfConfigJson(c.arch, { bos: c.bosId, eos: c.eosIds[0] ?? null }))],
    [HF_FILES.weights, writeSafetensors(weightsToHf(c.arch, c.weights))],
    [HF_FILES.tokenizer, json(c.tokenizerJson)],
    [HF_FILES.tokenizerConfig, json(c.tokenizerConfig)],
    [HF_FILES.generationConfig, json({ bos_token_id: c.bosId, eos_token_id: eos, _from_model_config: true })],
  ]);
}
