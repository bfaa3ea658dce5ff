import { StreamDecoder } from './decoder';
import { parseTokenizerJSON, type TokenizerJSON, TOKENIZER_FORMAT, TOKENIZER_VERSION } from './json';
import { PRETOKENIZER_NAME, forEachChunk } from './pretokenize';
import type { EncodeOptions, TextTokenizer } from './types';
import { wtf8DecodeChunk, wtf8Encode } from './wtf8';

export type { EncodeOptions } from './types';

/** Ids 0..255 are the raw bytes. */
export const MIN_VOCAB = 256;
export const MAX_VOCAB = 4096;
/** End of text: ends every document the model sees and every sample it generates. */
export const EOS = '<|endoftext|>';
/** Padding of ragged batches. */
export const PAD = '<|pad|>';
/** Most chunk encodings kept; the cache is emptied when it fills (cheap, and keeps memory bounded). */
export const CHUNK_CACHE_LIMIT = 65536;

/** Key of the pair (left, right) in maps: left * 65536 + right, so key order is (left, right) order. */
export function pairKey(left: number, right: number): number {
  return left * 65536 + right;
}

/**
 * Byte-level BPE tokenizer. Ids: 0..255 raw bytes (of the WTF-8 encoding, see wtf8.ts), then
 * 256 + i for merge i, then the special tokens. `decode(encode(s)) === s` for every JS string.
 */
export class Tokenizer implements TextTokenizer {
  /** Number of ids: 256 + merges + specials. */
  readonly vocabSize: number;
  readonly numMerges: number;
  /** Special-token strings; `specials[k]` has id 256 + numMerges + k. */
  readonly specials: readonly string[];
  readonly eosId: number;
  readonly padId: number;
  /** Flat merges: merge i joins ids merges[2i], merges[2i+1] into 256 + i. */
  private readonly merges: Uint32Array;
  /** pair key -> merge rank */
  private readonly ranks = new Map<number, number>();
  /** bytes of every id (specials: the UTF-8 of their string) */
  private readonly bytes: Uint8Array[] = [];
  private readonly specialIds = new Map<string, number>();
  private readonly specialRe: RegExp;
  private readonly cache = new Map<string, number[]>();

  /** `merges` flat as in toJSON; `specials` must hold EOS and PAD. Prefer trainTokenizer / fromJSON. */
  constructor(merges: ArrayLike<number>, specials: readonly string[]) {
    this.merges = Uint32Array.from(merges);
    this.numMerges = this.merges.length / 2;
    this.specials = Object.freeze([...specials]);
    this.vocabSize = MIN_VOCAB + this.numMerges + specials.length;
    this.buildMerges(merges);
    this.buildSpecials();
    this.eosId = this.specialId(EOS);
    this.padId = this.specialId(PAD);
    const alternatives = [...this.specials].sort((x, y) => y.length - x.length).map(escapeRegExp);
    this.specialRe = new RegExp(alternatives.join('|'), 'g');
  }

  static fromJSON(json: unknown): Tokenizer {
    const { merges, specials } = parseTokenizerJSON(json);
    return new Tokenizer(merges, specials);
  }

  toJSON(): TokenizerJSON {
    return {
      format: TOKENIZER_FORMAT,
      version: TOKENIZER_VERSION,
      pretokenizer: PRETOKENIZER_NAME,
      vocabSize: this.vocabSize,
      specials: [...this.specials],
      merges: Array.from(this.merges),
    };
  }

  /** The ids that end a generation: just eosId (TextTokenizer). */
  get eosIds(): readonly number[] {
    return [this.eosId];
  }

  /** Chunk encodings cached now (at most CHUNK_CACHE_LIMIT). */
  get cachedChunks(): number {
    return this.cache.size;
  }

  /** Merge i as [left, right] (for inspection and tests). */
  merge(i: number): [number, number] {
    if (!Number.isInteger(i) || i < 0 || i >= this.numMerges) throw new RangeError(`merge: no merge ${i}`);
    return [this.merges[2 * i]!, this.merges[2 * i + 1]!];
  }

  encode(text: string, opts: EncodeOptions = {}): Uint32Array {
    const out = new IdBuffer(text.length / 3 + 16);
    if (!opts.allowSpecial) {
      forEachChunk(text, (c) => out.append(this.encodeChunk(c)));
      return out.finish();
    }
    const re = new RegExp(this.specialRe);
    let start = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      forEachChunk(text.slice(start, m.index), (c) => out.append(this.encodeChunk(c)));
      out.push(this.specialIds.get(m[0])!);
      start = m.index + m[0].length;
    }
    forEachChunk(text.slice(start), (c) => out.append(this.encodeChunk(c)));
    return out.finish();
  }

  decode(ids: ArrayLike<number>): string {
    let text = '';
    let buf = new Uint8Array(Math.max(16, ids.length * 4));
    let n = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!this.isValidId(id)) throw this.idError(`decode: token id ${id} at position ${i}`);
      if (id >= MIN_VOCAB + this.numMerges) {
        text += wtf8DecodeChunk(buf.subarray(0, n), true).text + this.specials[id - MIN_VOCAB - this.numMerges]!;
        n = 0;
        continue;
      }
      const b = this.bytes[id]!;
      if (n + b.length > buf.length) {
        const bigger = new Uint8Array(2 * (n + b.length));
        bigger.set(buf.subarray(0, n));
        buf = bigger;
      }
      buf.set(b, n);
      n += b.length;
    }
    return text + wtf8DecodeChunk(buf.subarray(0, n), true).text;
  }

  /** The bytes a token stands for (a copy). For a special token, the UTF-8 of its string. */
  tokenBytes(id: number): Uint8Array {
    if (!this.isValidId(id)) throw this.idError(`tokenBytes: token id ${id}`);
    return this.bytes[id]!.slice();
  }

  isSpecial(id: number): boolean {
    return Number.isInteger(id) && id >= MIN_VOCAB + this.numMerges && id < this.vocabSize;
  }

  specialId(name: string): number {
    const id = this.specialIds.get(name);
    if (id === undefined) {
      throw new Error(`specialId: unknown special token ${JSON.stringify(name)} (known: ${this.specials.join(', ')})`);
    }
    return id;
  }

  /** A decoder for ids arriving one at a time (sampling): push(id) returns the text completed so far. */
  createDecoder(): StreamDecoder {
    return new StreamDecoder({
      checkId: (id) => {
        if (!this.isValidId(id)) throw this.idError(`decoder.push: token id ${id}`);
      },
      bytes: (id) => this.bytes[id]!,
      special: (id) => (this.isSpecial(id) ? this.specials[id - MIN_VOCAB - this.numMerges]! : null),
    });
  }

  private encodeChunk(chunk: string): number[] {
    let ids = this.cache.get(chunk);
    if (ids === undefined) {
      ids = this.applyMerges(chunkBytes(chunk));
      if (this.cache.size >= CHUNK_CACHE_LIMIT) this.cache.clear();
      this.cache.set(chunk, ids);
    }
    return ids;
  }

  /** Applies merges in rank order (lowest first), which reproduces the order they were learned in. */
  private applyMerges(ids: number[]): number[] {
    let n = ids.length;
    while (n >= 2) {
      let best = Infinity;
      for (let i = 0; i + 1 < n; i++) {
        const r = this.ranks.get(pairKey(ids[i]!, ids[i + 1]!));
        if (r !== undefined && r < best) best = r;
      }
      if (best === Infinity) break;
      const a = this.merges[2 * best]!;
      const b = this.merges[2 * best + 1]!;
      let w = 0;
      for (let i = 0; i < n;) {
        if (i + 1 < n && ids[i] === a && ids[i + 1] === b) {
          ids[w++] = MIN_VOCAB + best;
          i += 2;
        } else {
          ids[w++] = ids[i++]!;
        }
      }
      n = w;
    }
    ids.length = n;
    return ids;
  }

  private buildMerges(merges: ArrayLike<number>): void {
    if (merges.length % 2 !== 0) throw new Error('Tokenizer: merges must hold pairs (even length)');
    if (this.vocabSize > MAX_VOCAB) {
      throw new RangeError(`Tokenizer: vocabSize ${this.vocabSize} is above the maximum ${MAX_VOCAB}`);
    }
    for (let b = 0; b < MIN_VOCAB; b++) this.bytes.push(Uint8Array.of(b));
    for (let i = 0; i < this.numMerges; i++) {
      const a = merges[2 * i]!;
      const b = merges[2 * i + 1]!;
      const limit = MIN_VOCAB + i;
      if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b < 0 || a >= limit || b >= limit) {
        throw new Error(`Tokenizer: merge ${i} is [${a}, ${b}], but its ids must be integers below ${limit}`);
      }
      const key = pairKey(a, b);
      if (this.ranks.has(key)) throw new Error(`Tokenizer: merge ${i} [${a}, ${b}] repeats merge ${this.ranks.get(key)}`);
      this.ranks.set(key, i);
      const left = this.bytes[a]!;
      const joined = new Uint8Array(left.length + this.bytes[b]!.length);
      joined.set(left);
      joined.set(this.bytes[b]!, left.length);
      this.bytes.push(joined);
    }
  }

  private buildSpecials(): void {
    this.specials.forEach((s, k) => {
      if (typeof s !== 'string' || s.length === 0) throw new Error(`Tokenizer: special token ${k} must be a non-empty string`);
      if (this.specialIds.has(s)) throw new Error(`Tokenizer: special token ${JSON.stringify(s)} appears twice`);
      this.specialIds.set(s, MIN_VOCAB + this.numMerges + k);
      this.bytes.push(wtf8Encode(s));
    });
    for (const required of [EOS, PAD]) {
      if (!this.specialIds.has(required)) throw new Error(`Tokenizer: specials must include ${required}`);
    }
  }

  private isValidId(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize;
  }

  private idError(what: string): RangeError {
    return new RangeError(`${what} is outside the vocabulary [0, ${this.vocabSize})`);
  }
}

/** Byte ids of a chunk: char codes directly when ASCII (the common case in code), else WTF-8. */
function chunkBytes(chunk: string): number[] {
  const ids = new Array<number>(chunk.length);
  for (let i = 0; i < chunk.length; i++) {
    const c = chunk.charCodeAt(i);
    if (c >= 0x80) return Array.from(wtf8Encode(chunk));
    ids[i] = c;
  }
  return ids;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Growable Uint32Array for encode's output. */
class IdBuffer {
  private data: Uint32Array;
  private n = 0;

  constructor(capacity: number) {
    this.data = new Uint32Array(Math.ceil(capacity));
  }

  push(id: number): void {
    this.reserve(1);
    this.data[this.n++] = id;
  }

  append(ids: number[]): void {
    this.reserve(ids.length);
    for (let i = 0; i < ids.length; i++) this.data[this.n++] = ids[i]!;
  }

  finish(): Uint32Array {
    return this.data.slice(0, this.n);
  }

  private reserve(k: number): void {
    if (this.n + k <= this.data.length) return;
    const bigger = new Uint32Array(Math.max(2 * this.data.length, this.n + k));
    bigger.set(this.data.subarray(0, this.n));
    this.data = bigger;
  }
}
