/**
 * The lab's tokenizer as a Hugging Face tokenizer.json (+ tokenizer_config.json) that
 * @huggingface/tokenizers encodes exactly as `Tokenizer.encode` does, and decodes back.
 *
 * How each piece of the lab's tokenizer is written:
 * - ids: byte b is the byte-level character of b (byte-level.ts), merge i is token 256 + i, the
 *   specials follow as added tokens (special, not normalized), so every id keeps its number;
 * - merges in rank order, as [a, b] pairs of byte-level strings;
 * - the pre-tokenizer (pretokenize.ts, "code-v1") as a Sequence of three steps:
 *   1. Split (Isolated) with the chunk regex, written in Oniguruma syntax that the library
 *      translates back to the lab's JavaScript regex: JavaScript's `\s` is spelled out as its
 *      code points (the library would read `\s` as Unicode White_Space, which differs at U+FEFF and
 *      U+0085), and everything else uses `\p{L}`, `\p{M}`, `\p{N}` and `\x{...}`;
 *   2. ByteLevel (use_regex false): the text to bytes;
 *   3. Split (Isolated) cutting chunks longer than MAX_CHUNK_UNITS (64) UTF-16 code units into
 *      pieces of 64, or 63 where the 64th unit would split a surrogate pair, as splitLong does. A
 *      regex cannot count UTF-16 units on text (the library compiles every pattern with the `u`
 *      flag, where a pair is one character), but it can on the bytes: after step 2 each UTF-16
 *      unit is a fixed byte pattern (one ASCII byte; a 2- or 3-byte sequence; half of a 4-byte
 *      one), so the pattern matches up to 63 units, then a 64th that is not the first half of a
 *      4-byte character;
 * - no normalizer, no post-processor, the ByteLevel decoder; tokenizer_config.json sets
 *   clean_up_tokenization_spaces false (the library's default, true, would rewrite " ." to ".").
 *
 * What cannot be expressed, and what happens to it:
 * - lone surrogates in the text. The lab encodes them in WTF-8 (ED A0 80 ..); a tokenizer.json
 *   tokenizer sees UTF-8 text (Rust strings cannot hold a lone surrogate; @huggingface/tokenizers'
 *   TextEncoder turns each into U+FFFD, EF BF BD). So for text with lone surrogates the ids
 *   differ: Hugging Face's are the lab's ids of the text with each lone surrogate replaced by
 *   U+FFFD (`toWellFormed`), since both are one UTF-16 unit in the same chunk class. Every
 *   well-formed string (all real code) encodes identically; `hfEncodesLikeLab(text)` says which.
 *   Decoding differs the same way: the lab's decode gives lone surrogates back from those bytes,
 *   Hugging Face's gives U+FFFD (one per invalid byte, WHATWG rules, for any invalid UTF-8).
 * - two tokens with the same bytes (two merges that build the same string by different paths):
 *   tokenizer.json's vocabulary maps strings to ids, so labTokenizerToHf refuses such a tokenizer,
 *   naming the ids; likewise a special whose string is the byte-level string of another token, and
 *   a special holding a lone surrogate.
 * - the lab's `encode(text)` leaves special-token strings as text, which Hugging Face's encoders
 *   never do for added tokens: the file matches `encode(text, { allowSpecial: true })`, and
 *   HfTokenizer's `encode(text)` (it drops the special added tokens for that) matches `encode(text)`.
 * - the regexes follow the engine's Unicode tables (`\p{L}` ...), as the lab's do; with Python's
 *   `tokenizers` (Oniguruma) they follow Oniguruma's, which can differ for recent characters.
 *   Only @huggingface/tokenizers is tested here (no Python in CI).
 */
import { BYTE_TO_CHAR, bytesToByteLevel } from './byte-level';
import { MAX_CHUNK_UNITS } from './pretokenize';
import { EOS, MIN_VOCAB, PAD, type Tokenizer } from './tokenizer';

/** JavaScript's `\s` (ECMA-262 WhiteSpace and LineTerminator: TAB..CR, the Zs spaces, LS, PS, BOM), as code points. */
export const JS_WHITESPACE: readonly number[] = Object.freeze([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
]);

const hex = (cp: number): string => `\\x{${cp.toString(16).toUpperCase()}}`;

/** A character-class body (no brackets) for a set of code points, runs written as ranges. */
function classBody(codes: readonly number[]): string {
  const sorted = [...new Set(codes)].sort((a, b) => a - b);
  let out = '';
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out += j > i ? `${hex(sorted[i]!)}-${hex(sorted[j]!)}` : hex(sorted[i]!);
    i = j + 1;
  }
  return out;
}

const WS = classBody(JS_WHITESPACE);
const HWS = classBody(JS_WHITESPACE.filter((c) => c !== 0x0a && c !== 0x0d));

/**
 * pretokenize.ts's CHUNK_RE in Oniguruma syntax (tokenizer.json pre_tokenizer Split): the same
 * seven alternatives, with `\s` spelled out (JS_WHITESPACE).
 */
export const LAB_CHUNK_REGEX = [
  String.raw` ?[\p{L}\p{M}_$][\p{L}\p{M}\p{N}_$]*`,
  String.raw` ?\p{N}+`,
  String.raw` ?[^${WS}\p{L}\p{M}\p{N}_$]+`,
  String.raw`(?:\x{D}\x{A}|\x{D}|\x{A})+[${HWS}]*`,
  String.raw`[${HWS}]+(?![^${WS}])`,
  String.raw`[${HWS}]+`,
  String.raw`[\x{0}-\x{10FFFF}]`,
].join('|');

/** [ byte-level characters of the bytes lo..hi ] */
const byteClass = (lo: number, hi: number): string => {
  const codes: number[] = [];
  for (let b = lo; b <= hi; b++) codes.push(BYTE_TO_CHAR[b]!.charCodeAt(0));
  return `[${classBody(codes)}]`;
};

/**
 * The splitLong rule on byte-level text: at most MAX_CHUNK_UNITS UTF-16 units, never ending
 * between the two halves of a 4-byte character. Units: an ASCII byte, a 2-byte or 3-byte sequence
 * (one unit each), the lead + first continuation byte of a 4-byte sequence (its high surrogate),
 * or two continuation bytes (its low surrogate).
 */
export const LAB_PIECE_REGEX = (() => {
  const cont = byteClass(0x80, 0xbf);
  const ascii = byteClass(0x00, 0x7f);
  const lead2 = byteClass(0xc0, 0xdf);
  const lead3 = byteClass(0xe0, 0xef);
  const lead4 = byteClass(0xf0, 0xff);
  const whole = `${ascii}|${lead2}${cont}|${lead3}${cont}${cont}`;
  const low = `${cont}${cont}`;
  const high = `${lead4}${cont}`;
  return `(?:${whole}|${high}|${low}){1,${MAX_CHUNK_UNITS - 1}}(?:${whole}|${low})?`;
})();

export interface LabHfFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

const hasLoneSurrogate = (s: string): boolean => /\p{Cs}/u.test(s);

/**
 * Whether Hugging Face encodes `text` as the lab does (with the exported file): true unless the
 * text holds a lone surrogate (see the module comment).
 */
export function hfEncodesLikeLab(text: string): boolean {
  return !hasLoneSurrogate(text);
}

/**
 * The lab's tokenizer as tokenizer.json and tokenizer_config.json objects (JSON.stringify them
 * to write the files). Throws when the tokenizer has two tokens with the same bytes.
 */
export function labTokenizerToHf(tok: Tokenizer): LabHfFiles {
  const vocab: Record<string, number> = {};
  const owner = new Map<string, number>();
  const strings: string[] = [];
  const specialStart = MIN_VOCAB + tok.numMerges;
  for (let id = 0; id < specialStart; id++) {
    const s = bytesToByteLevel(tok.tokenBytes(id));
    const other = owner.get(s);
    if (other !== undefined) {
      throw new Error(
        `labTokenizerToHf: tokens ${other} and ${id} (merge ${id - MIN_VOCAB} = [${tok.merge(id - MIN_VOCAB).join(', ')}]) are the same bytes ${JSON.stringify(s)}; tokenizer.json maps each string to one id, so this tokenizer cannot be written as one`,
      );
    }
    owner.set(s, id);
    vocab[s] = id;
    strings.push(s);
  }
  const merges: [string, string][] = [];
  for (let i = 0; i < tok.numMerges; i++) {
    const [a, b] = tok.merge(i);
    merges.push([strings[a]!, strings[b]!]);
  }
  const added = tok.specials.map((content, k) => {
    const id = specialStart + k;
    if (hasLoneSurrogate(content)) {
      throw new Error(
        `labTokenizerToHf: special token ${id} ${JSON.stringify(content)} holds a lone surrogate, which tokenizer.json cannot (its strings are UTF-8)`,
      );
    }
    const clash = owner.get(content);
    if (clash !== undefined) {
      throw new Error(
        `labTokenizerToHf: special token ${id} ${JSON.stringify(content)} is also the byte-level string of token ${clash}; tokenizer.json cannot tell them apart`,
      );
    }
    return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  });
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: LAB_CHUNK_REGEX }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
        { type: 'Split', pattern: { Regex: LAB_PIECE_REGEX }, behavior: 'Isolated', invert: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const others = tok.specials.filter((s) => s !== EOS && s !== PAD);
  const tokenizerConfig = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: null,
    eos_token: EOS,
    pad_token: PAD,
    unk_token: null,
    ...(others.length ? { additional_special_tokens: others } : {}),
    add_bos_token: false,
    add_eos_token: false,
    add_prefix_space: false,
    clean_up_tokenization_spaces: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest])),
  };
  return { tokenizerJson, tokenizerConfig };
}
