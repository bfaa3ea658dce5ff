import { describe, expect, it } from 'vitest';
import { Tokenizer, trainTokenizer } from '../tokenizer';
import { loadHumanEvalJs, taskDocuments } from '../tokenizer/testing';
import { Rng } from '../util/random';
import { type CheckpointHeader, type CheckpointInput, decodeCheckpoint, encodeCheckpoint } from './index';

const docs = taskDocuments(loadHumanEvalJs()).slice(0, 20);
const tokenizer = trainTokenizer(docs, { vocabSize: 320 });
const rng = new Rng(3);

/** A small model-like checkpoint with awkward values and shapes. */
function sample(): CheckpointInput {
  const wte = rng.float32(320 * 8);
  wte.set([Number.NaN, -0, Infinity, -Infinity, 1e-45, 3.4e38]); // special floats must survive bit for bit
  return {
    config: { nLayer: 2, nEmbd: 8, vocabSize: 320, attn: { heads: 2, causal: true } },
    tokenizer: tokenizer.toJSON(),
    meta: { step: 1200, metrics: { loss: 1.25 }, note: 'lone \uD800 ok' },
    createdAt: '2026-11-29T12:00:00.000Z',
    tensors: {
      wte: { data: wte, shape: [320, 8] },
      'h.0.ln.bias': { data: rng.float32(7), shape: [7] }, // 28 bytes: the next tensor needs padding
      tokens: { data: Uint32Array.from([0, 1, 2 ** 32 - 1, 319, 5]), shape: [5] },
      scale: { data: Float32Array.of(0.5), shape: [] },
      empty: { data: new Float32Array(0), shape: [0, 4] },
    },
  };
}

const bits = (a: Float32Array | Uint32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const u32At = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset).getUint32(at, true);

/** Splits a checkpoint into its header and data section, and builds one back (for forged files). */
function split(bytes: Uint8Array): { header: CheckpointHeader; data: Uint8Array } {
  const len = u32At(bytes, 12);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(16, 16 + len))) as CheckpointHeader;
  return { header, data: bytes.slice(Math.ceil((16 + len) / 16) * 16) };
}
function join(header: unknown, data: Uint8Array, version = 1): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const start = Math.ceil((16 + json.length) / 16) * 16;
  const out = new Uint8Array(start + data.length);
  out.set(new TextEncoder().encode('CRLCKPT\0'));
  new DataView(out.buffer).setUint32(8, version, true);
  new DataView(out.buffer).setUint32(12, json.length, true);
  out.set(json, 16);
  out.set(data, start);
  return out;
}
function forge(mutate: (h: CheckpointHeader) => void): Uint8Array {
  const { header, data } = split(encodeCheckpoint(sample()));
  mutate(header);
  return join(header, data);
}

describe('checkpoint encode/decode', () => {
  it('round-trips tensors bit for bit, with config, meta and a real tokenizer', () => {
    const input = sample();
    const out = decodeCheckpoint(encodeCheckpoint(input));
    expect(Object.keys(out.tensors)).toEqual(Object.keys(input.tensors));
    for (const [name, t] of Object.entries(input.tensors)) {
      expect(out.tensors[name]!.shape).toEqual(t.shape);
      expect(out.tensors[name]!.dtype).toBe(t.data instanceof Float32Array ? 'f32' : 'u32');
      expect(out.tensors[name]!.data.constructor).toBe(t.data.constructor);
      expect(bits(out.tensors[name]!.data)).toEqual(bits(t.data));
    }
    expect(out.config).toEqual(input.config);
    expect(out.meta).toEqual(input.meta);
    expect(out.createdAt).toBe(input.createdAt);
    expect(out.formatVersion).toBe(1);
    const restored = Tokenizer.fromJSON(out.tokenizer);
    for (const d of docs.slice(0, 5)) expect(restored.encode(d)).toEqual(tokenizer.encode(d));
  });

  it('lays out the file as specified: magic, version, header length, 16-byte aligned data', () => {
    const bytes = encodeCheckpoint(sample());
    expect(new TextDecoder().decode(bytes.subarray(0, 8))).toBe('CRLCKPT\0');
    expect(u32At(bytes, 8)).toBe(1);
    const { header, data } = split(bytes);
    expect(header.tensors.map((t) => [t.name, t.offset, t.byteLength])).toEqual([
      ['wte', 0, 10240],
      ['h.0.ln.bias', 10240, 28],
      ['tokens', 10272, 20],
      ['scale', 10304, 4],
      ['empty', 10320, 0],
    ]);
    expect(header.dataByteLength).toBe(10320);
    expect(data.length).toBe(10320);
    expect((bytes.length - data.length) % 16).toBe(0);
    expect(header.crc32).toMatch(/^[0-9a-f]{8}$/);
  });

  it('gives zero-copy views when aligned, copies when not', () => {
    const bytes = encodeCheckpoint(sample());
    const aligned = decodeCheckpoint(bytes);
    expect(aligned.tensors.wte!.data.buffer).toBe(bytes.buffer);
    const shifted = new Uint8Array(bytes.length + 1).subarray(1); // byteOffset 1: views impossible
    shifted.set(bytes);
    const copied = decodeCheckpoint(shifted);
    expect(copied.tensors.wte!.data.buffer).not.toBe(shifted.buffer);
    expect(bits(copied.tensors.wte!.data)).toEqual(bits(aligned.tensors.wte!.data));
  });

  it('is byte-identical for the same input', () => {
    const a = sample();
    expect(Buffer.compare(encodeCheckpoint(a), encodeCheckpoint(a))).toBe(0);
  });

  it('rejects bad input to encode', () => {
    const t = (tensors: object) => () => encodeCheckpoint({ config: {}, tokenizer: null, tensors } as CheckpointInput);
    expect(t({ w: { data: new Float32Array(6), shape: [2, 2] } })).toThrow('tensor "w": shape [2, 2] holds 4 elements, data has 6');
    expect(t({ w: { data: new Float64Array(4), shape: [4] } })).toThrow('tensor "w": data must be a Float32Array or Uint32Array');
    expect(t({ w: { data: new Float32Array(4), shape: [4.5] } })).toThrow('shape must be an array of non-negative integers');
    expect(() => encodeCheckpoint({ config: [] as never, tokenizer: null, tensors: {} })).toThrow('config must be a JSON object');
  });
});

describe('checkpoint corruption', () => {
  const good = encodeCheckpoint(sample());

  it('flipping one data byte fails the CRC', () => {
    const bad = good.slice();
    bad[bad.length - 5000]! ^= 0x10;
    expect(() => decodeCheckpoint(bad)).toThrow(
      /checkpoint data is corrupt: CRC-32 mismatch \(data [0-9a-f]{8}, header says [0-9a-f]{8}\)/,
    );
  });

  it('truncation says how many bytes were expected', () => {
    expect(() => decodeCheckpoint(good.subarray(0, good.length - 1))).toThrow(
      `truncated checkpoint: expected ${good.length} bytes, got ${good.length - 1}`,
    );
    expect(() => decodeCheckpoint(good.subarray(0, 40))).toThrow(
      `truncated checkpoint: the header needs ${16 + u32At(good, 12)} bytes, got 40`,
    );
    expect(() => decodeCheckpoint(good.subarray(0, 10))).toThrow('truncated checkpoint: expected at least 16 bytes, got 10');
    expect(() => decodeCheckpoint(new Uint8Array([...good, 0, 0]))).toThrow('checkpoint has 2 unexpected trailing bytes');
  });

  it('wrong magic is not a checkpoint, said in plain words: what was expected, what the file starts with', () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...good.subarray(8)]);
    expect(() => decodeCheckpoint(png)).toThrow(
      'this file is not a Code RL Lab checkpoint: a checkpoint file starts with the bytes "CRLCKPT" (one is saved by Checkpoints → Export, ' +
        'and by coderl train as policy.ckpt in its run folder); this file starts with ".PNG...." (looks like a PNG image; first bytes 89 50 4e 47 0d 0a 1a 0a)',
    );
    expect(() => decodeCheckpoint(new TextEncoder().encode('{"config": {}}'))).toThrow(/starts with "\{"config" \(looks like JSON text;/);
    const zip = Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(() => decodeCheckpoint(zip)).toThrow(
      /starts with "PK\.\.\.\.\.\." \(looks like a zip archive; first bytes 50 4b 03 04 14 00 00 00\)$/,
    );
    const runFile = new TextEncoder().encode('coderl-run\n\0\0\0\0');
    expect(() => decodeCheckpoint(runFile)).toThrow(/looks like a Code RL Lab run file, which this import does not take/);
    expect(() => decodeCheckpoint(new Uint8Array(0))).toThrow(/not a Code RL Lab checkpoint: .*; this file is empty$/);
    for (const bad of [png, zip, runFile]) expect(() => decodeCheckpoint(bad)).not.toThrow(/magic/);
  });

  it('a future version names the supported ones', () => {
    const future = good.slice();
    new DataView(future.buffer).setUint32(8, 2, true);
    expect(() => decodeCheckpoint(future)).toThrow('unsupported checkpoint format version 2; this build reads version 1');
  });

  it('bad header JSON and bad header fields are named', () => {
    const { data } = split(good);
    expect(() => decodeCheckpoint(join('{"formatVersion": 1, ', data))).toThrow('checkpoint header is not valid JSON');
    expect(() => decodeCheckpoint(join('[1, 2]', data))).toThrow('checkpoint header: expected a JSON object');
    expect(() => decodeCheckpoint(forge((h) => delete (h as Partial<CheckpointHeader>).crc32))).toThrow(
      'field "crc32" must be 8 lower-case hex digits',
    );
    expect(() => decodeCheckpoint(forge((h) => (h.formatVersion = 3)))).toThrow('header says formatVersion 3, the file preamble says 1');
    expect(() => decodeCheckpoint(forge((h) => (h.tensors[1]!.dtype = 'f16' as never)))).toThrow(
      'tensor "h.0.ln.bias": dtype must be "f32" or "u32", got "f16"',
    );
  });

  it('tensor entries that do not fit are rejected by name', () => {
    expect(() => decodeCheckpoint(forge((h) => (h.tensors[3]!.offset = h.dataByteLength)))).toThrow(
      'tensor "scale" is out of bounds: bytes 10320..10324 of a 10320-byte data section',
    );
    expect(() => decodeCheckpoint(forge((h) => (h.tensors[0]!.shape = [320, 9])))).toThrow(
      'tensor "wte": shape [320, 9] * 4 bytes = 11520 bytes, but byteLength is 10240',
    );
    expect(() => decodeCheckpoint(forge((h) => (h.tensors[2]!.name = 'wte')))).toThrow('duplicate tensor name "wte"');
    expect(() => decodeCheckpoint(forge((h) => (h.tensors[0]!.offset = 8)))).toThrow('offset must be a non-negative multiple of 16, got 8');
  });
});
