import { describe, expect, test } from 'vitest';
import { compareArrays, describeComparison } from './compare';
import { Rng } from './random';

describe('compareArrays', () => {
  test('within atol + rtol*|ref| passes', () => {
    const c = compareArrays([1.0005, 2], [1, 2], { atol: 0, rtol: 1e-3 });
    expect(c.ok).toBe(true);
    expect(c.maxAbsDiff).toBeCloseTo(5e-4, 8);
  });
  test('outside fails and names the worst element', () => {
    const tol = { atol: 1e-6, rtol: 0 };
    const c = compareArrays([0, 1, 5], [0, 1, 4], tol);
    expect(c).toMatchObject({ ok: false, failures: 1, worstIndex: 2 });
    expect(describeComparison(c, [0, 1, 5], [0, 1, 4], tol)).toContain('worst [2] got 5 want 4');
  });
  test('NaN never passes', () => {
    expect(compareArrays([NaN], [NaN], { atol: 1, rtol: 1 }).ok).toBe(false);
    expect(compareArrays([1], [NaN], { atol: 1, rtol: 1 }).ok).toBe(false);
  });
  test('length mismatch is an error', () => {
    expect(() => compareArrays([1], [1, 2], { atol: 0, rtol: 0 })).toThrow(/length 1 \(actual\) != 2/);
  });
});

describe('Rng', () => {
  test('is deterministic per seed and in range', () => {
    const a = new Rng(42).float32(100, -1, 1);
    const b = new Rng(42).float32(100, -1, 1);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(a.every((v) => v >= -1 && v < 1)).toBe(true);
    expect(Array.from(new Rng(43).float32(3))).not.toEqual(Array.from(a.slice(0, 3)));
  });
  test('rejects a non-integer seed', () => {
    expect(() => new Rng(1.5)).toThrow(/seed must be an integer/);
  });
});
