/**
 * GPT-2's byte-level alphabet, as tokenizer.json files write byte-level BPE vocabularies: each of
 * the 256 byte values stands for one printable character (`bytes_to_unicode` in OpenAI's
 * encoder.py; `BYTES_TO_UNICODE` in @huggingface/tokenizers, which does not export it). The
 * printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves; the other 68 (controls, space,
 * DEL, the C1 range, NBSP and the soft hyphen) become U+0100 onwards in byte order, so the space
 * is 'Ġ' (U+0120) and the line feed 'Ċ' (U+010A).
 */

function buildAlphabet(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out = new Array<string>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(printable(b) ? b : 256 + n++);
  return out;
}

/** BYTE_TO_CHAR[b]: the character standing for byte b. */
export const BYTE_TO_CHAR: readonly string[] = Object.freeze(buildAlphabet());

/** char code -> byte, for the 256 characters of the alphabet. */
const CHAR_TO_BYTE = new Map<number, number>(BYTE_TO_CHAR.map((c, b) => [c.charCodeAt(0), b]));

/** The byte a character stands for, or undefined when it is not in the alphabet. */
export function byteOfChar(code: number): number | undefined {
  return CHAR_TO_BYTE.get(code);
}

/** Bytes -> their byte-level string (one character per byte). */
export function bytesToByteLevel(bytes: ArrayLike<number>): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += BYTE_TO_CHAR[bytes[i]!]!;
  return s;
}

/**
 * A byte-level string -> its bytes, or the index of the first character outside the alphabet
 * (a number) when it is not one.
 */
export function byteLevelToBytes(s: string): Uint8Array | number {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const b = CHAR_TO_BYTE.get(s.charCodeAt(i));
    if (b === undefined) return i;
    out[i] = b;
  }
  return out;
}
