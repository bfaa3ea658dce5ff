import { describe, expect, test } from 'vitest';
import { randUniformRef } from '../kernels/rand';
import { sampleRef } from '../kernels/sample';
import { testRuntime } from '../testing/gpu';
import type { ModelConfig } from './config';
import { CpuModel } from './cpu';
import { generate } from './generate';
import { GpuModel } from './gpu';
import { initParams } from './init';
import { paramTable } from './params';

const cfg: ModelConfig = { nLayer: 2, dModel: 32, nHead: 2, contextLength: 24, vocabSize: 37 };
const prompts = [
  [1, 2, 3, 4, 5, 6],
  [7, 8],
  [9, 10, 11, 12],
];

function params(seed: number): Float32Array {
  return initParams(paramTable(cfg), seed).map((x) => x * 8); // peaked distributions: no near-ties
}

/** The CPU model's last-position logits and value for one unpadded sequence. */
function cpuLast(cpu: CpuModel, seq: number[]): { logits: Float64Array; value: number } {
  const { logits, values } = cpu.forward({ tokens: seq, B: 1, T: seq.length });
  const V = cfg.vocabSize;
  return { logits: logits.slice((seq.length - 1) * V, seq.length * V), value: values[seq.length - 1]! };
}

function logSoftmaxAt(row: Float64Array, id: number): number {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  return row[id]! - max - Math.log(sum);
}

describe('generate (KV cache, left padding, GPU sampling)', () => {
  test('greedy decoding equals step-by-step CPU argmax over unpadded sequences, with log-probs and values', async () => {
    const rt = await testRuntime();
    const p = params(21);
    const model = new GpuModel(rt, cfg, p);
    const cpu = new CpuModel(cfg, p);
    const res = await generate(model, prompts, { maxNewTokens: 10, temperature: 0, seed: 1, checkEvery: 4 });
    expect(res.finish).toEqual(['length', 'length', 'length']);
    prompts.forEach((prompt, b) => {
      const seq = [...prompt];
      for (let s = 0; s < 10; s++) {
        const { logits, value } = cpuLast(cpu, seq);
        let arg = 0;
        for (let v = 1; v < logits.length; v++) if (logits[v]! > logits[arg]!) arg = v;
        expect(res.tokens[b]![s], `row ${b} step ${s}`).toBe(arg);
        expect(Math.abs(res.logprobs[b]![s]! - logSoftmaxAt(logits, arg))).toBeLessThan(1e-3);
        expect(Math.abs(res.values[b]![s]! - value)).toBeLessThan(1e-3);
        seq.push(arg);
      }
    });
    expect(res.stats.submits).toBe(3); // 10 steps, a stop check every 4
    model.dispose();
  });

  test('temperature + top-k + top-p sampling makes the choices the CPU reference makes with the same uniforms', async () => {
    const rt = await testRuntime();
    const p = params(22);
    const model = new GpuModel(rt, cfg, p);
    const cpu = new CpuModel(cfg, p);
    const opts = { temperature: 0.9, topK: 12, topP: 0.9 };
    const res = await generate(model, prompts, { ...opts, maxNewTokens: 6, seed: 77 });
    const seqs = prompts.map((x) => [...x]);
    for (let s = 0; s < 6; s++) {
      const u = randUniformRef(77, s, prompts.length);
      seqs.forEach((seq, b) => {
        const { logits } = cpuLast(cpu, seq);
        const { tokens } = sampleRef(logits, 1, cfg.vocabSize, [u[b]!], opts);
        expect(res.tokens[b]![s], `row ${b} step ${s}`).toBe(tokens[0]);
        seq.push(tokens[0]!);
      });
    }
    model.dispose();
  });

  test('stops at EOS and at stop sequences, and the constrain hook masks tokens', async () => {
    const rt = await testRuntime();
    const model = new GpuModel(rt, cfg, params(23));
    const free = await generate(model, [prompts[0]!], { maxNewTokens: 8, temperature: 0, seed: 1 });
    const eos = free.tokens[0]![3]!;
    const firstEos = free.tokens[0]!.indexOf(eos);
    const r1 = await generate(model, [prompts[0]!], { maxNewTokens: 8, temperature: 0, seed: 1, eosId: eos });
    expect(r1.finish[0]).toBe('eos');
    expect(r1.tokens[0]).toEqual(free.tokens[0]!.slice(0, firstEos + 1));
    const stop = free.tokens[0]!.slice(1, 3);
    const r2 = await generate(model, [prompts[0]!], { maxNewTokens: 8, temperature: 0, seed: 1, stop: [stop] });
    expect(r2.finish[0]).toBe('stop');
    expect(r2.tokens[0]!.slice(-2)).toEqual(stop);
    const W = Math.ceil(cfg.vocabSize / 32);
    const only5 = new Uint32Array(2 * W);
    for (let b = 0; b < 2; b++) only5[b * W] = 1 << 5;
    const seen: number[][][] = [];
    const r3 = await generate(model, prompts.slice(0, 2), {
      maxNewTokens: 4,
      temperature: 1,
      seed: 3,
      constrain: (_s, generated) => {
        seen.push(generated.map((g) => [...g]));
        return { allowMask: only5 };
      },
    });
    expect(r3.tokens).toEqual([
      [5, 5, 5, 5],
      [5, 5, 5, 5],
    ]);
    expect(seen[2]).toEqual([
      [5, 5],
      [5, 5],
    ]);
    model.dispose();
  });

  test('rejects prompts that do not fit the context', async () => {
    const rt = await testRuntime();
    const model = new GpuModel(rt, cfg, params(24));
    await expect(generate(model, [new Array(20).fill(1)], { maxNewTokens: 5, temperature: 0, seed: 1 })).rejects.toThrow(
      /prompt \(20\) \+ maxNewTokens \(5\) exceeds contextLength 24/,
    );
    model.dispose();
  });
});

describe('cpuGenerate', () => {
  test('chooses the same tokens as the GPU from the same uniforms, with matching log-probs and values', async () => {
    const { cpuGenerate } = await import('./cpu-generate');
    const rt = await testRuntime();
    const p = params(25);
    const model = new GpuModel(rt, cfg, p);
    const opts = { maxNewTokens: 7, temperature: 1.1, topK: 0, topP: 0.95, seed: 5, eosId: 3 };
    const gpu = await generate(model, prompts, opts);
    const cpu = cpuGenerate(new CpuModel(cfg, p), prompts, opts);
    expect(cpu.tokens).toEqual(gpu.tokens);
    expect(cpu.finish).toEqual(gpu.finish);
    cpu.logprobs.forEach((row, b) => row.forEach((lp, s) => expect(Math.abs(lp - gpu.logprobs[b]![s]!)).toBeLessThan(1e-3)));
    cpu.values.forEach((row, b) => row.forEach((v, s) => expect(Math.abs(v - gpu.values[b]![s]!)).toBeLessThan(1e-3)));
    model.dispose();
  });
});
