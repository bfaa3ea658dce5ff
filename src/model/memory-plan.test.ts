/** The memory plan at the target shape and a refusal with the numbers. */
import { describe, expect, test } from 'vitest';
import { archFromHfConfig } from './arch';
import { describeMemoryPlan, planMemory } from './memory-plan';

const SMOLLM2 = archFromHfConfig({
  architectures: ['LlamaForCausalLM'],
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  max_position_embeddings: 8192,
  rope_theta: 100000,
  tie_word_embeddings: true,
  vocab_size: 49152,
});
const QWEN = archFromHfConfig({
  architectures: ['Qwen2ForCausalLM'],
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  max_position_embeddings: 32768,
  tie_word_embeddings: true,
  vocab_size: 151936,
});
const GiB = 2 ** 30;
/** One RL step of SmolLM2-135M with LoRA r8 on q/v: 8 prompts x 8 samples x (128 + 256) tokens in 4 GiB. */
const SMOLLM2_LORA_STEP = {
  arch: SMOLLM2,
  lora: { rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] },
  sequences: 64,
  seqLen: 384,
  valueHead: false,
  budgetBytes: 4 * GiB,
};

describe('planMemory', () => {
  test('SmolLM2-135M with LoRA, 8 prompts x 8 samples x 256 new tokens (+128 of prompt), fits 4 GiB in micro-batches', () => {
    const p = planMemory(SMOLLM2_LORA_STEP);
    expect(p.weights).toBe(134_515_008 * 4);
    expect(p.trainable).toBe(30 * (8 * (576 + 576) + 8 * (576 + 192))); // q_proj 576->576, v_proj 576->192
    expect(p.microBatch).toBeGreaterThanOrEqual(1);
    expect(p.microBatch).toBeLessThan(64); // gradient accumulation
    expect(p.total).toBeLessThanOrEqual(4 * GiB);
    expect(describeMemoryPlan(p)).toMatch(
      /^weights 513\.1 MiB, adapters .* MiB, gradients .*, optimizer .*, KV cache .*, activations .* \(\d+ sequences a micro-batch\); total .* of 4\.00 GiB$/,
    );
  });

  test('a BF16 LoRA base: the matrices at 2 bytes, the norms at 4; more sequences a micro-batch; full fine-tuning stays f32', () => {
    const input = SMOLLM2_LORA_STEP;
    const f32 = planMemory(input);
    const bf16 = planMemory({ ...input, weightFormat: 'bf16' });
    const norms = 576 * (2 * 30 + 1); // two RMSNorm weights a layer and the final one: f32 either way
    expect(bf16.weights).toBe((134_515_008 - norms) * 2 + norms * 4);
    expect(bf16.weightFormat).toBe('bf16');
    expect(bf16.microBatch).toBeGreaterThanOrEqual(f32.microBatch);
    expect(describeMemoryPlan(bf16)).toMatch(/^weights 256\.6 MiB \(BF16\), adapters/);
    expect(() => planMemory({ ...input, lora: null, weightFormat: 'f16' })).toThrow(
      /full fine-tuning trains every weight, so they are f32, not f16/,
    );
  });

  test('full fine-tuning of Qwen2.5-0.5B in 4 GiB is refused with the numbers, and LoRA suggested', () => {
    expect(() => planMemory({ arch: QWEN, lora: null, sequences: 64, seqLen: 384, valueHead: true, budgetBytes: 4 * GiB })).toThrow(
      /the step does not fit 4\.00 GiB: weights 1\.84 GiB, gradients 1\.84 GiB, optimizer 3\.68 GiB, value head .*; total .* of 4\.00 GiB; use LoRA/,
    );
  });
});
