/**
 * WTF-8: UTF-8 extended so that every JavaScript string, well-formed or not, has a byte form.
 *
 * A JS string is a sequence of UTF-16 code units, and may hold *lone* surrogates (a high
 * surrogate D800-DBFF not followed by a low one DC00-DFFF, or a low one not preceded by a high
 * one). Plain UTF-8 (TextEncoder) replaces those with U+FFFD, so `decode(encode(s)) !== s`.
 * WTF-8 (https://simonsapin.github.io/wtf-8/) writes:
 * - a surrogate *pair* as the 4-byte UTF-8 of the code point it stands for (as UTF-8 does);
 * - a *lone* surrogate as the 3-byte generalized-UTF-8 form of its code point
 *   (ED A0 80 .. ED BF BF), which strict UTF-8 forbids.
 * For well-formed strings the bytes are exactly UTF-8, so tokens of ordinary text are UTF-8.
 *
 * The decoder accepts everything UTF-8 accepts plus those surrogate forms; any other invalid
 * byte sequence (which a model can generate) becomes U+FFFD, one per maximal invalid subpart, as
 * the WHATWG Encoding standard does. So `wtf8Decode(wtf8Encode(s)) === s` for every string `s`.
 */

/** Bytes of `s` in WTF-8 (UTF-8 with lone surrogates kept as 3-byte sequences). */
export function wtf8Encode(s: string): Uint8Array {
  const out = new Uint8Array(s.length * 3);
  const n = wtf8EncodeInto(s, out);
  return out.slice(0, n);
}

/** Writes the WTF-8 bytes of `s` into `out` (which needs 3 * s.length bytes); returns the count. */
export function wtf8EncodeInto(s: string, out: Uint8Array): number {
  let p = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      out[p++] = c;
    } else if (c < 0x800) {
      out[p++] = 0xc0 | (c >> 6);
      out[p++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          out[p++] = 0xf0 | (cp >> 18);
          out[p++] = 0x80 | ((cp >> 12) & 0x3f);
          out[p++] = 0x80 | ((cp >> 6) & 0x3f);
          out[p++] = 0x80 | (cp & 0x3f);
          i++;
          continue;
        }
      }
      // BMP character, or a lone surrogate written as its own 3-byte sequence
      out[p++] = 0xe0 | (c >> 12);
      out[p++] = 0x80 | ((c >> 6) & 0x3f);
      out[p++] = 0x80 | (c & 0x3f);
    }
  }
  return p;
}

export interface Wtf8Chunk {
  text: string;
  /** bytes consumed; less than the input length only when `final` is false and the input ends inside a sequence */
  consumed: number;
}

/** Decodes `bytes` to a string. Invalid sequences become U+FFFD. */
export function wtf8Decode(bytes: Uint8Array): string {
  return wtf8DecodeChunk(bytes, true).text;
}

/**
 * Decodes as many bytes as form complete characters. With `final` false, a trailing sequence that
 * is valid so far but incomplete is left unconsumed (the caller keeps it for the next chunk); with
 * `final` true it becomes U+FFFD. Decoding a stream piece by piece gives the same string as
 * decoding it whole, because each decision depends only on bytes already seen.
 */
export function wtf8DecodeChunk(bytes: Uint8Array, final: boolean): Wtf8Chunk {
  const n = bytes.length;
  const units = new Uint16Array(n); // each byte yields at most one code unit
  let u = 0;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      units[u++] = b;
      i++;
      continue;
    }
    let need: number;
    let cp: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      cp = b & 0x0f;
      if (b === 0xe0) lo = 0xa0; // ED A0..BF (surrogates) is allowed: that is the WTF-8 extension
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      cp = b & 0x07;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else {
      units[u++] = 0xfffd;
      i++;
      continue;
    }
    let j = i + 1;
    let k = 0;
    for (; k < need && j < n; k++, j++) {
      const c = bytes[j]!;
      if (c < lo || c > hi) break;
      lo = 0x80;
      hi = 0xbf;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (k === need) {
      if (cp >= 0x10000) {
        cp -= 0x10000;
        units[u++] = 0xd800 + (cp >> 10);
        units[u++] = 0xdc00 + (cp & 0x3ff);
      } else {
        units[u++] = cp;
      }
      i = j;
    } else if (j >= n && !final) {
      break; // valid prefix cut off by the end of this chunk: wait for more bytes
    } else {
      units[u++] = 0xfffd; // maximal invalid subpart; the offending byte (at j) is read again
      i = j;
    }
  }
  return { text: unitsToString(units, u), consumed: i };
}

function unitsToString(units: Uint16Array, count: number): string {
  const STEP = 8192; // keep the argument list of fromCharCode small
  let s = '';
  for (let p = 0; p < count; p += STEP) {
    s += String.fromCharCode.apply(null, units.subarray(p, Math.min(p + STEP, count)) as unknown as number[]);
  }
  return s;
}
