// GQA training attention on the GPU against its float64 references, on ragged shapes: NH/NKV =
// 1, 2, 3; HS 8, 24, 64, 128 (two dk/dv channel blocks); odd T over several 16-row tiles; left
// padding with padding queries and a sequence that is all padding; 4 x 4 tiles with 8-channel
// blocks (many ragged tiles and blocks). The forward also equals attentionGqaRef over a cache of
// T rows at pos 0; the backward accumulates, and two runs agree bit for bit.
// Shape legend: B batch, T time, NH query heads, NKV kv heads, HS head size, W = (NH + 2 NKV) HS.
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { attentionGqaRef, kvWriteGqaRef } from './attention_gqa';
import {
  attentionGqaBackwardRef,
  attentionGqaTrainForwardRef,
  attentionGqaTrainKernels,
  checkGqaTrainProblem,
  recordAttentionGqaBackward,
  recordAttentionGqaTrainForward,
  type AttentionGqaTrainKernels,
  type AttentionGqaTrainProblem,
} from './attention_gqa_train';

// Inputs uniform in [-2, 2] (scores of standard deviation ~4/3 whatever HS, rows far from
// uniform), dout in [-1, 1]. f32 error sources: HS-term dot products for the scores (~sqrt(HS)
// 2^-24 of |q||k|), exp (WGSL allows 3 + 2|x| ulp, |x| < ~15), the online rescale per key tile,
// log(l) for lse, then up to T-term sums of att v (|v| <= 2) for out, of att dout for dv and of
// dpre q (k) for dk (dq), whose rounding grows like sqrt(T). The backward recomputes att as
// exp(S - lse) from the saved f32 lse (absolute error ~|lse| 2^-24, relative in att) and
// datt - D cancels, so dqkv is a few times looser than out. Largest differences seen on
// SwiftShader: out 1.6e-6, lse 1.2e-6, dqkv 3.3e-6 at T = 512 (7.3e-7, 9.3e-7, 2.4e-6 at
// T <= 130). The tolerances leave ~4x over that and stay far below what a wrong kv head or a
// head of a group left out of dk, dv gives (tried: max errors 1.7 to 64).
const FORWARD_TOL = { atol: 6e-6, rtol: 1e-5 };
const BACKWARD_TOL = { atol: 1.5e-5, rtol: 1e-5 };

type Start = readonly number[] | null;

interface Case {
  p: AttentionGqaTrainProblem;
  start: Start;
  kernels?: AttentionGqaTrainKernels;
}

const startArray = (c: Case): Uint32Array => (c.start ? Uint32Array.from(c.start) : new Uint32Array(c.p.B));

/** A buffer filled with NaN, so an element the kernel fails to write fails the comparison. */
function nanBuffer(rt: Awaited<ReturnType<typeof testRuntime>>, n: number, label: string): GPUBuffer {
  return rt.upload(new Float32Array(n).fill(NaN), label);
}

function refForward(qkv: ArrayLike<number>, c: Case): { out: Float64Array; lse: Float64Array } {
  const { B, T, NH, HS } = c.p;
  const r = { out: new Float64Array(B * T * NH * HS), lse: new Float64Array(B * NH * T) };
  attentionGqaTrainForwardRef(r.out, r.lse, qkv, c.start, c.p);
  return r;
}

async function runForward(c: Case): Promise<void> {
  const { B, T, NH, NKV, HS } = c.p;
  const W = checkGqaTrainProblem(c.p, 'test');
  const rt = await testRuntime();
  const qkv = new Rng(T * 100 + HS + NH).float32(B * T * W, -2, 2);
  const bufs = {
    qkv: rt.upload(qkv, 'qkv'),
    start: rt.upload(startArray(c), 'start'),
    out: nanBuffer(rt, B * T * NH * HS, 'out'),
    lse: nanBuffer(rt, B * NH * T, 'lse'),
  };
  const rec = rt.record(`attention_gqa_train_forward ${JSON.stringify(c.p)}`);
  await recordAttentionGqaTrainForward(rt, rec, bufs, c.p, c.kernels);
  const out = rec.read(bufs.out);
  const lse = rec.read(bufs.lse);
  await rec.submit();
  const want = refForward(qkv, c);
  expectClose(new Float32Array(await out), want.out, FORWARD_TOL, 'out');
  expectClose(new Float32Array(await lse), want.lse, FORWARD_TOL, 'lse');
  // and the KV-cache attention over T cached rows at pos 0 (the inference path) agrees
  const cached = { B, Tnew: T, NH, NKV, HS, Tmax: T, pos: 0 };
  const [kc, vc] = [new Float64Array(B * NKV * T * HS), new Float64Array(B * NKV * T * HS)];
  kvWriteGqaRef(kc, vc, qkv, cached);
  const inference = new Float64Array(B * T * NH * HS);
  attentionGqaRef(inference, qkv, kc, vc, c.start, cached);
  expectClose(new Float32Array(await out), inference, FORWARD_TOL, 'out vs attentionGqaRef');
  for (const b of Object.values(bufs)) b.destroy();
}

/** The backward from the reference's saved out and lse (as f32), onto a random dqkv; twice into two buffers for T < 256 (the T = 512 case once, for time). */
async function runBackward(c: Case): Promise<void> {
  const { B, T, NH, HS } = c.p;
  const W = checkGqaTrainProblem(c.p, 'test');
  const rt = await testRuntime();
  const rng = new Rng(T * 7 + HS * 3 + NH);
  const qkv = rng.float32(B * T * W, -2, 2);
  const dout = rng.float32(B * T * NH * HS);
  const dqkv0 = rng.float32(B * T * W);
  const saved = refForward(qkv, c);
  const [out, lse] = [Float32Array.from(saved.out), Float32Array.from(saved.lse)];
  const bufs = {
    dout: rt.upload(dout, 'dout'),
    qkv: rt.upload(qkv, 'qkv'),
    out: rt.upload(out, 'out'),
    lse: rt.upload(lse, 'lse'),
    start: rt.upload(startArray(c), 'start'),
    delta: nanBuffer(rt, B * NH * T, 'delta'), // every entry read must have been written
  };
  const dqkv = [rt.upload(dqkv0, 'dqkv'), ...(T < 256 ? [rt.upload(dqkv0, 'dqkv again')] : [])];
  const rec = rt.record(`attention_gqa_train_backward ${JSON.stringify(c.p)}`);
  for (const d of dqkv) {
    const { temporaries } = await recordAttentionGqaBackward(rt, rec, { ...bufs, dqkv: d }, c.p, c.kernels);
    expect(temporaries).toEqual([]);
  }
  const got = dqkv.map((d) => rec.read(d));
  await rec.submit();
  const ref = Float64Array.from(dqkv0);
  attentionGqaBackwardRef(ref, dout, qkv, out, lse, c.start, c.p);
  const [first, second] = (await Promise.all(got)).map((x) => new Float32Array(x));
  expectClose(first!, ref, BACKWARD_TOL, 'dqkv');
  if (second) expect(second.every((v, i) => Object.is(v, first![i]))).toBe(true); // deterministic
  for (const b of [...Object.values(bufs), ...dqkv]) b.destroy();
}

const small = attentionGqaTrainKernels({ tile: 4, channelBlock: 8 });
const CASES: [string, Case][] = (
  [
    [1, 1, 1, 1, 8, null],
    [2, 17, 2, 2, 8, [0, 5]], // NH/NKV = 1; rows 0..4 of b = 1 are padding queries
    [2, 19, 4, 2, 24, [3, 0]], // 2; HS 24 is ragged over 16-channel tiles
    [1, 33, 3, 1, 64, [0]], // 3; three query tiles, the last one a single row
    [2, 21, 6, 2, 24, [0, 21]], // 3; b = 1 is all padding (every row sees only itself)
    [1, 9, 2, 1, 128, [2]], // HS 128: the largest head, two dk/dv channel blocks
  ] as const
).map(([B, T, NH, NKV, HS, start]) => [
  `B=${B} T=${T} NH=${NH} NKV=${NKV} HS=${HS} start=${JSON.stringify(start)}`,
  { p: { B, T, NH, NKV, HS }, start },
]);
const SMALL_TILES: [string, Case] = [
  'tile 4, 8-channel blocks: B=2 T=13 NH=6 NKV=2 HS=24 start=[0,6]',
  { p: { B: 2, T: 13, NH: 6, NKV: 2, HS: 24 }, start: [0, 6], kernels: small },
];
const LONG: [string, Case][] = [
  ['B=1 T=130 NH=3 NKV=1 HS=64 start=[5]', { p: { B: 1, T: 130, NH: 3, NKV: 1, HS: 64 }, start: [5] }],
  ['B=1 T=512 NH=1 NKV=1 HS=128 start=[37]', { p: { B: 1, T: 512, NH: 1, NKV: 1, HS: 128 }, start: [37] }], // the sizes asked for
];

describe('attention_gqa_train_forward matches attentionGqaTrainForwardRef (out, lse) and attentionGqaRef', () => {
  test.each([...CASES, SMALL_TILES, ...LONG])('%s', (_, c) => runForward(c));
});

describe('attention_gqa_train backward (dq, then dk and dv) accumulates attentionGqaBackwardRef', () => {
  test.each([...CASES, SMALL_TILES, ...LONG])('%s', (_, c) => runBackward(c));
});

test('the GPU forward then backward agrees with the references end to end', async () => {
  const c: Case = { p: { B: 2, T: 11, NH: 4, NKV: 2, HS: 16 }, start: [0, 4] };
  const { B, T, NH, HS } = c.p;
  const W = checkGqaTrainProblem(c.p, 'test');
  const rt = await testRuntime();
  const rng = new Rng(77);
  const qkv = rng.float32(B * T * W, -2, 2);
  const dout = rng.float32(B * T * NH * HS);
  const bufs = {
    qkv: rt.upload(qkv, 'qkv'),
    start: rt.upload(startArray(c), 'start'),
    out: rt.storage(B * T * NH * HS * 4, 'out'),
    lse: rt.storage(B * NH * T * 4, 'lse'),
    dout: rt.upload(dout, 'dout'),
    dqkv: rt.storage(B * T * W * 4, 'dqkv'),
  };
  const rec = rt.record('forward + backward');
  await recordAttentionGqaTrainForward(rt, rec, bufs, c.p);
  rec.clear(bufs.dqkv);
  const { temporaries } = await recordAttentionGqaBackward(rt, rec, bufs, c.p);
  expect(temporaries).toHaveLength(1); // delta came from the pool
  const got = rec.read(bufs.dqkv);
  await rec.submit();
  for (const t of temporaries) rt.pool.release(t);
  const { out, lse } = refForward(qkv, c);
  const ref = new Float64Array(B * T * W);
  attentionGqaBackwardRef(ref, dout, qkv, out, lse, c.start, c.p);
  expectClose(new Float32Array(await got), ref, BACKWARD_TOL, 'dqkv');
  for (const b of Object.values(bufs)) b.destroy();
});

test('shapes the kernels cannot serve are refused before dispatch', async () => {
  const rt = await testRuntime();
  const { forward, dq, dkv } = attentionGqaTrainKernels();
  expect(() => forward.dispatch({ B: 1, T: 4, NH: 4, NKV: 3, HS: 8 }, rt.limits)).toThrow(/does not divide/);
  expect(() => dq.dispatch({ B: 1, T: 4, NH: 2, NKV: 1, HS: 129 }, rt.limits)).toThrow(/MAX_HS=128/);
  expect(dkv.dispatch({ B: 2, T: 33, NH: 6, NKV: 2, HS: 129 }, rt.limits)).toEqual([3 * 3, 2, 2]); // three channel blocks
  expect(() => attentionGqaTrainKernels({ tile: 17 })).toThrow(/1\.\.16/);
});
