/**
 * The imported-model bench's pieces (perf/models.ts): the model shapes are the Hub's, the random
 * weights are seeded, the decode traffic counts each weight once, and the WebGPU call counters
 * agree with the runtime's own statistics and see every buffer created and destroyed.
 */
import { describe, expect, test } from 'vitest';
import { archParameterCount } from '../model/arch';
import { DecoderGpu } from '../model/decoder-gpu';
import { generateOn } from '../model/generate';
import { testRuntime } from '../testing/gpu';
import { benchArch, benchPrompts, decodeTraffic, gpuCounters, randomDecoderWeights } from './models';

describe('bench models: shapes and weights', () => {
  test('full shapes: SmolLM2-135M, Qwen2.5-0.5B and GPT-2 small as the brief gives them', () => {
    expect(benchArch('smollm2-135m', 'full')).toMatchObject({
      hfArchitecture: 'LlamaForCausalLM',
      nLayer: 30,
      dModel: 576,
      nHead: 9,
      nKvHead: 3,
      headDim: 64,
      dFf: 1536,
      vocabSize: 49152,
      tiedEmbeddings: true,
      positions: { kind: 'rope', theta: 100000 },
    });
    expect(benchArch('qwen2.5-0.5b', 'full')).toMatchObject({
      hfArchitecture: 'Qwen2ForCausalLM',
      nLayer: 24,
      dModel: 896,
      nHead: 14,
      nKvHead: 2,
      headDim: 64,
      dFf: 4864,
      vocabSize: 151936,
      tiedEmbeddings: true,
      bias: { qkv: true, o: false, mlp: false },
      positions: { kind: 'rope', theta: 1e6 },
    });
    expect(benchArch('gpt2', 'full')).toMatchObject({
      nLayer: 12,
      dModel: 768,
      nHead: 12,
      dFf: 3072,
      vocabSize: 50257,
      maxPositions: 1024,
    });
    // the published parameter counts (tied heads counted once)
    expect(archParameterCount(benchArch('smollm2-135m', 'full'))).toBe(134_515_008);
    expect(archParameterCount(benchArch('gpt2', 'full'))).toBe(124_439_808);
    expect(Math.round(archParameterCount(benchArch('qwen2.5-0.5b', 'full')) / 1e6)).toBe(494);
    const q = benchArch('qwen2.5-0.5b', 'quick');
    expect(q).toMatchObject({ nLayer: 1, dModel: 896, nKvHead: 2, vocabSize: 4096 });
  });

  test('random weights and prompts are seeded; norms near 1', () => {
    const a = benchArch('gpt2', 'tiny');
    const w1 = randomDecoderWeights(a, 3);
    const w2 = randomDecoderWeights(a, 3);
    expect([...w1.keys()]).toEqual([...w2.keys()]);
    expect(w1.get('layers.1.up.w')).toEqual(w2.get('layers.1.up.w'));
    expect(randomDecoderWeights(a, 4).get('layers.1.up.w')).not.toEqual(w1.get('layers.1.up.w'));
    const norm = w1.get('normf.w')!;
    expect(Math.min(...norm)).toBeGreaterThan(0.89);
    const up = w1.get('layers.0.up.w')!;
    const std = Math.sqrt(up.reduce((s, x) => s + x * x, 0) / up.length);
    expect(std).toBeGreaterThan(0.018);
    expect(std).toBeLessThan(0.022);
    expect(benchPrompts(100, 2, 5, 1)).toEqual(benchPrompts(100, 2, 5, 1));
    expect(benchPrompts(100, 2, 5, 1).every((p) => p.length === 5 && p.every((id) => id < 100))).toBe(true);
  });

  test('decode traffic: every weight once, the tied head is the embedding, B rows of lookups', () => {
    const a = benchArch('smollm2-135m', 'full');
    const t = decodeTraffic(a, 32, 96);
    const C = a.dModel;
    expect(t.weights).toBe(4 * archParameterCount(a) + 32 * C * 4);
    expect(t.kv).toBe(30 * 2 * 32 * 3 * 97 * 64 * 4);
    const g = benchArch('gpt2', 'full');
    expect(decodeTraffic(g, 1, 10).weights).toBe(4 * (archParameterCount(g) - 1024 * 768) + 2 * 768 * 4); // pos: 1 row, not the table
  });
});

describe('bench models: WebGPU counters', () => {
  test('dispatches and submits agree with rt.stats; buffers are charged to the active engine and credited back', async () => {
    const rt = await testRuntime();
    const c = gpuCounters(rt.device);
    expect(gpuCounters(rt.device)).toBe(c); // installed once
    const a = benchArch('smollm2-135m', 'tiny');
    c.active = 'test-engine';
    const before = c.live['test-engine'] ?? 0;
    const m = new DecoderGpu(rt, a, randomDecoderWeights(a, 1));
    expect((c.live['test-engine'] ?? 0) - before).toBeGreaterThanOrEqual(m.weightBytes);
    const s0 = { ...rt.stats };
    const d0 = c.dispatches;
    const q0 = c.submits;
    c.resetPeak('test-engine');
    await generateOn(m, benchPrompts(a.vocabSize, 2, 4, 1), { maxNewTokens: 3, temperature: 0, seed: 1 });
    expect(c.dispatches - d0).toBe(rt.stats.dispatches - s0.dispatches);
    expect(c.submits - q0).toBe(rt.stats.submits - s0.submits);
    const kv = a.nLayer * 2 * 2 * a.nKvHead * 7 * a.headDim * 4;
    expect(c.peak['test-engine']! - (c.live['test-engine'] ?? 0)).toBeGreaterThanOrEqual(kv); // the cache came and went
    const held = c.live['test-engine']!;
    m.dispose();
    expect(c.live['test-engine']).toBeLessThanOrEqual(held - m.weightBytes);
    c.active = 'other';
  });
});
