import { describe, expect, test } from 'vitest';
import { crossEntropyRef } from '../kernels/crossentropy';
import { Rng } from '../util/random';
import { validateModelConfig, type ModelConfig } from './config';
import { CpuModel } from './cpu';
import { initParams } from './init';
import { paramTable } from './params';

const cfg: ModelConfig = { nLayer: 2, dModel: 8, nHead: 2, contextLength: 8, vocabSize: 11 };

function setup(seed: number) {
  const table = paramTable(cfg);
  const params = initParams(table, seed);
  // Larger than GPT-2's init so every path carries a visible gradient.
  const big = Float64Array.from(params, (p, i) => p * 10 + (i % 7) * 1e-3);
  const model = new CpuModel(cfg, big);
  const rng = new Rng(seed);
  const B = 2;
  const T = 5;
  const tokens = Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * cfg.vocabSize));
  const targets = Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * cfg.vocabSize));
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T === 0 ? 0 : 1));
  const valueWeights = Float64Array.from({ length: B * T }, () => rng.uniform(-1, 1));
  return { model, table, B, T, tokens, targets, mask, valueWeights };
}

/** loss = masked CE + sum(valueWeights * values): exercises the LM and value heads. */
function lossOf(s: ReturnType<typeof setup>, withGrad: boolean, start?: number[]): number {
  const { model, B, T, tokens, targets, mask, valueWeights } = s;
  const V = cfg.vocabSize;
  const { logits, values } = model.forward({ tokens, B, T, start: start ?? null });
  const losses = new Float64Array(B * T);
  const dlogits = withGrad ? new Float64Array(B * T * V) : null;
  crossEntropyRef(losses, dlogits, logits, targets, mask, B * T, V, 1);
  if (withGrad) model.backward(dlogits!, valueWeights);
  let loss = 0;
  for (let i = 0; i < B * T; i++) loss += losses[i]! + valueWeights[i]! * values[i]!;
  return loss;
}

describe('CpuModel', () => {
  test.each([
    ['no padding', undefined],
    ['left padding', [0, 2]],
  ])('gradients match central finite differences (%s)', (_, start) => {
    const s = setup(5);
    s.model.zeroGrad();
    lossOf(s, true, start);
    const rng = new Rng(9);
    let checked = 0;
    for (const e of s.table.entries) {
      // wpe rows past T get no gradient by construction; sample the used part of every tensor
      const used = e.name === 'wpe' ? s.T * cfg.dModel : e.size;
      for (let k = 0; k < 3; k++) {
        const i = e.offset + Math.floor(rng.next() * used);
        const orig = s.model.params[i]!;
        const h = 1e-5;
        s.model.params[i] = orig + h;
        const up = lossOf(s, false, start);
        s.model.params[i] = orig - h;
        const down = lossOf(s, false, start);
        s.model.params[i] = orig;
        const fd = (up - down) / (2 * h);
        const g = s.model.grads[i]!;
        expect(Math.abs(g - fd), `${e.name}[${i - e.offset}] analytic ${g} vs numeric ${fd}`).toBeLessThanOrEqual(
          1e-6 + 1e-5 * Math.abs(fd),
        );
        checked++;
      }
    }
    expect(checked).toBe(s.table.entries.length * 3);
  });

  test('rejects tokens outside the vocabulary and sequences longer than the context', () => {
    const s = setup(1);
    expect(() => s.model.forward({ tokens: [0, 11], B: 1, T: 2 })).toThrow(/token 11 at index 1 is outside the vocabulary 0..10/);
    expect(() => s.model.forward({ tokens: new Array(9).fill(0), B: 1, T: 9 })).toThrow(/T=9 exceeds contextLength 8/);
  });
});

describe('config', () => {
  test('errors name the field', () => {
    expect(() => validateModelConfig({ ...cfg, dModel: 10, nHead: 4 })).toThrow(/dModel: must be a multiple of nHead \(4\), got 10/);
    expect(() => validateModelConfig({ ...cfg, nLayer: 0 })).toThrow(/nLayer: must be in 1..48, got 0/);
    expect(() => validateModelConfig({ ...cfg, vocab: 3 })).toThrow(/unknown field "vocab"/);
    expect(() => validateModelConfig({ ...cfg, nHead: 2.5 })).toThrow(/nHead: must be an integer/);
    const { contextLength: _, ...rest } = cfg;
    expect(() => validateModelConfig(rest)).toThrow(/contextLength: missing/);
  });
  test('parameter table: aligned offsets, decayed tensors first', () => {
    const t = paramTable(cfg);
    for (const e of t.entries) expect(e.offset % 64).toBe(0);
    expect(t.entries.filter((e) => e.decay).every((e) => e.offset < t.decayEnd)).toBe(true);
    expect(t.entries.filter((e) => !e.decay).every((e) => e.offset >= t.decayEnd)).toBe(true);
    // GPT-2 count: V*C + maxT*C + L*(12C^2 + 13C) + 2C, plus the value head C + 1
    const { nLayer: L, dModel: C, contextLength: T, vocabSize: V } = cfg;
    expect(t.count).toBe(V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C + 1);
  });
});
