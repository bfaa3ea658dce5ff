/**
 * An LRU cache of analysis results keyed by a hash of the normalised code. Normalising makes
 * `\r\n` and `\n` (and trailing spaces) hit the same entry; since results speak in offsets, the
 * analysis runs on the normalised text and `OffsetMap` carries its offsets back to the caller's.
 */

/** FNV-1a, 64-bit, over the UTF-8 bytes of `text`; 16 hex digits. Two 32-bit halves, no BigInt. */
export function fnv1a64(text: string): string {
  let lo = 0x84222325;
  let hi = 0xcbf29ce4;
  const byte = (b: number) => {
    lo = (lo ^ b) >>> 0;
    // (hi, lo) * 0x100000001b3 mod 2^64 = (hi, lo) * 0x1b3 + (lo << 40)
    const l = lo * 0x1b3;
    const carry = Math.floor(l / 0x100000000);
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = l >>> 0;
  };
  for (const ch of text) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x80) byte(c);
    else if (c < 0x800) {
      byte(0xc0 | (c >> 6));
      byte(0x80 | (c & 63));
    } else if (c < 0x10000) {
      byte(0xe0 | (c >> 12));
      byte(0x80 | ((c >> 6) & 63));
      byte(0x80 | (c & 63));
    } else {
      byte(0xf0 | (c >> 18));
      byte(0x80 | ((c >> 12) & 63));
      byte(0x80 | ((c >> 6) & 63));
      byte(0x80 | (c & 63));
    }
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/**
 * Maps offsets in a normalised text back to the original. Normalising only deletes code units
 * (the `\r` of `\r\n`, spaces before a line break), so the map is the sorted list of deletions.
 */
export class OffsetMap {
  /** `deletedBefore[i]` code units were deleted before normalised offset `at[i]`, cumulative. */
  private readonly at: number[] = [];
  private readonly deletedBefore: number[] = [];

  /** Records `count` deleted code units at normalised offset `at` (calls in increasing order). */
  delete(at: number, count: number): void {
    if (count <= 0) return;
    const total = (this.deletedBefore[this.deletedBefore.length - 1] ?? 0) + count;
    if (this.at[this.at.length - 1] === at) this.deletedBefore[this.deletedBefore.length - 1] = total;
    else {
      this.at.push(at);
      this.deletedBefore.push(total);
    }
  }

  /** The original offset of the code unit at normalised offset `o` (deletions at `o` precede it). */
  start(o: number): number {
    return o + this.deletedAt(o, true);
  }

  /** The original offset just after the code unit at normalised offset `o - 1` (an exclusive end). */
  end(o: number): number {
    return o + this.deletedAt(o, false);
  }

  /** Total deleted at normalised offsets `<= o` (inclusive) or `< o`. */
  private deletedAt(o: number, inclusive: boolean): number {
    let lo = 0;
    let hi = this.at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const a = this.at[mid] ?? 0;
      if (inclusive ? a <= o : a < o) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? 0 : (this.deletedBefore[lo - 1] ?? 0);
  }
}

/**
 * `\r\n` -> `\n`, a lone `\r` -> `\n`, and spaces/tabs before a line break removed. Whitespace at
 * the very end (no line break after it) is kept: a prompt ending in `return ` must not be glued
 * to its completion.
 */
export function normalizeCode(text: string): { text: string; map: OffsetMap } {
  const map = new OffsetMap();
  let out = '';
  let i = 0;
  const re = /([ \t\f\v\u00a0\ufeff]*)(\r\n|\r|\n)/g;
  for (const m of text.matchAll(re)) {
    out += text.slice(i, m.index);
    const deleted = (m[1] ?? '').length + ((m[2] ?? '').length - 1);
    map.delete(out.length, deleted);
    out += '\n';
    i = m.index + m[0].length;
  }
  out += text.slice(i);
  return { text: out, map };
}

export interface CacheStats {
  hits: number;
  misses: number;
  size: number;
  hitRate: number;
}

/** A bounded least-recently-used map from a key to a value, with hit and miss counts. */
export class LruCache<V> {
  private readonly entries = new Map<string, V>();
  private hits = 0;
  private misses = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`cache capacity must be a positive integer, got ${capacity}`);
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key); // re-insert: a Map iterates in insertion order, oldest first
    this.entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** The cached value for `key`, or `compute()`'s, stored. */
  getOrCompute(key: string, compute: () => V): V {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = compute();
    this.set(key, value);
    return value;
  }

  stats(): CacheStats {
    const total = this.hits + this.misses;
    return { hits: this.hits, misses: this.misses, size: this.entries.size, hitRate: total === 0 ? 0 : this.hits / total };
  }
}
