import { describe, expect, test } from 'vitest';
import { crossEntropy, crossEntropyRef } from '../kernels/crossentropy';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import type { ModelConfig } from './config';
import { CpuModel } from './cpu';
import { GpuModel } from './gpu';
import { initParams } from './init';
import { paramTable } from './params';

const cfg: ModelConfig = { nLayer: 2, dModel: 32, nHead: 2, contextLength: 16, vocabSize: 50 };

function batch(seed: number, B: number, T: number) {
  const rng = new Rng(seed);
  const ids = (n: number) => Uint32Array.from({ length: n }, () => Math.floor(rng.next() * cfg.vocabSize));
  return { tokens: ids(B * T), targets: ids(B * T), mask: Float32Array.from({ length: B * T }, (_, i) => (i % 3 === 0 ? 0 : 1)) };
}

function scaledParams(seed: number): Float32Array {
  // 5x GPT-2's init so activations and gradients are far from zero everywhere
  return initParams(paramTable(cfg), seed).map((x) => x * 5);
}

describe('GpuModel matches the float64 CpuModel', () => {
  test.each([
    [2, 7, null],
    [3, 5, [0, 2, 4]],
  ])('forward logits and values, B=%i T=%i start=%j', async (B, T, start) => {
    const rt = await testRuntime();
    const params = scaledParams(1);
    const { tokens } = batch(2, B, T);
    const cpu = new CpuModel(cfg, params).forward({ tokens, B, T, start });
    const gpu = new GpuModel(rt, cfg, params);
    const out = await gpu.forward({ tokens, B, T, start });
    expectClose(out.logits, cpu.logits, { atol: 1e-4, rtol: 1e-4 }, 'logits');
    expectClose(out.values, cpu.values, { atol: 1e-4, rtol: 1e-4 }, 'values');
    gpu.dispose();
  });

  test('gradients of the masked cross-entropy plus a value loss', async () => {
    const rt = await testRuntime();
    const B = 2;
    const T = 9;
    const V = cfg.vocabSize;
    const params = scaledParams(3);
    const { tokens, targets, mask } = batch(4, B, T);
    const dvalues = new Float32Array(B * T).map((_, i) => Math.sin(i));
    let tokensCounted = 0;
    for (const m of mask) tokensCounted += m;
    const scale = 1 / tokensCounted;

    const cpu = new CpuModel(cfg, params);
    const { logits } = cpu.forward({ tokens, B, T });
    const losses = new Float64Array(B * T);
    const dlogits = new Float64Array(B * T * V);
    crossEntropyRef(losses, dlogits, logits, targets, mask, B * T, V, scale);
    cpu.backward(dlogits, dvalues);

    const gpu = new GpuModel(rt, cfg, params);
    const { acts, positions } = gpu.writeInput({ tokens, B, T });
    rt.device.queue.writeBuffer(acts.targets, 0, targets);
    rt.device.queue.writeBuffer(acts.mask, 0, mask);
    rt.device.queue.writeBuffer(acts.dvalues, 0, dvalues);
    const rec = rt.record('forward-backward');
    rec.clear(gpu.grads);
    await gpu.recordForward(rec, acts);
    rec.dispatch(
      await rt.compile(crossEntropy),
      { logits: acts.logits, targets: acts.targets, mask: acts.mask, losses: acts.losses, dlogits: acts.dlogits },
      { BT: B * T, V, scale, writeGrad: true },
    );
    const { release, destroy } = await gpu.recordBackward(rec, acts, tokens, positions, true);
    const gl = rec.read(acts.losses);
    const gg = rec.read(gpu.grads);
    await rec.submit();
    for (const b of release) rt.pool.release(b);
    for (const b of destroy) b.destroy();
    expectClose(new Float32Array(await gl), losses, { atol: 1e-5, rtol: 1e-4 }, 'losses');
    const grads = new Float32Array(await gg);
    for (const e of gpu.table.entries) {
      const want = cpu.grads.subarray(e.offset, e.offset + e.size);
      let scaleOf = 0;
      for (const x of want) scaleOf = Math.max(scaleOf, Math.abs(x));
      expectClose(grads.subarray(e.offset, e.offset + e.size), want, { atol: 1e-4 * scaleOf + 1e-7, rtol: 1e-3 }, `grad ${e.name}`);
    }
    expect(gpu.table.entries.length).toBeGreaterThan(10);
    gpu.dispose();
  });
});
