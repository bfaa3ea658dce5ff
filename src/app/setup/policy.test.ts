import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { archFromHfConfig } from '../../model/arch';
import { resolveConfig } from '../../rl/config';
import { loraTargetNames, pretrainedModelConfig } from '../../rl/pretrained';
import { HF_FIXTURES } from '../../testing/hf-fixtures';
import { effective } from './fields';
import {
  LAB_POLICY,
  memoryPlanLine,
  loraShown,
  parseLoraField,
  policyChoice,
  policyFor,
  pretrainedProblem,
  STORED_POLICY,
  withLoraAlpha,
  withLoraRatio,
  withLoraBaseDtype,
  baseDtypeOptions,
  withLoraOn,
  withLoraRank,
  withLoraTarget,
  withPolicyModel,
} from './policy';
import type { HfReferenceModel } from './reference';

const sha = (c: string) => c.repeat(64);
const fixtureArch = (name: string) => archFromHfConfig(JSON.parse(readFileSync(join(HF_FIXTURES, name, 'config.json'), 'utf8')));
const QWEN2 = fixtureArch('qwen2'); // 256 positions
const GPT2 = fixtureArch('gpt2'); // 64 positions
/** Qwen2.5-0.5B's shape (the Hub's config.json, the fields the lab reads): 494M parameters */
const QWEN_05B = archFromHfConfig({
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  num_hidden_layers: 24,
  hidden_size: 896,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  intermediate_size: 4864,
  vocab_size: 151936,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  hidden_act: 'silu',
});

const stored = (id: string, name: string, s: string, description = 'Qwen2ForCausalLM: 2 layers'): HfReferenceModel =>
  ({
    id,
    complete: true,
    bytes: 10,
    ref: { name: `${name}/`, sha256: sha(s) },
    manifest: { name, summary: { description, ref: { name: `${name}/`, sha256: sha(s) } } },
  }) as unknown as HfReferenceModel;
const Q = stored('qwen2', 'qwen2', 'a');
const G = stored('gpt2', 'gpt2', 'b', 'GPT2LMHeadModel: 2 layers');

describe('the policy model choice', () => {
  test("the lab's GPT by default, every stored model offered; a named model is selected by its record", () => {
    const c = policyChoice(undefined, [Q, G]);
    expect(c.options.map((o) => [o.value, o.label])).toEqual([
      [LAB_POLICY, "The lab's GPT (trained from scratch, default)"],
      ['hf:qwen2', 'Hugging Face: qwen2'],
      ['hf:gpt2', 'Hugging Face: gpt2'],
    ]);
    expect(c.value).toBe(LAB_POLICY);
    expect(c.model).toBeNull();
    const q = policyChoice(Q.ref, [Q, G]);
    expect(q.value).toBe('hf:qwen2');
    expect(q.model).toBe(Q);
    expect(q.detail).toMatch(/^qwen2\/ \(SHA-256 aaaaaaaaaaaa…\): Qwen2ForCausalLM: 2 layers\. Trained with its own tokenizer/);
    expect(policyFor('hf:gpt2', [Q, G])).toBe(G);
    expect(policyFor(LAB_POLICY, [Q])).toBeNull();
    expect(policyFor(STORED_POLICY, [Q])).toBeUndefined();
    expect(() => policyFor('hf:gone', [Q])).toThrow(/no stored model is offered as "hf:gone"/);
  });

  test('a named model this page does not store is offered as it is, and said to be resumable only', () => {
    const c = policyChoice({ name: 'old/', sha256: sha('9') }, [Q]);
    expect(c.value).toBe(STORED_POLICY);
    expect(c.model).toBeNull();
    expect(c.options.at(-1)).toEqual({ value: STORED_POLICY, label: 'Hugging Face: old/ (not imported)' });
    expect(c.detail).toMatch(/is not imported in this page: a run that kept it in its run directory resumes with it/);
  });

  test("choosing a model writes its record, its shape at the run's context and SFT skipped; the lab's GPT removes it all", () => {
    const user = { rl: { iterations: 3 }, model: { contextLength: 96 } };
    const over = withPolicyModel(user, 'tiny', { ref: Q.ref, arch: QWEN2 });
    // the overrides stay the difference from the preset (tiny has 2 layers, 4 heads and 512 tokens too)
    expect(over).toEqual({ rl: { iterations: 3 }, pretrained: Q.ref, model: { dModel: 32, contextLength: 96 }, sft: { maxSteps: 0 } });
    // the validated config is what coderl train --model records: cfg.model is hfModelConfig's
    const cfg = resolveConfig('tiny', over);
    expect(cfg.model).toEqual(pretrainedModelConfig(QWEN2, 96));
    expect(cfg.sft.maxSteps).toBe(0);
    // the preset's context (128) is kept when the model has the positions (qwen2: 256); gpt2 has 64
    expect(effective('tiny', withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN2 }))!.model.contextLength).toBe(128);
    expect(effective('tiny', withPolicyModel({}, 'tiny', { ref: G.ref, arch: GPT2 }))!.model.contextLength).toBe(64);
    // back to the lab's GPT: what the choice wrote is gone, LoRA too; the user's own settings stay
    const lora = withLoraOn(over, 'tiny', QWEN2, true);
    expect(withPolicyModel(lora, 'tiny', null)).toEqual({ rl: { iterations: 3 } });
    expect(() => resolveConfig('tiny', withPolicyModel(lora, 'tiny', null))).not.toThrow();
  });

  test('another model keeps the Max steps the user set, and LoRA with the targets the new architecture has', () => {
    let over = withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN2 });
    over = withLoraOn(over, 'tiny', QWEN2, true);
    over = withLoraTarget(over, 'tiny', effective('tiny', over)!.lora!, QWEN2, 'o_proj', true);
    over = { ...over, sft: { maxSteps: 5 } };
    const g = withPolicyModel(over, 'tiny', { ref: G.ref, arch: GPT2 });
    expect(effective('tiny', g)!.sft.maxSteps).toBe(5);
    expect(effective('tiny', g)!.lora).toEqual({ rank: 8, alpha: 16, targets: ['c_attn'] }); // none of qwen2's: gpt2's default
    expect(effective('tiny', g)!.pretrained).toEqual(G.ref);
  });
});

describe('the LoRA settings', () => {
  const base = () => withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN2 });
  const lora = (o: unknown) => effective('tiny', o)!.lora!;

  test('on: rank 8, alpha 16 and the architecture default targets, written resolved; off: full fine-tuning', () => {
    const on = withLoraOn(base(), 'tiny', QWEN2, true);
    expect(on.lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] });
    expect(withLoraOn({}, 'tiny', GPT2, true).lora).toEqual({ rank: 8, alpha: 16, targets: ['c_attn'] });
    expect(withLoraOn(on, 'tiny', QWEN2, false)).toEqual(base());
    expect(resolveConfig('tiny', on).lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] });
  });

  test('alpha follows the rank while it is 2 x rank; an alpha of the own stays', () => {
    const on = withLoraOn(base(), 'tiny', QWEN2, true);
    const r4 = withLoraRank(on, 'tiny', lora(on), QWEN2, 4);
    expect(r4.lora).toEqual({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] });
    const own = withLoraAlpha(r4, 'tiny', lora(r4), QWEN2, 5);
    expect(withLoraRank(own, 'tiny', lora(own), QWEN2, 16).lora).toEqual({ rank: 16, alpha: 5, targets: ['q_proj', 'v_proj'] });
    // a config written by hand without alpha or targets: its defaults, resolved on the next edit
    expect(withLoraRank({ lora: { rank: 2 } }, 'tiny', { rank: 2 } as never, GPT2, 4).lora).toEqual({
      rank: 4,
      alpha: 8,
      targets: ['c_attn'],
    });
  });

  test("targets are the architecture's linear modules, kept in its order", () => {
    expect(loraTargetNames(GPT2)).toEqual(['c_attn', 'c_proj', 'c_fc', 'lm_head']);
    expect(loraTargetNames(QWEN2)).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj', 'lm_head']);
    expect(loraTargetNames(fixtureArch('llama'))).toEqual(loraTargetNames(QWEN2));
    let o = withLoraOn(base(), 'tiny', QWEN2, true);
    o = withLoraTarget(o, 'tiny', lora(o), QWEN2, 'down_proj', true);
    o = withLoraTarget(o, 'tiny', lora(o), QWEN2, 'k_proj', true);
    expect(lora(o).targets).toEqual(['q_proj', 'k_proj', 'v_proj', 'down_proj']);
    o = withLoraTarget(o, 'tiny', lora(o), QWEN2, 'q_proj', false);
    expect(lora(o).targets).toEqual(['k_proj', 'v_proj', 'down_proj']);
  });

  test("typed rank and alpha: the config validator's bounds, in words", () => {
    expect(parseLoraField('rank', ' 4 ')).toEqual({ value: 4, error: null });
    expect(parseLoraField('rank', '2.5').error).toBe('the rank must be a whole number from 1 to 1024, got 2.5');
    expect(parseLoraField('rank', '0').error).toMatch(/from 1 to 1024, got 0/);
    expect(parseLoraField('rank', '').error).toBe('required');
    expect(parseLoraField('alpha', 'x').error).toBe('not a number: "x"');
    expect(parseLoraField('alpha', '0').error).toMatch(/above 0/);
    expect(parseLoraField('alpha', '0.5')).toEqual({ value: 0.5, error: null });
    expect(parseLoraField('lrRatio', '16')).toEqual({ value: 16, error: null });
    expect(parseLoraField('lrRatio', '0').error).toMatch(/above 0 and at most 1000 \(1: plain LoRA\), got 0/);
    expect(parseLoraField('lrRatio', '5000').error).toMatch(/at most 1000/);
  });

  test('the B learning-rate ratio (LoRA+): written when not 1, left out at 1, accepted by the validator', () => {
    const on = withLoraOn(base(), 'tiny', QWEN2, true);
    expect(loraShown(lora(on), QWEN2).lrRatio).toBe(1);
    const plus = withLoraRatio(on, 'tiny', lora(on), QWEN2, 16);
    expect(plus.lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'], lrRatio: 16 });
    expect(resolveConfig('tiny', plus).lora?.lrRatio).toBe(16);
    // other edits keep it
    expect(lora(withLoraRank(plus, 'tiny', lora(plus), QWEN2, 4)).lrRatio).toBe(16);
    expect(withLoraRatio(plus, 'tiny', lora(plus), QWEN2, 1).lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] });
  });

  test('the frozen base on the GPU: written unless auto, accepted by the validator; the choices say what they do', () => {
    const on = withLoraOn(base(), 'tiny', QWEN2, true);
    const bf = withLoraBaseDtype(on, 'tiny', lora(on), QWEN2, 'bf16');
    expect(bf.lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'], baseDtype: 'bf16' });
    expect(resolveConfig('tiny', bf).lora?.baseDtype).toBe('bf16');
    expect(lora(withLoraRank(bf, 'tiny', lora(bf), QWEN2, 4)).baseDtype).toBe('bf16');
    expect(withLoraBaseDtype(bf, 'tiny', lora(bf), QWEN2, 'auto').lora).toEqual({ rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] });
    const f16 = baseDtypeOptions(['F16']);
    expect(f16.map((o) => o.value)).toEqual(['auto', 'f32', 'f16', 'bf16']);
    expect(f16.map((o) => o.label)).toEqual(['auto (F16)', 'F32', 'F16 (exact)', 'BF16 (rounds)']);
    expect(baseDtypeOptions(['F32'])[0]!.label).toBe('auto (F32)');
    expect(baseDtypeOptions(['F16', 'F32'])[0]!.label).toBe('auto (F32)'); // an F32 tensor would be rounded
  });
});

describe('the memory plan line', () => {
  test('a small model fits; Qwen2.5-0.5B fully fine-tuned does not fit 4 GiB, with LoRA it does', () => {
    const q = memoryPlanLine(effective('tiny', withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN2 })), QWEN2)!;
    expect(q.error).toBe(false);
    expect(q.text).toMatch(/^Memory plan: weights [\d.]+ KiB, gradients .*; total [\d.]+ MiB of 4\.00 GiB$/);
    const full = effective('tiny', withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN_05B }))!;
    const refused = memoryPlanLine(full, QWEN_05B)!;
    expect(refused.error).toBe(true);
    expect(refused.text).toMatch(/^The run does not fit: the step does not fit 4\.00 GiB: weights 1\.84 GiB, .* use LoRA/);
    const lora = effective('tiny', withLoraOn(withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN_05B }), 'tiny', QWEN_05B, true))!;
    const fits = memoryPlanLine(lora, QWEN_05B)!;
    expect(fits.error, fits.text).toBe(false);
    expect(fits.text).toMatch(/adapters [\d.]+ MiB, .*a micro-batch\); total [\d.]+ GiB of 4\.00 GiB$/);
    // Qwen2.5 ships BF16: its LoRA base stays BF16 on the GPU, about half the weights' bytes
    const bf16 = memoryPlanLine(lora, QWEN_05B, ['BF16'])!;
    expect(bf16.text).toMatch(/^Memory plan: weights (9[0-9]{2}\.\d) MiB \(BF16\), adapters/);
    expect(memoryPlanLine(null, QWEN2)).toBeNull();
  });

  test("what the run worker would refuse is said before Start: a longer context than the model's, a target it lacks", () => {
    const over = withPolicyModel({}, 'tiny', { ref: Q.ref, arch: QWEN2 });
    expect(pretrainedProblem(effective('tiny', over), QWEN2, 'qwen2')).toBeNull();
    const long = { ...over, model: { ...(over.model as object), contextLength: 300 } };
    expect(pretrainedProblem(effective('tiny', long), QWEN2, 'qwen2')).toBe(
      'config.model.contextLength: 300 exceeds the 256 positions of qwen2',
    );
    const bad = { ...over, lora: { rank: 4, targets: ['c_attn'] } };
    expect(pretrainedProblem(effective('tiny', bad), QWEN2, 'qwen2')).toMatch(
      /^qwen2: config\.lora\.targets: "c_attn" names no linear module of Qwen2ForCausalLM \(its modules: q_proj, k_proj/,
    );
  });
});
