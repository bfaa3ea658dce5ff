import { Tokenizer as LibTokenizer } from '@huggingface/tokenizers';
import { decode as gpt2Decode, encode as gpt2Encode } from 'gpt-3-encoder';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { BYTE_TO_CHAR, bytesToByteLevel } from './byte-level';
import { HfTokenizer, HfTokenizerError, type HfTokenizerFiles } from './hf';
import { CODE_SNIPPETS, GPT2_TOKENIZER_CONFIG, gpt2Merges, gpt2TokenizerJson, qwen2StyleTokenizerJson } from './hf-testing';
import { loadHumanEvalJs, randomString, taskDocuments } from './testing';

const docs = taskDocuments(loadHumanEvalJs());
const gpt2Json = gpt2TokenizerJson();
const gpt2 = HfTokenizer.fromFiles({ tokenizerJson: gpt2Json, tokenizerConfig: GPT2_TOKENIZER_CONFIG });

/** Lone surrogates -> U+FFFD (String.prototype.toWellFormed, which ES2023's lib does not declare). */
const wellFormed = (s: string): string => s.replace(/\p{Cs}/gu, '\uFFFD');

/** Random well-formed strings of code-like pieces, unicode and whitespace (testing.ts randomString, lone surrogates replaced). */
function randomTexts(seed: number, count: number, maxLen: number): string[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, () => wellFormed(randomString(rng, Math.floor(rng.next() * maxLen))));
}

const CORPUS = [...CODE_SNIPPETS, ...docs.slice(0, 60)];

function streamDecode(tok: HfTokenizer, ids: ArrayLike<number>): { text: string; pieces: string[] } {
  const d = tok.createDecoder();
  const pieces = Array.from(ids, (id) => d.push(id));
  pieces.push(d.flush());
  return { text: pieces.join(''), pieces };
}

describe('HfTokenizer on GPT-2 (real vocabulary and merges, against gpt-3-encoder)', () => {
  it('encodes code, unicode and whitespace runs exactly as gpt-3-encoder does, and decodes them back', () => {
    for (const s of [...CORPUS, ...randomTexts(7, 300, 120)]) {
      const ids = gpt2.encode(s);
      expect(Array.from(ids), JSON.stringify(s)).toEqual(gpt2Encode(s));
      expect(gpt2.decode(ids)).toBe(s);
      // gpt-3-encoder's TextDecoder drops a leading BOM (ignoreBOM false); Hugging Face keeps it, as we do
      expect(gpt2Decode(Array.from(ids))).toBe(s.replace(/^\uFEFF/, ''));
    }
  });

  it('reads the same tokenizer with its merges as [a, b] pairs', () => {
    const pairs = HfTokenizer.fromFiles({ tokenizerJson: gpt2TokenizerJson({ pairs: true }), tokenizerConfig: GPT2_TOKENIZER_CONFIG });
    for (const s of CORPUS) expect(pairs.encode(s)).toEqual(gpt2.encode(s));
  });

  it('has the vocabulary, eos and pad of GPT-2', () => {
    expect(gpt2.vocabSize).toBe(50257);
    expect(gpt2.eosId).toBe(50256);
    expect(gpt2.eosIds).toEqual([50256]);
    expect(gpt2.padId).toBe(50256); // no pad_token: falls back to eos
    expect(gpt2.bosId).toBe(50256);
    expect(gpt2.isSpecial(50256)).toBe(true);
    expect(gpt2.isSpecial(0)).toBe(false);
    expect(gpt2.tokenToId('Ġthe')).toBe(262);
    expect(gpt2.idToToken(262)).toBe('Ġthe');
    expect(gpt2.tokenBytes(262)).toEqual(new TextEncoder().encode(' the'));
    expect(gpt2.tokenBytes(50256)).toEqual(new TextEncoder().encode('<|endoftext|>'));
    expect(gpt2.chatTemplate).toBeNull();
  });

  it('keeps special-token strings as text unless allowSpecial, like the lab tokenizer', () => {
    const s = 'a<|endoftext|>b';
    expect(Array.from(gpt2.encode(s))).toEqual(gpt2Encode(s)); // gpt-3-encoder knows no specials
    expect(Array.from(gpt2.encode(s, { allowSpecial: true }))).toEqual([64, 50256, 65]);
    expect(gpt2.decode([64, 50256, 65])).toBe(s);
    expect(gpt2.decode([])).toBe('');
  });

  it('decodes as @huggingface/tokenizers does (without its space clean-up), invalid UTF-8 included', () => {
    const lib = new LibTokenizer(gpt2Json, { ...GPT2_TOKENIZER_CONFIG, clean_up_tokenization_spaces: false });
    const rng = new Rng(11);
    for (let k = 0; k < 300; k++) {
      const ids = Array.from({ length: 1 + Math.floor(rng.next() * 12) }, () => Math.floor(rng.next() * 50257));
      expect(gpt2.decode(ids)).toBe(lib.decode(ids));
      expect(streamDecode(gpt2, ids).text).toBe(gpt2.decode(ids));
    }
  });

  it('streams: an emoji split over several byte tokens comes out whole, once its last byte arrives', () => {
    const s = 'x = "😀👨‍👩‍👧 中文" // é';
    const ids = gpt2.encode(s);
    const { text, pieces } = streamDecode(gpt2, ids);
    expect(text).toBe(s);
    const bytes = Array.from(ids, (id) => gpt2.tokenBytes(id).length);
    const splitAt = Array.from(ids).findIndex((id, i) => i > 0 && pieces[i] === '' && bytes[i]! < 4); // mid-character
    expect(splitAt).toBeGreaterThan(0);
    expect(pieces.join('')).toBe(s);
    // the pieces never hold U+FFFD: each character waited for its last byte
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
    // a stream cut inside a character flushes U+FFFD, as decode() does
    const emoji = gpt2.encode('😀');
    expect(emoji.length).toBeGreaterThan(1);
    const d = gpt2.createDecoder();
    expect(d.push(emoji[0]!)).toBe('');
    expect(d.flush()).toBe(gpt2.decode([emoji[0]!]));
    expect(d.flush()).toBe('');
    // a special token flushes what was pending first
    const d2 = gpt2.createDecoder();
    expect(d2.push(emoji[0]!) + d2.push(50256)).toBe(`${gpt2.decode([emoji[0]!])}<|endoftext|>`);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => gpt2.decode([1, 50257])).toThrow('decode: token id 50257 at position 1 is outside the vocabulary [0, 50257)');
    expect(() => gpt2.decode([-1])).toThrow(RangeError);
    expect(() => gpt2.tokenBytes(2.5)).toThrow(RangeError);
    expect(() => gpt2.createDecoder().push(99999)).toThrow('decoder.push: token id 99999');
  });
});

/**
 * An independent reference for a Qwen2-layout tokenizer: the added tokens split out, NFC, Qwen2's
 * regex translated by hand to JavaScript (Oniguruma's \s is Unicode White_Space), UTF-8 bytes,
 * then GPT-2's merges applied the textbook way (lowest rank first, every occurrence left to right).
 */
let ranked: { merges: string[]; ranks: Map<string, number> } | null = null;

function qwenReference(text: string, vocab: Record<string, number>, specials: Map<string, number>): number[] {
  if (!ranked) {
    const list = gpt2Merges();
    ranked = { merges: list, ranks: new Map(list.map((m, i) => [m, i])) };
  }
  const { merges, ranks } = ranked;
  const re =
    /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\p{White_Space}\p{L}\p{N}]+[\r\n]*|\p{White_Space}*[\r\n]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;
  const names = [...specials.keys()].sort((a, b) => b.length - a.length);
  const out: number[] = [];
  const plain = (s: string) => {
    for (const m of s.normalize('NFC').matchAll(re)) {
      let word = Array.from(bytesToByteLevel(new TextEncoder().encode(m[0])));
      for (;;) {
        let best = Infinity;
        for (let i = 0; i + 1 < word.length; i++) best = Math.min(best, ranks.get(`${word[i]} ${word[i + 1]}`) ?? Infinity);
        if (best === Infinity) break;
        const [a, b] = merges[best]!.split(' ');
        const next: string[] = [];
        for (let i = 0; i < word.length; i++) {
          if (i + 1 < word.length && word[i] === a && word[i + 1] === b) next.push(word[i++]! + b);
          else next.push(word[i]!);
        }
        word = next;
      }
      for (const t of word) out.push(vocab[t]!);
    }
  };
  let rest = text;
  for (;;) {
    let at = -1;
    let name = '';
    for (const n of names) {
      const i = rest.indexOf(n);
      if (i >= 0 && (at < 0 || i < at)) [at, name] = [i, n];
    }
    if (at < 0) break;
    plain(rest.slice(0, at));
    out.push(specials.get(name)!);
    rest = rest.slice(at + name.length);
  }
  plain(rest);
  return out;
}

describe('HfTokenizer on a Qwen2-layout tokenizer.json (NFC, Split + ByteLevel, pair merges, ChatML added tokens)', () => {
  const json = qwen2StyleTokenizerJson();
  const config = { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null, chat_template: '{{ messages[0].content }}' };
  const generation = { bos_token_id: 50256, eos_token_id: [50258, 50256], pad_token_id: 50256 };
  const qwen = HfTokenizer.fromFiles({ tokenizerJson: json, tokenizerConfig: config, generationConfig: generation });
  const vocab = (json.model as { vocab: Record<string, number> }).vocab;
  const specials = new Map([
    ['<|endoftext|>', 50256],
    ['<|im_start|>', 50257],
    ['<|im_end|>', 50258],
  ]);

  it('encodes as a hand-written reference of the Qwen2 pipeline does', () => {
    // the reference has no long-s/Kelvin-sign case folding (neither has the library): keep the corpus ASCII-cased
    const texts = [...CORPUS, ...randomTexts(21, 150, 100)].filter((s) => !/[\u017f\u212a]/.test(s));
    for (const s of texts) {
      expect(Array.from(qwen.encode(s)), JSON.stringify(s)).toEqual(qwenReference(s, vocab, new Map()));
      expect(qwen.decode(qwen.encode(s))).toBe(s.normalize('NFC'));
    }
    const chat = '<|im_start|>user\nWrite add(a, b)<|im_end|>\n<|im_start|>assistant\n';
    expect(Array.from(qwen.encode(chat, { allowSpecial: true }))).toEqual(qwenReference(chat, vocab, specials));
    expect(qwen.decode(qwen.encode(chat, { allowSpecial: true }))).toBe(chat);
    // Qwen2 splits digits one by one
    expect(qwen.encode('12345').length).toBe(5);
  });

  it('takes eos from generation_config (all of them as eosIds), pad and bos too; vocabSize counts the added tokens', () => {
    expect(qwen.vocabSize).toBe(50256 + 22);
    expect(qwen.eosId).toBe(50258);
    expect(qwen.eosIds).toEqual([50258, 50256]);
    expect(qwen.padId).toBe(50256);
    expect(qwen.bosId).toBe(50256);
    expect(qwen.specialTokens).toEqual({ bos: null, eos: '<|im_end|>', pad: '<|endoftext|>', unk: null });
    const noGen = HfTokenizer.fromFiles({ tokenizerJson: json, tokenizerConfig: config });
    expect([noGen.eosId, noGen.padId, noGen.bosId]).toEqual([50258, 50256, null]);
    expect(noGen.eosIds).toEqual([50258]);
    const bare = HfTokenizer.fromFiles({ tokenizerJson: json });
    expect([bare.eosId, bare.padId]).toEqual([50256, 50256]); // <|endoftext|>, and pad falls back to eos
  });

  it('marks special added tokens special, and always matches the non-special ones (<tool_call>), as Hugging Face does', () => {
    expect(qwen.isSpecial(50257)).toBe(true);
    const toolCall = qwen.tokenToId('<tool_call>')!;
    expect(qwen.isSpecial(toolCall)).toBe(false);
    expect(Array.from(qwen.encode('<tool_call>'))).toEqual([toolCall]);
    expect(Array.from(qwen.encode('<|im_start|>'))).not.toContain(50257);
  });

  it('renders its chat template', () => {
    expect(qwen.renderChat([{ role: 'user', content: 'hi' }])).toBe('hi');
  });
});

type Obj = Record<string, unknown>;
const model = (j: Obj) => j.model as Obj;
const vocabOf = (j: Obj) => model(j).vocab as Obj;
const mergesOf = (j: Obj) => model(j).merges as unknown[];
const addedOf = (j: Obj) => j.added_tokens as Obj[];

/** A tiny byte-level BPE tokenizer.json: the 256 byte tokens, merges "Ġ t", "Ġt h"; <|endoftext|> added. */
function tiny(): Obj {
  const vocab: Record<string, number> = {};
  BYTE_TO_CHAR.forEach((c, b) => (vocab[c] = b));
  vocab['Ġt'] = 256;
  vocab['Ġth'] = 257;
  return {
    added_tokens: [{ id: 258, content: '<|endoftext|>', special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false },
    post_processor: null,
    decoder: { type: 'ByteLevel' },
    model: { type: 'BPE', vocab, merges: ['Ġ t', 'Ġt h'] },
  };
}

describe('HfTokenizer refuses what it cannot read, naming the file and the field', () => {
  const load = (edit: (j: Obj) => unknown, rest: Partial<HfTokenizerFiles> = {}, where?: string) => {
    const j = tiny();
    edit(j);
    return () => HfTokenizer.fromFiles({ tokenizerJson: j, ...rest }, where);
  };

  it('loads the tiny tokenizer', () => {
    const t = load(() => {})();
    expect(Array.from(t.encode(' the'))).toEqual([257, BYTE_TO_CHAR.indexOf('e')]);
    expect(t.vocabSize).toBe(259);
  });

  it.each([
    [
      'a Unigram model',
      (j: Obj) => (j.model = { type: 'Unigram', vocab: [['a', 0]] }),
      'tokenizer.json: model.type "Unigram" is not supported (byte-level BPE only)',
    ],
    [
      'a WordPiece model',
      (j: Obj) => (model(j).type = 'WordPiece'),
      'tokenizer.json: model.type "WordPiece" is not supported (byte-level BPE only)',
    ],
    ['no model', (j: Obj) => delete j.model, 'tokenizer.json: missing field "model"'],
    ['no model.type', (j: Obj) => delete model(j).type, 'tokenizer.json: model.type is missing'],
    ['no vocab', (j: Obj) => delete model(j).vocab, 'tokenizer.json: missing model.vocab'],
    ['a vocab array', (j: Obj) => (model(j).vocab = []), 'tokenizer.json: model.vocab must be an object of token -> id, got an array'],
    ['a fractional id', (j: Obj) => (vocabOf(j)['Ġt'] = 1.5), 'tokenizer.json: model.vocab["Ġt"] is 1.5, not a non-negative integer id'],
    ['two tokens on one id', (j: Obj) => (vocabOf(j)['Ġth'] = 256), 'tokenizer.json: model.vocab gives id 256 to both "Ġt" and "Ġth"'],
    ['no merges', (j: Obj) => delete model(j).merges, 'tokenizer.json: missing model.merges'],
    [
      'a merge of an unknown token',
      (j: Obj) => mergesOf(j).push('Ġth e'),
      'tokenizer.json: model.merges[2] ("Ġth e") makes "Ġthe", which is not in model.vocab',
    ],
    [
      'a merge naming a token not in the vocab',
      (j: Obj) => mergesOf(j).push('Ġx q'),
      'tokenizer.json: model.merges[2] ("Ġx q") names "Ġx", which is not in model.vocab',
    ],
    [
      'a malformed merge',
      (j: Obj) => mergesOf(j).push('abc'),
      'tokenizer.json: model.merges[2] is "abc", expected two tokens separated by one space',
    ],
    [
      'mixed merge formats',
      (j: Obj) => (model(j).merges = [['Ġ', 't'], 'Ġt h']),
      'tokenizer.json: model.merges[1] is "Ġt h", but model.merges[0] is a pair: expected ["a", "b"]',
    ],
    [
      'a missing byte',
      (j: Obj) => delete vocabOf(j)['Ċ'],
      'tokenizer.json: model.vocab has no token for byte 0x0A ("Ċ"): a byte-level BPE needs all 256',
    ],
    [
      'a SentencePiece token',
      (j: Obj) => (vocabOf(j)['▁the'] = 300),
      'tokenizer.json: model.vocab token "▁the" (id 300) has "▁" (U+2581), which is not in the byte-level alphabet: not a byte-level BPE',
    ],
    ['byte_fallback', (j: Obj) => (model(j).byte_fallback = true), 'tokenizer.json: model.byte_fallback true is not supported'],
    ['dropout', (j: Obj) => (model(j).dropout = 0.1), 'tokenizer.json: model.dropout 0.1 is not supported'],
    [
      'a word suffix',
      (j: Obj) => (model(j).end_of_word_suffix = '</w>'),
      'tokenizer.json: model.end_of_word_suffix "</w>" is not supported',
    ],
    [
      'a Metaspace pre-tokenizer',
      (j: Obj) => (j.pre_tokenizer = { type: 'Metaspace' }),
      'tokenizer.json: pre_tokenizer.type "Metaspace" is not supported (byte-level BPE only',
    ],
    ['no pre-tokenizer', (j: Obj) => (j.pre_tokenizer = null), 'tokenizer.json: pre_tokenizer is null'],
    [
      'a Split merged with the previous piece',
      (j: Obj) =>
        (j.pre_tokenizer = {
          type: 'Sequence',
          pretokenizers: [{ type: 'Split', pattern: { Regex: '\\d' }, behavior: 'MergedWithPrevious' }, { type: 'ByteLevel' }],
        }),
      'tokenizer.json: pre_tokenizer.pretokenizers[0].behavior "MergedWithPrevious" is not supported (Isolated only',
    ],
    [
      'a Sequence without ByteLevel',
      (j: Obj) => (j.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Digits' }] }),
      'tokenizer.json: pre_tokenizer.pretokenizers has 0 ByteLevel steps',
    ],
    [
      'a Metaspace decoder',
      (j: Obj) => (j.decoder = { type: 'Metaspace' }),
      'tokenizer.json: decoder.type "Metaspace" is not supported (byte-level BPE only: ByteLevel)',
    ],
    [
      'an added token without content',
      (j: Obj) => addedOf(j).push({ id: 259 }),
      'tokenizer.json: added_tokens[1].content must be a non-empty string, got undefined',
    ],
    [
      'an added token on a vocabulary id',
      (j: Obj) => addedOf(j).push({ id: 256, content: '<x>' }),
      'tokenizer.json: added_tokens[1] "<x>" has id 256, which model.vocab gives to "Ġt"',
    ],
    [
      'a single_word added token',
      (j: Obj) => (addedOf(j)[0]!.single_word = true),
      'tokenizer.json: added_tokens[0] "<|endoftext|>": single_word true is not supported',
    ],
  ])('refuses %s', (_what, edit, message) => {
    const f = load(edit);
    expect(f).toThrow(HfTokenizerError);
    expect(f).toThrow(message);
  });

  it('wraps what @huggingface/tokenizers itself throws (an Oniguruma regex it cannot translate), naming the file', () => {
    const f = load(
      (j) =>
        (j.pre_tokenizer = {
          type: 'Sequence',
          pretokenizers: [{ type: 'Split', pattern: { Regex: '[[:graph:]]' }, behavior: 'Isolated' }, { type: 'ByteLevel' }],
        }),
    );
    expect(f).toThrow(/^tokenizer\.json: @huggingface\/tokenizers cannot load it: Unsupported POSIX character class "graph"/);
    const p = load((j) => (j.post_processor = { type: 'Nonsense' }));
    expect(p).toThrow('tokenizer.json: @huggingface/tokenizers cannot load it: Unknown PostProcessor type: Nonsense');
  });

  it('checks the config files and their token names', () => {
    expect(load(() => {}, { tokenizerConfig: { eos_token: '<|im_end|>' } })).toThrow(
      'tokenizer_config.json: eos_token "<|im_end|>" is not a token of tokenizer.json (model.vocab or added_tokens)',
    );
    expect(load(() => {}, { tokenizerConfig: { eos_token: 5 } })).toThrow(
      'tokenizer_config.json: eos_token must be a string or an AddedToken object with "content", got 5',
    );
    expect(load(() => {}, { tokenizerConfig: { eos_token: { content: '<|endoftext|>', __type: 'AddedToken' } } })().eosId).toBe(258);
    expect(load(() => {}, { tokenizerConfig: [] })).toThrow('tokenizer_config.json: expected a JSON object, got an array');
    expect(load(() => {}, { generationConfig: { eos_token_id: [258, 9999] } })).toThrow(
      'generation_config.json: eos_token_id[1] 9999 is not a token of tokenizer.json (ids go up to 258)',
    );
    expect(load(() => {}, { generationConfig: { eos_token_id: 'x' } })).toThrow(
      'generation_config.json: eos_token_id is "x", not a token id',
    );
    expect(load(() => {}, { tokenizerConfig: { chat_template: 7 } })).toThrow(
      'tokenizer_config.json: chat_template must be a string or a list of {name, template}, got number',
    );
    expect(load((j) => (j.added_tokens = []))).toThrow(
      'tokenizer.json: no end-of-sequence token: no generation_config.json eos_token_id, no tokenizer_config.json eos_token, and no <|endoftext|> token',
    );
    expect(() => HfTokenizer.fromFiles({ tokenizerJson: '{"model": ' })).toThrow(/^tokenizer\.json: not valid JSON: /);
    expect(() => HfTokenizer.fromFiles({ tokenizerJson: null })).toThrow('tokenizer.json: missing');
  });

  it('prefixes the folder when given one', () => {
    expect(load((j) => (model(j).type = 'Unigram'), {}, 'models/Qwen2.5-0.5B/')).toThrow(
      'models/Qwen2.5-0.5B/tokenizer.json: model.type "Unigram" is not supported (byte-level BPE only)',
    );
    expect(load(() => {}, { generationConfig: { eos_token_id: -1 } }, 'm')).toThrow(
      'm/generation_config.json: eos_token_id is -1, not a token id',
    );
  });

  it('reads a tokenizer.json given as text, and ids beyond the vocabulary from added tokens (holes are not tokens)', () => {
    const j = tiny();
    addedOf(j).push({ id: 300, content: '<|im_end|>', special: true });
    const t = HfTokenizer.fromFiles({ tokenizerJson: JSON.stringify(j) });
    expect(t.vocabSize).toBe(301);
    expect(t.decode([300])).toBe('<|im_end|>');
    expect(() => t.decode([299])).toThrow('decode: token id 299 at position 0 is not a token (tokenizer.json has no entry for it)');
  });
});

describe('HfTokenizer with a post-processor', () => {
  it('adds template tokens only when asked (addSpecialTokens), as Llama 3 adds <|begin_of_text|>', () => {
    const j = tiny();
    addedOf(j).push({ id: 259, content: '<|begin_of_text|>', special: true });
    j.post_processor = {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [259], tokens: ['<|begin_of_text|>'] } },
    };
    const t = HfTokenizer.fromFiles({ tokenizerJson: j, tokenizerConfig: { bos_token: '<|begin_of_text|>' } });
    expect(Array.from(t.encode('a'))).toEqual([BYTE_TO_CHAR.indexOf('a')]);
    expect(Array.from(t.encode('a', { addSpecialTokens: true }))).toEqual([259, BYTE_TO_CHAR.indexOf('a')]);
    expect(t.bosId).toBe(259);
  });
});
