// GPU KV-cache kernels against their float64 references, and the property generation relies
// on: a prefill then one decode step per token gives, at every position, the output of the
// full-sequence forward.
// Shape legend: B batch, T time, Tnew new rows, C channels, NH heads, HS = C / NH, Tmax capacity.
import { describe, expect, test } from 'vitest';
import type { KernelSpec } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  attentionDecode,
  attentionDecodeRef,
  attentionDecodeVariant,
  attentionForwardRef,
  kvWrite,
  kvWriteRef,
  type DecodeProblem,
} from './attention';
import { sliceRows } from './attention_testing';

// As attention.test.ts (inputs in [-2, 2], largest difference seen on SwiftShader 3.3e-7 with
// |out| <= 2): the online softmax only adds a rescale by exp(m_old - m_new) per chunk of keys.
const DECODE_TOL = { atol: 4e-6, rtol: 1e-5 };

/** A small variant: chunks of 4 keys and 4 channels per invocation step, so short sequences cross many chunks. */
const small = attentionDecodeVariant(4, 16);

test('kv_write writes rows [pos, pos + Tnew) and leaves the others', async () => {
  const [B, Tnew, C, Tmax, pos] = [2, 5, 24, 9, 3];
  const rt = await testRuntime();
  const rng = new Rng(11);
  const qkv = rng.float32(B * Tnew * 3 * C);
  const k0 = rng.float32(B * Tmax * C);
  const v0 = rng.float32(B * Tmax * C);
  const bufs = { qkv: rt.upload(qkv, 'qkv'), kcache: rt.upload(k0, 'kcache'), vcache: rt.upload(v0, 'vcache') };
  const rec = rt.record('kv_write');
  rec.dispatch(await rt.compile(kvWrite), bufs, { B, Tnew, C, Tmax, pos });
  const k = rec.read(bufs.kcache);
  const v = rec.read(bufs.vcache);
  await rec.submit();
  const kRef = Float64Array.from(k0);
  const vRef = Float64Array.from(v0);
  kvWriteRef(kRef, vRef, qkv, B, Tnew, C, Tmax, pos);
  expectClose(new Float32Array(await k), kRef, { atol: 0, rtol: 0 }, 'kcache'); // a copy: exact
  expectClose(new Float32Array(await v), vRef, { atol: 0, rtol: 0 }, 'vcache');
  for (const b of Object.values(bufs)) b.destroy();
});

describe('attention_decode matches attentionDecodeRef on a random cache', () => {
  test.each([
    ['default', 2, 1, 48, 4, 7, null, attentionDecode], // a decode step, HS = 12
    ['default', 2, 5, 24, 3, 17, [0, 9], attentionDecode], // a chunked prefill at pos 12
    ['wg 4', 2, 4, 48, 3, 33, [2, 30], small], // HS = 16: four channel steps; b=1: padding queries
    ['wg 4', 1, 1, 8, 1, 1, null, small], // the first position
  ] as const)('%s B=%i Tnew=%i C=%i NH=%i Tmax=%i start=%j', async (_, B, Tnew, C, NH, Tmax, start, spec) => {
    const pos = Tmax - Tnew;
    const rt = await testRuntime();
    const rng = new Rng(Tmax * 13 + C);
    const qkv = rng.float32(B * Tnew * 3 * C, -2, 2);
    const kc = rng.float32(B * Tmax * C, -2, 2);
    const vc = rng.float32(B * Tmax * C, -2, 2);
    const bufs = {
      qkv: rt.upload(qkv, 'qkv'),
      kcache: rt.upload(kc, 'kcache'),
      vcache: rt.upload(vc, 'vcache'),
      start: rt.upload(start ? Uint32Array.from(start) : new Uint32Array(B), 'start'),
      out: rt.upload(new Float32Array(B * Tnew * C).fill(NaN), 'out'),
    };
    const rec = rt.record('attention_decode');
    rec.dispatch(await rt.compile(spec as KernelSpec<DecodeProblem>), bufs, { B, Tnew, C, NH, Tmax, pos });
    const out = rec.read(bufs.out);
    await rec.submit();
    const ref = new Float64Array(B * Tnew * C);
    attentionDecodeRef(ref, qkv, kc, vc, B, Tnew, C, NH, Tmax, pos, start);
    expectClose(new Float32Array(await out), ref, DECODE_TOL, 'out');
    for (const b of Object.values(bufs)) b.destroy();
  });
});

describe('prefill + decode steps on the GPU equal attentionForwardRef on the full sequence', () => {
  test.each([
    ['default', null, attentionDecode],
    ['default', [0, 3], attentionDecode],
    ['wg 4', [0, 7], small], // b=1: the padding outlasts the prompt, so early decode steps are padding queries
  ] as const)('%s, start=%j', async (_, start, spec) => {
    const [B, T, C, NH, P, Tmax] = [2, 17, 24, 3, 5, 19];
    const rt = await testRuntime();
    const qkv = new Rng(P + (start?.[1] ?? 0)).float32(B * T * 3 * C, -2, 2);
    const [write, decode] = await Promise.all([rt.compile(kvWrite), rt.compile(spec as KernelSpec<DecodeProblem>)]);
    const kcache = rt.storage(B * Tmax * C * 4, 'kcache');
    const vcache = rt.storage(B * Tmax * C * 4, 'vcache');
    const startBuf = rt.upload(start ? Uint32Array.from(start) : new Uint32Array(B), 'start');
    const rec = rt.record('prefill + decode');
    const steps: { pos: number; n: number; out: Promise<ArrayBuffer> }[] = [];
    const temps: GPUBuffer[] = [];
    for (let pos = 0; pos < T;) {
      const n = pos === 0 ? P : 1;
      const part = rt.upload(Float32Array.from(sliceRows(qkv, B, T, 3 * C, pos, pos + n)), `qkv ${pos}`);
      const out = rt.storage(B * n * C * 4, `out ${pos}`);
      rec.dispatch(write, { qkv: part, kcache, vcache }, { B, Tnew: n, C, Tmax, pos });
      rec.dispatch(decode, { qkv: part, kcache, vcache, start: startBuf, out }, { B, Tnew: n, C, NH, Tmax, pos });
      steps.push({ pos, n, out: rec.read(out) });
      temps.push(part, out);
      pos += n;
    }
    await rec.submit();
    const full = new Float64Array(B * T * C);
    attentionForwardRef(full, new Float64Array(B * NH * T * T), qkv, B, T, C, NH, start);
    for (const s of steps) {
      expectClose(new Float32Array(await s.out), sliceRows(full, B, T, C, s.pos, s.pos + s.n), DECODE_TOL, `rows ${s.pos}..${s.pos + s.n}`);
    }
    for (const b of [...temps, kcache, vcache, startBuf]) b.destroy();
  });
});

test('problems the KV kernels cannot serve are refused before dispatch', async () => {
  const rt = await testRuntime();
  expect(() => kvWrite.dispatch({ B: 1, Tnew: 3, C: 8, Tmax: 4, pos: 2 }, rt.limits)).toThrow(/do not fit/);
  expect(() => attentionDecode.dispatch({ B: 1, Tnew: 2, C: 8, NH: 1, Tmax: 4, pos: 3 }, rt.limits)).toThrow(/do not fit/);
  expect(() => small.dispatch({ B: 1, Tnew: 1, C: 34, NH: 2, Tmax: 4, pos: 0 }, rt.limits)).toThrow(/MAX_HS=16/);
  expect(() => attentionDecodeVariant(48)).toThrow(/power of two/);
});
