/** The checkpoint header: its types and the checks a decoded header must pass. */

export type Dtype = 'f32' | 'u32';

/** One tensor's place in the data section. */
export interface TensorEntry {
  name: string;
  dtype: Dtype;
  /** row-major; [] is a scalar (one element) */
  shape: number[];
  /** from the start of the data section; a multiple of 16 */
  offset: number;
  /** product(shape) * 4 */
  byteLength: number;
}

export interface CheckpointHeader {
  formatVersion: number;
  /** ISO 8601 time of writing */
  createdAt: string;
  /** the model config; opaque to this module (any JSON object) */
  config: Record<string, unknown>;
  /** the tokenizer's JSON (Tokenizer.toJSON()), or null */
  tokenizer: unknown;
  /** anything else: step, metrics, run id... (any JSON) */
  meta: unknown;
  tensors: TensorEntry[];
  dataByteLength: number;
  /** CRC-32 of the data section, 8 lower-case hex digits */
  crc32: string;
}

/** Bytes per element of each dtype. */
export const DTYPE_BYTES: Record<Dtype, number> = { f32: 4, u32: 4 };

export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
}

export function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** Checks the fields of a parsed header; throws a CheckpointError naming the first problem. */
export function validateHeader(h: unknown): CheckpointHeader {
  const fail = (what: string): never => {
    throw new CheckpointError(`checkpoint header: ${what}`);
  };
  if (!isPlainObject(h)) return fail('expected a JSON object');
  if (!isCount(h.formatVersion)) fail('field "formatVersion" must be a non-negative integer');
  if (typeof h.createdAt !== 'string') fail('field "createdAt" must be a string');
  if (!isPlainObject(h.config)) fail('field "config" must be a JSON object');
  if (!('tokenizer' in h)) fail('field "tokenizer" is missing (null when there is none)');
  if (!isCount(h.dataByteLength)) fail('field "dataByteLength" must be a non-negative integer');
  if (typeof h.crc32 !== 'string' || !/^[0-9a-f]{8}$/.test(h.crc32)) fail('field "crc32" must be 8 lower-case hex digits');
  if (!Array.isArray(h.tensors)) fail('field "tensors" must be an array');
  const seen = new Set<string>();
  (h.tensors as unknown[]).forEach((t, i) => {
    const entry = validateEntry(t, i, fail);
    if (seen.has(entry.name)) fail(`duplicate tensor name "${entry.name}"`);
    seen.add(entry.name);
  });
  return h as unknown as CheckpointHeader;
}

function validateEntry(t: unknown, i: number, fail: (what: string) => never): TensorEntry {
  if (!isPlainObject(t)) return fail(`tensors[${i}] must be an object`);
  if (typeof t.name !== 'string' || t.name === '') fail(`tensors[${i}].name must be a non-empty string`);
  const where = `tensor "${t.name as string}"`;
  if (t.dtype !== 'f32' && t.dtype !== 'u32') fail(`${where}: dtype must be "f32" or "u32", got ${JSON.stringify(t.dtype)}`);
  if (!Array.isArray(t.shape) || !t.shape.every(isCount)) fail(`${where}: shape must be an array of non-negative integers`);
  if (!isCount(t.offset) || t.offset % 16 !== 0) fail(`${where}: offset must be a non-negative multiple of 16, got ${t.offset}`);
  if (!isCount(t.byteLength)) fail(`${where}: byteLength must be a non-negative integer`);
  const shape = t.shape as number[];
  const expected = elementCount(shape) * DTYPE_BYTES[t.dtype as Dtype];
  if (expected !== t.byteLength) {
    fail(`${where}: shape [${shape.join(', ')}] * 4 bytes = ${expected} bytes, but byteLength is ${t.byteLength}`);
  }
  return t as unknown as TensorEntry;
}
