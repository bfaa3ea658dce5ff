import { Tokenizer as LibTokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { corpusTokenizer } from './corpus';
import { hfEncodesLikeLab, JS_WHITESPACE, labTokenizerToHf } from './export-hf';
import { HfTokenizer } from './hf';
import { CODE_SNIPPETS } from './hf-testing';
import { EOS, PAD, Tokenizer, trainTokenizer } from './index';
import { MAX_CHUNK_UNITS } from './pretokenize';
import { loadHumanEvalJs, randomString, taskDocuments } from './testing';

const docs = taskDocuments(loadHumanEvalJs());
const wellFormed = (s: string): string => s.replace(/\p{Cs}/gu, '\uFFFD');

/**
 * Strings aimed at the exporter's weak points: chunks longer than MAX_CHUNK_UNITS with a surrogate
 * pair at every position around the cut (emoji in punctuation runs, astral letters in identifiers,
 * astral digits in numbers), every JavaScript whitespace character (and U+0085, which JavaScript's
 * \s leaves out) in runs, before words and at line starts, CR/LF mixes, specials glued to text.
 */
function adversarial(): string[] {
  const out: string[] = [];
  const astral = ['😀', '𝑥', '𝟎', '𠀀']; // So, L (math italic), Nd (math digit), Lo (CJK ext. B)
  const fill = ['=', 'x', '1', '中'];
  for (const [k, a] of astral.entries()) {
    for (let lead = 0; lead < 6; lead++) {
      out.push(fill[k]!.repeat(MAX_CHUNK_UNITS - 3 + lead) + a.repeat(5) + ' tail');
      out.push(a.repeat(MAX_CHUNK_UNITS / 2 + lead) + fill[k]!.repeat(lead));
      out.push(` ${fill[k]!.repeat(lead)}${a.repeat(70)}`);
    }
  }
  for (const c of [...JS_WHITESPACE, 0x85, 0x180e, 0x200b]) {
    const w = String.fromCharCode(c);
    out.push(`a${w}b`, `a${w}${w}${w}b`, `x =${w}${w}1;${w}\n${w}${w}y`, `${w}\n\n${w}z`, w.repeat(3), `if (a)${w}{${w}`);
  }
  out.push('\r\n\r\n    x', '\r\r\n\n\r  y', 'a\r\n', '\n'.repeat(70) + '  ' + '\t'.repeat(70), ' '.repeat(200) + 'z', '\t\t\t\t');
  out.push(`${EOS}${EOS}x${PAD} ${EOS}\n`, `<|endoftext|`, `<${PAD}>`, 'a'.repeat(500), '_$'.repeat(40), '$'.repeat(65));
  return out;
}

function corpus(seed: number): string[] {
  const rng = new Rng(seed);
  const random = Array.from({ length: 1500 }, () => wellFormed(randomString(rng, Math.floor(rng.next() * 200))));
  return [...docs, ...CODE_SNIPPETS, ...adversarial(), ...random];
}

const lists = (ids: ArrayLike<number>) => Array.from(ids).join(',');

/** How many texts `lib` encodes differently from `tok.encode(text, { allowSpecial: true })`. */
function mismatches(lib: LibTokenizer, tok: Tokenizer, texts: readonly string[]): string[] {
  return texts.filter((s) => lists(lib.encode(s, { add_special_tokens: false }).ids) !== lists(tok.encode(s, { allowSpecial: true })));
}

describe('labTokenizerToHf', () => {
  const tokenizers: [string, Tokenizer][] = [
    ['trained on HumanEval-X JS (vocab 1024)', trainTokenizer(docs.slice(0, 120), { vocabSize: 1024 })],
    ['the built-in corpus tokenizer (vocab 512, the tiny preset)', corpusTokenizer(512)],
    ['with extra specials', trainTokenizer(docs.slice(0, 40), { vocabSize: 400, specials: ['<|fim_prefix|>', '<|fim_suffix|>'] })],
    // merges inside emoji, astral letters and digits, whitespace runs: where a wrong cut changes the ids
    [
      'trained on the adversarial strings too (vocab 2048)',
      trainTokenizer([...adversarial(), ...adversarial().map((s) => s.slice(3)), ...docs.slice(0, 40)], { vocabSize: 2048 }),
    ],
  ];

  it.each(tokenizers)('%s: @huggingface/tokenizers encodes every well-formed string as the lab does, and decodes it back', (_name, tok) => {
    const files = labTokenizerToHf(tok);
    const lib = new LibTokenizer(JSON.parse(JSON.stringify(files.tokenizerJson)), JSON.parse(JSON.stringify(files.tokenizerConfig)));
    const texts = corpus(5);
    expect(mismatches(lib, tok, texts)).toEqual([]);
    for (const s of texts) {
      const ids = Array.from(tok.encode(s, { allowSpecial: true }));
      if (ids.length) expect(lib.decode(ids)).toBe(s);
    }
  });

  it.each(tokenizers)(
    '%s: HfTokenizer over the export is the lab tokenizer (encode both ways, decode, stream, bytes, specials)',
    (_name, tok) => {
      const hf = HfTokenizer.fromFiles(labTokenizerToHf(tok));
      expect([hf.vocabSize, hf.eosId, hf.padId]).toEqual([tok.vocabSize, tok.eosId, tok.padId]);
      expect(hf.eosIds).toEqual(tok.eosIds);
      for (let id = 0; id < tok.vocabSize; id++) {
        expect(hf.tokenBytes(id)).toEqual(tok.tokenBytes(id));
        expect(hf.isSpecial(id)).toBe(tok.isSpecial(id));
      }
      for (const s of corpus(9).slice(0, 800)) {
        const ids = tok.encode(s);
        expect(lists(hf.encode(s))).toBe(lists(ids));
        expect(lists(hf.encode(s, { allowSpecial: true }))).toBe(lists(tok.encode(s, { allowSpecial: true })));
        expect(hf.decode(ids)).toBe(s);
        const [a, b] = [hf.createDecoder(), tok.createDecoder()];
        for (const id of ids) expect(a.push(id)).toBe(b.push(id));
        expect(a.flush()).toBe(b.flush());
      }
    },
  );

  it('lone surrogates: Hugging Face encodes the text as the lab encodes it with U+FFFD in their place', () => {
    const [, tok] = tokenizers[0]!;
    const hf = HfTokenizer.fromFiles(labTokenizerToHf(tok));
    const rng = new Rng(31);
    let withLone = 0;
    for (let k = 0; k < 500; k++) {
      const s = randomString(rng, Math.floor(rng.next() * 150));
      expect(hfEncodesLikeLab(s)).toBe(s === wellFormed(s));
      if (!hfEncodesLikeLab(s)) withLone++;
      expect(lists(hf.encode(s))).toBe(lists(tok.encode(wellFormed(s))));
    }
    expect(withLone).toBeGreaterThan(100);
    for (const s of ['\uD800', 'a\uDC00b', '\uDBFF\uDBFF😀', `x${'\uD83D'.repeat(70)}`]) {
      expect(hfEncodesLikeLab(s)).toBe(false);
      expect(lists(hf.encode(s))).not.toBe(lists(tok.encode(s)));
      expect(tok.decode(tok.encode(s))).toBe(s); // the lab keeps them (WTF-8) ...
      expect(hf.decode(tok.encode(s))).not.toBe(s); // ... Hugging Face's UTF-8 decoding cannot
    }
  });

  it('the adversarial strings do test the exporter: simpler pre-tokenizers fail on them', () => {
    const [, tok] = tokenizers[3]!;
    const good = labTokenizerToHf(tok).tokenizerJson as { pre_tokenizer: { pretokenizers: Record<string, unknown>[] } };
    const [split, byteLevel] = good.pre_tokenizer.pretokenizers;
    const variant = (pretokenizers: Record<string, unknown>[]) =>
      new LibTokenizer({ ...good, pre_tokenizer: { type: 'Sequence', pretokenizers } }, {});
    const texts = adversarial();
    // no 64-unit cut at all
    expect(mismatches(variant([split!, byteLevel!]), tok, texts).length).toBeGreaterThan(10);
    // cutting every 64 code units of text (FixedLength) breaks surrogate pairs the lab keeps whole
    expect(mismatches(variant([split!, { type: 'FixedLength', length: MAX_CHUNK_UNITS }, byteLevel!]), tok, texts).length).toBeGreaterThan(
      5,
    );
    // the chunk regex with \s left to the library's translation (Unicode White_Space, not JavaScript's \s)
    const naive = String.raw` ?[\p{L}\p{M}_$][\p{L}\p{M}\p{N}_$]*| ?\p{N}+| ?[^\s\p{L}\p{M}\p{N}_$]+|(?:\r\n|\r|\n)+[^\S\r\n]*|[^\S\r\n]+(?!\S)|[^\S\r\n]+|[\s\S]`;
    const naiveSplit = { ...split!, pattern: { Regex: naive } };
    const bad = mismatches(variant([naiveSplit, byteLevel!, good.pre_tokenizer.pretokenizers[2]!]), tok, texts);
    expect(bad.length).toBeGreaterThan(0);
    expect(bad.every((s) => /[\uFEFF\u0085]/.test(s))).toBe(true);
  });

  it("JS_WHITESPACE is exactly JavaScript's \\s", () => {
    const re = /^\s$/u;
    const codes: number[] = [];
    for (let c = 0; c <= 0x10ffff; c++) if (re.test(String.fromCodePoint(c))) codes.push(c);
    expect(codes).toEqual(JS_WHITESPACE);
  });

  it('writes specials as added tokens and the config files transformers reads', () => {
    const [, tok] = tokenizers[2]!;
    const { tokenizerJson, tokenizerConfig } = labTokenizerToHf(tok);
    const added = tokenizerJson.added_tokens as { id: number; content: string; special: boolean }[];
    expect(added.map((t) => [t.id, t.content, t.special])).toEqual(tok.specials.map((s) => [tok.specialId(s), s, true]));
    expect(tokenizerConfig).toMatchObject({
      eos_token: EOS,
      pad_token: PAD,
      additional_special_tokens: ['<|fim_prefix|>', '<|fim_suffix|>'],
      clean_up_tokenization_spaces: false,
    });
    expect(Object.keys((tokenizerJson.model as { vocab: object }).vocab)).toHaveLength(256 + tok.numMerges);
  });

  it('refuses what tokenizer.json cannot hold', () => {
    // merges 257 = (256, a) and 258 = (a, 256) are both "aaa"
    const twins = new Tokenizer([97, 97, 256, 97, 97, 256], [EOS, PAD]);
    expect(() => labTokenizerToHf(twins)).toThrow('labTokenizerToHf: tokens 257 and 258 (merge 2 = [97, 256]) are the same bytes "aaa"');
    expect(() => labTokenizerToHf(new Tokenizer([], [EOS, PAD, 'a']))).toThrow(
      'labTokenizerToHf: special token 258 "a" is also the byte-level string of token 97',
    );
    expect(() => labTokenizerToHf(new Tokenizer([], [EOS, PAD, '<\uD800>']))).toThrow(
      'labTokenizerToHf: special token 258 "<\\ud800>" holds a lone surrogate',
    );
  });
});
