import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { randomString } from './testing';
import { wtf8Decode, wtf8DecodeChunk, wtf8Encode } from './wtf8';

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');

describe('wtf8', () => {
  it('writes known byte forms', () => {
    expect(hex(wtf8Encode('A\0'))).toBe('41 00');
    expect(hex(wtf8Encode('é'))).toBe('c3 a9');
    expect(hex(wtf8Encode('€'))).toBe('e2 82 ac');
    expect(hex(wtf8Encode('\uD83D\uDE00'))).toBe('f0 9f 98 80'); // a pair is one 4-byte code point
    expect(hex(wtf8Encode('\uD800'))).toBe('ed a0 80'); // lone high surrogate
    expect(hex(wtf8Encode('x\uDFFF'))).toBe('78 ed bf bf'); // lone low surrogate
    expect(hex(wtf8Encode('\uDE00\uD83D'))).toBe('ed b8 80 ed a0 bd'); // reversed pair: two lone halves
  });

  it('equals UTF-8 (TextEncoder) on well-formed strings', () => {
    const rng = new Rng(1);
    for (let k = 0; k < 200; k++) {
      const s = randomString(rng, 60).replace(/\p{Cs}/gu, '\uFFFD'); // lone surrogates -> U+FFFD
      expect(hex(wtf8Encode(s))).toBe(hex(new TextEncoder().encode(s)));
    }
  });

  it('round-trips every string exactly, lone surrogates included', () => {
    const rng = new Rng(2);
    for (let k = 0; k < 500; k++) {
      const s = randomString(rng, 1 + Math.floor(rng.next() * 80));
      expect(wtf8Decode(wtf8Encode(s))).toBe(s);
    }
  });

  it('replaces invalid bytes as the WHATWG UTF-8 decoder does (surrogate forms aside)', () => {
    const rng = new Rng(3);
    const utf8 = new TextDecoder('utf-8');
    for (let k = 0; k < 300; k++) {
      // random bytes biased to lead and continuation bytes; no 0xED, whose surrogate forms WTF-8 accepts
      const bytes = Uint8Array.from({ length: 1 + Math.floor(rng.next() * 24) }, () => {
        const b = rng.next() < 0.5 ? 0x80 + Math.floor(rng.next() * 0x80) : Math.floor(rng.next() * 256);
        return b === 0xed ? 0x41 : b;
      });
      expect(wtf8Decode(bytes)).toBe(utf8.decode(bytes));
    }
  });

  it('decodes a stream cut anywhere to the same string as the whole', () => {
    const rng = new Rng(4);
    for (let k = 0; k < 300; k++) {
      const bytes = Uint8Array.from({ length: 30 }, () => Math.floor(rng.next() * 256));
      if (k % 2 === 0) bytes.set(wtf8Encode(randomString(rng, 8)).subarray(0, 30));
      let pending = new Uint8Array(0);
      let text = '';
      for (let i = 0; i < bytes.length;) {
        const step = 1 + Math.floor(rng.next() * 4);
        const joined = new Uint8Array([...pending, ...bytes.subarray(i, i + step)]);
        const part = wtf8DecodeChunk(joined, false);
        text += part.text;
        pending = joined.slice(part.consumed);
        i += step;
      }
      text += wtf8DecodeChunk(pending, true).text;
      expect(text).toBe(wtf8Decode(bytes));
    }
  });

  it('keeps an incomplete tail only when not final', () => {
    const euro = wtf8Encode('€');
    expect(wtf8DecodeChunk(euro.subarray(0, 2), false)).toEqual({ text: '', consumed: 0 });
    expect(wtf8DecodeChunk(euro.subarray(0, 2), true)).toEqual({ text: '\uFFFD', consumed: 2 });
    expect(wtf8DecodeChunk(Uint8Array.of(0x61, 0xe2, 0x41), false)).toEqual({ text: 'a\uFFFDA', consumed: 3 });
  });
});
