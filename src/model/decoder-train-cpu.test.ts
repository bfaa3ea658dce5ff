/**
 * Training the float64 decoder on the HF fixtures: SFT with LoRA lowers the loss while the base
 * stays bit-identical and only the adapters move; full fine-tuning moves the base; a GRPO step
 * with positive advantages raises the sampled tokens' log-probs and negative ones lower them; a
 * fresh value head learns the returns (PPO). The gradients themselves are checked against torch
 * in decoder-grad.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { HF_FIXTURE_NAMES, loadHfFixture } from '../testing/hf-fixtures';
import { Rng } from '../util/random';
import { DecoderCpu } from './decoder-cpu';
import { DecoderCpuTrainer } from './decoder-train-cpu';
import { initLoraAdapters, linearModules, loraModules, loraScaling } from './lora';
import { DEFAULT_OPTIM, type RlBatch, type TokenBatch } from './optim';

const { arch, weights } = loadHfFixture('llama');
const B = 2;
const T = 12;
const rng = new Rng(3);
const tokens = Uint32Array.from({ length: B * T }, () => 3 + Math.floor(rng.next() * 400));
const batch: TokenBatch = {
  B,
  T,
  tokens,
  targets: Uint32Array.from({ length: B * T }, (_, i) => tokens[(i + 1) % (B * T)]!),
  mask: Float32Array.from({ length: B * T }, (_, i) => (i % T === T - 1 ? 0 : 1)),
};

function withLora(rank: number): DecoderCpu {
  const m = new DecoderCpu(arch, weights);
  const cfg = { rank, alpha: 2 * rank, targets: ['q_proj', 'v_proj', 'down_proj'] };
  const modules = loraModules(arch, cfg);
  m.setLora({ modules, rank, scaling: loraScaling(cfg), ...initLoraAdapters(modules, rank, new Rng(9)) });
  return m;
}

const logpOf = (m: DecoderCpu, b: TokenBatch): number => {
  const { logits } = m.forward({ tokens: b.tokens, B: b.B, T: b.T });
  const V = arch.vocabSize;
  let s = 0;
  for (let n = 0; n < b.B * b.T; n++) {
    if (!b.mask[n]) continue;
    const row = logits.subarray(n * V, (n + 1) * V);
    const mx = Math.max(...row);
    let z = 0;
    for (const x of row) z += Math.exp(x - mx);
    s += row[b.targets[n]!]! - mx - Math.log(z);
  }
  return s;
};

describe('DecoderCpuTrainer', () => {
  test('SFT with LoRA: the loss falls, the base stays bit-identical, only the adapters train', () => {
    const m = withLora(4);
    const t = new DecoderCpuTrainer(m, { ...DEFAULT_OPTIM, lr: 1e-2, weightDecay: 0 });
    const before = new Map([...m.weights].map(([k, v]) => [k, Float64Array.from(v)]));
    const losses = Array.from({ length: 12 }, () => t.trainStep([batch]).loss);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.8);
    for (const [k, v] of m.weights)
      expect(
        v.every((x, i) => x === before.get(k)![i]),
        k,
      ).toBe(true);
    expect(m.trainables().every((p) => p.name.includes('lora_'))).toBe(true);
    // the frozen base (adapters off) is the model it started from
    m.loraEnabled = false;
    const base = new DecoderCpu(arch, weights);
    expect(logpOf(m, batch)).toBe(logpOf(base, batch));
  });

  test("LoRA+: a first step moves lora_B by ratio x plain LoRA's step, lora_A by the same", () => {
    const step = (ratio: number) => {
      const m = withLora(4);
      // lora_B starts at 0 (PEFT's init): give it values, so both factors have gradients
      for (const t of m.trainables()) if (t.name.includes('lora_B')) t.w.forEach((_, i) => (t.w[i] = 0.01 * Math.sin(i)));
      const before = new Map(m.trainables().map((t) => [t.name, Float64Array.from(t.w)]));
      new DecoderCpuTrainer(m, { ...DEFAULT_OPTIM, lr: 1e-3, weightDecay: 0, loraPlusRatio: ratio }).trainStep([batch]);
      return new Map(m.trainables().map((t) => [t.name, t.w.map((x, i) => x - before.get(t.name)![i]!)]));
    };
    const plain = step(1);
    const plus = step(6);
    let moved = 0;
    for (const [name, d] of plain) {
      const k = name.includes('.lora_B.') ? 6 : 1;
      d.forEach((x, i) => {
        expect(Math.abs(plus.get(name)![i]! - k * x), `${name}[${i}]`).toBeLessThan(1e-12);
        if (Math.abs(x) > 1e-5) moved++;
      });
    }
    expect(moved).toBeGreaterThan(100);
  });

  test('full fine-tuning moves the base weights and lowers the loss', () => {
    const m = new DecoderCpu(arch, weights);
    const t = new DecoderCpuTrainer(m, { ...DEFAULT_OPTIM, lr: 3e-3 });
    const first = t.trainStep([batch]).loss;
    for (let i = 0; i < 5; i++) t.trainStep([batch]);
    expect(t.trainStep([batch]).loss).toBeLessThan(first);
    expect(m.weights.get('layers.0.qkv.w')!.some((x, i) => x !== weights.get('layers.0.qkv.w')![i])).toBe(true);
  });

  test.each([1, -1])("GRPO with advantage %i moves the sampled tokens' log-prob that way (LoRA)", (sign) => {
    const m = withLora(4);
    const t = new DecoderCpuTrainer(m, { ...DEFAULT_OPTIM, lr: 5e-3, weightDecay: 0 });
    const before = logpOf(m, batch);
    const BT = B * T;
    const rl: RlBatch = {
      ...batch,
      oldLogp: new Float32Array(BT), // recomputed below: on-policy
      oldValues: new Float32Array(BT),
      advantages: new Float32Array(BT).fill(sign),
      returns: new Float32Array(BT),
      refLogp: new Float32Array(BT),
    };
    const cfg = { clip: 0.2, vclip: 0, vfCoef: 0, entCoef: 0, klCoef: 0, invTemp: 1 };
    for (let i = 0; i < 4; i++) {
      const V = arch.vocabSize;
      const { logits: l } = m.forward({ tokens: batch.tokens, B, T });
      for (let n = 0; n < BT; n++) {
        const row = l.subarray(n * V, (n + 1) * V);
        const mx = Math.max(...row);
        let z = 0;
        for (const x of row) z += Math.exp(x - mx);
        rl.oldLogp[n] = rl.refLogp[n] = row[batch.targets[n]!]! - mx - Math.log(z);
      }
      t.rlStep([rl], cfg);
    }
    expect(Math.sign(logpOf(m, batch) - before)).toBe(sign);
  });

  test('a forward after the adapters change in place (an optimizer step, a new scaling) sees the new adapters, not the last merge', () => {
    const m = withLora(2);
    const fresh = () => {
      const f = new DecoderCpu(arch, weights);
      const l = m.headState.lora as { modules: never; rank: number; scaling: number; A: Float64Array[]; B: Float64Array[] };
      f.setLora({ modules: l.modules, rank: l.rank, scaling: l.scaling, A: l.A, B: l.B });
      return logpOf(f, batch);
    };
    const first = logpOf(m, batch);
    expect(logpOf(m, batch)).toBe(first); // the same adapters: the merge is reused, the same numbers
    for (const t of m.trainables()) if (t.name.includes('lora_B')) t.w[3] = 0.05; // in place, as AdamW writes
    const moved = logpOf(m, batch);
    expect(moved).not.toBe(first);
    expect(moved).toBe(fresh());
    m.loraEnabled = false;
    expect(logpOf(m, batch)).toBe(logpOf(new DecoderCpu(arch, weights), batch));
    m.loraEnabled = true;
    expect(logpOf(m, batch)).toBe(moved);
    (m.headState.lora as { scaling: number }).scaling *= 2;
    expect(logpOf(m, batch)).toBe(fresh());
    expect(logpOf(m, batch)).not.toBe(moved);
  });

  test('PPO: a fresh value head on the frozen base learns the returns', () => {
    const m = withLora(2);
    m.addValueHead(5);
    const t = new DecoderCpuTrainer(m, { ...DEFAULT_OPTIM, lr: 2e-2, weightDecay: 0 });
    const BT = B * T;
    const rl: RlBatch = {
      ...batch,
      oldLogp: new Float32Array(BT),
      oldValues: new Float32Array(BT),
      advantages: new Float32Array(BT),
      returns: Float32Array.from({ length: BT }, (_, i) => (i % 2 ? 1 : -1) * 0.5),
      refLogp: new Float32Array(BT),
    };
    const cfg = { clip: 0.2, vclip: 0, vfCoef: 1, entCoef: 0, klCoef: 0, invTemp: 1 };
    const first = t.rlStep([rl], cfg).sums.valueLoss;
    let last = first;
    for (let i = 0; i < 15; i++) last = t.rlStep([rl], cfg).sums.valueLoss;
    expect(last).toBeLessThan(first * 0.7);
    expect(m.trainables().map((p) => p.name)).toContain('value.w');
  });

  test.each(HF_FIXTURE_NAMES.flatMap((f) => [`${f} LoRA`, `${f} full`]))(
    "logitRows (%s): the chosen rows' logits and every gradient are the same numbers as without it, the other rows 0",
    (which) => {
      const [name, mode] = which.split(' ') as [string, string];
      const fx = loadHfFixture(name);
      const V = fx.arch.vocabSize;
      const make = () => {
        const m = new DecoderCpu(fx.arch, fx.weights);
        if (mode === 'LoRA') {
          const cfg = { rank: 2, alpha: 4, targets: [...new Set(loraModulesAll(fx.arch))] };
          const modules = loraModules(fx.arch, cfg);
          const init = initLoraAdapters(modules, 2, new Rng(4));
          init.B.forEach((b) => b.forEach((_, i) => (b[i] = 0.02 * Math.cos(i)))); // nonzero B: every factor has a gradient
          m.setLora({ modules, rank: 2, scaling: loraScaling(cfg), ...init });
        }
        return m;
      };
      const rows = Float32Array.from({ length: B * T }, (_, i) => (i % T >= 5 && i % T < T - 1 ? 1 : 0));
      const dlogits = Float64Array.from({ length: B * T * V }, (_, i) => (rows[Math.floor(i / V)] ? Math.sin(i) : 0));
      const grads = (m: DecoderCpu, logitRows?: Float32Array) => {
        const { logits } = m.forward({ tokens, B, T, logitRows });
        m.zeroGrad();
        m.backward(dlogits);
        return { logits, grads: m.trainables().map((t) => ({ name: t.name, g: Float64Array.from(t.g) })) };
      };
      const all = grads(make());
      const some = grads(make(), rows);
      for (let n = 0; n < B * T; n++)
        for (let v = 0; v < V; v++) expect(some.logits[n * V + v], `row ${n}`).toBe(rows[n] ? all.logits[n * V + v] : 0);
      expect(some.grads.map((x) => x.name)).toEqual(all.grads.map((x) => x.name));
      if (mode === 'LoRA') expect(all.grads.some((x) => x.name.includes('lm_head'))).toBe(true);
      all.grads.forEach((x, i) => expect([...some.grads[i]!.g], x.name).toEqual([...x.g]));
    },
  );
});

/** Every HF module name a LoRA adapter can target on this architecture, lm_head included. */
function loraModulesAll(a: typeof arch): string[] {
  return linearModules(a).map((m) => m.path.split('.').at(-1)!);
}
