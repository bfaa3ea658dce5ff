/**
 * config.json -> DecoderArch: transformers' fields and defaults for each family, and refusals
 * naming the field. (The fixture folders' configs load in src/hf/hf.test.ts.)
 */
import { describe, expect, test } from 'vitest';
import { archFromHfConfig, archParameterCount, describeArch } from './arch';

const SMOLLM2_135M = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  max_position_embeddings: 8192,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  tie_word_embeddings: true,
  vocab_size: 49152,
  hidden_act: 'silu',
};

const QWEN25_05B = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  sliding_window: 32768,
  use_sliding_window: false,
  tie_word_embeddings: true,
  vocab_size: 151936,
  hidden_act: 'silu',
};

describe('archFromHfConfig', () => {
  test("SmolLM2-135M's config: GQA 9/3, head 64, tied, parameter count as published (134.5M)", () => {
    const a = archFromHfConfig(SMOLLM2_135M);
    expect(a).toMatchObject({ family: 'llama', nKvHead: 3, headDim: 64, tiedEmbeddings: true, bias: { qkv: false, o: false, mlp: false } });
    expect(a.positions).toEqual({ kind: 'rope', theta: 100000 });
    expect(archParameterCount(a)).toBe(134_515_008);
  });

  test("Qwen2.5-0.5B's config: q/k/v biases, none on o_proj, 494M parameters", () => {
    const a = archFromHfConfig(QWEN25_05B);
    expect(a.bias).toEqual({ qkv: true, o: false, mlp: false });
    expect(archParameterCount(a)).toBe(494_032_768);
    expect(describeArch(a)).toBe('Qwen2ForCausalLM: 24 layers, d_model 896, 14 heads (2 kv) of 64, ffn 4864, vocab 151936');
  });

  test('defaults: Llama and Qwen2 untie by default, GPT-2 ties; n_inner is 4 n_embd', () => {
    const { tie_word_embeddings: _, ...untied } = SMOLLM2_135M;
    expect(archFromHfConfig(untied).tiedEmbeddings).toBe(false);
    const g = archFromHfConfig({
      architectures: ['GPT2LMHeadModel'],
      n_layer: 12,
      n_embd: 768,
      n_head: 12,
      n_positions: 1024,
      vocab_size: 50257,
    });
    expect(g).toMatchObject({ tiedEmbeddings: true, dFf: 3072, nKvHead: 12, headDim: 64, norm: { kind: 'layernorm', eps: 1e-5 } });
    expect(archParameterCount(g)).toBe(124_439_808); // GPT-2 small
  });

  test("transformers v5's rope_parameters", () => {
    const { rope_theta: _, ...rest } = SMOLLM2_135M;
    expect(archFromHfConfig({ ...rest, rope_parameters: { rope_type: 'default', rope_theta: 5e5 } }).positions).toEqual({
      kind: 'rope',
      theta: 5e5,
    });
    expect(() => archFromHfConfig({ ...rest, rope_parameters: { rope_type: 'yarn', rope_theta: 5e5 } })).toThrow(
      /rope_parameters\.rope_type: "yarn" is not supported/,
    );
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    ['not an object', [] as unknown as Record<string, unknown>, /config\.json: expected a JSON object/],
    ['no architectures', { model_type: 'llama' }, /architectures: missing/],
    [
      'model_type disagrees',
      { ...SMOLLM2_135M, model_type: 'qwen2' },
      /model_type: "qwen2" disagrees with architectures\[0\] LlamaForCausalLM/,
    ],
    ['a fractional width', { ...SMOLLM2_135M, hidden_size: 57.6 }, /hidden_size: must be an integer, got 57\.6/],
    ['head size over the kernels', { ...SMOLLM2_135M, head_dim: 512 }, /head_dim: 512 exceeds the 256/],
    [
      'GPT-2 layer_norm_epsilon',
      { architectures: ['GPT2LMHeadModel'], n_layer: 1, n_embd: 8, n_head: 2, n_positions: 8, vocab_size: 9, layer_norm_epsilon: 1e-6 },
      /layer_norm_epsilon: 0\.000001 is not supported/,
    ],
    ['gelu not tanh', { ...SMOLLM2_135M, hidden_act: 'gelu' }, /hidden_act: "gelu" is not supported/],
  ])('refuses %s, naming the field', (_what, cfg, message) => {
    expect(() => archFromHfConfig(cfg)).toThrow(message);
  });
});
