/**
 * The float64 training references of GQA attention: the forward equals attentionGqaRef (the
 * KV-cache attention) over a cache of T rows at pos 0, and the backward is the gradient of the
 * forward (central finite differences), accumulating. NH/NKV = 1, 2, 3; left padding with padding
 * queries (which see only themselves).
 * Shape legend: B batch, T time, NH query heads, NKV kv heads, HS head size, W = (NH + 2 NKV) HS.
 */
import { describe, expect, test } from 'vitest';
import { centralDiff } from '../testing/finite-diff';
import { expectClose } from '../testing/gpu';
import { Rng } from '../util/random';
import { attentionGqaRef, kvWriteGqaRef, type AttentionGqaProblem } from './attention_gqa';
import {
  attentionGqaBackwardRef,
  attentionGqaTrainForwardRef,
  checkGqaTrainProblem,
  type AttentionGqaTrainProblem,
} from './attention_gqa_train_ref';

type Start = number[] | null;

function forward(qkv: ArrayLike<number>, start: Start, p: AttentionGqaTrainProblem): { out: Float64Array; lse: Float64Array } {
  const r = { out: new Float64Array(p.B * p.T * p.NH * p.HS), lse: new Float64Array(p.B * p.NH * p.T) };
  attentionGqaTrainForwardRef(r.out, r.lse, qkv, start, p);
  return r;
}

// [B, T, NH, NKV, HS, start]
const FORWARD_CASES: [number, number, number, number, number, Start][] = [
  [1, 1, 1, 1, 8, null],
  [2, 7, 2, 2, 8, [0, 3]], // NH/NKV = 1
  [2, 9, 4, 2, 24, [2, 0]], // 2
  [3, 6, 3, 1, 16, [0, 6, 5]], // 3; b = 1 is all padding, b = 2 starts at its last row
];

describe('attentionGqaTrainForwardRef equals attentionGqaRef over a cache of T rows at pos 0', () => {
  test.each(FORWARD_CASES)('B=%i T=%i NH=%i NKV=%i HS=%i start=%j', (B, T, NH, NKV, HS, start) => {
    const p = { B, T, NH, NKV, HS };
    const W = checkGqaTrainProblem(p, 'test');
    const qkv = new Rng(T * 31 + NH).float32(B * T * W, -2, 2);
    const { out, lse } = forward(qkv, start, p);
    const cached: AttentionGqaProblem = { B, Tnew: T, NH, NKV, HS, Tmax: T, pos: 0 };
    const kc = new Float64Array(B * NKV * T * HS);
    const vc = new Float64Array(B * NKV * T * HS);
    kvWriteGqaRef(kc, vc, qkv, cached);
    const want = new Float64Array(B * T * NH * HS);
    attentionGqaRef(want, qkv, kc, vc, start, cached);
    // the same sums in float64, normalised as exp(pre - lse) instead of exp(pre - max) / sum
    expectClose(out, want, { atol: 1e-13, rtol: 1e-12 }, 'out');
    // every lse is finite and at least the row's largest score (its own key is always seen)
    expect(lse.every(Number.isFinite)).toBe(true);
  });

  test('lse of a one-key row is its score; two equal keys add log 2', () => {
    const p = { B: 1, T: 2, NH: 1, NKV: 1, HS: 4 };
    const q = [1, 2, 0, -1];
    const k = [0.5, 0.5, 3, 1];
    const v = [1, 2, 3, 4];
    const qkv = [...q, ...k, ...v, ...q, ...k, ...v]; // rows 0 and 1 identical
    const { out, lse } = forward(qkv, null, p);
    const score = (1 * 0.5 + 2 * 0.5 + 0 - 1) / 2;
    expect(lse[0]).toBeCloseTo(score, 15);
    expect(lse[1]).toBeCloseTo(score + Math.log(2), 15);
    expect(Array.from(out)).toEqual([...v, ...v]);
  });

  test('refusals', () => {
    expect(() => checkGqaTrainProblem({ B: 1, T: 2, NH: 4, NKV: 3, HS: 8 }, 'x')).toThrow(/does not divide/);
    expect(() => checkGqaTrainProblem({ B: 1, T: 0, NH: 4, NKV: 2, HS: 8 }, 'x')).toThrow(/T must be/);
    expect(() => checkGqaTrainProblem({ B: 1, T: 2, NH: 4, NKV: 2, HS: 256 }, 'x', 128)).toThrow(/MAX_HS=128/);
  });
});

// [B, T, NH, NKV, HS, start]: small enough for a central difference per element of qkv
const BACKWARD_CASES: [number, number, number, number, number, Start][] = [
  [1, 4, 2, 2, 3, null], // NH/NKV = 1
  [2, 5, 4, 2, 3, [0, 2]], // 2; rows 0, 1 of b = 1 are padding queries
  [2, 4, 3, 1, 2, [1, 0]], // 3: dk, dv sum over three query heads
];

describe('attentionGqaBackwardRef is the gradient of attentionGqaTrainForwardRef (finite differences), and accumulates', () => {
  test.each(BACKWARD_CASES)('B=%i T=%i NH=%i NKV=%i HS=%i start=%j', (B, T, NH, NKV, HS, start) => {
    const p = { B, T, NH, NKV, HS };
    const W = checkGqaTrainProblem(p, 'test');
    const rng = new Rng(T * 7 + NH * 3 + HS);
    const qkv = Float64Array.from(rng.float32(B * T * W, -2, 2));
    const g = Float64Array.from(rng.float32(B * T * NH * HS)); // loss = sum(g * out), so dout = g
    const loss = (): number => forward(qkv, start, p).out.reduce((s, o, i) => s + o * g[i]!, 0);
    const { out, lse } = forward(qkv, start, p);
    const init = Float64Array.from(rng.float32(B * T * W));
    const dqkv = Float64Array.from(init);
    attentionGqaBackwardRef(dqkv, g, qkv, out, lse, start, p);
    // h = 1e-5 on scores of O(1): truncation ~h^2 |f'''| ~1e-10, rounding ~1e-16 |loss| / h ~1e-11
    expectClose(
      dqkv.map((v, i) => v - init[i]!),
      Array.from(qkv, (_, i) => centralDiff(loss, qkv, i, 1e-5)),
      { atol: 1e-8, rtol: 1e-7 },
      'dqkv vs finite differences',
    );
  });
});
