import { beforeAll, describe, expect, test } from 'vitest';
import { Rng } from '../util/random';
import { loadJsSyntax, type JsSyntax } from './ast';
import { LruCache, fnv1a64, normalizeCode } from './cache';
import { Analyzer, analyze } from './index';
import { nodeWasmLoader } from './wasm-node';

/** FNV-1a 64 the slow, obvious way (BigInt over TextEncoder's bytes): the reference. */
function fnvReference(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(text)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, '0');
}

describe('fnv1a64', () => {
  test('published test vectors', () => {
    expect(fnv1a64('')).toBe('cbf29ce484222325');
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('foobar')).toBe('85944171f73967e8');
  });

  test('matches a BigInt reference on random text, non-ASCII and emoji included', () => {
    const rng = new Rng(3);
    const alphabet = ['a', 'Z', ' ', '\n', '\r', 'é', 'ß', '中', '😀', '\u2028', '{', '\0'];
    for (let n = 0; n < 200; n++) {
      const text = Array.from({ length: Math.floor(rng.next() * 40) }, () => alphabet[Math.floor(rng.next() * alphabet.length)]).join('');
      expect(fnv1a64(text), JSON.stringify(text)).toBe(fnvReference(text));
    }
  });
});

describe('normalizeCode', () => {
  test('line endings and trailing whitespace; whitespace at the very end is kept', () => {
    expect(normalizeCode('a  \r\nb\t\rc \n  d ').text).toBe('a\nb\nc\n  d ');
  });

  test('maps every normalised offset back to the same character, ends included', () => {
    const rng = new Rng(5);
    const alphabet = ['x', ' ', '\t', '\r\n', '\n', '\r', 'é', '😀'];
    for (let n = 0; n < 200; n++) {
      const original = Array.from({ length: Math.floor(rng.next() * 30) }, () => alphabet[Math.floor(rng.next() * alphabet.length)]).join(
        '',
      );
      const { text, map } = normalizeCode(original);
      for (let i = 0; i < text.length; i++) {
        const o = map.start(i);
        const same = original[o] === text[i] || (text[i] === '\n' && original[o] === '\r');
        expect(same, `${JSON.stringify(original)} @${i}`).toBe(true);
        // A range [i, i+1) maps to a range that starts at o and ends right after that character.
        expect(map.end(i + 1)).toBe(o + 1);
      }
      expect(map.end(text.length)).toBeLessThanOrEqual(original.length);
    }
  });
});

describe('LruCache', () => {
  test('evicts the least recently used entry and counts hits and misses', () => {
    const cache = new LruCache<number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now the most recent
    cache.set('c', 3); // evicts b
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('c')).toBe(3);
    expect(cache.getOrCompute('d', () => 4)).toBe(4); // miss, evicts a
    expect(cache.get('a')).toBeUndefined();
    expect(cache.stats()).toEqual({ hits: 2, misses: 3, size: 2, hitRate: 0.4 });
  });

  test('rejects a bad capacity', () => {
    expect(() => new LruCache(0)).toThrow(/positive integer/);
  });
});

describe('Analyzer', () => {
  let syntax: JsSyntax;
  beforeAll(async () => {
    syntax = await loadJsSyntax(nodeWasmLoader);
  });

  test("CRLF and trailing spaces hit the LF entry, with offsets in the caller's text", () => {
    const analyzer = new Analyzer(syntax, { cacheSize: 8 });
    const prompt = 'const f = (x) => {\n';
    const lf = '  if (x == 1) return y;\n  return 0;\n}\n';
    const crlf = '  if (x == 1) return y;   \r\n  return 0;\r\n}\r\n';
    const a = analyzer.analyze(lf, { prompt });
    const b = analyzer.analyze(crlf, { prompt });
    expect(analyzer.stats()).toMatchObject({ hits: 1, misses: 1, size: 1, hitRate: 0.5 });
    for (const [code, result] of [
      [lf, a],
      [crlf, b],
    ] as const) {
      const text = (id: string) => result.diagnostics.filter((d) => d.ruleId === id).map((d) => code.slice(d.start, d.end));
      expect(text('eqeqeq')).toEqual(['==']);
      expect(text('no-undef')).toEqual(['y']);
      expect(result.metrics.chars).toBe(code.length);
      expect(code.slice(0, result.metrics.functions[0]?.end)).toBe(code.slice(0, code.lastIndexOf('}') + 1));
    }
    expect(b.diagnostics.map((d) => d.ruleId)).toEqual(a.diagnostics.map((d) => d.ruleId));
    expect(analyze(lf, { prompt, syntax })).toEqual(a); // the cache returns what analyze computes
  });

  test('a batch with repeats: hit rate and LRU bound', () => {
    const analyzer = new Analyzer(syntax, { cacheSize: 3 });
    const variants = ['let a = 1;\n', 'let b = 2;\n', 'let c = 3;\n', 'let d = 4;\n'];
    for (const v of [...variants.slice(0, 3), ...variants.slice(0, 3), ...variants]) analyzer.analyze(v);
    // 3 misses, 3 hits, then a, b, c hit and d misses (evicting a)
    expect(analyzer.stats()).toEqual({ hits: 6, misses: 4, size: 3, hitRate: 0.6 });
  });
});
