/**
 * The checkpoint container, version 1. Layout (all integers little-endian):
 *
 *   offset 0   8 bytes   magic "CRLCKPT\0"
 *   offset 8   u32       format version
 *   offset 12  u32       header byte length H
 *   offset 16  H bytes   header: UTF-8 JSON (CheckpointHeader, header.ts)
 *   zero padding to the next multiple of 16: the data section starts at D = align16(16 + H)
 *   offset D   dataByteLength bytes: the tensors, each at D + entry.offset (a multiple of 16),
 *              little-endian, zero padding between them; header.crc32 is the CRC-32 of this section
 *
 * Because D and every offset are multiples of 16, a file loaded into an ArrayBuffer gives
 * zero-copy Float32Array / Uint32Array views.
 */
import { crc32, crc32Hex } from './crc32';
import {
  CheckpointError,
  type CheckpointHeader,
  DTYPE_BYTES,
  type Dtype,
  type TensorEntry,
  elementCount,
  isPlainObject,
  validateHeader,
} from './header';
import { errorText } from '../util/errors';
import { CHECKPOINT_FILE, hasMagic, notAFile } from '../util/refused';

export const CHECKPOINT_MAGIC = CHECKPOINT_FILE.magic;
export const CHECKPOINT_VERSION = 1;
export const SUPPORTED_CHECKPOINT_VERSIONS: readonly number[] = [1];
const PREAMBLE = 16; // magic + version + header length

export type TensorData = Float32Array | Uint32Array;

export interface TensorInput {
  data: TensorData;
  /** row-major; product(shape) must equal data.length */
  shape: number[];
}

export interface CheckpointInput {
  config: Record<string, unknown>;
  /** the tokenizer's JSON (Tokenizer.toJSON()), or null */
  tokenizer: unknown;
  meta?: unknown;
  /** written in key order */
  tensors: Record<string, TensorInput>;
  /** defaults to now; set it for byte-identical output */
  createdAt?: string;
}

export interface DecodedTensor {
  dtype: Dtype;
  shape: number[];
  /** a view into the input bytes when aligned (writes go through to them), else a copy */
  data: TensorData;
}

export interface DecodedCheckpoint {
  formatVersion: number;
  createdAt: string;
  config: Record<string, unknown>;
  tokenizer: unknown;
  meta: unknown;
  tensors: Record<string, DecodedTensor>;
  /** the header as stored (tensor offsets, CRC) */
  header: CheckpointHeader;
}

const align16 = (n: number) => Math.ceil(n / 16) * 16;
const LITTLE_ENDIAN = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;

export function encodeCheckpoint(input: CheckpointInput): Uint8Array {
  if (!isPlainObject(input.config)) throw new CheckpointError('encodeCheckpoint: config must be a JSON object');
  const entries: TensorEntry[] = [];
  const arrays: TensorData[] = [];
  let end = 0;
  for (const [name, t] of Object.entries(input.tensors)) {
    const entry = { name, ...tensorLayout(name, t), offset: align16(end) };
    entries.push(entry);
    arrays.push(t.data);
    end = entry.offset + entry.byteLength;
  }
  const header: CheckpointHeader = {
    formatVersion: CHECKPOINT_VERSION,
    createdAt: input.createdAt ?? new Date().toISOString(),
    config: input.config,
    tokenizer: input.tokenizer ?? null,
    meta: input.meta ?? null,
    tensors: entries,
    dataByteLength: end,
    crc32: '00000000', // same length as the real value, filled in once the data is written
  };
  const headerLength = new TextEncoder().encode(JSON.stringify(header)).length;
  const dataStart = align16(PREAMBLE + headerLength);
  const out = new Uint8Array(dataStart + end);
  entries.forEach((e, i) => writeTensor(out, dataStart + e.offset, arrays[i]!));
  header.crc32 = crc32Hex(crc32(out.subarray(dataStart)));
  out.set(CHECKPOINT_MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(8, CHECKPOINT_VERSION, true);
  view.setUint32(12, headerLength, true);
  const written = new TextEncoder().encodeInto(JSON.stringify(header), out.subarray(PREAMBLE, PREAMBLE + headerLength));
  if (written.written !== headerLength) throw new Error('encodeCheckpoint: header length changed (bug)');
  return out;
}

function tensorLayout(name: string, t: TensorInput): { dtype: Dtype; shape: number[]; byteLength: number } {
  const where = `encodeCheckpoint: tensor "${name}"`;
  if (name === '') throw new CheckpointError('encodeCheckpoint: tensor names must be non-empty');
  const dtype: Dtype | null = t?.data instanceof Float32Array ? 'f32' : t?.data instanceof Uint32Array ? 'u32' : null;
  if (dtype === null) throw new CheckpointError(`${where}: data must be a Float32Array or Uint32Array`);
  if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new CheckpointError(`${where}: shape must be an array of non-negative integers`);
  }
  if (elementCount(t.shape) !== t.data.length) {
    throw new CheckpointError(`${where}: shape [${t.shape.join(', ')}] holds ${elementCount(t.shape)} elements, data has ${t.data.length}`);
  }
  return { dtype, shape: [...t.shape], byteLength: t.data.length * DTYPE_BYTES[dtype] };
}

function writeTensor(out: Uint8Array, at: number, data: TensorData): void {
  if (LITTLE_ENDIAN) {
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    return;
  }
  const view = new DataView(out.buffer, out.byteOffset + at, data.byteLength);
  const f32 = data instanceof Float32Array;
  for (let i = 0; i < data.length; i++) {
    if (f32) view.setFloat32(4 * i, data[i]!, true);
    else view.setUint32(4 * i, data[i]!, true);
  }
}

/** Parses and checks a checkpoint; throws a CheckpointError saying what is wrong. */
export function decodeCheckpoint(bytes: Uint8Array): DecodedCheckpoint {
  const { header, dataStart } = readHeader(bytes);
  const expected = dataStart + header.dataByteLength;
  if (bytes.length < expected) {
    throw new CheckpointError(`truncated checkpoint: expected ${expected} bytes, got ${bytes.length}`);
  }
  if (bytes.length > expected) {
    throw new CheckpointError(
      `checkpoint has ${bytes.length - expected} unexpected trailing bytes (expected ${expected} bytes, got ${bytes.length})`,
    );
  }
  for (const e of header.tensors) {
    if (e.offset + e.byteLength > header.dataByteLength) {
      throw new CheckpointError(
        `tensor "${e.name}" is out of bounds: bytes ${e.offset}..${e.offset + e.byteLength} of a ${header.dataByteLength}-byte data section`,
      );
    }
  }
  const actual = crc32Hex(crc32(bytes.subarray(dataStart, expected)));
  if (actual !== header.crc32) {
    throw new CheckpointError(`checkpoint data is corrupt: CRC-32 mismatch (data ${actual}, header says ${header.crc32})`);
  }
  const tensors = Object.fromEntries(
    header.tensors.map((e) => [e.name, { dtype: e.dtype, shape: [...e.shape], data: tensorView(bytes, dataStart + e.offset, e) }]),
  );
  const { formatVersion, createdAt, config, tokenizer, meta } = header;
  return { formatVersion, createdAt, config, tokenizer, meta: meta ?? null, tensors, header };
}

function readHeader(bytes: Uint8Array): { header: CheckpointHeader; dataStart: number } {
  // a file cut short inside the magic is a truncated checkpoint (below); anything else is another kind of file
  if (!hasMagic(bytes, CHECKPOINT_FILE)) throw new CheckpointError(notAFile(CHECKPOINT_FILE, bytes));
  if (bytes.length < PREAMBLE) {
    throw new CheckpointError(`truncated checkpoint: expected at least ${PREAMBLE} bytes, got ${bytes.length}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (!SUPPORTED_CHECKPOINT_VERSIONS.includes(version)) {
    throw new CheckpointError(
      `unsupported checkpoint format version ${version}; this build reads version ${SUPPORTED_CHECKPOINT_VERSIONS.join(', ')}`,
    );
  }
  const headerLength = view.getUint32(12, true);
  if (bytes.length < PREAMBLE + headerLength) {
    throw new CheckpointError(`truncated checkpoint: the header needs ${PREAMBLE + headerLength} bytes, got ${bytes.length}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(PREAMBLE, PREAMBLE + headerLength)));
  } catch (e) {
    throw new CheckpointError(`checkpoint header is not valid JSON: ${errorText(e)}`);
  }
  const header = validateHeader(parsed);
  if (header.formatVersion !== version) {
    throw new CheckpointError(`checkpoint header says formatVersion ${header.formatVersion}, the file preamble says ${version}`);
  }
  return { header, dataStart: align16(PREAMBLE + headerLength) };
}

function tensorView(bytes: Uint8Array, at: number, e: TensorEntry): TensorData {
  const n = e.byteLength / 4;
  if (LITTLE_ENDIAN && (bytes.byteOffset + at) % 4 === 0) {
    return e.dtype === 'f32'
      ? new Float32Array(bytes.buffer, bytes.byteOffset + at, n)
      : new Uint32Array(bytes.buffer, bytes.byteOffset + at, n);
  }
  const copy = e.dtype === 'f32' ? new Float32Array(n) : new Uint32Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, e.byteLength);
  for (let i = 0; i < n; i++) copy[i] = e.dtype === 'f32' ? view.getFloat32(4 * i, true) : view.getUint32(4 * i, true);
  return copy;
}
