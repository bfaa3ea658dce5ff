/**
 * The 16-bit conversions, exhaustively: every one of the 65,536 bit patterns of F16 and of BF16
 * widens and narrows back to itself (NaNs to the quiet NaN); every midpoint between two
 * neighbouring finite values rounds to the one with the even mantissa, and the float32 just above
 * or below it to the nearer one (round to nearest, ties to even: torch's .to(float16/bfloat16)).
 */
import { describe, expect, test } from 'vitest';
import { bf16ToF32, f16ToF32, f32ToBf16Bits, f32ToF16Bits } from './half';

const w = new DataView(new ArrayBuffer(4));
/** the float32 next to x (x finite, non-zero) away from zero (+1) or toward it (-1) */
function f32Step(x: number, dir: 1 | -1): number {
  w.setFloat32(0, x);
  w.setUint32(0, w.getUint32(0) + dir);
  return w.getFloat32(0);
}

const FORMATS = [
  { name: 'F16', widen: f16ToF32, narrow: f32ToF16Bits, inf: 0x7c00, nan: 0x7e00 },
  { name: 'BF16', widen: bf16ToF32, narrow: f32ToBf16Bits, inf: 0x7f80, nan: 0x7fc0 },
] as const;

describe.each(FORMATS)('$name', ({ widen, narrow, inf, nan }) => {
  test('every bit pattern widens and narrows back to itself', () => {
    const bad: string[] = [];
    for (let h = 0; h < 0x10000; h++) {
      const isNan = (h & 0x7fff) > inf;
      const back = narrow(widen(h));
      if (back !== (isNan ? nan : h)) bad.push(`0x${h.toString(16)} -> ${widen(h)} -> 0x${back.toString(16)}`);
    }
    expect(bad.slice(0, 5)).toEqual([]);
  });

  test('midpoints round to even, their float32 neighbours to the nearer value', () => {
    const bad: string[] = [];
    for (const sign of [0, 0x8000]) {
      for (let m = 0; m < inf - 1; m++) {
        const lo = sign | m;
        const hi = lo + 1; // the next value away from zero (0x..ff to the next exponent included)
        const mid = (widen(lo) + widen(hi)) / 2; // exact in float32: 16-bit values have <= 11 significant bits
        const even = (m & 1) === 0 ? lo : hi;
        if (narrow(mid) !== even) bad.push(`mid of 0x${lo.toString(16)}: got 0x${narrow(mid).toString(16)}`);
        if (mid !== 0 && narrow(f32Step(mid, 1)) !== hi) bad.push(`above mid of 0x${lo.toString(16)}`);
        if (mid !== 0 && narrow(f32Step(mid, -1)) !== lo) bad.push(`below mid of 0x${lo.toString(16)}`);
      }
    }
    expect(bad.slice(0, 5)).toEqual([]);
  });

  test('overflow rounds to the infinity of its sign; signed zeros and NaN', () => {
    const max = widen(inf - 1);
    const tie = (max + widen(inf - 1) + (max - widen(inf - 2))) / 2; // halfway from max to the next power
    expect(narrow(tie)).toBe(inf); // max's mantissa is odd: the tie goes up, to infinity
    expect(narrow(-tie)).toBe(0x8000 | inf);
    expect(narrow(f32Step(tie, -1))).toBe(inf - 1);
    expect(narrow(Infinity)).toBe(inf);
    expect(narrow(-0)).toBe(0x8000);
    expect(narrow(0)).toBe(0);
    expect(narrow(NaN)).toBe(nan);
  });
});

test('F16 corner values', () => {
  expect(f32ToF16Bits(65504)).toBe(0x7bff);
  expect(f32ToF16Bits(65519.99)).toBe(0x7bff);
  expect(f32ToF16Bits(65520)).toBe(0x7c00);
  expect(f32ToF16Bits(2 ** -24)).toBe(1); // smallest subnormal
  expect(f32ToF16Bits(2 ** -25)).toBe(0); // halfway to 0: even
  expect(f32ToF16Bits(3 * 2 ** -25)).toBe(2); // halfway between 1 and 2 units: even
  expect(f32ToF16Bits(2 ** -14 - 2 ** -25)).toBe(0x0400); // the largest subnormal's tie up: the smallest normal
  expect(f32ToF16Bits(1 / 3)).toBe(0x3555);
  expect(f32ToBf16Bits(1 / 3)).toBe(0x3eab);
});
