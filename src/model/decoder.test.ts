/**
 * The data-described decoder against the independent oracle: the tiny GPT-2 (F32), Llama (BF16)
 * and Qwen2 (F16, two shards, padded vocabulary, untied head) checkpoints of
 * data/hf-fixtures, whose expected logits a PyTorch implementation following transformers'
 * modeling code wrote (scripts/hf-fixtures.py). Both engines, float64 CPU and WGSL, must match
 * within 1e-4 relative (|a - b| / max(|b|, rms(b)), as the ONNX parity measures): without a
 * cache, with a KV cache step by step, left padded, and greedy decoding. With the matrices stored
 * 16-bit on the GPU (DecoderGpu's weightFormat): the Llama (BF16) and Qwen2 (F16) checkpoints in
 * their own dtype compute exactly their model, so PyTorch's numbers hold as they are; GPT-2 (F32)
 * forced to F16 computes the rounded model, which the float64 CPU model on the rounded weights gives.
 */
import { describe, expect, test } from 'vitest';
import { maxRelDiff } from '../onnx/parity';
import { testRuntime } from '../testing/gpu';
import { HF_FIXTURE_NAMES, loadHfFixture } from '../testing/hf-fixtures';
import { cpuGenerateOn } from './cpu-generate';
import { DecoderCpu } from './decoder-cpu';
import { hfWeightFormat } from '../hf/load';
import { archWeightBytes } from './arch';
import { DecoderGpu, roundedWeights } from './decoder-gpu';
import { generateOn } from './generate';

const TOL = 1e-4;

const flat = (x: number[][][]) => x.flat(2);

/** Row b's logits at positions [from, to) of a (B, T, V) result. */
function rows(logits: ArrayLike<number>, b: number, T: number, V: number, from: number, to: number): number[] {
  return Array.prototype.slice.call(logits, (b * T + from) * V, (b * T + to) * V);
}

describe.each(HF_FIXTURE_NAMES)('%s fixture', (name) => {
  const { arch, weights, expected: e, dtypes } = loadHfFixture(name);
  const V = arch.vocabSize;
  const [B, T] = [e.input_ids.length, e.input_ids[0]!.length];
  const tokens = e.input_ids.flat();
  const cpu = new DecoderCpu(arch, weights);
  // the embedding split into 3 chunks, as a vocabulary over one binding would be
  // the left-padded batch of expected.json: each row's first real position, and the forward's input
  const paddedBatch = (() => {
    const p = e.padded;
    const start = p.attention_mask.map((m) => m.indexOf(1));
    return { padded: p, start, input: { tokens: p.input_ids.flat(), positions: p.position_ids.flat(), start, B, T } };
  })();
  const gpuModel = async () => new DecoderGpu(await testRuntime(), arch, weights, { embedChunkBytes: Math.ceil(V / 3) * arch.dModel * 4 });

  test('logits without a cache: cpu and webgpu match PyTorch', async () => {
    const c = cpu.forward({ tokens, B, T }).logits;
    expect(maxRelDiff(c, flat(e.logits))).toBeLessThan(TOL);
    const gpu = await gpuModel();
    expect(gpu.embedChunks).toBe(3);
    expect(maxRelDiff(await gpu.forward({ tokens, B, T }), flat(e.logits))).toBeLessThan(TOL);
    gpu.dispose();
  });

  test('KV cache, prefill then one token at a time: the logits of every step', async () => {
    const gpu = await gpuModel();
    const cache = cpu.createKvCache(B, T);
    const gcache = gpu.createKvCache(B, T);
    let pos = 0;
    for (const step of e.kv.steps) {
      const n = step.input_ids[0]!.length;
      const input = { tokens: step.input_ids.flat(), positions: step.position_ids.flat(), B, T: n };
      expect(maxRelDiff(cpu.forward(input, { cache, pos }).logits, flat(step.logits))).toBeLessThan(TOL);
      const s = gpu.allocStep(B, n, false);
      gpu.writeInput(s, input);
      const rec = gpu.rt.record('kv step');
      await gpu.recordForward(rec, s, { cache: gcache, pos });
      const got = rec.read(s.logits);
      await rec.submit();
      expect(maxRelDiff(new Float32Array(await got), flat(step.logits))).toBeLessThan(TOL);
      gpu.destroyStep(s);
      pos += n;
    }
    gpu.destroyKvCache(gcache);
    gpu.dispose();
  });

  test('left padding: the real positions match', async () => {
    const { padded: p, start, input } = paddedBatch;
    const gpu = await gpuModel();
    for (const logits of [cpu.forward(input).logits, await gpu.forward(input)]) {
      for (let b = 0; b < B; b++) expect(maxRelDiff(rows(logits, b, T, V, start[b]!, T), p.logits[b]!.flat())).toBeLessThan(TOL);
    }
    gpu.dispose();
  });

  test('greedy decoding of two prompts of different lengths (left padded together)', async () => {
    const prompts = e.greedy.prompts.map((q) => q.input_ids);
    const want = e.greedy.prompts.map((q) => q.generated_ids);
    const opts = { maxNewTokens: e.greedy.max_new_tokens, temperature: 0, seed: 1 };
    expect(cpuGenerateOn(cpu, prompts, opts).tokens).toEqual(want);
    const gpu = await gpuModel();
    expect((await generateOn(gpu, prompts, opts)).tokens).toEqual(want);
    gpu.dispose();
  });

  test('matrices stored 16-bit: logits (plain and left padded) and greedy ids of the model they hold', async () => {
    const own = hfWeightFormat(dtypes);
    const format = own === 'f32' ? 'f16' : own; // GPT-2's F32 forced to F16
    const rounded = roundedWeights(arch, weights, format);
    if (own !== 'f32') for (const [n, w] of weights) expect(rounded.get(n), `${n} is exact in ${format}`).toEqual(w);
    const ref = new DecoderCpu(arch, rounded);
    const C = arch.dModel;
    const gpu = new DecoderGpu(await testRuntime(), arch, weights, { weightFormat: format, embedChunkBytes: Math.ceil(V / 3) * C * 2 + 2 });
    expect(gpu.embedChunks).toBe(3);
    const chunks = arch.tiedEmbeddings ? 3 : 6;
    expect(gpu.weightBytes).toBeGreaterThanOrEqual(archWeightBytes(arch, format));
    expect(gpu.weightBytes).toBeLessThanOrEqual(archWeightBytes(arch, format) + 2 * chunks);
    expect(gpu.weightBytes).toBeLessThan(0.6 * archWeightBytes(arch, 'f32'));
    const want = own === 'f32' ? ref.forward({ tokens, B, T }).logits : flat(e.logits);
    if (own === 'f32') expect(maxRelDiff(want, flat(e.logits))).toBeGreaterThan(TOL); // the rounding shows
    expect(maxRelDiff(await gpu.forward({ tokens, B, T }), want)).toBeLessThan(TOL);
    const { padded: p, start, input } = paddedBatch;
    const padded = await gpu.forward(input);
    const wantPadded = own === 'f32' ? ref.forward(input).logits : null;
    for (let b = 0; b < B; b++) {
      const w = wantPadded ? rows(wantPadded, b, T, V, start[b]!, T) : p.logits[b]!.flat();
      expect(maxRelDiff(rows(padded, b, T, V, start[b]!, T), w)).toBeLessThan(TOL);
    }
    const prompts = e.greedy.prompts.map((q) => q.input_ids);
    const opts = { maxNewTokens: e.greedy.max_new_tokens, temperature: 0, seed: 1 };
    const ids = own === 'f32' ? cpuGenerateOn(ref, prompts, opts).tokens : e.greedy.prompts.map((q) => q.generated_ids);
    expect((await generateOn(gpu, prompts, opts)).tokens).toEqual(ids);
    gpu.dispose();
  });

  test('vocabLimit: ids at or past it are never sampled, on either engine, and both pick the same ids', async () => {
    const prompts = e.greedy.prompts.map((q) => q.input_ids);
    const limit = 97; // not a multiple of 32: the mask's last word is partial
    const opts = { maxNewTokens: 24, temperature: 1.5, seed: 5, vocabLimit: limit };
    const c = cpuGenerateOn(cpu, prompts, opts).tokens;
    expect(c.flat().every((id) => id < limit)).toBe(true);
    const gpu = await gpuModel();
    expect((await generateOn(gpu, prompts, opts)).tokens).toEqual(c);
    gpu.dispose();
    const free = cpuGenerateOn(cpu, prompts, { ...opts, vocabLimit: undefined }).tokens;
    expect(free.flat().some((id) => id >= limit)).toBe(true); // the limit is what kept them out
  });
});
