import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { EOS, PAD, Tokenizer, trainTokenizer } from './index';
import { CHUNK_CACHE_LIMIT } from './tokenizer';
import { loadHumanEvalJs, randomString, taskDocuments } from './testing';
import { wtf8Encode } from './wtf8';

const docs = taskDocuments(loadHumanEvalJs());
const tok = trainTokenizer(docs.slice(0, 120), { vocabSize: 1024 });

describe('Tokenizer round trip', () => {
  it('decode(encode(s)) === s for random strings with lone surrogates, emoji, CRLF and NULs', () => {
    const rng = new Rng(10);
    for (let k = 0; k < 400; k++) {
      const s = randomString(rng, Math.floor(rng.next() * 120));
      const ids = tok.encode(s);
      expect(tok.decode(ids)).toBe(s);
      expect(ids.includes(tok.eosId)).toBe(false); // special strings in text stay text by default
    }
  });

  it('round-trips edge cases and real code', () => {
    const cases = ['', '\0', '\0\0\n\0', '\r\n\r\n', '\uD800', '\uDC00\uD800', '😀', 'a\uD83D', ' '.repeat(300), ...docs.slice(120)];
    for (const s of cases) expect(tok.decode(tok.encode(s))).toBe(s);
  });

  it('token bytes concatenate to the WTF-8 bytes of the text', () => {
    const s = docs[130]! + ' \uD800 😀 é';
    const parts = Array.from(tok.encode(s), (id) => tok.tokenBytes(id));
    const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (joined.set(p, at), at + p.length), 0);
    expect(joined).toEqual(wtf8Encode(s));
  });

  it('keeps the chunk cache bounded and encodes the same across a reset', () => {
    const fresh = Tokenizer.fromJSON(tok.toJSON());
    const text = Array.from({ length: CHUNK_CACHE_LIMIT + 5000 }, (_, i) => `v${i.toString(36)}`).join(' ');
    const ids = fresh.encode(text);
    expect(fresh.cachedChunks).toBeLessThanOrEqual(CHUNK_CACHE_LIMIT);
    expect(fresh.cachedChunks).toBeGreaterThan(0);
    expect(fresh.encode(text).join()).toBe(ids.join()); // the second pass meets a cache cleared midway
    expect(fresh.decode(ids)).toBe(text);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => tok.decode([1, tok.vocabSize])).toThrow(
      `decode: token id ${tok.vocabSize} at position 1 is outside the vocabulary [0, ${tok.vocabSize})`,
    );
    expect(() => tok.decode([-1])).toThrow(RangeError);
    expect(() => tok.tokenBytes(2.5)).toThrow('outside the vocabulary');
  });
});

describe('Tokenizer training', () => {
  it('is deterministic and breaks ties by the smallest (left, right)', () => {
    const again = trainTokenizer(docs.slice(0, 120), { vocabSize: 1024 });
    expect(again.toJSON()).toEqual(tok.toJSON());
    // (c,d) and (a,b) both occur once: (a,b) = (97,98) goes first whatever the corpus order
    const t1 = trainTokenizer(['cd', 'ab'], { vocabSize: 260, minPairCount: 1 });
    const t2 = trainTokenizer(['ab', 'cd'], { vocabSize: 260, minPairCount: 1 });
    expect([t1.merge(0), t1.merge(1)]).toEqual([
      [97, 98],
      [99, 100],
    ]);
    expect(t2.toJSON()).toEqual(t1.toJSON());
  });

  it('learns the same first merges on every platform (golden)', () => {
    expect(Array.from({ length: 12 }, (_, i) => tok.merge(i))).toEqual(GOLDEN_FIRST_MERGES);
    expect(Array.from({ length: 12 }, (_, i) => tok.decode([256 + i]))).toEqual(GOLDEN_FIRST_TOKENS);
  });

  it('compresses: frequent code words become single tokens', () => {
    for (const w of ['const', ' return', '\n  ', ' =>', ' length']) expect(tok.encode(w).length).toBe(1);
  });

  it('validates vocabSize with a message naming the field and the range', () => {
    for (const bad of [255, 4097, 300.5, Number.NaN, '512' as unknown as number]) {
      expect(() => trainTokenizer(['x'], { vocabSize: bad })).toThrow('vocabSize must be an integer from 256 to 4096');
    }
    expect(() => trainTokenizer(['x'], { vocabSize: 257 })).toThrow('vocabSize 257 leaves no room for the 2 special tokens');
    expect(() => trainTokenizer(['x'], { vocabSize: 300, vocab: 3 } as never)).toThrow('unknown option "vocab"');
    expect(() => trainTokenizer(['x'], { vocabSize: 300, specials: [''] })).toThrow('specials must be non-empty strings');
  });

  it('stops early when no pair repeats, and vocabSize reports the real size', () => {
    const small = trainTokenizer(['abab'], { vocabSize: 4096 });
    expect(small.numMerges).toBe(1); // (a,b) twice, then (ab,ab) only once
    expect(small.vocabSize).toBe(256 + 1 + 2);
  });
});

describe('special tokens', () => {
  it('come after the merges and are counted in vocabSize', () => {
    expect(tok.vocabSize).toBe(1024);
    expect(tok.eosId).toBe(1022);
    expect(tok.padId).toBe(1023);
    expect(tok.specialId(EOS)).toBe(tok.eosId);
    expect(tok.specialId(PAD)).toBe(tok.padId);
    expect(() => tok.specialId('<|nope|>')).toThrow('unknown special token "<|nope|>"');
  });

  it('are recognised in text only with allowSpecial', () => {
    const text = 'a<|endoftext|>b<|pad|>';
    const plain = tok.encode(text);
    const special = tok.encode(text, { allowSpecial: true });
    expect(plain.includes(tok.eosId)).toBe(false);
    expect(Array.from(special)).toEqual([...tok.encode('a'), tok.eosId, ...tok.encode('b'), tok.padId]);
    expect(tok.decode(special)).toBe(text);
  });

  it('accepts extra specials after EOS and PAD', () => {
    const t = trainTokenizer(docs.slice(0, 10), { vocabSize: 300, specials: ['<|fim|>', PAD] });
    expect(t.specials).toEqual([EOS, PAD, '<|fim|>']);
    expect(t.vocabSize).toBe(300);
    expect(t.specialId('<|fim|>')).toBe(299);
    expect(Array.from(t.encode('<|fim|>', { allowSpecial: true }))).toEqual([299]);
  });
});

describe('streaming decoder', () => {
  it('pushes add up to decode(), for real text and for arbitrary id sequences', () => {
    const rng = new Rng(11);
    for (let k = 0; k < 300; k++) {
      const ids =
        k % 2 === 0
          ? Array.from(tok.encode(randomString(rng, 40) + '😀'.repeat(k % 3)))
          : Array.from({ length: 30 }, () => Math.floor(rng.next() * tok.vocabSize)); // may split sequences, hit specials
      const dec = tok.createDecoder();
      const text = ids.map((id) => dec.push(id)).join('') + dec.flush();
      expect(text).toBe(tok.decode(ids));
    }
  });

  it('holds back an emoji split over byte tokens until it completes', () => {
    const dec = tok.createDecoder();
    const bytes = wtf8Encode('😀'); // 4 bytes; ids 0..255 are bytes
    expect([dec.push(bytes[0]!), dec.push(bytes[1]!), dec.push(bytes[2]!)]).toEqual(['', '', '']);
    expect(dec.pendingBytes).toBe(3);
    expect(dec.push(bytes[3]!)).toBe('😀');
    expect(dec.push(bytes[0]!) + dec.push(tok.eosId)).toBe('\uFFFD' + EOS);
    expect(() => dec.push(tok.vocabSize)).toThrow(`decoder.push: token id ${tok.vocabSize} is outside the vocabulary`);
  });
});

describe('toJSON / fromJSON', () => {
  it('restores a tokenizer with identical encodings', () => {
    const json = tok.toJSON();
    const back = Tokenizer.fromJSON(JSON.parse(JSON.stringify(json)));
    const fromString = Tokenizer.fromJSON(JSON.stringify(json));
    expect(back.toJSON()).toEqual(json);
    for (const d of docs.slice(120, 140)) {
      expect(back.encode(d)).toEqual(tok.encode(d));
      expect(fromString.encode(d)).toEqual(tok.encode(d));
    }
  });

  it('rejects bad JSON saying what is wrong', () => {
    const good = tok.toJSON();
    const bad = (patch: object) => () => Tokenizer.fromJSON({ ...good, ...patch });
    expect(() => Tokenizer.fromJSON('{"format": ')).toThrow('Tokenizer.fromJSON: not valid JSON');
    expect(() => Tokenizer.fromJSON([])).toThrow('expected an object, got an array');
    expect(bad({ version: 2 })).toThrow('unsupported version 2; supported: 1');
    expect(bad({ format: 'gpt2' })).toThrow('field "format" must be "coderl-bpe"');
    expect(bad({ pretokenizer: 'gpt2' })).toThrow('field "pretokenizer" is "gpt2"');
    expect(bad({ extra: 1 })).toThrow('unknown field "extra"');
    expect(bad({ merges: good.merges.slice(0, -1) })).toThrow('odd length');
    expect(bad({ vocabSize: 1000 })).toThrow('field "vocabSize" is 1000, but 256 bytes + 766 merges + 2 specials = 1024');
    expect(bad({ merges: [300, 1, ...good.merges.slice(2)] })).toThrow('merge 0 is [300, 1], but its ids must be integers below 256');
    expect(bad({ merges: [...good.merges.slice(0, 2), ...good.merges.slice(0, 2), ...good.merges.slice(4)] })).toThrow('repeats merge 0');
    expect(bad({ specials: [EOS, 'x'] })).toThrow('specials must include <|pad|>');
    const { merges: _m, ...noMerges } = good;
    expect(() => Tokenizer.fromJSON(noMerges)).toThrow('missing field "merges"');
  });
});

/** The first 12 merges learned from the first 120 HumanEval-X JavaScript tasks (Node 20, x86-64), and their text. */
const GOLDEN_FIRST_MERGES = [
  [32, 32],
  [10, 256],
  [32, 61],
  [32, 116],
  [105, 110],
  [114, 101],
  [115, 116],
  [257, 256],
  [108, 101],
  [32, 97],
  [101, 114],
  [32, 40],
];
const GOLDEN_FIRST_TOKENS = ['  ', '\n  ', ' =', ' t', 'in', 're', 'st', '\n    ', 'le', ' a', 'er', ' ('];
