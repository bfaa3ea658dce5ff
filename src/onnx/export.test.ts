/**
 * The ONNX export: its interface and metadata, parity with our engine in onnxruntime-web (both
 * graphs, the CPU model and the WebGPU one), a wrong model caught, the tokenizer sidecar.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { CpuModel } from '../model/cpu';
import { paramTable } from '../model/params';
import { testRuntime } from '../testing/gpu';
import { Tokenizer, trainTokenizer } from '../tokenizer';
import { buildOnnxModel, exportOnnx, FORMAT, META, tokenizerSidecarPath } from './export';
import { importOnnxModel } from './import';
import { loadNodeOrt } from './node';
import { maxRelDiff, onnxParity, parityInput } from './parity';
import { describeValue } from './proto';
import type { Ort } from './runtime';
import { byteTokenizer, TINY, tinySnapshot } from './testing';

let ort: Ort;
beforeAll(async () => {
  ort = await loadNodeOrt();
});

describe('graph', () => {
  test('declares the documented inputs and outputs, standard ops of opset 17 only, the config in its metadata', () => {
    const m = buildOnnxModel(tinySnapshot(), { kvCache: true, tokenizerFile: 'm.tokenizer.json' });
    expect(m.opsetImport).toEqual([{ domain: '', version: 17 }]);
    const g = m.graph!;
    expect(g.input!.map(describeValue)).toEqual([
      'input_ids: int64[batch, sequence]',
      'attention_mask: int64[batch, total_sequence]',
      'position_ids: int64[batch, sequence]',
      'past_key_values.0.key: float[batch, 2, past_sequence, 16]',
      'past_key_values.0.value: float[batch, 2, past_sequence, 16]',
      'past_key_values.1.key: float[batch, 2, past_sequence, 16]',
      'past_key_values.1.value: float[batch, 2, past_sequence, 16]',
    ]);
    expect(g.output!.map(describeValue)).toEqual([
      'logits: float[batch, sequence, 64]',
      'values: float[batch, sequence]',
      'present.0.key: float[batch, 2, total_sequence, 16]',
      'present.0.value: float[batch, 2, total_sequence, 16]',
      'present.1.key: float[batch, 2, total_sequence, 16]',
      'present.1.value: float[batch, 2, total_sequence, 16]',
    ]);
    expect(g.node!.every((n) => !n.domain)).toBe(true);
    expect(new Set(g.node!.map((n) => n.opType))).toContain('LayerNormalization');
    expect(g.initializer!.filter((t) => t.name === 'wte')).toHaveLength(1); // tied: stored once
    const meta = Object.fromEntries(m.metadataProps!.map((e) => [e.key, e.value]));
    expect(meta[META.format]).toBe(FORMAT);
    expect(JSON.parse(meta[META.config]!)).toEqual(TINY);
    expect(meta[META.kvLayout]).toBe('[batch, heads, past_sequence, head_size]');
    expect(meta[META.tokenizer]).toBe('m.tokenizer.json');
    const plain = buildOnnxModel(tinySnapshot(), { positionIds: false, attentionMask: false });
    expect(plain.graph!.input!.map((v) => v.name)).toEqual(['input_ids']);
    expect(plain.graph!.output!.map((v) => v.name)).toEqual(['logits', 'values']);
  });

  test('rejects a slab of the wrong size', () => {
    expect(() => exportOnnx({ config: TINY, params: new Float32Array(10) })).toThrow(/parameter slab has 10 floats/);
  });
});

describe('parity in onnxruntime-web (wasm)', () => {
  test('plain and KV-cache graphs match the float64 CPU model within 1e-4 relative (logits and values)', async () => {
    const r = await onnxParity(ort, tinySnapshot());
    expect(r.checks.map((c) => `${c.graph}/${c.engine}`)).toEqual(['plain/cpu', 'kv-prefill/cpu', 'kv-step/cpu']);
    for (const c of r.checks) {
      expect(c.logits, `${c.graph} logits`).toBeLessThan(1e-4);
      expect(c.values, `${c.graph} values`).toBeLessThan(1e-4);
    }
    expect(r.max_rel_diff).toBe(Math.max(...r.checks.flatMap((c) => [c.logits, c.values])));
  });

  test('the same against the WebGPU model', async () => {
    const r = await onnxParity(ort, tinySnapshot(TINY, 2), { gpu: await testRuntime(), B: 3, T: 9, seed: 5 });
    expect(r.checks.filter((c) => c.engine === 'webgpu')).toHaveLength(3);
    expect(r.max_rel_diff).toBeLessThan(1e-4);
  }, 120_000);

  test('a graph with one weight off is caught: a perturbed export differs from the engine', async () => {
    const config = { ...TINY, vocabSize: 258 };
    const snap = tinySnapshot(config);
    const wrong = { config, params: snap.params.slice() };
    wrong.params[paramTable(config).byName.get('h1.fcb')!.offset + 3]! += 0.5; // one bias of the last MLP
    const x = parityInput(config.vocabSize, 2, 10, 3);
    const ref = new CpuModel(config, snap.params).forward(x);
    const diff = async (s: typeof snap) => {
      const { policy } = await importOnnxModel(ort, exportOnnx(s), byteTokenizer().toJSON());
      const out = await policy.forward(x);
      policy.dispose();
      return maxRelDiff(out.logits, ref.logits) + maxRelDiff(out.values, ref.values);
    };
    expect(await diff(snap)).toBeLessThan(1e-4);
    expect(await diff(wrong)).toBeGreaterThan(1e-3);
  });

  test('maxRelDiff judges near-zero elements against the rms of the reference and flags NaN', () => {
    expect(maxRelDiff([10.01, -10], [10, -10])).toBeCloseTo(1e-3, 9);
    expect(maxRelDiff([1.001, -2], [1, -2])).toBeCloseTo(1e-3 / Math.sqrt(2.5), 9); // |1| < rms: judged against the rms
    expect(maxRelDiff([1e-6, 10], [0, 10])).toBeCloseTo(1e-6 / Math.sqrt(50), 12); // not 1e-6 / 0
    expect(maxRelDiff([NaN, 1], [1, 1])).toBeNaN();
    expect(() => maxRelDiff([1], [1, 2])).toThrow(/1 values vs 2/);
  });
});

describe('tokenizer sidecar', () => {
  test('M.onnx -> M.tokenizer.json', () => {
    expect(tokenizerSidecarPath('out/policy.onnx')).toBe('out/policy.tokenizer.json');
    expect(tokenizerSidecarPath('policy.ONNX')).toBe('policy.tokenizer.json');
    expect(tokenizerSidecarPath('model')).toBe('model.tokenizer.json');
  });

  test('the sidecar text rebuilds the same tokenizer (same JSON, same ids)', () => {
    const tok = trainTokenizer(['function f(x) { return x + 1; }\n', 'const y = [1, 2, 3].map((v) => v * 2);\n'], { vocabSize: 300 });
    const text = JSON.stringify(tok.toJSON()); // what `coderl onnx export` writes
    const back = Tokenizer.fromJSON(text);
    expect(back.toJSON()).toEqual(tok.toJSON());
    const s = 'function g(y) { return y * 2; }';
    expect(Array.from(back.encode(s))).toEqual(Array.from(tok.encode(s)));
  });
});
