/**
 * What the rest of the lab needs from a tokenizer, whichever kind it is: the lab's own byte-level
 * BPE (tokenizer.ts `Tokenizer`) or a Hugging Face tokenizer.json (hf.ts `HfTokenizer`).
 *
 * Serialisation is not part of it: checkpoints store the lab's `Tokenizer.toJSON()`, and a
 * Hugging Face tokenizer stays in its model folder.
 */

export interface EncodeOptions {
  /** Turn special-token strings in the text into their ids (default false: they are plain text). */
  allowSpecial?: boolean;
}

/** Decodes ids as they are sampled (decoder.ts StreamDecoder for the lab's tokenizer). */
export interface TokenStreamDecoder {
  /**
   * Adds one token; returns the text that became complete with it (often '' while a UTF-8
   * sequence is split across tokens, or several characters). Throws a RangeError for an id that
   * is not a token.
   */
  push(id: number): string;
  /** Ends the stream: bytes of an incomplete character left over become U+FFFD, as decode() does. */
  flush(): string;
}

export interface TextTokenizer {
  /** One past the largest token id (every id below it is a token for the lab's tokenizer). */
  readonly vocabSize: number;
  /** The end-of-sequence id: ends every document in training and every generated sample. */
  readonly eosId: number;
  /** Every id that ends a generation, eosId first. */
  readonly eosIds: readonly number[];
  /** Padding of ragged batches (may equal eosId). */
  readonly padId: number;
  encode(text: string, opts?: EncodeOptions): Uint32Array;
  /**
   * The text of `ids`. Throws a RangeError for an id that is not a token. Bytes that do not form a
   * character become U+FFFD (the lab's tokenizer reads WTF-8, so its lone surrogates come back,
   * see wtf8.ts); a special token decodes to its string.
   */
  decode(ids: ArrayLike<number>): string;
  /** Whether `id` is a special token (end of text, padding, chat markers). */
  isSpecial(id: number): boolean;
  /** The bytes a token stands for (a copy); for a special token, the UTF-8 of its string. */
  tokenBytes(id: number): Uint8Array;
  /** A decoder for ids arriving one at a time: its pushes then flush() concatenate to decode(ids). */
  createDecoder(): TokenStreamDecoder;
}
