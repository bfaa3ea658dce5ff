import { MAX_CHUNK_UNITS, forEachChunk } from './pretokenize';
import { EOS, MAX_VOCAB, MIN_VOCAB, PAD, Tokenizer, pairKey } from './tokenizer';
import { wtf8Encode } from './wtf8';

export interface TrainOptions {
  /**
   * Largest vocabulary: 256 byte tokens + merges + specials, an integer in [256, 4096]. Training
   * stops early when no pair occurs `minPairCount` times; `tokenizer.vocabSize` is the real size.
   */
  vocabSize: number;
  /** Special tokens appended after the merges. `<|endoftext|>` and `<|pad|>` are always present, first. */
  specials?: string[];
  /** A pair must occur at least this often (weighted by chunk frequency) to be merged; default 2. */
  minPairCount?: number;
}

const OPTION_KEYS = new Set(['vocabSize', 'specials', 'minPairCount']);

/**
 * Trains a byte-level BPE on `corpus`. Deterministic: the same corpus and options give the same
 * merges on every platform (integer counts, insertion-ordered maps, and ties in pair counts broken
 * by the smallest (left id, right id)).
 */
export function trainTokenizer(corpus: string[], opts: TrainOptions): Tokenizer {
  const { vocabSize, specials, minPairCount } = validateOptions(corpus, opts);
  const merges = learnMerges(corpus, vocabSize - MIN_VOCAB - specials.length, minPairCount);
  return new Tokenizer(merges, specials);
}

function validateOptions(corpus: string[], opts: TrainOptions) {
  if (!Array.isArray(corpus) || corpus.some((d) => typeof d !== 'string')) {
    throw new TypeError('trainTokenizer: corpus must be an array of strings');
  }
  if (typeof opts !== 'object' || opts === null) throw new TypeError('trainTokenizer: options {vocabSize, specials?} are required');
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) throw new Error(`trainTokenizer: unknown option "${key}" (known: ${[...OPTION_KEYS].join(', ')})`);
  }
  const { vocabSize } = opts;
  if (!Number.isInteger(vocabSize) || vocabSize < MIN_VOCAB || vocabSize > MAX_VOCAB) {
    throw new RangeError(`trainTokenizer: vocabSize must be an integer from ${MIN_VOCAB} to ${MAX_VOCAB}, got ${vocabSize}`);
  }
  const specials = [EOS, PAD];
  for (const s of opts.specials ?? []) {
    if (typeof s !== 'string' || s === '')
      throw new TypeError(`trainTokenizer: specials must be non-empty strings, got ${JSON.stringify(s)}`);
    if (!specials.includes(s)) specials.push(s);
  }
  if (vocabSize < MIN_VOCAB + specials.length) {
    throw new RangeError(
      `trainTokenizer: vocabSize ${vocabSize} leaves no room for the ${specials.length} special tokens; ` +
        `it must be at least ${MIN_VOCAB + specials.length} (256 bytes + specials)`,
    );
  }
  const minPairCount = opts.minPairCount ?? 2;
  if (!Number.isInteger(minPairCount) || minPairCount < 1) {
    throw new RangeError(`trainTokenizer: minPairCount must be an integer >= 1, got ${minPairCount}`);
  }
  return { vocabSize, specials, minPairCount };
}

/** Distinct chunks of the corpus as byte-id arrays, with how often each occurs. */
function countWords(corpus: string[]): { words: number[][]; counts: number[] } {
  const freq = new Map<string, number>();
  for (const doc of corpus) forEachChunk(doc, (c) => freq.set(c, (freq.get(c) ?? 0) + 1));
  const words: number[][] = [];
  const counts: number[] = [];
  for (const [chunk, n] of freq) {
    const bytes = wtf8Encode(chunk);
    if (bytes.length < 2) continue; // no pairs, nothing to learn
    words.push(Array.from(bytes));
    counts.push(n);
  }
  return { words, counts };
}

/**
 * Learns up to `maxMerges` merges; returns them flat: [left0, right0, left1, right1, ...], merge i
 * making token 256 + i. Pair counts are updated incrementally: a merge only revisits the words that
 * contain its pair (found through `where`), and only changed counts are pushed onto the heap.
 */
export function learnMerges(corpus: string[], maxMerges: number, minPairCount: number): number[] {
  const { words, counts } = countWords(corpus);
  const pairs = new Map<number, number>(); // pair key -> count over the corpus
  const where = new Map<number, number[]>(); // pair key -> indices of words holding it (may repeat)
  for (let w = 0; w < words.length; w++) {
    const word = words[w]!;
    for (let i = 0; i + 1 < word.length; i++) {
      const key = pairKey(word[i]!, word[i + 1]!);
      pairs.set(key, (pairs.get(key) ?? 0) + counts[w]!);
      pushWhere(where, key, w);
    }
  }
  const heap = new PairHeap();
  for (const [key, count] of pairs) heap.push(count, key);
  const seen = new Int32Array(words.length).fill(-1); // last merge that visited each word
  const inMerge = new Uint8Array(3 * MAX_CHUNK_UNITS); // scratch: which positions of a word a merge consumed
  const merges: number[] = [];
  while (merges.length / 2 < maxMerges && heap.size > 0) {
    const { count, key } = heap.pop();
    if (pairs.get(key) !== count) continue; // stale heap entry
    if (count < minPairCount) break;
    const z = MIN_VOCAB + merges.length / 2;
    const a = Math.floor(key / 65536);
    const b = key % 65536;
    merges.push(a, b);
    const delta = new Map<number, number>();
    for (const w of where.get(key) ?? []) {
      if (seen[w] === z) continue;
      seen[w] = z;
      const word = words[w]!;
      const merged = mergeWord(word, a, b, z, inMerge);
      if (merged.length === word.length) continue;
      updatePairs(delta, where, w, counts[w]!, word, merged, z, inMerge);
      words[w] = merged;
    }
    where.delete(key); // (a, b) cannot appear again: new pairs all involve newer tokens
    for (const [k, d] of delta) {
      if (d === 0) continue;
      const next = (pairs.get(k) ?? 0) + d;
      if (next > 0) {
        pairs.set(k, next);
        heap.push(next, k);
      } else {
        pairs.delete(k);
      }
    }
  }
  return merges;
}

function pushWhere(where: Map<number, number[]>, key: number, w: number): void {
  const list = where.get(key);
  if (list === undefined) where.set(key, [w]);
  else if (list[list.length - 1] !== w) list.push(w);
}

/**
 * `word` with every non-overlapping (a, b), left to right, replaced by z (`word` itself when it has
 * none); marks the positions of `word` consumed by a merge in `inMerge` (cleared for the others).
 */
function mergeWord(word: number[], a: number, b: number, z: number, inMerge: Uint8Array): number[] {
  let first = 0;
  while (first + 1 < word.length && !(word[first] === a && word[first + 1] === b)) first++;
  if (first + 1 >= word.length) return word; // stale entry of `where`: the pair is gone from this word
  inMerge.fill(0, 0, first);
  const out = word.slice(0, first);
  for (let i = first; i < word.length;) {
    if (i + 1 < word.length && word[i] === a && word[i + 1] === b) {
      out.push(z);
      inMerge[i] = inMerge[i + 1] = 1;
      i += 2;
    } else {
      inMerge[i] = 0;
      out.push(word[i++]!);
    }
  }
  return out;
}

/**
 * Adds the change in pair counts of one word (weight `count`) to `delta`. Only pairs next to a
 * merge change: z is new, so old pairs touching a merged position disappear, new pairs touching z
 * appear, and every other pair maps one to one onto itself. New pairs are indexed in `where`.
 */
function updatePairs(
  delta: Map<number, number>,
  where: Map<number, number[]>,
  w: number,
  count: number,
  word: number[],
  merged: number[],
  z: number,
  inMerge: Uint8Array,
): void {
  for (let i = 0; i + 1 < word.length; i++) {
    if (inMerge[i] || inMerge[i + 1]) {
      const key = pairKey(word[i]!, word[i + 1]!);
      delta.set(key, (delta.get(key) ?? 0) - count);
    }
  }
  for (let j = 0; j + 1 < merged.length; j++) {
    if (merged[j] === z || merged[j + 1] === z) {
      const key = pairKey(merged[j]!, merged[j + 1]!);
      delta.set(key, (delta.get(key) ?? 0) + count);
      pushWhere(where, key, w);
    }
  }
}

/** Max-heap of (count, pair key): highest count first, then the smallest key, i.e. smallest (left, right). */
class PairHeap {
  private counts: number[] = [];
  private keys: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(count: number, key: number): void {
    this.counts.push(count);
    this.keys.push(key);
    let i = this.keys.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  pop(): { count: number; key: number } {
    const top = { count: this.counts[0]!, key: this.keys[0]! };
    const last = this.keys.length - 1;
    this.swap(0, last);
    this.counts.pop();
    this.keys.pop();
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < last && this.before(l, m)) m = l;
      if (r < last && this.before(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return top;
  }

  private before(i: number, j: number): boolean {
    const ci = this.counts[i]!;
    const cj = this.counts[j]!;
    return ci > cj || (ci === cj && this.keys[i]! < this.keys[j]!);
  }

  private swap(i: number, j: number): void {
    const c = this.counts[i]!;
    this.counts[i] = this.counts[j]!;
    this.counts[j] = c;
    const k = this.keys[i]!;
    this.keys[i] = this.keys[j]!;
    this.keys[j] = k;
  }
}
