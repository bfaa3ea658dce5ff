/**
 * The golden fixture (golden.json): logits, loss, every gradient and the first 10 losses of a
 * fixed AdamW run on a tiny config, as produced by the float64 CPU model when the fixture was
 * made (UPDATE_GOLDEN=1 npx vitest run src/model/golden.test.ts rewrites it). Any change to
 * the model's math shows up here, on both backends.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { crossEntropyRef } from '../kernels/crossentropy';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import type { ModelConfig } from './config';
import { CpuModel } from './cpu';
import { CpuTrainer } from './cpu-train';
import { GpuModel } from './gpu';
import { GpuTrainer } from './gpu-train';
import { initParams } from './init';
import { DEFAULT_OPTIM, type TokenBatch } from './optim';
import { paramTable } from './params';

const FILE = join(import.meta.dirname, 'golden.json');
const cfg: ModelConfig = { nLayer: 2, dModel: 8, nHead: 2, contextLength: 8, vocabSize: 16 };
const optim = { ...DEFAULT_OPTIM, lr: 1e-2 };

interface Golden {
  config: ModelConfig;
  logits: number[];
  loss: number;
  grads: number[];
  losses: number[];
}

function setup() {
  const params = initParams(paramTable(cfg), 7).map((x) => x * 5);
  const rng = new Rng(8);
  const B = 2;
  const T = 6;
  const ids = (n: number) => Uint32Array.from({ length: n }, () => Math.floor(rng.next() * cfg.vocabSize));
  const batch: TokenBatch = {
    B,
    T,
    tokens: ids(B * T),
    targets: ids(B * T),
    mask: Float32Array.from({ length: B * T }, (_, i) => (i % T === 0 ? 0 : 1)),
  };
  return { params, batch };
}

function computeCpu(): Golden {
  const { params, batch } = setup();
  const { B, T } = batch;
  const V = cfg.vocabSize;
  const model = new CpuModel(cfg, params);
  const { logits } = model.forward({ tokens: batch.tokens, B, T });
  const losses = new Float64Array(B * T);
  const dlogits = new Float64Array(B * T * V);
  let n = 0;
  for (const m of batch.mask) n += m;
  crossEntropyRef(losses, dlogits, logits, batch.targets, batch.mask, B * T, V, 1 / n);
  model.backward(dlogits, null);
  const loss = losses.reduce((a, b) => a + b, 0) / n;
  const trainer = new CpuTrainer(new CpuModel(cfg, params), optim);
  const run = Array.from({ length: 10 }, () => trainer.trainStep([batch]).loss);
  return { config: cfg, logits: Array.from(logits), loss, grads: Array.from(model.grads), losses: run };
}

const golden: Golden = (() => {
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(FILE)) {
    if (process.env.UPDATE_GOLDEN !== '1') throw new Error(`${FILE} is missing; create it with UPDATE_GOLDEN=1`);
    writeFileSync(FILE, `${JSON.stringify(computeCpu())}\n`);
  }
  return JSON.parse(readFileSync(FILE, 'utf8')) as Golden;
})();

describe('golden fixture', () => {
  test('float64 CPU model reproduces it', () => {
    const now = computeCpu();
    expect(now.config).toEqual(golden.config);
    expectClose(now.logits, golden.logits, { atol: 1e-12, rtol: 1e-9 }, 'logits');
    expect(now.loss).toBeCloseTo(golden.loss, 10);
    expectClose(now.grads, golden.grads, { atol: 1e-12, rtol: 1e-9 }, 'gradients');
    expectClose(now.losses, golden.losses, { atol: 1e-12, rtol: 1e-9 }, 'first 10 losses');
  });

  test('webgpu backend reproduces it within float32 tolerance', async () => {
    const rt = await testRuntime();
    const { params, batch } = setup();
    const model = new GpuModel(rt, cfg, params);
    const { logits } = await model.forward({ tokens: batch.tokens, B: batch.B, T: batch.T });
    expectClose(logits, golden.logits, { atol: 1e-5, rtol: 1e-4 }, 'logits');
    model.dispose();
    expect(golden.loss).toBeCloseTo(golden.losses[0]!, 12); // the run's first loss is the fixture's loss
    const trainer = new GpuTrainer(new GpuModel(rt, cfg, params), optim);
    const losses: number[] = [];
    for (let s = 0; s < 10; s++) {
      losses.push((await trainer.trainStep([batch], true)).loss!);
      if (s === 0) {
        // after the first step `grads` still holds that step's gradients, at the initial parameters
        const grads = await trainer.model.readGrads();
        let scale = 0;
        for (const g of golden.grads) scale = Math.max(scale, Math.abs(g));
        expectClose(grads, golden.grads, { atol: 1e-5 * scale, rtol: 1e-3 }, 'gradients');
      }
    }
    expectClose(losses, golden.losses, { atol: 1e-5, rtol: 1e-3 }, 'first 10 losses');
    trainer.model.dispose();
    trainer.dispose();
  });
});
