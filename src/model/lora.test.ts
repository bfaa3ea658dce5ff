/** LoRA target modules: PEFT's matching, where each module lives in the packed engine tensors, refusals. */
import { describe, expect, test } from 'vitest';
import { archFromHfConfig } from './arch';
import { linearModules, loraModules, peftKeys } from './lora';

const llama = archFromHfConfig({
  architectures: ['LlamaForCausalLM'],
  hidden_size: 48,
  intermediate_size: 88,
  num_hidden_layers: 2,
  num_attention_heads: 6,
  num_key_value_heads: 2,
  vocab_size: 100,
});
const gpt2 = archFromHfConfig({ architectures: ['GPT2LMHeadModel'], n_layer: 1, n_embd: 32, n_head: 4, n_positions: 16, vocab_size: 50 });

describe('LoRA modules', () => {
  test('q, k and v are row blocks of the packed qkv; gate and up of the packed up', () => {
    const m = new Map(linearModules(llama).map((x) => [x.path, x]));
    expect(m.get('model.layers.1.self_attn.q_proj')).toMatchObject({
      engine: 'layers.1.qkv.w',
      rows: [0, 48],
      inFeatures: 48,
      outFeatures: 48,
    });
    expect(m.get('model.layers.1.self_attn.k_proj')).toMatchObject({ rows: [48, 64] });
    expect(m.get('model.layers.1.self_attn.v_proj')).toMatchObject({ rows: [64, 80] });
    expect(m.get('model.layers.0.mlp.up_proj')).toMatchObject({ engine: 'layers.0.up.w', rows: [88, 176], inFeatures: 48 });
    expect(m.get('model.layers.0.mlp.down_proj')).toMatchObject({ engine: 'layers.0.down.w', rows: [0, 48], inFeatures: 88 });
  });

  test("lm_head is the output layer: the head's tensor, or with tied embeddings the embedding read as the head", () => {
    expect(linearModules(llama).at(-1)).toEqual({ path: 'lm_head', engine: 'head', rows: [0, 100], inFeatures: 48, outFeatures: 100 });
    const tied = loraModules(gpt2, { rank: 2, alpha: 4, targets: ['lm_head'] });
    expect(tied).toEqual([{ path: 'lm_head', engine: 'embed', rows: [0, 50], inFeatures: 32, outFeatures: 50 }]);
    // not under transformer.: GPT2LMHeadModel.lm_head is top level
    expect(peftKeys(tied[0]!).A).toBe('base_model.model.lm_head.lora_A.weight');
  });

  test("PEFT's list matching: the last name part (GPT-2's c_proj is both attention's and the MLP's), or the whole path", () => {
    expect(loraModules(gpt2, { rank: 4, alpha: 8, targets: ['c_proj'] }).map((x) => x.path)).toEqual([
      'transformer.h.0.attn.c_proj',
      'transformer.h.0.mlp.c_proj',
    ]);
    expect(loraModules(llama, { rank: 4, alpha: 8, targets: ['model.layers.1.self_attn.v_proj'] }).map((x) => x.path)).toEqual([
      'model.layers.1.self_attn.v_proj',
    ]);
    const both = loraModules(llama, { rank: 4, alpha: 8, targets: ['v_proj', 'q_proj'] });
    expect(both.map((x) => x.path)).toEqual([
      'model.layers.0.self_attn.q_proj',
      'model.layers.0.self_attn.v_proj',
      'model.layers.1.self_attn.q_proj',
      'model.layers.1.self_attn.v_proj',
    ]);
    expect(peftKeys(both[0]!).A).toBe('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(peftKeys(loraModules(gpt2, { rank: 1, alpha: 1, targets: ['c_attn'] })[0]!).B).toBe(
      'base_model.model.transformer.h.0.attn.c_attn.lora_B.weight',
    );
  });

  test('refusals name the field', () => {
    expect(() => loraModules(llama, { rank: 0, alpha: 8, targets: ['q_proj'] })).toThrow(
      /lora\.rank: must be an integer in 1\.\.1024, got 0/,
    );
    expect(() => loraModules(llama, { rank: 4, alpha: -1, targets: ['q_proj'] })).toThrow(/lora\.alpha: must be a positive number/);
    expect(() => loraModules(llama, { rank: 4, alpha: 8, targets: ['c_attn'] })).toThrow(
      /lora\.targets: "c_attn" names no linear module of LlamaForCausalLM \(its modules: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head\)/,
    );
    expect(() => loraModules(llama, { rank: 4, alpha: 8, targets: [] })).toThrow(/lora\.targets: give at least one module name/);
  });
});
