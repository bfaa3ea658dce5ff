import { wtf8DecodeChunk } from './wtf8';

/** What the stream decoder needs from a tokenizer. */
export interface TokenSource {
  /** throws a RangeError for an id outside the vocabulary */
  checkId(id: number): void;
  /** bytes of a non-special token (not copied; not modified here) */
  bytes(id: number): Uint8Array;
  /** the string of a special token, or null for an ordinary one */
  special(id: number): string | null;
}

/**
 * Decodes ids as they are sampled. A token may end inside a UTF-8 sequence (an emoji split over
 * two byte-level tokens); those bytes wait until the sequence completes. The concatenation of all
 * `push` results followed by `flush()` equals `tokenizer.decode(ids)` exactly.
 */
export class StreamDecoder {
  /** bytes of an incomplete sequence at the end of what was pushed (at most 3) */
  private pending = new Uint8Array(0);

  constructor(private readonly source: TokenSource) {}

  /** Adds one token; returns the text that became complete with it (often '', or several characters). */
  push(id: number): string {
    this.source.checkId(id);
    const special = this.source.special(id);
    if (special !== null) return this.flush() + special;
    const b = this.source.bytes(id);
    const joined = new Uint8Array(this.pending.length + b.length);
    joined.set(this.pending);
    joined.set(b, this.pending.length);
    const { text, consumed } = wtf8DecodeChunk(joined, false);
    this.pending = joined.slice(consumed);
    return text;
  }

  /** Ends the stream: an incomplete sequence left over becomes U+FFFD, as decode() does. */
  flush(): string {
    if (this.pending.length === 0) return '';
    const { text } = wtf8DecodeChunk(this.pending, true);
    this.pending = new Uint8Array(0);
    return text;
  }

  /** Bytes waiting for the rest of their character. */
  get pendingBytes(): number {
    return this.pending.length;
  }
}
