/**
 * RoPE on the GPU (cos/sin from tables of transformers' float32 angles) vs the float64 reference computed from
 * the positions directly, forward and inverse, on packed qkv rows; the reference's inverse undoes
 * it; rows past the tables and the unrotated v heads are left as they were; and rope with inverse
 * = 1 on the gradient of packed d-qkv rows is the exact backward (finite differences of ropeRef).
 * Shape legend: N rows, NH query heads, NKV kv heads, HS head size, W = (NH + 2 NKV) HS,
 * nHeads rotated heads, maxPos table rows. Row-major f32; positions u32.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { centralDiff } from '../testing/finite-diff';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { rope, ropeInvFreq, ropeRef, ropeTables, type RopeProblem } from './rope';

// Each output is x1 c - x2 s with |x| <= 2 and c, s rounded once to f32 (relative 2^-24 each):
// error <= ~3 * 2^-24 * 2 * |x| ~ 4e-7 whatever the position (the angle itself is exact in the
// float64 tables; a table built with f32 sin/cos of an f32 angle would be off by up to
// pos * 2^-24 ~ 2.4e-4 at pos 4000). Observed on SwiftShader: max abs error 2.4e-7.
const TOL = { atol: 1e-6, rtol: 1e-6 };

async function runRope(N: number, NH: number, NKV: number, HS: number, theta: number, maxPos: number, inverse: number): Promise<void> {
  const W = (NH + 2 * NKV) * HS;
  const nHeads = NH + NKV;
  const rng = new Rng(N * 31 + HS * 7 + NH + inverse);
  const x = rng.float32(N * W, -2, 2);
  // positions: 0, the last table row, and random ones in between (repeats allowed)
  const positions = Uint32Array.from({ length: N }, (_, n) => (n === 0 ? 0 : n === 1 ? maxPos - 1 : Math.floor(rng.next() * maxPos)));
  const { cos, sin } = ropeTables(maxPos, HS, theta);
  const rt = await testRuntime();
  const b = { x: rt.upload(x, 'x'), positions: rt.upload(positions, 'positions'), cos: rt.upload(cos, 'cos'), sin: rt.upload(sin, 'sin') };
  const p: RopeProblem = { N, W, nHeads, HS, inverse };
  const rec = rt.record(`rope N=${N} HS=${HS}`);
  rec.dispatch(await rt.compile(rope), b, p);
  const got = rec.read(b.x);
  await rec.submit();
  const want = Float64Array.from(x);
  ropeRef(want, positions, N, W, nHeads, HS, theta, inverse);
  const out = new Float32Array(await got);
  expectClose(out, want, TOL, `rope N=${N} NH=${NH} NKV=${NKV} HS=${HS} theta=${theta} inverse=${inverse}`);
  // the v heads are untouched: bit for bit
  for (let n = 0; n < N; n++) {
    const v0 = n * W + nHeads * HS;
    expect(Array.from(out.subarray(v0, (n + 1) * W))).toEqual(Array.from(x.subarray(v0, (n + 1) * W)));
  }
  for (const buf of Object.values(b)) buf.destroy();
}

describe('rope matches its float64 reference', () => {
  test.each<[number, number, number, number, number, number, number]>([
    // N, NH, NKV, HS, theta, maxPos, inverse
    [1, 1, 1, 2, 10000, 1, 0], // the smallest head, position 0 only
    [7, 3, 1, 8, 10000, 50, 0],
    [5, 4, 2, 24, 100000, 300, 1], // SmolLM2's theta, inverse
    [3, 9, 3, 64, 100000, 4096, 0], // SmolLM2-135M's heads, a long table
    [4, 2, 1, 256, 1000000, 2000, 1], // Qwen2's theta, the largest head size
  ])('N=%i NH=%i NKV=%i HS=%i theta=%i maxPos=%i inverse=%i', (...a) => runRope(...a));
});

test('rope leaves rows whose position is past the tables unchanged', async () => {
  const [N, W, nHeads, HS] = [3, 16, 2, 8];
  const x = new Rng(5).float32(N * W);
  const positions = Uint32Array.from([1, 4, 2]); // row 1 is past a 4-row table
  const { cos, sin } = ropeTables(4, HS, 10000);
  const rt = await testRuntime();
  const b = { x: rt.upload(x, 'x'), positions: rt.upload(positions, 'positions'), cos: rt.upload(cos, 'cos'), sin: rt.upload(sin, 'sin') };
  const rec = rt.record('rope past the table');
  rec.dispatch(await rt.compile(rope), b, { N, W, nHeads, HS, inverse: 0 });
  const got = rec.read(b.x);
  await rec.submit();
  const out = new Float32Array(await got);
  expect(Array.from(out.subarray(W, 2 * W))).toEqual(Array.from(x.subarray(W, 2 * W)));
  const want = Float64Array.from(x);
  ropeRef(want, positions, N, W, nHeads, HS, 10000, 0);
  expectClose(out.subarray(0, W), want.subarray(0, W), TOL, 'row 0');
  expectClose(out.subarray(2 * W), want.subarray(2 * W), TOL, 'row 2');
  for (const buf of Object.values(b)) buf.destroy();
});

test('ropeRef with inverse = 1 undoes ropeRef, and position 0 is the identity', () => {
  const [N, NH, NKV, HS] = [4, 3, 1, 16];
  const W = (NH + 2 * NKV) * HS;
  const x = Float64Array.from(new Rng(9).float32(N * W));
  const positions = [0, 1, 17, 3999];
  const y = Float64Array.from(x);
  ropeRef(y, positions, N, W, NH + NKV, HS, 10000, 0);
  expect(Array.from(y.subarray(0, W))).toEqual(Array.from(x.subarray(0, W)));
  expect(Math.max(...y.map((v, i) => Math.abs(v - x[i]!)))).toBeGreaterThan(0.1);
  const z = Float64Array.from(y);
  ropeRef(y, positions, N, W, NH + NKV, HS, 10000, 1);
  expectClose(y, x, { atol: 1e-14, rtol: 0 }, 'inverse(forward(x))'); // float64 rounding only
  ropeRef(z, positions, N, W, NH + NKV, HS, 10000, true); // inverse as a boolean
  expect(Array.from(z)).toEqual(Array.from(y));
});

test('the backward of rope is rope with inverse = 1 on the d-qkv rows: finite differences of ropeRef, and the GPU', async () => {
  // x (N, W) packed q|k|v rows; the loss sum(g * rope(x)) is linear in x with gradient R^T g, and
  // R is a rotation per (row, head, i) pair, so R^T = R(-angle): rope with inverse = 1 applied to
  // g, the gradient of the rotated rows. v heads are not rotated, so their gradient passes through.
  const [N, NH, NKV, HS, theta, maxPos] = [5, 3, 1, 8, 10000, 50];
  const W = (NH + 2 * NKV) * HS;
  const nHeads = NH + NKV;
  const rng = new Rng(21);
  const x = Float64Array.from(rng.float32(N * W, -2, 2));
  const g = rng.float32(N * W); // the upstream gradient dq|dk|dv of the rotated rows
  const positions = Uint32Array.from([0, maxPos - 1, 7, 7, 31]);
  const loss = (): number => {
    const y = Float64Array.from(x);
    ropeRef(y, positions, N, W, nHeads, HS, theta, 0);
    return y.reduce((s, v, i) => s + v * g[i]!, 0);
  };
  // the loss is linear, so a central difference has no truncation error at any h: with h = 0.5 it
  // is exact up to float64 rounding, ~1e-16 * |loss| (<= ~100) / h ~ 1e-13
  const fd = Array.from(x, (_, i) => centralDiff(loss, x, i, 0.5));
  const ref = Float64Array.from(g);
  ropeRef(ref, positions, N, W, nHeads, HS, theta, 1);
  expectClose(ref, fd, { atol: 1e-12, rtol: 0 }, 'ropeRef inverse on g vs finite differences');

  const { cos, sin } = ropeTables(maxPos, HS, theta);
  const rt = await testRuntime();
  const b = {
    x: rt.upload(g, 'dqkv'),
    positions: rt.upload(positions, 'positions'),
    cos: rt.upload(cos, 'cos'),
    sin: rt.upload(sin, 'sin'),
  };
  const rec = rt.record('rope backward');
  rec.dispatch(await rt.compile(rope), b, { N, W, nHeads, HS, inverse: 1 });
  const read = rec.read(b.x);
  await rec.submit();
  const got = new Float32Array(await read);
  // as the forward (TOL above): the f32 tables' rounding, |g| <= 1
  expectClose(got, fd, TOL, 'GPU rope inverse on the d-qkv rows vs finite differences');
  for (let n = 0; n < N; n++) {
    const v0 = n * W + nHeads * HS; // dv passes through bit for bit
    expect(Array.from(got.subarray(v0, (n + 1) * W))).toEqual(Array.from(g.subarray(v0, (n + 1) * W)));
  }
  for (const buf of Object.values(b)) buf.destroy();
});

test('rope tables, frequencies and refusals', async () => {
  const f = Math.fround;
  expect(Array.from(ropeInvFreq(4, 10000))).toEqual([1, f(0.01)]); // float32, as transformers computes it
  const { cos, sin } = ropeTables(3, 4, 10000);
  expect(Array.from(cos)).toEqual([1, 1, f(Math.cos(1)), f(Math.cos(f(0.01))), f(Math.cos(2)), f(Math.cos(f(2 * f(0.01))))]);
  expect(sin[4]).toBe(Math.fround(Math.sin(2)));
  expect(() => ropeTables(3, 5, 10000)).toThrow(/even/);
  const rt = await testRuntime();
  expect(() => rope.dispatch({ N: 1, W: 16, nHeads: 3, HS: 8, inverse: 0 }, rt.limits)).toThrow(/do not fit/);
  expect(() => rope.dispatch({ N: 1, W: 16, nHeads: 1, HS: 7, inverse: 0 }, rt.limits)).toThrow(/even/);
  expect(() => rope.dispatch({ N: 1, W: 16, nHeads: 1, HS: 8, inverse: 2 }, rt.limits)).toThrow(/0 or 1/);
});

test("the tables are transformers' own, within one f32 ulp, at real head sizes up to position 32767", () => {
  // data/hf-fixtures/rope-tables.json: LlamaRotaryEmbedding's cos and sin, written by scripts/hf-fixtures.py
  const file = join(__dirname, '../../data/hf-fixtures/rope-tables.json');
  const { cases } = JSON.parse(readFileSync(file, 'utf8')) as {
    cases: { head_dim: number; rope_theta: number; positions: number[]; cos: number[][]; sin: number[][] }[];
  };
  for (const c of cases) {
    const H = c.head_dim / 2;
    const t = ropeTables(Math.max(...c.positions) + 1, c.head_dim, c.rope_theta);
    c.positions.forEach((p, k) => {
      const at = `head_dim ${c.head_dim}, theta ${c.rope_theta}, position ${p}`;
      expectClose(t.cos.subarray(p * H, (p + 1) * H), c.cos[k]!, { atol: 1.2e-7, rtol: 0 }, `cos at ${at}`);
      expectClose(t.sin.subarray(p * H, (p + 1) * H), c.sin[k]!, { atol: 1.2e-7, rtol: 0 }, `sin at ${at}`);
    });
  }
});
