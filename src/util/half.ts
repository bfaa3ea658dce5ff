/**
 * The two 16-bit float formats of Hugging Face checkpoints, as bit patterns (0..0xffff):
 *   F16   IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits (max 65504, subnormals below 2^-14)
 *   BF16  bfloat16: the top half of a float32 (8 exponent bits: float32's range, 8 mantissa bits)
 * Narrowing rounds to nearest, ties to even (what torch's .to(torch.float16 / torch.bfloat16)
 * does); widening is exact. A value whose rounding overflows gives the infinity of its sign, and
 * NaN a quiet NaN: callers that must not store those check with `isFinite` on the result.
 */

/** IEEE half (bits) to a number, exactly. */
export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24; // zero and subnormals
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Round to the nearest integer, ties to the even one. */
function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** A number to IEEE half bits, rounded to nearest even (overflow: the signed infinity). */
export function f32ToF16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | 0x7c00;
  // Subnormals (and zero) are whole multiples of 2^-24; a count of 1024 is the smallest normal,
  // whose bits are exactly 0x0400, so the carry needs no special case. The scaling is exact.
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a)
    e--; // log2 may be off by one next to a power of two
  else if (2 ** (e + 1) <= a) e++;
  let m = roundHalfEven((a / 2 ** e - 1) * 1024); // exact: a power-of-two scaling and a subtraction in [1, 2)
  if (m === 1024) {
    m = 0;
    e++;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | m;
}

const word = new DataView(new ArrayBuffer(4));

/** bfloat16 bits to a number, exactly. */
export function bf16ToF32(h: number): number {
  word.setUint32(0, (h & 0xffff) << 16);
  return word.getFloat32(0);
}

/** A number (read as float32 first) to bfloat16 bits, rounded to nearest even (overflow: the signed infinity). */
export function f32ToBf16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fc0;
  word.setFloat32(0, x);
  const u = word.getUint32(0);
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}
