// CPU tests of the float64 attention references: the backward against central finite
// differences of the forward, the forward's defining properties, and prefill + decode steps
// over the KV cache against the forward on the full sequence.
// Shape legend: B batch, T time, C channels, NH heads, HS = C / NH, Tmax the KV-cache capacity.
import { describe, expect, test } from 'vitest';
import { expectClose } from '../testing/gpu';
import { Rng } from '../util/random';
import { sliceRows } from './attention_testing';
import { attends, attentionBackwardRef, attentionDecodeRef, attentionForwardRef, kvWriteRef } from './attention_ref';

function forward(qkv: ArrayLike<number>, B: number, T: number, C: number, NH: number, start: ArrayLike<number> | null) {
  const out = new Float64Array(B * T * C);
  const att = new Float64Array(B * NH * T * T);
  attentionForwardRef(out, att, qkv, B, T, C, NH, start);
  return { out, att };
}

describe('attentionBackwardRef matches central finite differences of attentionForwardRef', () => {
  test.each([
    [1, 4, 6, 3, null],
    [2, 5, 8, 2, [0, 2]],
    [2, 6, 4, 1, [5, 6]], // b=1: every row is padding
  ] as const)('B=%i T=%i C=%i NH=%i start=%j', (B, T, C, NH, start) => {
    const rng = new Rng(T * 31 + C);
    const qkv = Float64Array.from(rng.float32(B * T * 3 * C, -2, 2));
    const w = Float64Array.from(rng.float32(B * T * C, -1, 1)); // loss = sum(out * w), so dout = w
    const loss = (x: Float64Array): number => forward(x, B, T, C, NH, start).out.reduce((a, o, i) => a + o * w[i]!, 0);
    const { att } = forward(qkv, B, T, C, NH, start);
    const base = Float64Array.from(rng.float32(B * T * 3 * C)); // the backward accumulates onto this
    const dqkv = base.slice();
    attentionBackwardRef(dqkv, w, qkv, att, B, T, C, NH, start);
    const fd = new Float64Array(qkv.length);
    const eps = 1e-5;
    for (let i = 0; i < qkv.length; i++) {
      const x = qkv.slice();
      x[i] = qkv[i]! + eps;
      const up = loss(x);
      x[i] = qkv[i]! - eps;
      fd[i] = base[i]! + (up - loss(x)) / (2 * eps);
    }
    // central differences in float64: truncation O(eps^2) ~ 1e-10, cancellation ~ 1e-16 / eps ~ 1e-11
    expectClose(dqkv, fd, { atol: 1e-8, rtol: 1e-7 }, 'dqkv vs finite differences');
    expect(Math.max(...dqkv.map((v, i) => Math.abs(v - base[i]!)))).toBeGreaterThan(0.1); // a real gradient
  });
});

describe('attentionForwardRef', () => {
  test('rows are probabilities over exactly the visible keys; padding rows copy their own v', () => {
    const [B, T, C, NH] = [2, 7, 6, 2];
    const HS = C / NH;
    const start = [0, 3];
    const qkv = new Rng(5).float32(B * T * 3 * C, -2, 2);
    const { out, att } = forward(qkv, B, T, C, NH, start);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < NH; h++) {
        for (let t = 0; t < T; t++) {
          const row = att.subarray(((b * NH + h) * T + t) * T, ((b * NH + h) * T + t + 1) * T);
          let sum = 0;
          row.forEach((a, j) => {
            if (attends(t, j, start[b]!)) expect(a).toBeGreaterThan(0);
            else expect(a).toBe(0);
            sum += a;
          });
          expect(sum).toBeCloseTo(1, 12);
          if (t < start[b]!) {
            const v = qkv.subarray((b * T + t) * 3 * C + 2 * C + h * HS, (b * T + t) * 3 * C + 2 * C + (h + 1) * HS);
            expectClose(out.subarray((b * T + t) * C + h * HS, (b * T + t) * C + (h + 1) * HS), v, { atol: 1e-15, rtol: 0 }, 'padding row');
          }
        }
      }
    }
  });

  test('a hand-computed case: T=2, HS=1', () => {
    // q1 = 2, k0 = 0.5, k1 = -1: pre = [1, -2], att[1] = softmax = [e/(e+e^-2), e^-2/(e+e^-2)]
    const qkv = [1, 0.5, 10, /* t=1 */ 2, -1, 20];
    const { out, att } = forward(qkv, 1, 2, 1, 1, null);
    const a0 = Math.E / (Math.E + Math.exp(-2));
    expectClose(att, [1, 0, a0, 1 - a0], { atol: 1e-15, rtol: 0 }, 'att');
    expectClose(out, [10, 10 * a0 + 20 * (1 - a0)], { atol: 1e-13, rtol: 0 }, 'out');
  });

  test('start all 0 is plain causal attention; future rows do not change earlier ones', () => {
    const [B, T, C, NH] = [2, 6, 8, 2];
    const qkv = new Rng(9).float32(B * T * 3 * C, -2, 2);
    const plain = forward(qkv, B, T, C, NH, null);
    const zeros = forward(qkv, B, T, C, NH, [0, 0]);
    expect(zeros.out).toEqual(plain.out);
    expect(zeros.att).toEqual(plain.att);
    const changed = qkv.slice();
    for (let b = 0; b < B; b++) changed.fill(7, (b * T + 4) * 3 * C, (b * T + T) * 3 * C); // rows 4, 5
    const after = forward(changed, B, T, C, NH, null);
    for (let b = 0; b < B; b++) {
      expect(after.out.subarray(b * T * C, (b * T + 4) * C)).toEqual(plain.out.subarray(b * T * C, (b * T + 4) * C));
    }
  });
});

describe('KV cache references', () => {
  test('kvWriteRef writes exactly rows [pos, pos + Tnew) and checks the capacity', () => {
    const [B, Tnew, C, Tmax, pos] = [2, 3, 4, 6, 2];
    const qkv = new Rng(1).float32(B * Tnew * 3 * C);
    const k = new Float64Array(B * Tmax * C).fill(-9);
    const v = new Float64Array(B * Tmax * C).fill(-9);
    kvWriteRef(k, v, qkv, B, Tnew, C, Tmax, pos);
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < Tmax; t++) {
        for (let c = 0; c < C; c++) {
          const i = t - pos;
          const inside = i >= 0 && i < Tnew;
          expect(k[(b * Tmax + t) * C + c]).toBe(inside ? qkv[(b * Tnew + i) * 3 * C + C + c] : -9);
          expect(v[(b * Tmax + t) * C + c]).toBe(inside ? qkv[(b * Tnew + i) * 3 * C + 2 * C + c] : -9);
        }
      }
    }
    expect(() => kvWriteRef(k, v, qkv, B, Tnew, C, Tmax, 4)).toThrow(/do not fit/);
  });

  test.each([
    [null, 5],
    [[0, 3], 5],
    [[6, 2], 1], // b=0: the prompt and the first decoded rows are padding
  ] as const)('prefill then decode steps equal the forward on the full sequence (start=%j, P=%i)', (start, P) => {
    const [B, T, C, NH, Tmax] = [2, 9, 6, 2, 11];
    const qkv = new Rng(P + 2).float32(B * T * 3 * C, -2, 2);
    const full = forward(qkv, B, T, C, NH, start);
    const kc = new Float64Array(B * Tmax * C);
    const vc = new Float64Array(B * Tmax * C);
    let pos = 0;
    for (const n of [P, ...Array<number>(T - P).fill(1)]) {
      const part = sliceRows(qkv, B, T, 3 * C, pos, pos + n);
      kvWriteRef(kc, vc, part, B, n, C, Tmax, pos);
      const out = new Float64Array(B * n * C);
      attentionDecodeRef(out, part, kc, vc, B, n, C, NH, Tmax, pos, start);
      expectClose(out, sliceRows(full.out, B, T, C, pos, pos + n), { atol: 1e-12, rtol: 1e-12 }, `rows ${pos}..${pos + n}`);
      pos += n;
    }
  });
});
