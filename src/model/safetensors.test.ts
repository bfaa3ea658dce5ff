/**
 * The safetensors reader on files built byte by byte as the format's spec lays them out (an
 * 8-byte little-endian header length, the JSON header, the data): F32 as is, F16 and BF16
 * widened (known bit patterns: 1, -2, 0.5, the smallest subnormal, infinity, NaN), metadata, a
 * shard index, and every way a file can be wrong refused naming the file and the tensor.
 */
import { describe, expect, test } from 'vitest';
import { f16ToF32, readSafetensors, readSafetensorsIndex, SafetensorsError } from './safetensors';

/** A file from a header object (its offsets as given) and the data bytes. */
function file(header: unknown, data: number[] | Uint8Array, headerPad = ''): Uint8Array {
  const h = new TextEncoder().encode(JSON.stringify(header) + headerPad);
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data instanceof Uint8Array ? data : new Uint8Array(data), 8 + h.length);
  return out;
}
const le16 = (...xs: number[]) => xs.flatMap((x) => [x & 0xff, x >> 8]);
const f32 = (...xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);

describe('readSafetensors', () => {
  test('reads F32, F16 and BF16 tensors (widened) with their shapes, and the metadata', () => {
    const a = f32(1.5, -2, 3.25, 0, 1e-8, 65504);
    const h = le16(0x3c00, 0xc000, 0x3800, 0x0001, 0x7c00, 0xfc00);
    const b = le16(0x3f80, 0xc000, 0x3f00, 0x4049);
    const data = new Uint8Array([...a, ...h, ...b]);
    const bytes = file(
      {
        __metadata__: { format: 'pt' },
        'model.embed_tokens.weight': { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
        'model.norm.weight': { dtype: 'F16', shape: [6], data_offsets: [24, 36] },
        'lm_head.weight': { dtype: 'BF16', shape: [2, 2], data_offsets: [36, 44] },
      },
      data,
      '   ', // the format pads its header with spaces to 8 bytes
    );
    const r = readSafetensors(bytes, 'model.safetensors');
    expect(r.metadata).toEqual({ format: 'pt' });
    expect([...r.tensors.keys()]).toEqual(['model.embed_tokens.weight', 'model.norm.weight', 'lm_head.weight']);
    const e = r.tensors.get('model.embed_tokens.weight')!;
    expect(e.shape).toEqual([2, 3]);
    expect([...e.data]).toEqual([...new Float32Array([1.5, -2, 3.25, 0, 1e-8, 65504])]);
    expect([...r.tensors.get('model.norm.weight')!.data]).toEqual([1, -2, 0.5, 2 ** -24, Infinity, -Infinity]);
    expect([...r.tensors.get('lm_head.weight')!.data]).toEqual([1, -2, 0.5, 3.140625]);
  });

  test('f16 edge cases: signed zero, the largest normal, NaN', () => {
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0400)).toBe(2 ** -14);
    expect(f16ToF32(0x7e00)).toBeNaN();
  });

  test('a bad file is refused naming the file and what is wrong', () => {
    const bad = (bytes: Uint8Array) => () => readSafetensors(bytes, 'x.safetensors');
    const ok = { w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };
    expect(bad(new Uint8Array(5))).toThrow(/^x\.safetensors: not a safetensors file: 5 bytes/);
    expect(bad(new TextEncoder().encode('PK\u0003\u0004 not a tensor file at all'))).toThrow(/header length reads \d+ bytes/);
    const whole = file(ok, f32(1, 2));
    expect(bad(whole.subarray(0, 12))).toThrow(/truncated: the header is \d+ bytes/);
    expect(bad(whole.subarray(0, whole.length - 2))).toThrow(
      /tensor "w": its bytes \[0, 8\) run past the data \(6 bytes\): the file is truncated/,
    );
    expect(bad(file({ w: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, f32(1, 2)))).toThrow(
      /tensor "w": dtype I64 is not loaded \(F32, F16 and BF16 are\)/,
    );
    expect(bad(file({ w: { dtype: 'F33', shape: [1], data_offsets: [0, 4] } }, f32(1)))).toThrow(/unknown dtype "F33"/);
    expect(bad(file({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, f32(1, 2)))).toThrow(
      /tensor "w": shape \[3\] of F32 needs 12 bytes, its data_offsets hold 8/,
    );
    expect(bad(file({ w: { dtype: 'F32', shape: [2, -1], data_offsets: [0, 8] } }, f32(1, 2)))).toThrow(
      /shape must be a list of non-negative integers/,
    );
    expect(
      bad(
        file(
          { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } },
          f32(1, 2, 3),
        ),
      ),
    ).toThrow(/tensors "a" and "b" overlap/);
    expect(bad(file('[1,2]' as unknown, []))).toThrow(SafetensorsError);
    const notJson = new Uint8Array(8 + 3);
    new DataView(notJson.buffer).setBigUint64(0, 3n, true);
    notJson.set([0x7b, 0x7b, 0x7d], 8);
    expect(bad(notJson)).toThrow(/its 3-byte header is not JSON/);
  });
});

describe('readSafetensorsIndex', () => {
  test('maps tensors to shard files and refuses a shard outside the folder', () => {
    const idx = {
      metadata: { total_size: 16 },
      weight_map: { 'a.weight': 'model-00001-of-00002.safetensors', 'b.weight': 'model-00002-of-00002.safetensors' },
    };
    expect([...readSafetensorsIndex(JSON.stringify(idx))]).toEqual([
      ['a.weight', 'model-00001-of-00002.safetensors'],
      ['b.weight', 'model-00002-of-00002.safetensors'],
    ]);
    expect(() => readSafetensorsIndex(JSON.stringify({ weight_map: { a: '../etc/passwd' } }))).toThrow(
      /weight_map\["a"\] must name a \.safetensors file beside it/,
    );
    expect(() => readSafetensorsIndex('{')).toThrow(/model\.safetensors\.index\.json: not JSON/);
    expect(() => readSafetensorsIndex('{}')).toThrow(/no weight_map object/);
  });
});
