/**
 * Importing ONNX causal LMs: malformed and unsupported files rejected with messages naming the
 * problem; a hand-written bigram model sampled and evaluated (pass@k) on a tiny suite; our own
 * export, imported, samples the same tokens as the CPU backend and serves as the KL reference.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { createBackend } from '../model/backend';
import { DEFAULT_OPTIM } from '../model/optim';
import { DEFAULT_REWARD } from '../reward/reward';
import { mergeConfig, resolveConfig } from '../rl/config';
import { scoreActions } from '../rl/episodes';
import { evaluate } from '../rl/evaluate';
import { KlController } from '../rl/advantages';
import { ppoIteration } from '../rl/ppo-loop';
import { sampleTasks } from '../rl/sample';
import { buildTaskSet } from '../rl/tasks';
import { MINI_RUN } from '../rl/testing';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { trainTokenizer } from '../tokenizer';
import { Rng } from '../util/random';
import { exportOnnx } from './export';
import { assertSameTokenizer, importOnnxModel, inspectOnnxModel, OnnxImportError } from './import';
import { loadNodeOrt } from './node';
import { parityInput } from './parity';
import { DataType, valueInfo } from './proto';
import type { Ort } from './runtime';
import { attr } from './graph';
import { BIGRAM_COMPLETION, BIGRAM_SUITE, bigramForSuite, bigramModel, byteTokenizer, TINY, tinySnapshot } from './testing';

let ort: Ort;
let pool: SandboxPool;
let analyzer: Analyzer;
beforeAll(async () => {
  [ort, pool, analyzer] = await Promise.all([loadNodeOrt(), createNodePool({ size: 2 }), createAnalyzer(nodeWasmLoader)]);
}, 60_000);
afterAll(() => pool?.close());

const tok = byteTokenizer();
const V = tok.vocabSize;
const tokJson = tok.toJSON();
const CONFIG = { ...TINY, vocabSize: V };
const reject = (bytes: Uint8Array, o: { tokenizer?: unknown; contextLength?: number } = {}) =>
  importOnnxModel(ort, bytes, o.tokenizer ?? tokJson, {
    file: 'model.onnx',
    tokenizerFile: 'tok.json',
    contextLength: o.contextLength ?? 32,
  });

describe('rejects malformed and unsupported models, naming the problem', () => {
  const good = exportOnnx(tinySnapshot(CONFIG));

  test('a truncated file', async () => {
    await expect(reject(good.subarray(0, Math.floor(good.length * 0.6)))).rejects.toThrow(
      /^model\.onnx: not a valid ONNX file: truncated protobuf at byte \d+ \(the file has \d+ bytes\)$/,
    );
  });

  test('garbage bytes and an empty file', async () => {
    const rng = new Rng(7);
    for (let i = 0; i < 5; i++) {
      const junk = Uint8Array.from({ length: 200 + 50 * i }, () => Math.floor(rng.next() * 256));
      await expect(reject(junk)).rejects.toThrow(/^model\.onnx: (not a valid ONNX file|not an ONNX model)/);
    }
    await expect(reject(new TextEncoder().encode('{"not": "onnx"}'))).rejects.toThrow(OnnxImportError);
    await expect(reject(new Uint8Array(0))).rejects.toThrow('model.onnx: empty file');
  });

  test('a graph without input_ids lists the inputs it has', async () => {
    const m = bigramModel(V, new Map(), {
      tweak: (g) => {
        g.inputs[0]!.name = 'tokens';
        g.nodes[0]!.input![1] = 'tokens';
      },
    });
    await expect(reject(m)).rejects.toThrow('model.onnx: no input named input_ids (inputs: tokens: int64[batch, sequence])');
  });

  test('a vocabulary mismatch between the tokenizer and the logits', async () => {
    await expect(reject(exportOnnx(tinySnapshot(TINY)))).rejects.toThrow(
      'tok.json: tokenizer vocab 258 but model.onnx logits last dim 64; the model and its tokenizer must agree',
    );
  });

  test('wrong types and shapes of the interface', async () => {
    const float = bigramModel(V, new Map(), {
      tweak: (g) => void (g.inputs[0] = valueInfo('input_ids', DataType.FLOAT, ['batch', 'sequence'])),
    });
    await expect(reject(float)).rejects.toThrow(
      'model.onnx: input_ids must be an int64 [batch, sequence] input, got input_ids: float[batch, sequence] (float instead of int64)',
    );
    const rank2 = bigramModel(V, new Map(), { tweak: (g) => void (g.outputs[0] = valueInfo('logits', DataType.FLOAT, ['sequence', V])) });
    await expect(reject(rank2)).rejects.toThrow(
      'model.onnx: logits must be a float [batch, sequence, vocab] output, got logits: float[sequence, 258]',
    );
    const symbolic = bigramModel(V, new Map(), {
      tweak: (g) => void (g.outputs[0] = valueInfo('logits', DataType.FLOAT, ['batch', 'sequence', 'vocab'])),
    });
    await expect(reject(symbolic)).rejects.toThrow("model.onnx: logits last dim is symbolic ('vocab')");
    const noLogits = bigramModel(V, new Map(), { tweak: (g) => void (g.outputs[0]!.name = 'scores') });
    await expect(reject(noLogits)).rejects.toThrow('model.onnx: no output named logits (outputs: scores: float[batch, sequence, 258])');
  });

  test('an input the policy cannot feed', async () => {
    const extra = bigramModel(V, new Map(), { tweak: (g) => void g.input('token_type_ids', DataType.INT64, ['batch', 'sequence']) });
    await expect(reject(extra)).rejects.toThrow(
      'model.onnx: unsupported input token_type_ids: int64[batch, sequence]; supported inputs: input_ids, attention_mask, position_ids, past_key_values.{i}.key / .value',
    );
  });

  test('an op onnxruntime does not know is reported by onnxruntime, naming the file and the op', async () => {
    const m = bigramModel(V, new Map(), {
      tweak: (g) => {
        const logits = g.nodes.at(-1)!;
        logits.output = ['raw'];
        g.op('Bigramify', ['raw'], { out: 'logits', attrs: [attr.int('order', 2)] });
      },
    });
    await expect(reject(m)).rejects.toThrow(/^model\.onnx: onnxruntime cannot load the model: .*Bigramify/);
  });

  test('a bad tokenizer file, and a missing context length', async () => {
    await expect(reject(good, { tokenizer: '{"format": "bpe"}' })).rejects.toThrow(/^tok\.json: Tokenizer\.fromJSON: /);
    const bigram = bigramModel(V, new Map());
    await expect(importOnnxModel(ort, bigram, tokJson)).rejects.toThrow(
      'model.onnx: its context length is not recorded in its metadata (coderl.config); give it explicitly',
    );
    await expect(reject(good, { contextLength: 64 })).rejects.toThrow("model.onnx: context length 64 exceeds the model's 32");
  });
});

describe("a hand-written bigram model (not our exporter's)", () => {
  test('is inspected as a cache-less model without mask, positions or value head', () => {
    const info = inspectOnnxModel(bigramForSuite().model, 'bigram.onnx');
    expect(info).toMatchObject({
      vocabSize: V,
      hasAttentionMask: false,
      hasPositionIds: false,
      hasValues: false,
      kv: null,
      config: null,
      opset: 17,
    });
  });

  test('samples its chain for ragged prompts, then pass@k on a tiny suite: the task it solves passes, the other fails', async () => {
    const { model, tok: t } = bigramForSuite();
    const { policy } = await importOnnxModel(ort, model, JSON.stringify(t.toJSON()), { file: 'bigram.onnx', contextLength: 64 });
    try {
      const prompts = BIGRAM_SUITE.map((x) => Array.from(t.encode(x.prompt)));
      expect(prompts[0]!.length).not.toBe(prompts[1]!.length); // ragged: rows run one at a time (no attention_mask, no position_ids)
      const gen = await policy.generate(prompts, { maxNewTokens: 10, temperature: 1, seed: 3, eosId: t.eosId });
      for (const ids of gen.tokens) expect(t.decode(ids)).toBe(`${BIGRAM_COMPLETION}<|endoftext|>`);
      expect(gen.finish).toEqual(['eos', 'eos']);
      expect(gen.values.flat().every((v) => v === 0)).toBe(true); // no value head
      for (const lp of gen.logprobs.flat()) expect(lp).toBeGreaterThan(-1e-5);

      const samples = await sampleTasks(policy, t, BIGRAM_SUITE, { samplesPerTask: 2, temperature: 1, maxNewTokens: 12, seed: 1 });
      expect(samples.map((s) => s.completion)).toEqual(Array(4).fill(BIGRAM_COMPLETION));
      const r = await evaluate(
        policy,
        t,
        BIGRAM_SUITE,
        { samples: 2, temperature: 1, k: [1, 2], maxNewTokens: 12 },
        { pool, analyzer },
        DEFAULT_REWARD,
        1,
      );
      expect(r.passAtK).toEqual({ 'pass@1': 0.5, 'pass@2': 0.5 });
      expect(r.records.map((x) => [x.task_id, x.passed])).toEqual([
        ['double', true],
        ['double', true],
        ['plus-four', false],
        ['plus-four', false],
      ]);
    } finally {
      policy.dispose();
    }
  });

  test('is frozen: training calls are errors', async () => {
    const { policy } = await importOnnxModel(ort, bigramForSuite().model, tokJson, { file: 'bigram.onnx', contextLength: 64 });
    await expect(policy.rlStep()).rejects.toThrow(
      'bigram.onnx: an imported ONNX model is frozen: it samples, scores and serves as the KL reference, but cannot rlStep',
    );
    await expect(policy.getParams()).rejects.toThrow(/frozen/);
    policy.dispose();
  });
});

describe('our export, imported', () => {
  const snap = tinySnapshot(CONFIG, 4, 3);
  const cpu = createBackend('cpu', { config: CONFIG, params: snap.params, optim: DEFAULT_OPTIM });
  const prompts = [[5, 100, 7], [9, 8, 200, 31, 65, 66], [1]];

  test.each([
    ['plain', { kvCache: false }],
    ['KV cache', { kvCache: true }],
    ['no mask, no positions', { kvCache: false, attentionMask: false, positionIds: false }],
    ['KV cache, mask but no positions', { kvCache: true, attentionMask: true, positionIds: false }],
  ])("%s: generates the CPU backend's tokens, log-probs and values for left-padded prompts", async (_name, o) => {
    const { policy, info } = await importOnnxModel(ort, exportOnnx(snap, o), tokJson);
    try {
      expect(policy.config).toEqual(CONFIG); // read from the metadata
      expect(!!info.kv).toBe(o.kvCache);
      for (const opts of [{ temperature: 0 }, { temperature: 1, topK: 20 }, { temperature: 0.8, topP: 0.9 }]) {
        const g = { maxNewTokens: 8, seed: 11, ...opts };
        const [a, b] = [await policy.generate(prompts, g), await cpu.generate(prompts, g)];
        expect(a.tokens).toEqual(b.tokens);
        expect(a.finish).toEqual(b.finish);
        for (let r = 0; r < prompts.length; r++) {
          for (let i = 0; i < a.logprobs[r]!.length; i++) {
            expect(a.logprobs[r]![i]!).toBeCloseTo(b.logprobs[r]![i]!, 4);
            expect(a.values[r]![i]!).toBeCloseTo(b.values[r]![i]!, 4);
          }
        }
      }
    } finally {
      policy.dispose();
    }
  });

  test("forward with left padding, and per-action scores (the KL reference's job), match the CPU backend", async () => {
    const { policy } = await importOnnxModel(ort, exportOnnx(snap, { kvCache: true }), tokJson);
    try {
      const x = parityInput(V, 3, 11, 9);
      const [a, b] = [await policy.forward(x), await cpu.forward(x)];
      for (let i = 0; i < a.logits.length; i++)
        expect(Math.abs(a.logits[i]! - b.logits[i]!)).toBeLessThan(1e-4 * Math.max(1, Math.abs(b.logits[i]!)));
      const seqs = [
        { ids: [3, 4, 5, 6, 7, 8], promptLength: 2 },
        { ids: [9, 10, 11], promptLength: 1 },
      ];
      const [sa, sb] = [await scoreActions(policy, seqs, tok.padId, 1 / 0.7), await scoreActions(cpu, seqs, tok.padId, 1 / 0.7)];
      for (let s = 0; s < seqs.length; s++) {
        for (let i = 0; i < sa.logp[s]!.length; i++) expect(sa.logp[s]![i]!).toBeCloseTo(sb.logp[s]![i]!, 4);
      }
    } finally {
      policy.dispose();
    }
  });
});

describe('as the frozen KL reference of a PPO iteration', () => {
  test("an imported export of the policy's own weights gives KL 0 and the same iteration as the engine's reference", async () => {
    const cfg = resolveConfig(
      'tiny',
      mergeConfig(MINI_RUN, {
        rl: { iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, maxNewTokens: 8, minibatch: 4, epochs: 1 },
      }),
    );
    const set = buildTaskSet({ seed: 3, ...cfg.tasks });
    const t = trainTokenizer(
      [...set.train, ...set.val].map((x) => x.prompt + x.reference),
      { vocabSize: cfg.model.vocabSize },
    );
    const model = { ...cfg.model, vocabSize: t.vocabSize };
    const params = tinySnapshot(model, 5, 1).params;
    const { policy: onnxRef, tokenizer } = await importOnnxModel(ort, exportOnnx({ config: model, params }), t.toJSON());
    assertSameTokenizer(t, tokenizer);
    const run = async (ref: Parameters<typeof ppoIteration>[0]['ref']) => {
      const policy = createBackend('cpu', { config: model, params, optim: { ...DEFAULT_OPTIM, lr: cfg.rl.lr } });
      const out = await ppoIteration(
        { policy, ref, rm: null, tok: t, scorer: { pool, analyzer }, cfg, seed: 3, tasks: set.rl },
        0,
        new KlController(0.5, false, 1, 1),
      );
      policy.dispose();
      return out;
    };
    const cpuRef = createBackend('cpu', { config: model, params, optim: DEFAULT_OPTIM });
    const [withOnnx, withCpu] = [await run(onnxRef), await run(cpuRef)];
    onnxRef.dispose();
    expect(withOnnx.rollouts.length).toBeGreaterThan(0);
    expect(Math.abs(withOnnx.metrics['objective/kl'] as number)).toBeLessThan(1e-4);
    for (const r of withOnnx.rollouts)
      for (let i = 0; i < r.ref_logprobs.length; i++) expect(r.ref_logprobs[i]!).toBeCloseTo(r.logprobs[i]!, 3);
    expect(withOnnx.rollouts.map((r) => r.completion)).toEqual(withCpu.rollouts.map((r) => r.completion));
    expect(withOnnx.metrics['reward']).toBe(withCpu.metrics['reward']);
    expect(() => assertSameTokenizer(t, byteTokenizer())).toThrow(/its tokenizer differs from the policy's/);
  }, 120_000);
});
