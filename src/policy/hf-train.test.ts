/**
 * Trainable policies of imported models (hf-train.ts) on the committed fixtures: LoRA starts at
 * the base model; the cpu and webgpu policies take the same SFT and RL steps (the webgpu one in
 * micro-batches it cuts itself); policies of one factory share the base, each with its own
 * adapters; checkpoints round-trip parameters and AdamW state and refuse another LoRA setting;
 * full fine-tuning leaves the other policies' weights alone.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { GpuRuntime } from '../gpu/runtime';
import { loadHfFolder, type HfModel } from '../hf/load';
import { nodeFolder } from '../hf/node';
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import { archParameterCount } from '../model/arch';
import { DEFAULT_OPTIM, type RlBatch, type TokenBatch } from '../model/optim';
import { HF_FIXTURES } from '../testing/hf-fixtures';
import { testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { mergeLora } from '../hf/peft';
import { DecoderCpu } from '../model/decoder-cpu';
import { hfCheckpointWeights, hfPolicyFactory, HF_POLICY_FORMAT, slabTensors, type HfTrainOptions } from './hf-train';
import type { PolicySpec } from './index';

const models = new Map<string, HfModel>();
let rt: GpuRuntime;
beforeAll(async () => {
  for (const name of ['gpt2', 'llama', 'qwen2']) models.set(name, await loadHfFolder(await nodeFolder(join(HF_FIXTURES, name))));
  rt = await testRuntime();
}, 60_000);

const CTX = 32;
const lora = (targets?: string[]) => ({ rank: 4, alpha: 8, targets: targets ?? [] });

function factory(name: string, o: Partial<HfTrainOptions> = {}) {
  const model = models.get(name)!;
  const f = hfPolicyFactory(model, {
    backend: 'cpu',
    lora: null,
    contextLength: CTX,
    ...o,
    runtime: o.backend === 'webgpu' ? rt : undefined,
  });
  const spec: PolicySpec = { config: f.pretrained!.config, tokenizer: model.tokenizer };
  return { f, spec, model };
}

/** (B, T) right-padded batch of random ids, loss on all but the first two positions of each row. */
function batch(V: number, B: number, T: number, seed: number): TokenBatch {
  const rng = new Rng(seed);
  const tokens = Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * V));
  const targets = Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * V));
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T >= 2 && i % T < T - (i % 3) ? 1 : 0));
  return { B, T, tokens, targets, mask };
}

function rlBatch(V: number, B: number, T: number, seed: number): RlBatch {
  const b = batch(V, B, T, seed);
  const rng = new Rng(seed + 99);
  const f = () => Float32Array.from({ length: B * T }, () => rng.next() - 0.5);
  return {
    ...b,
    oldLogp: Float32Array.from({ length: B * T }, () => -6 - rng.next()),
    oldValues: f(),
    advantages: f(),
    returns: f(),
    refLogp: Float32Array.from({ length: B * T }, () => -6 - rng.next()),
  };
}

const PPO: RlLossConfig = { clip: 0.2, vclip: 0.2, vfCoef: 0.1, entCoef: 0.01, klCoef: 0.05, invTemp: 1 };
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

describe('hfPolicyFactory', () => {
  test.each(['gpt2', 'llama', 'qwen2'])('%s: LoRA starts at the base model; the adapters are what trains', async (name) => {
    const { f, spec, model } = factory(name, { lora: lora(name === 'gpt2' ? ['c_attn', 'c_fc'] : ['q_proj', 'v_proj', 'down_proj']) });
    const p = f.init(spec, 5, DEFAULT_OPTIM);
    const base = hfPolicyFactory(model, { backend: 'cpu', lora: null, contextLength: CTX }).init(spec, 5, DEFAULT_OPTIM);
    const input = { tokens: batch(model.tokenizer.vocabSize, 2, 8, 1).tokens.subarray(0, 16), B: 2, T: 8 };
    expect(maxDiff((await p.forward(input)).logits, (await base.forward(input)).logits)).toBeLessThan(1e-6);
    const slab = slabTensors(model.arch, { modules: [], rank: 4 });
    expect(slab.map((t) => t.name)).toEqual(['value.w', 'value.b']);
    const params = await p.getParams();
    // only adapters and the value head: a few thousand values, not the model
    expect(params.length).toBeLessThan(model.parameters / 2);
    const before = Float32Array.from(params);
    await p.trainStep([batch(model.tokenizer.vocabSize, 3, 10, 2)], true);
    const after = await p.getParams();
    expect(maxDiff(before, after)).toBeGreaterThan(1e-5);
    // B moved off zero: the policy now differs from the base
    expect(maxDiff((await p.forward(input)).logits, (await base.forward(input)).logits)).toBeGreaterThan(1e-6);
    p.dispose();
    base.dispose();
  });

  test.each([
    ['gpt2', null],
    ['llama', ['q_proj', 'v_proj']],
    ['qwen2', ['k_proj', 'o_proj', 'up_proj']],
  ] as const)(
    '%s (lora %j): webgpu takes the same SFT and PPO steps as cpu, in micro-batches of 2',
    async (name, targets) => {
      const l = targets ? lora([...targets]) : null;
      const cpu = factory(name, { lora: l });
      const gpu = factory(name, { lora: l, backend: 'webgpu', microBatch: 2 });
      const opt = { ...DEFAULT_OPTIM, lr: 1e-3 };
      const pc = cpu.f.init(cpu.spec, 3, opt);
      const pg = gpu.f.init(gpu.spec, 3, opt);
      const V = cpu.model.tokenizer.vocabSize;
      expect(maxDiff(await pc.getParams(), await pg.getParams())).toBe(0);
      // 5 rows: webgpu cuts 2 + 2 + 1 (padded with masked rows)
      const sc = await pc.trainStep([batch(V, 5, 9, 4)], true);
      const sg = await pg.trainStep([batch(V, 5, 9, 4)], true);
      expect(Math.abs(sc.loss! - sg.loss!)).toBeLessThan(1e-4 * Math.abs(sc.loss!));
      expect(Math.abs(sc.gradNorm! - sg.gradNorm!)).toBeLessThan(1e-3 * sc.gradNorm!);
      const rc = await pc.rlStep([rlBatch(V, 3, 7, 5)], PPO);
      const rg = await pg.rlStep([rlBatch(V, 3, 7, 5)], PPO);
      expect(Math.abs(rc.sums.policyLoss - rg.sums.policyLoss)).toBeLessThan(1e-3);
      expect(Math.abs(rc.sums.valueLoss - rg.sums.valueLoss)).toBeLessThan(1e-3);
      expect(rg.sums.tokens).toBe(rc.sums.tokens);
      // within Adam's bound of two steps: GPT-2's key bias has an exact gradient of 0 (softmax is
      // shift-invariant), and Adam turns its f32 noise into steps of up to lr (decoder-gpu-train.test.ts)
      expect(maxDiff(await pc.getParams(), await pg.getParams())).toBeLessThan(2 * opt.lr);
      // scoring: logits and the value head's values agree
      const input = { tokens: batch(V, 3, 6, 8).tokens, B: 3, T: 6 };
      const [fc, fg] = [await pc.forward(input), await pg.forward(input)];
      expect(maxDiff(fc.logits, fg.logits)).toBeLessThan(1e-3);
      expect(maxDiff(fc.values, fg.values)).toBeLessThan(1e-3);
      expect(maxDiff(fc.values, new Float32Array(fc.values.length))).toBeGreaterThan(0);
      // sampling: greedy ids of the trained policy are the same on both
      const prompt = [Array.from(input.tokens.subarray(0, 4))];
      const opts = { maxNewTokens: 5, temperature: 0, seed: 1 };
      expect((await pg.generate(prompt, opts)).tokens).toEqual((await pc.generate(prompt, opts)).tokens);
      pc.dispose();
      pg.dispose();
    },
    120_000,
  );

  test.each(['cpu', 'webgpu'] as const)(
    '%s: policies of one LoRA factory share the base and keep their own adapters',
    async (backend) => {
      const { f, spec, model } = factory('llama', { lora: lora(['q_proj', 'v_proj']), backend });
      const V = model.tokenizer.vocabSize;
      const ref = f.init(spec, 1, DEFAULT_OPTIM);
      const p = f.fromParams(spec, await ref.getParams(), { ...DEFAULT_OPTIM, lr: 1e-2 });
      const input = { tokens: batch(V, 2, 6, 3).tokens, B: 2, T: 6 };
      const ref0 = (await ref.forward(input)).logits;
      for (let i = 0; i < 3; i++) await p.trainStep([batch(V, 2, 8, 10 + i)], true);
      // the trained policy moved, the reference on the same base did not
      expect(maxDiff((await p.forward(input)).logits, ref0)).toBeGreaterThan(1e-4);
      expect(maxDiff((await ref.forward(input)).logits, ref0)).toBe(0);
      const prompt = [[5, 6, 7]];
      const g = { maxNewTokens: 4, temperature: 0, seed: 1 };
      const fresh = f.init(spec, 1, DEFAULT_OPTIM);
      expect((await ref.generate(prompt, g)).tokens).toEqual((await fresh.generate(prompt, g)).tokens);
      // disposing of one leaves the others working
      fresh.dispose();
      expect(maxDiff((await ref.forward(input)).logits, ref0)).toBe(0);
      p.dispose();
      ref.dispose();
      await expect(ref.forward(input)).rejects.toThrow(/disposed/);
    },
    120_000,
  );

  test('a base forced to F16 (lora.baseDtype on an F32 checkpoint): cpu and webgpu hold the same rounded model; the merge adds to it', async () => {
    const o = { lora: lora(['c_attn']), weightFormat: 'f16' as const };
    const cpu = factory('gpt2', o);
    const gpu = factory('gpt2', { ...o, backend: 'webgpu' });
    const model = cpu.model;
    const V = model.tokenizer.vocabSize;
    const [pc, pg] = [cpu.f.init(cpu.spec, 3, DEFAULT_OPTIM), gpu.f.init(gpu.spec, 3, DEFAULT_OPTIM)];
    for (const p of [pc, pg]) await p.trainStep([batch(V, 2, 8, 4)], true); // B off zero: the adapters count
    const input = { tokens: batch(V, 2, 8, 5).tokens.subarray(0, 16), B: 2, T: 8 };
    const [lc, lg] = [(await pc.forward(input)).logits, (await pg.forward(input)).logits];
    expect(maxDiff(lc, lg)).toBeLessThan(1e-4);
    // the f32 base computes another function: the rounding is what both hold
    const plain = factory('gpt2', { lora: lora(['c_attn']) }).f.fromParams(cpu.spec, await pc.getParams(), DEFAULT_OPTIM);
    expect(maxDiff((await plain.forward(input)).logits, lc)).toBeGreaterThan(1e-4);
    // the checkpoint says which base the adapters learned on, and a merged model is the trained policy
    const bytes = await pc.save({ optimizer: false, meta: {} });
    const merged = hfCheckpointWeights(model, bytes, 'policy.ckpt');
    const m = new DecoderCpu(merged.arch, merged.weights, CTX).forward(input).logits;
    expect(maxDiff(m, lc)).toBeLessThan(1e-4);
    const unrounded = new DecoderCpu(model.arch, mergeLora(model.arch, model.weights, merged.adapter!).weights, CTX).forward(input).logits;
    expect(maxDiff(unrounded, lc)).toBeGreaterThan(1e-4);
    expect(() => factory('gpt2', { weightFormat: 'bf16' })).toThrow(/full fine-tuning trains every weight.*needs LoRA/);
    for (const p of [pc, pg, plain]) p.dispose();
  });

  test('checkpoints round-trip parameters and AdamW state, and refuse another setting', async () => {
    const { f, spec, model } = factory('qwen2', { lora: lora(['q_proj']) });
    const V = model.tokenizer.vocabSize;
    const p = f.init(spec, 2, DEFAULT_OPTIM);
    await p.trainStep([batch(V, 2, 8, 1)], true);
    const bytes = await p.save({ optimizer: true, meta: { stage: 'ppo', iteration: 3 } });
    const c = f.readCheckpoint(spec, bytes);
    expect(c.meta).toEqual({ stage: 'ppo', iteration: 3 });
    expect(c.params).toEqual(await p.getParams());
    const st = await p.getOptimizerState();
    expect(c.optimizer!.step).toBe(1);
    expect(c.optimizer!.m).toEqual(st.m);
    // the loaded policy takes the same next step as the original
    const q = f.load(spec, bytes, DEFAULT_OPTIM, true);
    await p.trainStep([batch(V, 2, 8, 2)], true);
    await q.trainStep([batch(V, 2, 8, 2)], true);
    expect(maxDiff(await p.getParams(), await q.getParams())).toBeLessThan(1e-7);
    const other = factory('qwen2', { lora: lora(['v_proj']) });
    expect(() => other.f.readCheckpoint(other.spec, bytes)).toThrow(/trained with lora .*q_proj.*the run has .*v_proj/);
    const full = factory('qwen2');
    expect(() => full.f.readCheckpoint(full.spec, bytes)).toThrow(/the run has null/);
    const gpt2 = factory('gpt2', { lora: lora(['c_attn']) });
    expect(() => gpt2.f.readCheckpoint(gpt2.spec, bytes)).toThrow(/qwen2/);
    expect(() => f.readCheckpoint(spec, new Uint8Array(16))).toThrow();
    expect(new TextDecoder().decode(bytes.subarray(8, 400))).toContain(HF_POLICY_FORMAT);
    p.dispose();
    q.dispose();
  });

  test('full fine-tuning trains every tensor and leaves other policies and the loaded model as they were', async () => {
    const { f, spec, model } = factory('gpt2');
    const V = model.tokenizer.vocabSize;
    const embed0 = Float32Array.from(model.weights.get('embed')!);
    const p = f.init(spec, 1, { ...DEFAULT_OPTIM, lr: 1e-2 });
    const ref = f.init(spec, 1, DEFAULT_OPTIM);
    const input = { tokens: batch(V, 1, 6, 3).tokens.subarray(0, 6), B: 1, T: 6 };
    const ref0 = (await ref.forward(input)).logits;
    await p.trainStep([batch(V, 2, 8, 1)], true);
    expect(maxDiff((await ref.forward(input)).logits, ref0)).toBe(0);
    expect(maxDiff((await p.forward(input)).logits, ref0)).toBeGreaterThan(1e-4);
    expect(model.weights.get('embed')).toEqual(embed0);
    expect((await p.getParams()).length).toBe(archParameterCount(model.arch) + model.arch.dModel + 1);
    p.dispose();
    ref.dispose();
  });

  test('refuses a context beyond the model and a spec of another model', () => {
    const model = models.get('gpt2')!;
    expect(() => hfPolicyFactory(model, { backend: 'cpu', lora: null, contextLength: model.arch.maxPositions + 1 })).toThrow(
      /context of 65 tokens must be in 2\.\.64/,
    );
    const { f, spec } = factory('gpt2');
    expect(() => f.init({ ...spec, config: { ...spec.config, contextLength: 16 } }, 1, DEFAULT_OPTIM)).toThrow(/is not this model's/);
  });
});
