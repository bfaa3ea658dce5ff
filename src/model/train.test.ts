import { describe, expect, test } from 'vitest';
import { testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import type { ModelConfig } from './config';
import { CpuModel } from './cpu';
import { CpuTrainer } from './cpu-train';
import { GpuModel } from './gpu';
import { GpuTrainer } from './gpu-train';
import { initParams } from './init';
import { DEFAULT_OPTIM, NumericsError, type TokenBatch } from './optim';
import { paramTable } from './params';

const cfg: ModelConfig = { nLayer: 2, dModel: 32, nHead: 2, contextLength: 16, vocabSize: 40 };
const opt = { ...DEFAULT_OPTIM, lr: 1e-2, weightDecay: 0.1, gradClip: 1 };

function makeBatch(seed: number, B: number, T: number): TokenBatch {
  const rng = new Rng(seed);
  const seq = Uint32Array.from({ length: B * (T + 1) }, () => Math.floor(rng.next() * cfg.vocabSize));
  const tokens = new Uint32Array(B * T);
  const targets = new Uint32Array(B * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      tokens[b * T + t] = seq[b * (T + 1) + t]!;
      targets[b * T + t] = seq[b * (T + 1) + t + 1]!;
    }
  }
  return { B, T, tokens, targets, mask: Float32Array.from({ length: B * T }, (_, i) => (i % T < 2 ? 0 : 1)) };
}

/** Splits a batch into single-sequence micro-batches. */
function split(b: TokenBatch): TokenBatch[] {
  return Array.from({ length: b.B }, (_, i) => ({
    B: 1,
    T: b.T,
    tokens: b.tokens.slice(i * b.T, (i + 1) * b.T),
    targets: b.targets.slice(i * b.T, (i + 1) * b.T),
    mask: b.mask.slice(i * b.T, (i + 1) * b.T),
  }));
}

describe('training step', () => {
  test('GPU losses follow the float64 CPU trainer step by step', async () => {
    const rt = await testRuntime();
    const params = initParams(paramTable(cfg), 11);
    const cpu = new CpuTrainer(new CpuModel(cfg, params), opt);
    const gpu = new GpuTrainer(new GpuModel(rt, cfg, params), opt);
    const batch = makeBatch(1, 3, 11);
    for (let s = 0; s < 4; s++) {
      const c = cpu.trainStep([batch]);
      const g = await gpu.trainStep([batch], true);
      expect(Math.abs(g.loss! - c.loss), `step ${s + 1}: gpu ${g.loss} cpu ${c.loss}`).toBeLessThan(2e-4 * c.loss);
      expect(Math.abs(g.gradNorm! - c.gradNorm), `step ${s + 1} grad norm`).toBeLessThan(1e-3 * c.gradNorm);
    }
    gpu.model.dispose();
    gpu.dispose();
  });

  test('gradient accumulation over micro-batches equals the whole batch', async () => {
    const rt = await testRuntime();
    const params = initParams(paramTable(cfg), 12);
    const batch = makeBatch(2, 2, 9);
    const whole = new GpuTrainer(new GpuModel(rt, cfg, params), opt);
    const parts = new GpuTrainer(new GpuModel(rt, cfg, params), opt);
    const a = await whole.trainStep([batch], true);
    const b = await parts.trainStep(split(batch), true);
    expect(Math.abs(a.loss! - b.loss!)).toBeLessThan(1e-5);
    const pa = await whole.model.readParams();
    const pb = await parts.model.readParams();
    let maxDiff = 0;
    for (let i = 0; i < pa.length; i++) maxDiff = Math.max(maxDiff, Math.abs(pa[i]! - pb[i]!));
    expect(maxDiff).toBeLessThan(1e-5);
    const cpuWhole = new CpuTrainer(new CpuModel(cfg, params), opt).trainStep([batch]);
    const cpuParts = new CpuTrainer(new CpuModel(cfg, params), opt).trainStep(split(batch));
    expect(Math.abs(cpuWhole.loss - cpuParts.loss)).toBeLessThan(1e-12);
    for (const t of [whole, parts]) {
      t.model.dispose();
      t.dispose();
    }
  });

  test('one submit per step; no readback except on logging steps', async () => {
    const rt = await testRuntime();
    const t = new GpuTrainer(new GpuModel(rt, cfg, initParams(paramTable(cfg), 13)), opt);
    const batch = makeBatch(3, 2, 8);
    await t.trainStep(split(batch), false); // warm-up: pipelines compiled
    const before = { ...rt.stats };
    await t.trainStep(split(batch), false);
    expect(rt.stats.submits - before.submits).toBe(1);
    expect(rt.stats.readbacks - before.readbacks).toBe(0);
    const mid = { ...rt.stats };
    await t.trainStep([batch], true);
    expect(rt.stats.submits - mid.submits).toBe(1);
    expect(rt.stats.readbacks - mid.readbacks).toBe(3); // loss, grad norm, status
    t.model.dispose();
    t.dispose();
  });

  test('the numerics guard stops on a non-finite loss and names the step', async () => {
    const rt = await testRuntime();
    const table = paramTable(cfg);
    const params = initParams(table, 14);
    params[table.byName.get('lnfb')!.offset] = NaN;
    const batch = makeBatch(4, 1, 6);
    const cpu = new CpuTrainer(new CpuModel(cfg, params), opt);
    expect(() => cpu.trainStep([batch])).toThrow(NumericsError);
    expect(() => cpu.trainStep([batch])).toThrow(/non-finite loss \(NaN\) at step 2/);
    const gpu = new GpuTrainer(new GpuModel(rt, cfg, params), opt);
    await expect(gpu.trainStep([batch], true)).rejects.toThrow(/non-finite loss \(NaN\) at step 1/);
    gpu.model.dispose();
    gpu.dispose();
  });
});
