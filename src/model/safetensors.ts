/**
 * Hugging Face's safetensors format, read (the first piece of loading pretrained models, issue
 * 16): an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype, shape
 * and `data_offsets` [begin, end) into the byte buffer that follows (plus an optional
 * `__metadata__` of strings), then the buffer. F32 is read as is; F16 and BF16 are widened to
 * float32 on load. Everything a file can get wrong (a truncated file, a header past its end, an
 * unknown dtype, a shape whose size disagrees with its bytes, overlapping or out-of-range offsets)
 * is refused with the file and the tensor named, before any tensor is used.
 * `model.safetensors.index.json` (sharded checkpoints) maps each tensor to its shard file.
 */

import { bf16ToF32, f16ToF32 } from '../util/half';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };
/** dtypes the format has that the lab does not load (named in the refusal) */
const OTHER_DTYPES = ['F64', 'I64', 'I32', 'I16', 'I8', 'U8', 'U16', 'U32', 'U64', 'BOOL', 'F8_E4M3', 'F8_E5M2'];
/** the format's own limit on the header (100 MB), which also keeps a garbage length from allocating */
const MAX_HEADER = 100_000_000;

export interface SafetensorsTensor {
  dtype: SafetensorsDtype;
  shape: number[];
  /** the values, widened to float32, row-major */
  data: Float32Array;
}

export interface SafetensorsFile {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
}

export class SafetensorsError extends Error {
  override readonly name = 'SafetensorsError';
}

/** IEEE half to float32 (util/half.ts; re-exported here, where the loader widens F16). */
export { f16ToF32 };

/** Reads a safetensors file's bytes; `file` names it in every error. */
export function readSafetensors(bytes: Uint8Array, file: string): SafetensorsFile {
  const fail = (what: string): never => {
    throw new SafetensorsError(`${file}: ${what}`);
  };
  if (bytes.length < 8) fail(`not a safetensors file: ${bytes.length} bytes, shorter than the 8-byte header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (n > MAX_HEADER) fail(`not a safetensors file: its header length reads ${n} bytes (the format allows up to ${MAX_HEADER})`);
  if (8 + n > bytes.length) fail(`truncated: the header is ${n} bytes but the file has ${bytes.length - 8} after its length`);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    fail(`not a safetensors file: its ${n}-byte header is not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) fail('the header is not a JSON object of tensors');
  const buffer = bytes.subarray(8 + n);
  const metadata: Record<string, string> = {};
  const spans: [number, number, string][] = [];
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail('__metadata__ is not an object of strings');
      for (const [k, v] of Object.entries(entry as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(`__metadata__.${k} is not a string`);
        metadata[k] = v as string;
      }
      continue;
    }
    const at = `tensor "${name}"`;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) fail(`${at}: not an object with dtype, shape and data_offsets`);
    const dtype = e.dtype;
    if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) {
      fail(
        OTHER_DTYPES.includes(String(dtype))
          ? `${at}: dtype ${String(dtype)} is not loaded (F32, F16 and BF16 are)`
          : `${at}: unknown dtype ${JSON.stringify(dtype)}`,
      );
    }
    const shape = e.shape;
    if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || (d as number) < 0))
      fail(`${at}: shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`);
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || off.some((x) => !Number.isSafeInteger(x) || (x as number) < 0) || off[0] > off[1])
      fail(`${at}: data_offsets must be [begin, end] with 0 <= begin <= end, got ${JSON.stringify(off)}`);
    const [begin, end] = off as [number, number];
    if (end > buffer.length) fail(`${at}: its bytes [${begin}, ${end}) run past the data (${buffer.length} bytes): the file is truncated`);
    const count = (shape as number[]).reduce((a, b) => a * b, 1);
    const size = DTYPE_BYTES[dtype as SafetensorsDtype];
    if (end - begin !== count * size)
      fail(
        `${at}: shape [${(shape as number[]).join(', ')}] of ${dtype} needs ${count * size} bytes, its data_offsets hold ${end - begin}`,
      );
    spans.push([begin, end, name]);
    tensors.set(name, {
      dtype: dtype as SafetensorsDtype,
      shape: shape as number[],
      data: widen(buffer, begin, count, dtype as SafetensorsDtype),
    });
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) {
    const [b, , name] = spans[i]!;
    const [, e, prev] = spans[i - 1]!;
    if (b < e) fail(`tensors "${prev}" and "${name}" overlap in the data`);
  }
  return { tensors, metadata };
}

function widen(buffer: Uint8Array, begin: number, count: number, dtype: SafetensorsDtype): Float32Array {
  const v = new DataView(buffer.buffer, buffer.byteOffset + begin, count * DTYPE_BYTES[dtype]);
  const out = new Float32Array(count);
  if (dtype === 'F32') for (let i = 0; i < count; i++) out[i] = v.getFloat32(4 * i, true);
  else if (dtype === 'F16') for (let i = 0; i < count; i++) out[i] = f16ToF32(v.getUint16(2 * i, true));
  else for (let i = 0; i < count; i++) out[i] = bf16ToF32(v.getUint16(2 * i, true));
  return out;
}

/** `model.safetensors.index.json`: tensor name -> shard file, checked (every shard a plain file name). */
export function readSafetensorsIndex(text: string, file = 'model.safetensors.index.json'): Map<string, string> {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new SafetensorsError(`${file}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const map = (j as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw new SafetensorsError(`${file}: no weight_map object`);
  const out = new Map<string, string>();
  for (const [name, shard] of Object.entries(map as Record<string, unknown>)) {
    if (typeof shard !== 'string' || !/^[\w.-]+\.safetensors$/.test(shard))
      throw new SafetensorsError(`${file}: weight_map["${name}"] must name a .safetensors file beside it, got ${JSON.stringify(shard)}`);
    out.set(name, shard);
  }
  return out;
}

/**
 * A safetensors file of F32 tensors, in the given order, laid out as the reference library
 * writes it: the JSON header padded with spaces to a multiple of 8 bytes, then the tensors'
 * little-endian bytes back to back.
 */
export function writeSafetensors(
  tensors: readonly { name: string; shape: readonly number[]; data: Float32Array }[],
  metadata: Record<string, string> = { format: 'pt' },
): Uint8Array<ArrayBuffer> {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length)
      throw new Error(`writeSafetensors: tensor "${t.name}" has ${t.data.length} values, shape [${t.shape}] needs ${count}`);
    if (t.name in header) throw new Error(`writeSafetensors: tensor "${t.name}" twice`);
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + 4 * count] };
    offset += 4 * count;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(padded - json.length));
  const out = new Uint8Array(8 + padded + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  let at = 8 + padded;
  for (const t of tensors) {
    for (let i = 0; i < t.data.length; i++) view.setFloat32(at + 4 * i, t.data[i]!, true);
    at += 4 * t.data.length;
  }
  return out;
}
