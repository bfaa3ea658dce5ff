import { describe, expect, test } from 'vitest';
import { trainTokenizer, Tokenizer } from '../tokenizer';
import { testRuntime } from '../testing/gpu';
import { createBackend, type BackendKind } from './backend';
import { loadModel, saveModel } from './model-file';
import type { ModelConfig } from './config';
import { initParams } from './init';
import { DEFAULT_OPTIM, type TokenBatch } from './optim';
import { paramTable } from './params';

const corpus = [
  'function add(a, b) {\n  return a + b;\n}\n',
  'function isEven(n) {\n  return n % 2 === 0;\n}\n',
  'const square = (x) => x * x;\n',
  'function reverse(s) {\n  return s.split("").reverse().join("");\n}\n',
];
const tokenizer = trainTokenizer(corpus, { vocabSize: 300 });
const T = 32;
const cfg: ModelConfig = { nLayer: 1, dModel: 32, nHead: 2, contextLength: T, vocabSize: tokenizer.vocabSize };
const optim = { ...DEFAULT_OPTIM, lr: 2e-2, weightDecay: 0 };

/** One row per corpus item, from position 0, EOS-terminated and padded (mask 0) to T. */
function corpusBatch(): TokenBatch {
  const B = corpus.length;
  const tokens = new Uint32Array(B * T).fill(tokenizer.padId);
  const targets = new Uint32Array(B * T).fill(tokenizer.padId);
  const mask = new Float32Array(B * T);
  corpus.forEach((c, b) => {
    const ids = [...tokenizer.encode(c), tokenizer.eosId];
    if (ids.length > T + 1) throw new Error(`corpus item ${b} has ${ids.length} tokens, more than T + 1 = ${T + 1}`);
    for (let t = 0; t + 1 < ids.length; t++) {
      tokens[b * T + t] = ids[t]!;
      targets[b * T + t] = ids[t + 1]!;
      mask[b * T + t] = 1;
    }
  });
  return { B, T, tokens, targets, mask };
}

async function backend(kind: BackendKind, params = initParams(paramTable(cfg), 1)) {
  return createBackend(kind, { config: cfg, params, optim, runtime: await testRuntime() });
}

describe('a tiny model overfits a small code corpus', () => {
  test.each(['cpu', 'webgpu'] as const)('%s: loss from ~ln(V) to below 0.5 in 30 steps', { timeout: 240_000 }, async (kind) => {
    const be = await backend(kind);
    const batch = corpusBatch();
    const first = await be.trainStep([batch], true);
    expect(first.loss!).toBeGreaterThan(0.9 * Math.log(cfg.vocabSize));
    let last = first;
    for (let s = 1; s < 30; s++) last = await be.trainStep([batch], s === 29);
    expect(last.loss!).toBeLessThan(0.5);
    // greedy generation now reproduces the corpus from its first tokens
    const prompt = tokenizer.encode('function isEven');
    const gen = await be.generate([prompt], { maxNewTokens: 12, temperature: 0, seed: 1 });
    expect(tokenizer.decode([...prompt, ...gen.tokens[0]!])).toContain('function isEven(n) {');
    be.dispose();
  });
});

describe('model checkpoints', () => {
  test('webgpu -> bytes -> cpu: same logits; AdamW state and tokenizer survive', async () => {
    const gpu = await backend('webgpu');
    const batch = corpusBatch();
    for (let s = 0; s < 3; s++) await gpu.trainStep([batch], false);
    const bytes = saveModel({
      config: cfg,
      tokenizer: tokenizer.toJSON(),
      params: await gpu.getParams(),
      optimizer: await gpu.getOptimizerState(),
      meta: { note: 'test' },
    });
    const snap = loadModel(bytes, cfg);
    expect(snap.optimizer?.step).toBe(3);
    expect(Tokenizer.fromJSON(snap.tokenizer).encode(corpus[0]!)).toEqual(tokenizer.encode(corpus[0]!));
    const cpu = createBackend('cpu', { config: cfg, params: snap.params, optim, optimizer: snap.optimizer });
    const input = { tokens: batch.tokens.subarray(0, T), B: 1, T };
    const [a, b] = [await gpu.forward(input), await cpu.forward(input)];
    let maxRel = 0;
    for (let i = 0; i < a.logits.length; i++)
      maxRel = Math.max(maxRel, Math.abs(a.logits[i]! - b.logits[i]!) / Math.max(1, Math.abs(b.logits[i]!)));
    expect(maxRel).toBeLessThan(1e-4);
    // the next step continues from the saved moments on both backends
    const [ga, cb] = [await gpu.trainStep([batch], true), await cpu.trainStep([batch], true)];
    expect(Math.abs(ga.loss! - cb.loss!)).toBeLessThan(1e-3 * cb.loss!);
    gpu.dispose();
  });

  test('a checkpoint for another config is rejected with every difference named', () => {
    const bytes = saveModel({ config: cfg, tokenizer: null, params: initParams(paramTable(cfg), 2) });
    const other = { ...cfg, dModel: 64, nHead: 4 };
    expect(() => loadModel(bytes, other)).toThrow(/dModel[\s\S]*nHead/);
    const corrupt = bytes.slice();
    corrupt[corrupt.length - 5]! ^= 0xff;
    expect(() => loadModel(corrupt)).toThrow(/CRC/i);
  });
});
