/**
 * The ONNX export of imported decoders (decoder-export.ts) on the three tiny Hugging Face
 * fixtures of data/hf-fixtures (GPT-2: LayerNorm, learned positions, GELU, biases, tied head;
 * Llama: RMSNorm, RoPE, SwiGLU, GQA 6/2, tied; Qwen2: q/k/v biases, GQA 4/1, untied head),
 * run in onnxruntime-web (wasm) in Node, against the float64 DecoderCpu within 1e-4 relative
 * (maxRelDiff, parity.ts): the plain graph, the KV-cache graph stepped over a split sequence
 * (its present keys and values against DecoderCpu's cache), the last-position-only logits, all
 * with a left-padded row; and the plain graph against PyTorch's logits in expected.json.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { DecoderCpu } from '../model/decoder-cpu';
import { loadHfFixture } from '../testing/hf-fixtures';
import { buildDecoderOnnxModel, DECODER_FORMAT, DECODER_META, exportDecoderOnnx } from './decoder-export';
import { kvNames } from './export';
import { loadNodeOrt } from './node';
import { maxRelDiff, parityInput } from './parity';
import { describeValue } from './proto';
import { createSession, floats, floatTensor, int64Tensor, runSession, type Ort, type OrtSession, type OrtTensor } from './runtime';

const TOL = 1e-4;

let ort: Ort;
beforeAll(async () => {
  ort = await loadNodeOrt();
});

type Input = ReturnType<typeof parityInput>;

/** Tokens [t0, t1) of every row, the mask over keys [0, t1); `past` (key, value per layer) holds rows [0, t0). */
async function run(s: OrtSession, x: Input, t0: number, t1: number, past: OrtTensor[] | null) {
  const { B, T } = x;
  const n = t1 - t0;
  const slice = (a: ArrayLike<number>) => Array.from({ length: B * n }, (_, i) => a[Math.floor(i / n) * T + t0 + (i % n)]!);
  const feeds: Record<string, OrtTensor> = {
    input_ids: int64Tensor(ort, slice(x.tokens), [B, n]),
    attention_mask: int64Tensor(
      ort,
      Array.from({ length: B * t1 }, (_, i) => (i % t1 >= x.start[Math.floor(i / t1)]! ? 1 : 0)),
      [B, t1],
    ),
    position_ids: int64Tensor(ort, slice(x.positions), [B, n]),
  };
  const L = past ? past.length / 2 : 0;
  for (let i = 0; i < L; i++) {
    feeds[kvNames(i).pastKey] = past![2 * i]!;
    feeds[kvNames(i).pastValue] = past![2 * i + 1]!;
  }
  const out = await runSession(s, feeds, 'decoder export');
  const present: OrtTensor[] = [];
  for (let i = 0; i < L; i++) present.push(out[kvNames(i).presentKey]!, out[kvNames(i).presentValue]!);
  return { logits: floats(out.logits, 'logits'), present };
}

/** Rows [t0, t1) of every sequence of a (B, T, width) tensor. */
function pick(x: ArrayLike<number>, B: number, T: number, width: number, t0: number, t1: number): Float64Array {
  const out = new Float64Array(B * (t1 - t0) * width);
  for (let b = 0; b < B; b++)
    for (let t = t0; t < t1; t++) for (let k = 0; k < width; k++) out[(b * (t1 - t0) + t - t0) * width + k] = x[(b * T + t) * width + k]!;
  return out;
}

describe.each(['gpt2', 'llama', 'qwen2'])('%s fixture', (name) => {
  const { arch, weights, expected } = loadHfFixture(name);
  const { nLayer: L, nKvHead: NKV, headDim: HS, vocabSize: V } = arch;
  const cpu = new DecoderCpu(arch, weights);
  const B = 3;
  const T = 9;
  const x = parityInput(V, B, T, 7); // row 1 starts at 3, row 2 at 6: left padding
  const ref = cpu.forward(x).logits; // (B, T, V)

  test('graph: the documented interface, standard ops of opset 17, weights stored once, metadata', () => {
    const m = buildDecoderOnnxModel(arch, weights, { kvCache: true, tokenizerFile: 'tokenizer.json' });
    expect(m.opsetImport).toEqual([{ domain: '', version: 17 }]);
    const g = m.graph!;
    expect(g.input!.slice(0, 5).map(describeValue)).toEqual([
      'input_ids: int64[batch, sequence]',
      'attention_mask: int64[batch, total_sequence]',
      'position_ids: int64[batch, sequence]',
      `past_key_values.0.key: float[batch, ${NKV}, past_sequence, ${HS}]`,
      `past_key_values.0.value: float[batch, ${NKV}, past_sequence, ${HS}]`,
    ]);
    expect(g.input).toHaveLength(3 + 2 * L);
    expect(g.output!.slice(0, 2).map(describeValue)).toEqual([
      `logits: float[batch, sequence, ${V}]`,
      `present.0.key: float[batch, ${NKV}, total_sequence, ${HS}]`,
    ]);
    expect(g.output).toHaveLength(1 + 2 * L);
    expect(g.node!.every((n) => !n.domain)).toBe(true);
    const names = g.initializer!.map((t) => t.name);
    expect(names.filter((n) => n === 'embed')).toHaveLength(1);
    expect(names.includes('head')).toBe(!arch.tiedEmbeddings);
    const ops = new Set(g.node!.map((n) => n.opType));
    expect(ops.has('LayerNormalization')).toBe(arch.norm.kind === 'layernorm');
    expect(ops.has('ReduceMean')).toBe(arch.norm.kind === 'rmsnorm');
    expect(ops.has('Neg')).toBe(arch.positions.kind === 'rope'); // rotate_half
    const meta = Object.fromEntries(m.metadataProps!.map((e) => [e.key, e.value]));
    expect(meta[DECODER_META.format]).toBe(DECODER_FORMAT);
    expect(JSON.parse(meta[DECODER_META.arch]!)).toEqual(arch);
    expect(meta[DECODER_META.kvLayout]).toBe('[batch, kv_heads, past_sequence, head_size]');
    expect(meta[DECODER_META.tokenizer]).toBe('tokenizer.json');
  });

  test('plain graph: ORT matches DecoderCpu (left padded, every row) and PyTorch', async () => {
    const s = await createSession(ort, exportDecoderOnnx(arch, weights), `${name}.onnx`);
    try {
      expect(maxRelDiff((await run(s, x, 0, T, null)).logits, ref)).toBeLessThan(TOL);
      const ids = expected.input_ids;
      const [eb, et] = [ids.length, ids[0]!.length];
      const e = {
        tokens: ids.flat(),
        positions: ids.flatMap((r) => r.map((_, t) => t)),
        start: new Uint32Array(eb),
        B: eb,
        T: et,
      };
      expect(maxRelDiff((await run(s, e as unknown as Input, 0, et, null)).logits, expected.logits.flat(2))).toBeLessThan(TOL);
    } finally {
      await s.release();
    }
  });

  test('KV-cache graph: prefill (empty past), a 2-token step and a 1-token step; presents equal the cache', async () => {
    const s = await createSession(ort, exportDecoderOnnx(arch, weights, { kvCache: true }), `${name}.kv.onnx`);
    try {
      const empty = Array.from({ length: 2 * L }, () => floatTensor(ort, new Float32Array(0), [B, NKV, 0, HS]));
      const prefill = await run(s, x, 0, T - 3, empty);
      expect(maxRelDiff(prefill.logits, pick(ref, B, T, V, 0, T - 3))).toBeLessThan(TOL);
      const two = await run(s, x, T - 3, T - 1, prefill.present);
      expect(maxRelDiff(two.logits, pick(ref, B, T, V, T - 3, T - 1))).toBeLessThan(TOL);
      const one = await run(s, x, T - 1, T, two.present);
      expect(maxRelDiff(one.logits, pick(ref, B, T, V, T - 1, T))).toBeLessThan(TOL);
      // present.{i} [B, NKV, T, HS] against DecoderCpu's cache (B, NKV, Tmax = T, HS), after RoPE
      const cache = cpu.createKvCache(B, T);
      cpu.forward(x, { cache, pos: 0 });
      for (let l = 0; l < L; l++) {
        expect(one.present[2 * l]!.dims).toEqual([B, NKV, T, HS]);
        expect(maxRelDiff(floats(one.present[2 * l], 'key'), cache.layers[l]!.k)).toBeLessThan(TOL);
        expect(maxRelDiff(floats(one.present[2 * l + 1], 'value'), cache.layers[l]!.v)).toBeLessThan(TOL);
      }
    } finally {
      await s.release();
    }
  });

  test('lastLogitsOnly: [batch, 1, V], the last position of each row', async () => {
    const m = buildDecoderOnnxModel(arch, weights, { kvCache: true, lastLogitsOnly: true });
    expect(describeValue(m.graph!.output![0]!)).toBe(`logits: float[batch, 1, ${V}]`);
    const s = await createSession(ort, exportDecoderOnnx(arch, weights, { kvCache: true, lastLogitsOnly: true }), `${name}.last.onnx`);
    try {
      const empty = Array.from({ length: 2 * L }, () => floatTensor(ort, new Float32Array(0), [B, NKV, 0, HS]));
      const r = await run(s, x, 0, T, empty);
      expect(maxRelDiff(r.logits, pick(ref, B, T, V, T - 1, T))).toBeLessThan(TOL);
    } finally {
      await s.release();
    }
  });
});

describe('refusals', () => {
  test('a missing or misshapen tensor, a context beyond the model', () => {
    const { arch, weights } = loadHfFixture('llama');
    const missing = new Map(weights);
    missing.delete('layers.1.up.w');
    expect(() => exportDecoderOnnx(arch, missing)).toThrow(/no tensor layers\.1\.up\.w/);
    const short = new Map(weights);
    short.set('normf.w', new Float32Array(3));
    expect(() => exportDecoderOnnx(arch, short)).toThrow(/tensor normf\.w has 3 values, its shape \[48\] needs 48/);
    expect(() => exportDecoderOnnx(arch, weights, { contextLength: 999 })).toThrow(/contextLength must be an integer in 1\.\.128/);
  });
});
