/**
 * A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json, and generation_config.json
 * for the stop ids) behind the lab's TextTokenizer interface. Encoding is @huggingface/tokenizers'
 * (the library transformers.js uses); decoding, token bytes and streaming decode are done here
 * from the byte-level vocabulary, so that a stream of pushes equals decode() exactly.
 *
 * Supported: byte-level BPE only, which is what GPT-2, GPT-NeoX/Pythia, StarCoder, SmolLM/SmolLM2,
 * Qwen2/2.5/3, Llama 3 and DeepSeek-Coder use:
 * - model.type "BPE" with a vocabulary holding all 256 byte characters (byte_fallback false,
 *   no dropout, no subword prefix or suffix), merges written either way: "a b" strings (older
 *   files) or ["a", "b"] pairs (tokenizers >= 0.20); ignore_merges (Llama 3) as the library does;
 * - pre_tokenizer ByteLevel (GPT-2 style, its regex built in, add_prefix_space either way), or a
 *   Sequence of Split (behavior "Isolated", not inverted) and Digits steps around exactly one
 *   ByteLevel (Qwen2's Split + ByteLevel(use_regex false), Llama 3's, SmolLM2's Digits + ByteLevel);
 * - any normalizer the library implements (Qwen2 has NFC: then decode(encode(s)) is NFC(s));
 * - decoder ByteLevel;
 * - added tokens, special or not (their lstrip/rstrip as the library applies them), also ids
 *   beyond the vocabulary; any post_processor the library implements (used only with
 *   addSpecialTokens, e.g. Llama 3's begin-of-text).
 *
 * Not supported (refused with the file and field named): Unigram, WordPiece and SentencePiece-style
 * BPE (Metaspace, byte_fallback, Llama 1/2, Mistral, Gemma), Split behaviors other than Isolated
 * (the library does not implement MergedWithPrevious/MergedWithNext/Contiguous), inverted Split,
 * Punctuation/Whitespace/Metaspace pre-tokenizers, single_word added tokens (the library ignores
 * the flag), and vocabularies with tokens outside the byte-level alphabet.
 *
 * Differences from Python's `tokenizers` that remain, all the library's: its regexes are
 * JavaScript's after translating Oniguruma (its README lists what it cannot reproduce); GPT-2's
 * built-in ByteLevel regex uses JavaScript's \s, which counts U+FEFF as a space and U+0085 not;
 * a lone surrogate in the text (a JS string can hold one; Rust's cannot) is encoded as U+FFFD.
 *
 * Special tokens: `encode(text)` treats special-token strings as plain text like the lab's
 * tokenizer; `encode(text, { allowSpecial: true })` turns them into their ids (what a rendered
 * chat template needs). Added tokens that are not special are always matched, as Hugging Face does.
 */
import { Tokenizer as LibTokenizer } from '@huggingface/tokenizers';
import { byteLevelToBytes, BYTE_TO_CHAR } from './byte-level';
import { chatTemplateOf, renderChat, type ChatMessage, type RenderChatOptions } from './chat';
import type { EncodeOptions, TextTokenizer, TokenStreamDecoder } from './types';
import { errorText } from '../util/errors';

export class HfTokenizerError extends Error {
  override readonly name = 'HfTokenizerError';
}

/** The parsed files of a Hugging Face tokenizer; tokenizerJson may also be its JSON text. */
export interface HfTokenizerFiles {
  tokenizerJson: unknown;
  /** tokenizer_config.json; null or absent when the folder has none */
  tokenizerConfig?: unknown;
  /** generation_config.json (eos_token_id, pad_token_id, bos_token_id); null or absent when none */
  generationConfig?: unknown;
}

export interface HfEncodeOptions extends EncodeOptions {
  /** Apply the post-processor (e.g. Llama 3's <|begin_of_text|>); default false, like the lab's encode. */
  addSpecialTokens?: boolean;
}

/** tokenizer_config.json's special tokens, as strings (an AddedToken object gives its content). */
export interface HfSpecialTokens {
  bos: string | null;
  eos: string | null;
  pad: string | null;
  unk: string | null;
}

const END_OF_TEXT = '<|endoftext|>';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);
const show = (s: string): string => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

/** Names the files in errors: "tokenizer.json", or "<where>/tokenizer.json". */
class Files {
  constructor(private readonly where: string | undefined) {}

  name(file: string): string {
    return this.where ? `${this.where.replace(/\/+$/, '')}/${file}` : file;
  }

  fail(file: string, what: string): never {
    throw new HfTokenizerError(`${this.name(file)}: ${what}`);
  }
}

/** UTF-8 as Hugging Face decodes it: invalid bytes become U+FFFD (WHATWG), a BOM is kept. Stateless when not streaming. */
const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

const TJ = 'tokenizer.json';
const TC = 'tokenizer_config.json';
const GC = 'generation_config.json';

interface AddedInfo {
  content: string;
  special: boolean;
}

export class HfTokenizer implements TextTokenizer {
  /** One past the largest id over the vocabulary and the added tokens (the model's vocab may be bigger). */
  readonly vocabSize: number;
  readonly eosId: number;
  /** generation_config.json's eos_token_id (all of them, in order), then tokenizer_config's eos_token if not among them. */
  readonly eosIds: readonly number[];
  readonly padId: number;
  /** generation_config.json's bos_token_id, else tokenizer_config's bos_token, else null. */
  readonly bosId: number | null;
  /** tokenizer_config.json's special-token strings (for chat templates). */
  readonly specialTokens: Readonly<HfSpecialTokens>;
  /** tokenizer_config.json's chat template (the "default" one when it holds several), or null. */
  readonly chatTemplate: string | null;
  /** What errors and messages call this tokenizer's folder ('' when none was given). */
  readonly where: string;
  /** The parsed tokenizer.json as given (not copied: do not modify), e.g. to write the folder again. */
  readonly tokenizerJson: Readonly<Record<string, unknown>>;
  /** The parsed tokenizer_config.json as given ({} when there was none). */
  readonly tokenizerConfig: Readonly<Record<string, unknown>>;

  /** id -> token string (byte-level for vocabulary tokens, the content for added tokens); holes undefined */
  private readonly tokens: (string | undefined)[];
  private readonly added = new Map<number, AddedInfo>();
  private readonly toId = new Map<string, number>();
  private readonly bytesCache: (Uint8Array | undefined)[];
  private readonly files: Files;
  private withSpecials: LibTokenizer | null = null;
  private withoutSpecials: LibTokenizer | null = null;

  private constructor(json: Obj, config: Obj, generation: Obj, files: Files, where: string) {
    this.files = files;
    this.where = where;
    this.tokenizerJson = json;
    this.tokenizerConfig = config;
    const { tokens, added } = checkTokenizerJson(json, files);
    this.tokens = tokens;
    for (const [id, a] of added) this.added.set(id, a);
    tokens.forEach((t, id) => {
      if (t !== undefined && !this.toId.has(t)) this.toId.set(t, id);
    });
    this.vocabSize = tokens.length;
    this.bytesCache = new Array<Uint8Array | undefined>(tokens.length);
    this.specialTokens = Object.freeze({
      bos: tokenString(config, 'bos_token', files),
      eos: tokenString(config, 'eos_token', files),
      pad: tokenString(config, 'pad_token', files),
      unk: tokenString(config, 'unk_token', files),
    });
    this.chatTemplate = chatTemplateOf(config, undefined, files.name(TC));

    const genIds = (key: string): number[] => {
      const v = generation[key];
      const list = v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
      return list.map((id, i) => {
        const field = Array.isArray(v) ? `${key}[${i}]` : key;
        if (!Number.isInteger(id) || (id as number) < 0) files.fail(GC, `${field} is ${JSON.stringify(id)}, not a token id`);
        if (!this.isValidId(id as number))
          files.fail(GC, `${field} ${id} is not a token of ${files.name(TJ)} (ids go up to ${this.vocabSize - 1})`);
        return id as number;
      });
    };
    const configId = (key: keyof HfSpecialTokens): number | null => {
      const s = this.specialTokens[key];
      if (s === null) return null;
      const id = this.toId.get(s);
      if (id === undefined) files.fail(TC, `${key}_token ${show(s)} is not a token of ${files.name(TJ)} (model.vocab or added_tokens)`);
      return id;
    };

    const eosGen = genIds('eos_token_id');
    const eosConfig = configId('eos');
    const eosFallback = this.toId.get(END_OF_TEXT);
    const eosId = eosGen[0] ?? eosConfig ?? eosFallback;
    if (eosId === undefined) {
      files.fail(TJ, `no end-of-sequence token: no ${GC} eos_token_id, no ${TC} eos_token, and no ${END_OF_TEXT} token`);
    }
    this.eosId = eosId;
    const eosIds = eosGen.length ? [...new Set(eosGen)] : [eosId];
    if (eosConfig !== null && !eosIds.includes(eosConfig)) eosIds.push(eosConfig);
    this.eosIds = Object.freeze(eosIds);
    this.padId = genIds('pad_token_id')[0] ?? configId('pad') ?? eosId;
    this.bosId = genIds('bos_token_id')[0] ?? configId('bos');
    // unk_token is not looked up: a byte-level BPE never needs it

    // build the library's tokenizer now, so that a file it refuses fails here, not at the first encode
    this.library(true);
  }

  /**
   * Checks and loads a tokenizer. `where` (a folder name or path) prefixes the file names in
   * errors: `Qwen2.5-0.5B/tokenizer.json: model.type "Unigram" is not supported (byte-level BPE only)`.
   */
  static fromFiles(files: HfTokenizerFiles, where?: string): HfTokenizer {
    const f: Files = new Files(where); // annotated, so that f.fail() narrows
    const parse = (v: unknown, file: string, required: boolean): Obj => {
      if (v === undefined || v === null) {
        if (required) f.fail(file, 'missing (a Hugging Face tokenizer needs tokenizer.json)');
        return {};
      }
      let o = v;
      if (typeof v === 'string') {
        try {
          o = JSON.parse(v);
        } catch (e) {
          f.fail(file, `not valid JSON: ${errorText(e)}`);
        }
      }
      if (!isObj(o)) f.fail(file, `expected a JSON object, got ${kind(o)}`);
      return o;
    };
    const json = parse(files.tokenizerJson, TJ, true);
    const config = parse(files.tokenizerConfig, TC, false);
    const generation = parse(files.generationConfig, GC, false);
    return new HfTokenizer(json, config, generation, f, where ?? '');
  }

  encode(text: string, opts: HfEncodeOptions = {}): Uint32Array {
    if (typeof text !== 'string') throw new TypeError(`encode: expected a string, got ${kind(text)}`);
    const lib = this.library(opts.allowSpecial === true);
    const { ids, tokens } = lib.encode(text, { add_special_tokens: opts.addSpecialTokens === true });
    const out = new Uint32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      // a special token the post-processor adds is unknown to the library without specials (allowSpecial false)
      const id = ids[i] ?? this.toId.get(tokens[i]!);
      if (id === undefined)
        throw new Error(`encode: @huggingface/tokenizers gave no id for token ${i} of ${show(text)} (a bug: the vocabulary was checked)`);
      out[i] = id;
    }
    return out;
  }

  decode(ids: ArrayLike<number>): string {
    let text = '';
    const parts: Uint8Array[] = [];
    let n = 0;
    const flush = () => {
      if (n === 0) return;
      const all = new Uint8Array(n);
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      text += UTF8.decode(all);
      parts.length = 0;
      n = 0;
    };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      this.checkId(id, `decode: token id ${id} at position ${i}`);
      const a = this.added.get(id);
      if (a) {
        flush();
        text += a.content;
        continue;
      }
      const b = this.bytesOf(id);
      parts.push(b);
      n += b.length;
    }
    flush();
    return text;
  }

  isSpecial(id: number): boolean {
    return this.added.get(id)?.special === true;
  }

  tokenBytes(id: number): Uint8Array {
    this.checkId(id, `tokenBytes: token id ${id}`);
    return this.bytesOf(id).slice();
  }

  createDecoder(): TokenStreamDecoder {
    return new HfStreamDecoder(this);
  }

  /** The id of a token: a vocabulary token in byte-level form ('Ġfoo'), or an added token's content. */
  tokenToId(token: string): number | undefined {
    return this.toId.get(token);
  }

  /** The token string of an id (byte-level form for vocabulary tokens), or undefined for none. */
  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.tokens[id] : undefined;
  }

  /**
   * Renders this tokenizer's chat template (tokenizer_config.json chat_template) with its
   * bos/eos/pad/unk token strings; throws when there is none.
   */
  renderChat(messages: readonly ChatMessage[], opts: Omit<RenderChatOptions, 'where'> = {}): string {
    if (this.chatTemplate === null) this.files.fail(TC, 'has no chat_template (a base model: prompt it with plain text)');
    return renderChat(this.chatTemplate, messages, {
      bosToken: this.specialTokens.bos,
      eosToken: this.specialTokens.eos,
      padToken: this.specialTokens.pad,
      unkToken: this.specialTokens.unk,
      ...opts,
      where: this.files.name(TC),
    });
  }

  /** @internal the stream decoder's view */
  addedContent(id: number): string | undefined {
    return this.added.get(id)?.content;
  }

  /** @internal bytes of a checked id (not copied) */
  bytesOf(id: number): Uint8Array {
    let b = this.bytesCache[id];
    if (b === undefined) {
      const a = this.added.get(id);
      if (a) b = new TextEncoder().encode(a.content);
      else {
        const r = byteLevelToBytes(this.tokens[id]!);
        if (typeof r === 'number') throw new Error(`bytesOf: token ${id} is not byte-level (a bug: the vocabulary was checked)`);
        b = r;
      }
      this.bytesCache[id] = b;
    }
    return b;
  }

  /** @internal throws a RangeError unless `id` is a token */
  checkId(id: number, what: string): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new RangeError(`${what} is outside the vocabulary [0, ${this.vocabSize})`);
    }
    if (this.tokens[id] === undefined) throw new RangeError(`${what} is not a token (${this.files.name(TJ)} has no entry for it)`);
  }

  private isValidId(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize && this.tokens[id] !== undefined;
  }

  /** The library's tokenizer: with every added token, or without the special ones (allowSpecial false). Built once each. */
  private library(allowSpecial: boolean): LibTokenizer {
    const have = allowSpecial ? this.withSpecials : this.withoutSpecials;
    if (have) return have;
    const given = this.tokenizerJson;
    const added = (given.added_tokens ?? []) as Obj[];
    const json: Obj = {
      ...given,
      normalizer: given.normalizer ?? null,
      post_processor: given.post_processor ?? null,
      added_tokens: allowSpecial ? added : added.filter((t) => t.special !== true),
    };
    let lib: LibTokenizer;
    try {
      lib = new LibTokenizer(json, this.tokenizerConfig);
    } catch (e) {
      this.files.fail(TJ, `@huggingface/tokenizers cannot load it: ${errorText(e)}`);
    }
    if (allowSpecial) this.withSpecials = lib;
    else this.withoutSpecials = lib;
    return lib;
  }
}

/**
 * The streaming decoder: a UTF-8 TextDecoder in stream mode between added tokens, which the
 * Encoding standard defines to give the same text as decoding the bytes at once.
 */
class HfStreamDecoder implements TokenStreamDecoder {
  private utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private pending = false;

  constructor(private readonly tok: HfTokenizer) {}

  push(id: number): string {
    this.tok.checkId(id, `decoder.push: token id ${id}`);
    const content = this.tok.addedContent(id);
    if (content !== undefined) return this.flush() + content;
    this.pending = true;
    return this.utf8.decode(this.tok.bytesOf(id), { stream: true });
  }

  flush(): string {
    if (!this.pending) return '';
    this.pending = false;
    return this.utf8.decode(); // ends the stream: an incomplete sequence becomes U+FFFD
  }
}

// ---------------------------------------------------------------------------------------------
// checks

function checkTokenizerJson(json: Obj, f: Files): { tokens: (string | undefined)[]; added: Map<number, AddedInfo> } {
  const model = json.model;
  if (model === undefined) f.fail(TJ, 'missing field "model"');
  if (!isObj(model)) f.fail(TJ, `model must be an object, got ${kind(model)}`);
  if (model.type === undefined) f.fail(TJ, 'model.type is missing (byte-level BPE only: "BPE")');
  if (model.type !== 'BPE') f.fail(TJ, `model.type ${JSON.stringify(model.type)} is not supported (byte-level BPE only)`);
  if (model.byte_fallback === true)
    f.fail(TJ, 'model.byte_fallback true is not supported (a SentencePiece-style BPE; byte-level BPE only)');
  if (model.dropout !== undefined && model.dropout !== null && model.dropout !== 0) {
    f.fail(TJ, `model.dropout ${JSON.stringify(model.dropout)} is not supported (BPE dropout is random; encoding must be deterministic)`);
  }
  for (const key of ['continuing_subword_prefix', 'end_of_word_suffix'] as const) {
    const v = model[key];
    if (v !== undefined && v !== null && v !== '')
      f.fail(TJ, `model.${key} ${JSON.stringify(v)} is not supported (byte-level BPE has none)`);
  }

  // vocabulary
  const vocab = model.vocab;
  if (vocab === undefined || vocab === null) f.fail(TJ, 'missing model.vocab');
  if (!isObj(vocab)) f.fail(TJ, `model.vocab must be an object of token -> id, got ${kind(vocab)}`);
  const tokens: (string | undefined)[] = [];
  const vocabIds = new Map<string, number>();
  for (const [token, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0)
      f.fail(TJ, `model.vocab[${show(token)}] is ${JSON.stringify(id)}, not a non-negative integer id`);
    const i = id as number;
    if (tokens[i] !== undefined) f.fail(TJ, `model.vocab gives id ${i} to both ${show(tokens[i]!)} and ${show(token)}`);
    tokens[i] = token;
    vocabIds.set(token, i);
  }

  // added tokens
  const addedList = json.added_tokens ?? [];
  if (!Array.isArray(addedList)) f.fail(TJ, `added_tokens must be an array, got ${kind(addedList)}`);
  const added = new Map<number, AddedInfo>();
  const addedContent = new Set<string>();
  addedList.forEach((t: unknown, k) => {
    const at = `added_tokens[${k}]`;
    if (!isObj(t)) f.fail(TJ, `${at} must be an object, got ${kind(t)}`);
    const { id, content } = t;
    if (!Number.isInteger(id) || (id as number) < 0) f.fail(TJ, `${at}.id is ${JSON.stringify(id)}, not a non-negative integer`);
    if (typeof content !== 'string' || content === '')
      f.fail(TJ, `${at}.content must be a non-empty string, got ${JSON.stringify(content)}`);
    const i = id as number;
    if (t.single_word === true)
      f.fail(TJ, `${at} ${show(content)}: single_word true is not supported (@huggingface/tokenizers ignores it)`);
    if (added.has(i)) f.fail(TJ, `${at} ${show(content)} has id ${i}, which ${show(added.get(i)!.content)} also has`);
    if (addedContent.has(content)) f.fail(TJ, `${at} ${show(content)} appears twice in added_tokens`);
    const inVocab = vocabIds.get(content);
    if (inVocab !== undefined && inVocab !== i) f.fail(TJ, `${at} ${show(content)} has id ${i}, but model.vocab gives it id ${inVocab}`);
    if (inVocab === undefined && tokens[i] !== undefined)
      f.fail(TJ, `${at} ${show(content)} has id ${i}, which model.vocab gives to ${show(tokens[i]!)}`);
    tokens[i] = content;
    added.set(i, { content, special: t.special === true });
    addedContent.add(content);
  });

  // every vocabulary token is made of byte characters, and every byte has its token
  for (const [token, id] of vocabIds) {
    if (added.has(id)) continue;
    const r = byteLevelToBytes(token);
    if (typeof r === 'number') {
      const c = token.codePointAt(r)!;
      f.fail(
        TJ,
        `model.vocab token ${show(token)} (id ${id}) has ${JSON.stringify(String.fromCodePoint(c))} (U+${c.toString(16).toUpperCase().padStart(4, '0')}), which is not in the byte-level alphabet: not a byte-level BPE`,
      );
    }
  }
  for (let b = 0; b < 256; b++) {
    if (!vocabIds.has(BYTE_TO_CHAR[b]!)) {
      f.fail(
        TJ,
        `model.vocab has no token for byte 0x${b.toString(16).toUpperCase().padStart(2, '0')} (${JSON.stringify(BYTE_TO_CHAR[b])}): a byte-level BPE needs all 256`,
      );
    }
  }

  // merges: one format, both halves and their join in the vocabulary
  const merges = model.merges;
  if (merges === undefined || merges === null) f.fail(TJ, 'missing model.merges');
  if (!Array.isArray(merges)) f.fail(TJ, `model.merges must be an array, got ${kind(merges)}`);
  const pairs = merges.length > 0 && Array.isArray(merges[0]);
  merges.forEach((m: unknown, i) => {
    const at = `model.merges[${i}]`;
    let a: string;
    let b: string;
    if (pairs) {
      if (!Array.isArray(m) || m.length !== 2 || typeof m[0] !== 'string' || typeof m[1] !== 'string') {
        f.fail(TJ, `${at} is ${JSON.stringify(m)}, but model.merges[0] is a pair: expected ["a", "b"]`);
      }
      [a, b] = m as [string, string];
    } else {
      if (typeof m !== 'string') f.fail(TJ, `${at} is ${JSON.stringify(m)}, expected "a b" (or every merge a pair ["a", "b"])`);
      const parts = m.split(' ');
      if (parts.length !== 2 || parts[0] === '' || parts[1] === '')
        f.fail(TJ, `${at} is ${JSON.stringify(m)}, expected two tokens separated by one space`);
      [a, b] = parts as [string, string];
    }
    const shown = JSON.stringify(m);
    if (!vocabIds.has(a)) f.fail(TJ, `${at} (${shown}) names ${show(a)}, which is not in model.vocab`);
    if (!vocabIds.has(b)) f.fail(TJ, `${at} (${shown}) names ${show(b)}, which is not in model.vocab`);
    if (!vocabIds.has(a + b)) f.fail(TJ, `${at} (${shown}) makes ${show(a + b)}, which is not in model.vocab`);
  });

  checkPreTokenizer(json.pre_tokenizer, f);
  const dec = json.decoder;
  if (dec === undefined || dec === null) f.fail(TJ, 'decoder is null: a byte-level BPE needs the ByteLevel decoder');
  if (!isObj(dec) || dec.type !== 'ByteLevel') {
    f.fail(TJ, `decoder.type ${JSON.stringify(isObj(dec) ? dec.type : dec)} is not supported (byte-level BPE only: ByteLevel)`);
  }
  return { tokens, added };
}

function checkPreTokenizer(pt: unknown, f: Files): void {
  const supported = 'byte-level BPE only: ByteLevel, or a Sequence of Split and Digits steps around one ByteLevel';
  if (pt === undefined || pt === null) f.fail(TJ, `pre_tokenizer is null (${supported})`);
  if (!isObj(pt)) f.fail(TJ, `pre_tokenizer must be an object, got ${kind(pt)}`);
  if (pt.type === 'ByteLevel') return;
  if (pt.type !== 'Sequence') f.fail(TJ, `pre_tokenizer.type ${JSON.stringify(pt.type)} is not supported (${supported})`);
  const steps = pt.pretokenizers;
  if (!Array.isArray(steps)) f.fail(TJ, `pre_tokenizer.pretokenizers must be an array, got ${kind(steps)}`);
  const byteLevel = steps.flatMap((s: unknown, i) => (isObj(s) && s.type === 'ByteLevel' ? [i] : []));
  if (byteLevel.length !== 1) f.fail(TJ, `pre_tokenizer.pretokenizers has ${byteLevel.length} ByteLevel steps (${supported})`);
  steps.forEach((s: unknown, i) => {
    const at = `pre_tokenizer.pretokenizers[${i}]`;
    if (!isObj(s)) f.fail(TJ, `${at} must be an object, got ${kind(s)}`);
    if (s.type === 'ByteLevel') return;
    if (s.type === 'Digits' && i < byteLevel[0]!) return;
    if (s.type !== 'Split') f.fail(TJ, `${at}.type ${JSON.stringify(s.type)} is not supported here (${supported})`);
    if (s.behavior !== 'Isolated') {
      f.fail(
        TJ,
        `${at}.behavior ${JSON.stringify(s.behavior)} is not supported (Isolated only: @huggingface/tokenizers does not implement the others)`,
      );
    }
    if (s.invert === true) f.fail(TJ, `${at}.invert true is not supported`);
    const p = s.pattern;
    if (!isObj(p) || (typeof p.Regex !== 'string' && typeof p.String !== 'string')) {
      f.fail(TJ, `${at}.pattern must be {"Regex": "..."} or {"String": "..."}, got ${JSON.stringify(p)}`);
    }
  });
}

/** tokenizer_config's `key` as a string: a string, an AddedToken object's content, or null. */
function tokenString(config: Obj, key: string, f: Files): string | null {
  const v = config[key];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (isObj(v) && typeof v.content === 'string') return v.content;
  return f.fail(TC, `${key} must be a string or an AddedToken object with "content", got ${JSON.stringify(v)}`);
}
