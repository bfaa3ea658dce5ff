/**
 * Code-aware pre-tokenisation: text is split into chunks, and BPE merges never cross a chunk
 * boundary (as GPT-2's regex does for prose). The chunk kinds, tried in this order:
 *
 * 1. identifier or word, with at most one leading space: ` ?[letter/mark/_/$][letter/mark/digit/_/$]*`
 *    (`foo`, ` camelCase2`, ` $el`, ` __init__`)
 * 2. number, with at most one leading space: ` ?\p{N}+`
 * 3. punctuation run, with at most one leading space: everything that is not whitespace, a
 *    letter, mark, digit, `_` or `$` (` ===`, `();`, ` =>`, `//`)
 * 4. line breaks together with the indentation that follows them: `(\r\n|\r|\n)+[ \t...]*`
 *    (`\n    `, `\r\n\r\n  `), so an indentation level becomes a token of its own
 * 5. horizontal whitespace that does not precede a word: runs of spaces/tabs leave their last
 *    space to the next chunk, as GPT-2 does (`a  = b` -> `a`, ` `, ` =`, ` b`)
 *
 * Chunks longer than MAX_CHUNK_UNITS code units (long strings of `=`, base64 blobs, deep
 * indentation) are cut into pieces of at most that length, never inside a surrogate pair; this
 * bounds the cost of applying merges to one chunk. Lone surrogates are ordinary non-letter code
 * points here (the `u` flag), so every string is covered with no gaps.
 *
 * Caveat for determinism: `\p{L}` and friends follow the Unicode version of the JS engine, so a
 * character added in a newer Unicode version may be classified differently by an older engine.
 * ASCII and everything in Unicode 15 is stable across Node 20+ and current browsers.
 */

/** Name stored in the tokenizer's JSON; change it whenever the splitting rules change. */
export const PRETOKENIZER_NAME = 'code-v1';

/** Longest chunk, in UTF-16 code units. */
export const MAX_CHUNK_UNITS = 64;

const CHUNK_RE = new RegExp(
  [
    String.raw` ?[\p{L}\p{M}_$][\p{L}\p{M}\p{N}_$]*`,
    String.raw` ?\p{N}+`,
    String.raw` ?[^\s\p{L}\p{M}\p{N}_$]+`,
    String.raw`(?:\r\n|\r|\n)+[^\S\r\n]*`,
    String.raw`[^\S\r\n]+(?!\S)`,
    String.raw`[^\S\r\n]+`,
    String.raw`[\s\S]`, // never reached for valid input; guarantees progress
  ].join('|'),
  'gu',
);

/** Calls `visit` with each chunk of `text`, in order; the chunks concatenate to `text`. */
export function forEachChunk(text: string, visit: (chunk: string) => void): void {
  const re = new RegExp(CHUNK_RE); // own lastIndex: safe to nest or interleave calls
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const chunk = m[0];
    if (chunk.length <= MAX_CHUNK_UNITS) visit(chunk);
    else splitLong(chunk, visit);
  }
}

/** The chunks of `text` as an array (tests and tools; encoding uses forEachChunk). */
export function pretokenize(text: string): string[] {
  const out: string[] = [];
  forEachChunk(text, (c) => out.push(c));
  return out;
}

function splitLong(chunk: string, visit: (piece: string) => void): void {
  let start = 0;
  while (start < chunk.length) {
    let end = Math.min(start + MAX_CHUNK_UNITS, chunk.length);
    const last = chunk.charCodeAt(end - 1);
    const next = chunk.charCodeAt(end); // NaN at the end of the string
    if (end < chunk.length && last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) end--;
    visit(chunk.slice(start, end));
    start = end;
  }
}
