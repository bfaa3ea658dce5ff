// GQA KV-cache kernels on the GPU against their float64 references: kv_write_gqa; attention
// with the single kernel and the flash-decoding split + combine pair (ragged shapes: NH/NKV =
// 1, 2, 3, 4; HS 8, 24, 64; odd Tnew; left padding, padding queries; pos > 0; workgroups of 64
// and of 4 threads, the latter crossing many key chunks); a prefill then decode steps through
// recordAttentionGqa equal to the full sequence; the reference with NKV = NH equal to
// attentionDecodeRef; the selection rule.
// Shape legend: B batch, T time, Tnew new rows, NH query heads, NKV kv heads, HS head size,
// W = (NH + 2 NKV) HS, Tmax capacity, S splits; caches (B, NKV, Tmax, HS).
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  attentionGqa,
  attentionGqaCombine,
  attentionGqaRef,
  attentionGqaScratchFloats,
  attentionGqaSplit,
  attentionGqaSplitVariant,
  attentionGqaVariant,
  gqaRowWidth,
  kvWriteGqa,
  kvWriteGqaRef,
  recordAttentionGqa,
  selectAttentionGqa,
  type AttentionGqaChoice,
  type AttentionGqaProblem,
} from './attention_gqa';
import { attentionDecodeRef } from './attention_ref';
import { sliceRows } from './attention_testing';

// As attention_kv.test.ts (inputs in [-2, 2]): f32 dot products of HS <= 64 terms |q_d k_d| <= 4
// (score error ~sqrt(HS) * 2^-24 * |terms| / sqrt(HS), ~1e-6), exp and the online rescale by
// exp(m_old - m_new) per chunk, and for the split kernels one more rescale by exp(m_s - M) per
// split: output error ~1e-6 |v| with |out| <= 2. Observed on SwiftShader: max abs error 5.0e-7
// (split and single alike). A wrong kv head, a key off the mask or a lost split is off by O(0.1).
const TOL = { atol: 4e-6, rtol: 1e-5 };

type Start = readonly number[] | null;

/** Random qkv (B, Tnew, W) and caches (B, NKV, Tmax, HS): every cache row random, so rows the mask hides would show. */
function inputs(p: AttentionGqaProblem, seed: number): { qkv: Float32Array; kc: Float32Array; vc: Float32Array } {
  const rng = new Rng(seed);
  const cache = p.B * p.NKV * p.Tmax * p.HS;
  return { qkv: rng.float32(p.B * p.Tnew * gqaRowWidth(p), -2, 2), kc: rng.float32(cache, -2, 2), vc: rng.float32(cache, -2, 2) };
}

async function runAttention(p: AttentionGqaProblem, start: Start, choice: AttentionGqaChoice, wg = 64): Promise<void> {
  const rt = await testRuntime();
  const { qkv, kc, vc } = inputs(p, p.Tmax * 13 + p.HS * 7 + p.NH);
  const scratchFloats = choice.kind === 'split' ? attentionGqaScratchFloats(p, choice.splits) : 1;
  const bufs = {
    qkv: rt.upload(qkv, 'qkv'),
    kcache: rt.upload(kc, 'kcache'),
    vcache: rt.upload(vc, 'vcache'),
    start: rt.upload(start ? Uint32Array.from(start) : new Uint32Array(p.B), 'start'),
    out: rt.upload(new Float32Array(p.B * p.Tnew * p.NH * p.HS).fill(NaN), 'out'),
    scratch: rt.upload(new Float32Array(scratchFloats).fill(NaN), 'scratch'), // every partial is written
  };
  const rec = rt.record('attention_gqa');
  const ran = await recordAttentionGqa(rt, rec, bufs, p, { force: choice, wg });
  expect(ran).toEqual(choice);
  const out = rec.read(bufs.out);
  await rec.submit();
  const ref = new Float64Array(p.B * p.Tnew * p.NH * p.HS);
  attentionGqaRef(ref, qkv, kc, vc, start, p);
  expectClose(new Float32Array(await out), ref, TOL, `out ${JSON.stringify(choice)} wg=${wg}`);
  for (const b of Object.values(bufs)) b.destroy();
}

// [B, Tnew, NH, NKV, HS, Tmax, pos, start]
const CASES: [number, number, number, number, number, number, number, Start][] = [
  [2, 1, 2, 2, 8, 9, 8, [0, 3]], // NH/NKV = 1, a decode step
  [1, 5, 4, 2, 24, 40, 30, [2]], // 2, a chunked prefill at pos 30
  [2, 3, 3, 1, 64, 300, 297, [0, 7]], // 3, a long cache (several 64-key chunks)
  [3, 1, 8, 2, 8, 70, 69, [0, 5, 69]], // 4; b = 2 starts at its only row
  [1, 3, 4, 1, 24, 12, 2, [4]], // 4; rows at positions 2, 3 are padding queries (see only themselves)
];

describe('attention_gqa matches attentionGqaRef', () => {
  const label = 'B=%i Tnew=%i NH=%i NKV=%i HS=%i Tmax=%i pos=%i start=%j';
  const problem = (B: number, Tnew: number, NH: number, NKV: number, HS: number, Tmax: number, pos: number): AttentionGqaProblem => ({
    B,
    Tnew,
    NH,
    NKV,
    HS,
    Tmax,
    pos,
  });
  test.each(CASES)(`single, ${label}`, (B, Tnew, NH, NKV, HS, Tmax, pos, start) =>
    runAttention(problem(B, Tnew, NH, NKV, HS, Tmax, pos), start, { kind: 'single' }),
  );
  test.each(CASES)(`split S=3, ${label}`, (B, Tnew, NH, NKV, HS, Tmax, pos, start) =>
    runAttention(problem(B, Tnew, NH, NKV, HS, Tmax, pos), start, { kind: 'split', splits: 3 }),
  );
  // more splits than some rows have keys: empty splits must add nothing
  test.each(CASES)(`split S=7, ${label}`, (B, Tnew, NH, NKV, HS, Tmax, pos, start) =>
    runAttention(problem(B, Tnew, NH, NKV, HS, Tmax, pos), start, { kind: 'split', splits: 7 }),
  );
  test.each(CASES.slice(0, 3))(`single, 4 threads, ${label}`, (B, Tnew, NH, NKV, HS, Tmax, pos, start) =>
    runAttention(problem(B, Tnew, NH, NKV, HS, Tmax, pos), start, { kind: 'single' }, 4),
  );
  test.each(CASES.slice(0, 3))(`split S=2, 4 threads, ${label}`, (B, Tnew, NH, NKV, HS, Tmax, pos, start) =>
    runAttention(problem(B, Tnew, NH, NKV, HS, Tmax, pos), start, { kind: 'split', splits: 2 }, 4),
  );
  test('split S=1 (one range: the single kernel through the scratch)', () =>
    runAttention(problem(2, 2, 4, 2, 24, 20, 10), [0, 3], { kind: 'split', splits: 1 }));
});

test('kv_write_gqa writes rows [pos, pos + Tnew) of every kv head and leaves the others', async () => {
  const p: AttentionGqaProblem = { B: 2, Tnew: 3, NH: 6, NKV: 2, HS: 24, Tmax: 9, pos: 4 };
  const rt = await testRuntime();
  const { qkv, kc, vc } = inputs(p, 11);
  const bufs = { qkv: rt.upload(qkv, 'qkv'), kcache: rt.upload(kc, 'kcache'), vcache: rt.upload(vc, 'vcache') };
  const rec = rt.record('kv_write_gqa');
  rec.dispatch(await rt.compile(kvWriteGqa), bufs, p);
  const k = rec.read(bufs.kcache);
  const v = rec.read(bufs.vcache);
  await rec.submit();
  const kRef = Float64Array.from(kc);
  const vRef = Float64Array.from(vc);
  kvWriteGqaRef(kRef, vRef, qkv, p);
  expectClose(new Float32Array(await k), kRef, { atol: 0, rtol: 0 }, 'kcache'); // a copy: exact
  expectClose(new Float32Array(await v), vRef, { atol: 0, rtol: 0 }, 'vcache');
  // the layout: kv head 1 of b = 1, row pos + 2, is the k of qkv row (1, 2), channels NH*HS + HS ..
  const row = (1 * p.Tnew + 2) * gqaRowWidth(p) + p.NH * p.HS + p.HS;
  expect(kRef[((1 * p.NKV + 1) * p.Tmax + p.pos + 2) * p.HS]).toBe(qkv[row]);
  for (const b of Object.values(bufs)) b.destroy();
});

describe('prefill + decode steps through recordAttentionGqa equal attentionGqaRef on the full sequence', () => {
  test.each([
    ['selected (single for short caches)', null, [0, 3], { computeUnits: 64 }],
    ['forced split S=3', { kind: 'split', splits: 3 } as const, [0, 7], {}], // b=1: early decode steps are padding queries
  ] as const)('%s, start=%j', async (_, force, start, opts) => {
    const [B, T, NH, NKV, HS, P, Tmax] = [2, 13, 4, 2, 8, 5, 15];
    const full: AttentionGqaProblem = { B, Tnew: T, NH, NKV, HS, Tmax, pos: 0 };
    const W = gqaRowWidth(full);
    const rt = await testRuntime();
    const qkv = new Rng(P + start[1]).float32(B * T * W, -2, 2);
    const write = await rt.compile(kvWriteGqa);
    const cacheBytes = B * NKV * Tmax * HS * 4;
    const kcache = rt.storage(cacheBytes, 'kcache');
    const vcache = rt.storage(cacheBytes, 'vcache');
    const startBuf = rt.upload(Uint32Array.from(start), 'start');
    const scratch = rt.storage(4 * attentionGqaScratchFloats({ ...full, Tnew: P }, 3), 'scratch');
    const rec = rt.record('prefill + decode');
    const steps: { pos: number; n: number; out: Promise<ArrayBuffer> }[] = [];
    const temps: GPUBuffer[] = [];
    for (let pos = 0; pos < T;) {
      const n = pos === 0 ? P : 1;
      const p: AttentionGqaProblem = { B, Tnew: n, NH, NKV, HS, Tmax, pos };
      const part = rt.upload(Float32Array.from(sliceRows(qkv, B, T, W, pos, pos + n)), `qkv ${pos}`);
      const out = rt.storage(B * n * NH * HS * 4, `out ${pos}`);
      rec.dispatch(write, { qkv: part, kcache, vcache }, p);
      const ran = await recordAttentionGqa(rt, rec, { qkv: part, kcache, vcache, start: startBuf, out, scratch }, p, {
        ...opts,
        ...(force ? { force } : {}),
      });
      expect(ran.kind).toBe(force ? 'split' : 'single');
      steps.push({ pos, n, out: rec.read(out) });
      temps.push(part, out);
      pos += n;
    }
    await rec.submit();
    const kRef = new Float64Array(B * NKV * Tmax * HS);
    const vRef = new Float64Array(B * NKV * Tmax * HS);
    kvWriteGqaRef(kRef, vRef, qkv, full);
    const want = new Float64Array(B * T * NH * HS);
    attentionGqaRef(want, qkv, kRef, vRef, start, full);
    for (const s of steps) {
      expectClose(new Float32Array(await s.out), sliceRows(want, B, T, NH * HS, s.pos, s.pos + s.n), TOL, `rows ${s.pos}..${s.pos + s.n}`);
    }
    for (const b of [...temps, kcache, vcache, startBuf, scratch]) b.destroy();
  });
});

test('recordAttentionGqa selects the split for one sequence over a long cache, and shrinks it to the scratch', async () => {
  const p: AttentionGqaProblem = { B: 1, Tnew: 1, NH: 2, NKV: 1, HS: 8, Tmax: 300, pos: 299 };
  const rt = await testRuntime();
  expect(selectAttentionGqa(p, rt.limits)).toEqual({ kind: 'split', splits: 4 }); // min(ceil(256 / 2), floor(300 / 64), 32)
  const { qkv, kc, vc } = inputs(p, 5);
  const base = {
    qkv: rt.upload(qkv, 'qkv'),
    kcache: rt.upload(kc, 'kcache'),
    vcache: rt.upload(vc, 'vcache'),
    start: rt.upload(Uint32Array.from([17]), 'start'),
  };
  const ref = new Float64Array(p.NH * p.HS);
  attentionGqaRef(ref, qkv, kc, vc, [17], p);
  const temps: GPUBuffer[] = [];
  for (const [scratchSplits, expected] of [
    [4, { kind: 'split', splits: 4 }],
    [3, { kind: 'split', splits: 3 }], // the scratch holds 3: 3 splits
    [1, { kind: 'single' }], // too small for 2: single
    [0, { kind: 'single' }], // none
  ] as const) {
    const out = rt.storage(p.NH * p.HS * 4, 'out');
    const scratch = scratchSplits ? rt.storage(4 * attentionGqaScratchFloats(p, scratchSplits), 'scratch') : null;
    const rec = rt.record('attention_gqa selected');
    expect(await recordAttentionGqa(rt, rec, { ...base, out, scratch }, p)).toEqual(expected);
    const got = rec.read(out);
    await rec.submit();
    expectClose(new Float32Array(await got), ref, TOL, `scratch for ${scratchSplits} splits`);
    temps.push(out, ...(scratch ? [scratch] : []));
  }
  const rec = rt.record('forced split without scratch');
  const out = rt.storage(p.NH * p.HS * 4, 'out');
  await expect(recordAttentionGqa(rt, rec, { ...base, out }, p, { force: { kind: 'split', splits: 2 } })).rejects.toThrow(/scratch/);
  for (const b of [...Object.values(base), ...temps, out]) b.destroy();
});

test('selectAttentionGqa: split only for few workgroups over at least 256 keys', async () => {
  const rt = await testRuntime();
  const d = (B: number, NH: number, Tnew: number, pos: number): AttentionGqaProblem => ({ B, Tnew, NH, NKV: 1, HS: 64, Tmax: 4096, pos });
  expect(selectAttentionGqa(d(1, 9, 1, 254), rt.limits)).toEqual({ kind: 'single' }); // 255 keys
  expect(selectAttentionGqa(d(1, 9, 1, 255), rt.limits)).toEqual({ kind: 'split', splits: 4 }); // 256 keys: floor(256 / 64)
  expect(selectAttentionGqa(d(1, 9, 1, 999), rt.limits)).toEqual({ kind: 'split', splits: 15 }); // min(ceil(256 / 9), 15)
  expect(selectAttentionGqa(d(1, 9, 1, 4000), rt.limits)).toEqual({ kind: 'split', splits: 29 });
  expect(selectAttentionGqa(d(1, 2, 1, 4000), rt.limits)).toEqual({ kind: 'split', splits: 32 }); // capped
  expect(selectAttentionGqa(d(8, 9, 1, 4000), rt.limits)).toEqual({ kind: 'split', splits: 4 });
  expect(selectAttentionGqa(d(32, 9, 1, 4000), rt.limits)).toEqual({ kind: 'single' }); // 288 workgroups
  expect(selectAttentionGqa(d(1, 9, 64, 0), rt.limits)).toEqual({ kind: 'single' }); // a prefill
  expect(selectAttentionGqa(d(1, 9, 1, 4000), rt.limits, { computeUnits: 8 })).toEqual({ kind: 'split', splits: 4 });
  expect(selectAttentionGqa(d(1, 9, 1, 4000), rt.limits, { computeUnits: 2 })).toEqual({ kind: 'single' }); // 9 >= 8
});

test('attentionGqaRef with NKV = NH agrees with attentionDecodeRef on the same (B, T, 3C) qkv', () => {
  const [B, Tnew, NH, HS, Tmax, pos] = [2, 3, 3, 8, 11, 8];
  const C = NH * HS;
  const start = [0, 4];
  const rng = new Rng(21);
  const qkv = Float64Array.from(rng.float32(B * Tnew * 3 * C, -2, 2)); // W = (NH + 2 NH) HS = 3C: the same layout
  const old = Float64Array.from(rng.float32(2 * B * Tmax * C, -2, 2)); // kcache | vcache, (B, Tmax, C) each
  const kOld = old.subarray(0, B * Tmax * C);
  const vOld = old.subarray(B * Tmax * C);
  // (B, Tmax, C) -> (B, NH, Tmax, HS)
  const toGqa = (x: Float64Array): Float64Array => {
    const y = new Float64Array(x.length);
    for (let b = 0; b < B; b++)
      for (let t = 0; t < Tmax; t++)
        for (let h = 0; h < NH; h++)
          for (let d = 0; d < HS; d++) y[((b * NH + h) * Tmax + t) * HS + d] = x[(b * Tmax + t) * C + h * HS + d]!;
    return y;
  };
  const want = new Float64Array(B * Tnew * C);
  attentionDecodeRef(want, qkv, kOld, vOld, B, Tnew, C, NH, Tmax, pos, start);
  const got = new Float64Array(B * Tnew * C);
  attentionGqaRef(got, qkv, toGqa(kOld), toGqa(vOld), start, { B, Tnew, NH, NKV: NH, HS, Tmax, pos });
  expectClose(got, want, { atol: 1e-14, rtol: 1e-14 }, 'GQA ref vs decode ref'); // the same sums in the same order
});

test('problems the GQA kernels cannot serve are refused before dispatch', async () => {
  const rt = await testRuntime();
  const p: AttentionGqaProblem = { B: 1, Tnew: 2, NH: 4, NKV: 2, HS: 8, Tmax: 4, pos: 2 };
  expect(() => kvWriteGqa.dispatch({ ...p, pos: 3 }, rt.limits)).toThrow(/do not fit/);
  expect(() => attentionGqa.dispatch({ ...p, NKV: 3 }, rt.limits)).toThrow(/does not divide/);
  expect(() => attentionGqa.dispatch({ ...p, HS: 257 }, rt.limits)).toThrow(/MAX_HS=256/);
  expect(() => attentionGqaVariant(4, 16).dispatch({ ...p, HS: 24 }, rt.limits)).toThrow(/MAX_HS=16/);
  expect(() => attentionGqaSplit.dispatch({ ...p, splits: 0 }, rt.limits)).toThrow(/splits/);
  expect(() => attentionGqaCombine.dispatch({ ...p, splits: 1.5 }, rt.limits)).toThrow(/splits/);
  expect(() => attentionGqaSplitVariant(48)).toThrow(/power of two/);
  expect(attentionGqaSplit.dispatch({ ...p, splits: 5 }, rt.limits)).toEqual([10, 4, 1]);
  expect(attentionGqaScratchFloats(p, 5)).toBe(1 * 2 * 4 * 5 * 10);
});
