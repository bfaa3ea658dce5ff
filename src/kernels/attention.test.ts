// GPU attention forward and backward against their float64 references, on ragged shapes.
// Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size.
import { describe, expect, test } from 'vitest';
import type { KernelSpec } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  attentionBackwardDkv,
  attentionBackwardDq,
  attentionBackwardRef,
  attentionForward,
  attentionForwardRef,
  attentionTileVariant,
  recordAttentionBackward,
  type AttentionProblem,
} from './attention';

// Inputs are uniform in [-2, 2], so pre-softmax scores have standard deviation 4/3 and rows are
// far from uniform. f32 error sources: the HS-term dot products (relative ~HS * 2^-24), exp
// (WGSL allows 3 + 2|x| ulp, |x| < ~15 here) and the up-to-T-term sums of att * v; with
// |v| <= 2 and att <= 1 that is a few 1e-7 absolute. Largest differences seen on SwiftShader
// (T <= 33, HS <= 24): 3.8e-7 for out and att, 6.0e-7 for dqkv (|dqkv| <= 2.8). The
// tolerances leave about 10x over that (room for a hardware exp), and stay ~1e4x below what a
// wrong mask, scale or index produces (errors of order 0.1).
const FORWARD_TOL = { atol: 4e-6, rtol: 1e-5 };
const BACKWARD_TOL = { atol: 6e-6, rtol: 1e-5 };

/** A buffer filled with NaN, so an element the kernel fails to write fails the comparison. */
function nanBuffer(rt: Awaited<ReturnType<typeof testRuntime>>, n: number, label: string): GPUBuffer {
  return rt.upload(new Float32Array(n).fill(NaN), label);
}

interface Case {
  B: number;
  T: number;
  C: number;
  NH: number;
  start: number[] | null;
}

function startArray(c: Case): Uint32Array {
  return c.start ? Uint32Array.from(c.start) : new Uint32Array(c.B);
}

async function runForward(c: Case, spec: KernelSpec<AttentionProblem> = attentionForward): Promise<void> {
  const { B, T, C, NH } = c;
  const rt = await testRuntime();
  const qkv = new Rng(T * 100 + C + NH).float32(B * T * 3 * C, -2, 2);
  const bufs = {
    qkv: rt.upload(qkv, 'qkv'),
    start: rt.upload(startArray(c), 'start'),
    out: nanBuffer(rt, B * T * C, 'out'),
    att: nanBuffer(rt, B * NH * T * T, 'att'),
  };
  const rec = rt.record(`attention_forward ${JSON.stringify(c)}`);
  rec.dispatch(await rt.compile(spec), bufs, { B, T, C, NH });
  const out = rec.read(bufs.out);
  const att = rec.read(bufs.att);
  await rec.submit();
  const outRef = new Float64Array(B * T * C);
  const attRef = new Float64Array(B * NH * T * T);
  attentionForwardRef(outRef, attRef, qkv, B, T, C, NH, c.start);
  expectClose(new Float32Array(await att), attRef, FORWARD_TOL, 'att');
  expectClose(new Float32Array(await out), outRef, FORWARD_TOL, 'out');
  for (const b of Object.values(bufs)) b.destroy();
}

async function runBackward(c: Case, specs?: { dq: KernelSpec<AttentionProblem>; dkv: KernelSpec<AttentionProblem> }): Promise<void> {
  const { B, T, C, NH } = c;
  const rt = await testRuntime();
  const rng = new Rng(T * 7 + C * 3 + NH);
  const qkv = rng.float32(B * T * 3 * C, -2, 2);
  const dout = rng.float32(B * T * C, -1, 1);
  const dqkv0 = rng.float32(B * T * 3 * C, -1, 1); // the backward accumulates onto this
  const outRef = new Float64Array(B * T * C);
  const attRef = new Float64Array(B * NH * T * T);
  attentionForwardRef(outRef, attRef, qkv, B, T, C, NH, c.start);
  const att = Float32Array.from(attRef); // the saved probabilities, as the forward stores them
  const bufs = {
    dqkv: rt.upload(dqkv0, 'dqkv'),
    dout: rt.upload(dout, 'dout'),
    qkv: rt.upload(qkv, 'qkv'),
    att: rt.upload(att, 'att'),
    start: rt.upload(startArray(c), 'start'),
    dpre: nanBuffer(rt, B * NH * T * T, 'dpre'), // unwritten scratch must never be read
  };
  const rec = rt.record(`attention_backward ${JSON.stringify(c)}`);
  const { temporaries } = await recordAttentionBackward(rt, rec, bufs, { B, T, C, NH }, specs);
  expect(temporaries).toEqual([]);
  const got = rec.read(bufs.dqkv);
  await rec.submit();
  const ref = Float64Array.from(dqkv0);
  attentionBackwardRef(ref, dout, qkv, att, B, T, C, NH, c.start);
  expectClose(new Float32Array(await got), ref, BACKWARD_TOL, 'dqkv');
  for (const b of Object.values(bufs)) b.destroy();
}

const cases: Case[] = [
  { B: 1, T: 1, C: 8, NH: 1, start: null },
  { B: 2, T: 5, C: 24, NH: 3, start: null },
  { B: 1, T: 17, C: 48, NH: 2, start: null }, // HS = 24: two channel chunks, ragged
  { B: 2, T: 33, C: 24, NH: 4, start: [0, 19] }, // three query tiles; b=1 has a whole padding tile
  { B: 2, T: 17, C: 8, NH: 2, start: [3, 17] }, // b=1: every row is padding
];
const name = (c: Case): string => `B=${c.B} T=${c.T} C=${c.C} NH=${c.NH} start=${JSON.stringify(c.start)}`;

describe('attention_forward matches attentionForwardRef', () => {
  test.each(cases.map((c) => [name(c), c] as const))('%s', (_, c) => runForward(c));
  test('tile 4 (many ragged tiles)', () =>
    runForward({ B: 2, T: 17, C: 24, NH: 2, start: [0, 6] }, attentionTileVariant(attentionForward, 4)));
});

describe('attention_backward (dq, then dk and dv) accumulates attentionBackwardRef', () => {
  test.each(cases.map((c) => [name(c), c] as const))('%s', (_, c) => runBackward(c));
  test('tile 4 (many ragged tiles)', () =>
    runBackward(
      { B: 2, T: 17, C: 24, NH: 2, start: [0, 6] },
      {
        dq: attentionTileVariant(attentionBackwardDq, 4),
        dkv: attentionTileVariant(attentionBackwardDkv, 4),
      },
    ));
});

test('the GPU forward then backward agrees with the references end to end', async () => {
  const [B, T, C, NH] = [2, 9, 16, 2];
  const start = [0, 4];
  const rt = await testRuntime();
  const rng = new Rng(77);
  const qkv = rng.float32(B * T * 3 * C, -2, 2);
  const dout = rng.float32(B * T * C, -1, 1);
  const p = { B, T, C, NH };
  const bufs = {
    qkv: rt.upload(qkv, 'qkv'),
    start: rt.upload(Uint32Array.from(start), 'start'),
    out: rt.storage(B * T * C * 4, 'out'),
    att: rt.storage(B * NH * T * T * 4, 'att'),
    dout: rt.upload(dout, 'dout'),
    dqkv: rt.storage(B * T * 3 * C * 4, 'dqkv'),
  };
  const rec = rt.record('forward + backward');
  rec.dispatch(await rt.compile(attentionForward), { qkv: bufs.qkv, start: bufs.start, out: bufs.out, att: bufs.att }, p);
  rec.clear(bufs.dqkv);
  const { temporaries } = await recordAttentionBackward(rt, rec, bufs, p);
  expect(temporaries).toHaveLength(1); // dpre came from the pool
  const got = rec.read(bufs.dqkv);
  await rec.submit();
  for (const t of temporaries) rt.pool.release(t);
  const out = new Float64Array(B * T * C);
  const att = new Float64Array(B * NH * T * T);
  attentionForwardRef(out, att, qkv, B, T, C, NH, start);
  const ref = new Float64Array(B * T * 3 * C);
  attentionBackwardRef(ref, dout, qkv, att, B, T, C, NH, start);
  expectClose(new Float32Array(await got), ref, BACKWARD_TOL, 'dqkv');
  for (const b of Object.values(bufs)) b.destroy();
});

test('shapes the kernels cannot serve are refused before dispatch', async () => {
  const rt = await testRuntime();
  expect(() => attentionForward.dispatch({ B: 1, T: 4, C: 10, NH: 3 }, rt.limits)).toThrow(/not divisible/);
  const T = Math.ceil(Math.sqrt(rt.limits.maxStorageBufferBindingSize / 4)) + 1;
  expect(() => attentionForward.dispatch({ B: 1, T, C: 8, NH: 1 }, rt.limits)).toThrow(/maxStorageBufferBindingSize/);
  expect(() => attentionTileVariant(attentionForward, 17)).toThrow(/1\.\.16/);
});
