/**
 * Weights stored as packed f16 / bf16 (./weight_format.ts) on the GPU vs the float64 references on
 * the values the packed words hold: the matmul forward (tiled and naive, bias, GELU, a strided
 * column block), the backward's dinp (tiled and naive; a packed weight is frozen, so dweight is
 * refused), and the chunked row gather. Element counts are odd where they can be, so a row starts
 * in the high half of a word and the last word is padded. Also the packing itself: the words hold
 * the rounded values, and a value F16 cannot hold is refused with the tensor and element named.
 * Shape legend: M rows (= BT), K inner (= C), N output columns (= OC); N ids, C channels.
 */
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime, testSubgroupLanes } from '../testing/gpu';
import { Rng } from '../util/random';
import { gatherRowChunks, gatherRowsFor, gatherRowsRef } from './gather_rows';
import {
  matmulBackwardRef,
  matmulForwardBindings,
  matmulForwardFusedRef,
  matmulForwardDirect,
  matmulForwardDirect4,
  matmulForwardNaive,
  matmulForwardSubgroup,
  matmulForwardTiled,
  recordMatmulForward,
  type MatmulForwardVariant,
  type MatmulProblem,
} from './matmul';
import { matmulBackwardInp, matmulBackwardSubgroup, recordMatmulBackward } from './matmul_backward';
import { subgroupTile } from './matmul_subgroup';
import { packWeights, roundWeights, unpackWeights, weightBytes, weightReader, type WeightFormat } from './weight_format';

// As matmul.test.ts: f32 sums of at most ~100 products of |x| < 1, against float64 sums of the
// same (already rounded) weights. A wrong half of a word, or a bf16 read as f16, is off by O(1).
const TOL = { atol: 1e-5, rtol: 1e-4 };
const FORMATS = ['f16', 'bf16'] as const;
/** The subgroup kernels' lanes on this adapter; null: they cannot run here (their rows are left out). */
const LANES = await testSubgroupLanes();

/** Random weights with a spread of magnitudes (subnormal-small to ~8), rounded to `format`. */
function weights(rng: Rng, n: number, format: 'f16' | 'bf16'): { words: Uint32Array<ArrayBuffer>; values: Float32Array } {
  const raw = Float32Array.from(rng.float32(n), (x, i) => x * 2 ** ((i % 7) - 4));
  const words = packWeights(raw, format, 'w');
  return { words, values: unpackWeights(words, n, format) };
}

describe.each(FORMATS)('%s weights', (format) => {
  test.each([
    ['tiled', { bias: true, gelu: false, pre: false }, 65, 33, 71],
    ['tiled', { bias: false, gelu: true, pre: true }, 7, 17, 9],
    ['naive', { bias: true, gelu: true, pre: false }, 19, 35, 21],
    ['direct', { bias: true, gelu: true, pre: true }, 66, 35, 71],
    ['direct4', { bias: true, gelu: false, pre: false }, 66, 36, 71],
    ['direct4', { bias: false, gelu: true, pre: true }, 3, 4, 5],
    ...(LANES
      ? ([
          ['subgroup', { bias: true, gelu: false, pre: false }, 66, 36, 71],
          ['subgroup', { bias: false, gelu: true, pre: true }, 3, 4, 5],
        ] as const)
      : []),
  ] as const)('matmul forward %s %o M=%i K=%i N=%i', async (kind, v: MatmulForwardVariant, M, K, N) => {
    const rt = await testRuntime();
    const rng = new Rng(M + K * 31 + N * 977);
    const inp = rng.float32(M * K);
    const w = weights(rng, N * K, format);
    const bias = v.bias ? rng.float32(N) : null;
    const bufs = {
      out: rt.storage(M * N * 4, 'out'),
      pre: v.pre ? rt.storage(M * N * 4, 'pre') : null,
      inp: rt.upload(inp, 'inp'),
      weight: rt.upload(w.words, 'weight'),
      bias: bias ? rt.upload(bias, 'bias') : null,
    };
    expect(bufs.weight.size).toBe(weightBytes(N * K, format));
    const spec =
      kind === 'tiled'
        ? matmulForwardTiled(v, [16, 16], format)
        : kind === 'direct'
          ? matmulForwardDirect(v, [16, 16], format)
          : kind === 'direct4'
            ? matmulForwardDirect4(v, [16, 16], format)
            : kind === 'subgroup'
              ? matmulForwardSubgroup(v, LANES!, subgroupTile('forward', LANES!, M), format)
              : matmulForwardNaive(v, [16, 16], format);
    const rec = rt.record('packed matmul');
    rec.dispatch(await rt.compile(spec), matmulForwardBindings(rt, bufs), { M, K, N });
    const out = rec.read(bufs.out);
    const pre = bufs.pre ? rec.read(bufs.pre) : null;
    await rec.submit();
    const wantOut = new Float64Array(M * N);
    const wantPre = new Float64Array(M * N);
    matmulForwardFusedRef(wantOut, wantPre, inp, w.values, bias, M, K, N, v.gelu);
    expectClose(new Float32Array(await out), wantOut, TOL, `${spec.name} out`);
    if (pre) expectClose(new Float32Array(await pre), wantPre, TOL, `${spec.name} pre`);
    for (const b of Object.values(bufs)) b?.destroy();
  });

  test('matmul forward into a column block of a wider output (the LM head in chunks)', async () => {
    const [M, K, ldo] = [5, 19, 40];
    const blocks = [
      [0, 17],
      [17, 21],
    ] as const;
    const rt = await testRuntime();
    const rng = new Rng(ldo);
    const inp = rng.float32(M * K);
    const ws = blocks.map(([, N]) => weights(rng, N * K, format));
    const out = rt.upload(new Float32Array(M * ldo).fill(-3), 'logits');
    const inpBuf = rt.upload(inp, 'inp');
    const wBufs = ws.map((w, i) => rt.upload(w.words, `chunk ${i}`));
    const rec = rt.record('packed strided');
    for (const [i, [col0, N]] of blocks.entries())
      await recordMatmulForward(rt, rec, { out, inp: inpBuf, weight: wBufs[i]!, weightFormat: format }, { M, K, N, ldo, col0 });
    const got = rec.read(out);
    await rec.submit();
    const want = new Float64Array(M * ldo).fill(-3);
    for (const [i, [col0, N]] of blocks.entries()) {
      const o = new Float64Array(M * N);
      matmulForwardFusedRef(o, null, inp, ws[i]!.values, null, M, K, N, false);
      for (let m = 0; m < M; m++) want.set(o.subarray(m * N, (m + 1) * N), m * ldo + col0);
    }
    expectClose(new Float32Array(await got), want, TOL, `strided ${format}`);
    for (const b of [out, inpBuf, ...wBufs]) b.destroy();
  });

  test.each([
    ['tiled', 70, 21, 37],
    ['naive', 9, 13, 31],
    ['direct', 70, 21, 37],
    ['direct4', 33, 20, 9],
    ['direct4a', 33, 20, 12],
    ['selected', 3, 17, 65],
    ...(LANES ? ([['subgroup', 33, 20, 12]] as const) : []),
  ] as const)('matmul backward dinp %s M=%i K=%i N=%i, accumulating', async (kind, M, K, N) => {
    const rt = await testRuntime();
    const rng = new Rng(M * 7 + K * 13 + N);
    const dout = rng.float32(M * N);
    const w = weights(rng, N * K, format);
    const start = rng.float32(M * K); // dinp accumulates onto what it holds
    const bufs = { dinp: rt.upload(start, 'dinp'), dout: rt.upload(dout, 'dout'), weight: rt.upload(w.words, 'weight') };
    const p: MatmulProblem = { M, K, N };
    const rec = rt.record('packed dinp');
    if (kind === 'selected') {
      const inp = rt.storage(M * K * 4, 'inp (unread)');
      await recordMatmulBackward(rt, rec, { ...bufs, inp, dweight: null, weightFormat: format }, p);
    } else {
      const spec =
        kind === 'subgroup'
          ? matmulBackwardSubgroup('dinp', LANES!, subgroupTile('dmat', LANES!, M), format)
          : matmulBackwardInp(kind, [16, 16], format);
      rec.dispatch(await rt.compile(spec), bufs, p);
    }
    const got = rec.read(bufs.dinp);
    await rec.submit();
    const want = Float64Array.from(start);
    matmulBackwardRef(want, null, null, dout, new Float64Array(M * K), w.values, M, K, N);
    expectClose(new Float32Array(await got), want, TOL, `dinp ${kind} ${format}`);
    for (const b of Object.values(bufs)) b.destroy();
  });

  test('a packed weight is frozen: asking for its gradient is refused', async () => {
    const rt = await testRuntime();
    const b = rt.storage(64, 'any');
    const rec = rt.record('refused');
    await expect(
      recordMatmulBackward(rt, rec, { dinp: b, dweight: b, dout: b, inp: b, weight: b, weightFormat: format }, { M: 2, K: 2, N: 2 }),
    ).rejects.toThrow(new RegExp(`${format} weight is frozen storage`));
    b.destroy();
  });

  test('row gather from a table in two packed chunks, then an accumulated position table', async () => {
    const [N, C, V] = [29, 13, 23];
    const rt = await testRuntime();
    const rng = new Rng(C);
    const table = weights(rng, V * C, format).values; // the rounded values; each chunk packs its own rows
    const pos = rng.float32(N * C);
    const ids = Uint32Array.from({ length: N }, (_, n) => [0, 10, 11, V - 1][n] ?? Math.floor(rng.next() * V));
    const chunks: [number, number][] = [
      [0, 11],
      [11, V - 11],
    ];
    const out = rt.upload(new Float32Array(N * C).fill(NaN), 'out');
    const idBuf = rt.upload(ids, 'ids');
    const posIds = rt.upload(
      Uint32Array.from({ length: N }, (_, n) => n),
      'positions',
    );
    const tables = chunks.map(([v0, rows]) =>
      rt.upload(packWeights(table.subarray(v0 * C, (v0 + rows) * C), format, 'embed'), `chunk ${v0}`),
    );
    const posTable = rt.upload(packWeights(pos, format, 'pos'), 'pos');
    const k = await rt.compile(gatherRowsFor(format));
    const rec = rt.record('packed gather');
    for (const [i, [v0, rows]] of chunks.entries())
      rec.dispatch(k, { out, ids: idBuf, table: tables[i]! }, { N, C, v0, rows, accumulate: 0 });
    rec.dispatch(k, { out, ids: posIds, table: posTable }, { N, C, v0: 0, rows: N, accumulate: 1 });
    const got = rec.read(out);
    await rec.submit();
    const want = new Float64Array(N * C);
    for (const [v0, rows] of chunks) gatherRowsRef(want, ids, table.subarray(v0 * C, (v0 + rows) * C), N, C, v0, rows, 0);
    gatherRowsRef(
      want,
      Uint32Array.from({ length: N }, (_, n) => n),
      roundWeights(pos, format, 'pos'),
      N,
      C,
      0,
      N,
      1,
    );
    expectClose(new Float32Array(await got), want, { atol: 0, rtol: 1e-6 }, `gather ${format}`);
    for (const b of [out, idBuf, posIds, ...tables, posTable]) b.destroy();
  });
});

test('packing: the words hold the rounded values; F16 refuses what it cannot hold, naming the tensor and element', () => {
  const data = Float32Array.from([1, -2.5, 1 / 3, 1e-6, 3e38, 0.1, -0]);
  const bf = unpackWeights(packWeights(data, 'bf16', 'x'), data.length, 'bf16');
  expect(Array.from(bf.subarray(0, 2))).toEqual([1, -2.5]);
  for (const [i, x] of data.entries()) expect(Math.abs(bf[i]! - x)).toBeLessThanOrEqual(Math.abs(x) * 2 ** -9);
  expect(() => packWeights(data, 'f16', 'layers.3.up.w')).toThrow(
    /layers\.3\.up\.w: element 4 \(3\.0\d*e\+38\) is not a finite F16 number.*65504/,
  );
  expect(() => packWeights(Float32Array.of(0, NaN), 'bf16', 'embed')).toThrow(/embed: element 1 \(NaN\)/);
  const f16 = roundWeights(Float32Array.from([1 / 3, 65504, 1e-8]), 'f16', 'y');
  expect(Array.from(f16)).toEqual([0.333251953125, 65504, 0]);
  expect(roundWeights(data, 'f32', 'z')).toBe(data);
  expect(weightBytes(7, 'f16')).toBe(16);
  expect(weightBytes(7, 'f32')).toBe(28);
  // a 16-bit chunk holds twice the rows of an f32 one, and never more bytes than allowed
  expect(gatherRowChunks(100, 10, 400)).toEqual([[0, 10], [10, 10], ...Array.from({ length: 8 }, (_, i) => [20 + 10 * i, 10])]);
  for (const [, rows] of gatherRowChunks(100, 11, 400, 2)) expect(weightBytes(rows * 11, 'f16')).toBeLessThanOrEqual(400);
  expect(gatherRowChunks(100, 10, 400, 2)[0]).toEqual([0, 19]);
});

test('the WGSL reader of each format', () => {
  const fmts: WeightFormat[] = ['f32', 'f16', 'bf16'];
  const src = fmts.map((f) => weightReader('weight', 3, f));
  expect(src[0]).toContain('var<storage, read> weight: array<f32>;');
  expect(src[1]).toContain('unpack2x16float');
  expect(src[2]).toContain('bitcast<f32>');
  for (const s of src) expect(s).toContain('@group(0) @binding(3)');
});
