/**
 * Matmul backward on the GPU vs its float64 reference, accumulation included; the reference
 * itself vs central finite differences of matmulForwardRef.
 * Shape legend: M rows (= BT), K inner (= C), N output columns (= OC); row-major f32.
 */
import { describe, expect, test } from 'vitest';
import type { KernelSpec } from '../gpu/kernel';
import { expectClose, testRuntime, testSubgroupLanes } from '../testing/gpu';
import { Rng } from '../util/random';
import { matmulBackwardRef, matmulForwardRef, type MatmulProblem } from './matmul';
import {
  matmulBackwardBias,
  matmulBackwardInp,
  matmulBackwardSubgroup,
  matmulBackwardWeight,
  recordMatmulBackward,
  selectMatmulBackward,
} from './matmul_backward';
import { subgroupTile } from './matmul_subgroup';

/** The subgroup kernels' lanes on this adapter (lavapipe 8, SwiftShader 4); null: they cannot run here. */
const LANES = await testSubgroupLanes();
import { centralDiff } from '../testing/finite-diff';

// As the forward: f32 sums of <= 100 products of values in [-1, 1] (over N for dinp, over M for
// dweight and dbias) plus the initial gradient; observed at M = K = N = 100: max abs error 4.4e-6.
const TOL = { atol: 1e-5, rtol: 1e-4 };

type Specs = { dinp: KernelSpec<MatmulProblem>; dweight: KernelSpec<MatmulProblem> } | 'selected';

/**
 * Backward twice into gradients that start random (not zero): after the first pass they must
 * hold init + grad, after the second init + 2 grad.
 */
async function runBackward(p: MatmulProblem, specs: Specs, withBias: boolean): Promise<void> {
  const { M, K, N } = p;
  const rt = await testRuntime();
  const rng = new Rng(M * 7919 + K * 31 + N);
  const dout = rng.float32(M * N);
  const inp = rng.float32(M * K);
  const weight = rng.float32(N * K);
  const init = { dinp: rng.float32(M * K), dweight: rng.float32(N * K), dbias: rng.float32(N) };
  const b = {
    dinp: rt.upload(init.dinp, 'dinp'),
    dweight: rt.upload(init.dweight, 'dweight'),
    dbias: withBias ? rt.upload(init.dbias, 'dbias') : null,
    dout: rt.upload(dout, 'dout'),
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
  };
  const rec = rt.record(`matmul backward ${M}x${K}x${N}`);
  const reads: Promise<ArrayBuffer>[][] = [];
  for (let pass = 0; pass < 2; pass++) {
    if (specs === 'selected') {
      await recordMatmulBackward(rt, rec, b, p);
    } else {
      rec.dispatch(await rt.compile(specs.dinp), { dinp: b.dinp, dout: b.dout, weight: b.weight }, p);
      rec.dispatch(await rt.compile(specs.dweight), { dweight: b.dweight, dout: b.dout, inp: b.inp }, p);
      if (b.dbias) rec.dispatch(await rt.compile(matmulBackwardBias), { dbias: b.dbias, dout: b.dout }, p);
    }
    reads.push([rec.read(b.dinp), rec.read(b.dweight), ...(b.dbias ? [rec.read(b.dbias)] : [])]);
  }
  await rec.submit();

  const want = { dinp: Float64Array.from(init.dinp), dweight: Float64Array.from(init.dweight), dbias: Float64Array.from(init.dbias) };
  const what = `${specs === 'selected' ? 'selected' : specs.dinp.name} M=${M} K=${K} N=${N}`;
  for (let pass = 0; pass < 2; pass++) {
    matmulBackwardRef(want.dinp, want.dweight, withBias ? want.dbias : null, dout, inp, weight, M, K, N);
    const [dinp, dweight, dbias] = await Promise.all(reads[pass]!);
    expectClose(new Float32Array(dinp!), want.dinp, TOL, `${what} dinp after pass ${pass + 1}`);
    expectClose(new Float32Array(dweight!), want.dweight, TOL, `${what} dweight after pass ${pass + 1}`);
    if (dbias) expectClose(new Float32Array(dbias), want.dbias, TOL, `${what} dbias after pass ${pass + 1}`);
  }
  for (const buf of Object.values(b)) buf?.destroy();
}

const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 7, 33],
  [7, 33, 1],
  [65, 17, 70],
  [100, 65, 97],
];
const TILED = { dinp: matmulBackwardInp('tiled'), dweight: matmulBackwardWeight('tiled') };
const NAIVE = { dinp: matmulBackwardInp('naive'), dweight: matmulBackwardWeight('naive') };
const DIRECT = { dinp: matmulBackwardInp('direct'), dweight: matmulBackwardWeight('direct') };
const DIRECT4 = { dinp: matmulBackwardInp('direct4'), dweight: matmulBackwardWeight('direct4') };
const DIRECT4A = { dinp: matmulBackwardInp('direct4a', [8, 16]), dweight: matmulBackwardWeight('direct4a') };

describe('matmul backward accumulates its float64 reference', () => {
  test.each(SHAPES)('tiled 64x64 with dbias, M=%i K=%i N=%i', (M, K, N) => runBackward({ M, K, N }, TILED, true));
  test.each(SHAPES)('naive with dbias, M=%i K=%i N=%i', (M, K, N) => runBackward({ M, K, N }, NAIVE, true));
  test.each(SHAPES)('direct with dbias, M=%i K=%i N=%i', (M, K, N) => runBackward({ M, K, N }, DIRECT, true));
  test.each([
    [1, 4, 1],
    [7, 8, 33],
    [65, 20, 70],
    [33, 36, 5],
  ])('direct4 (K a multiple of 4) with dbias, M=%i K=%i N=%i', (M, K, N) => runBackward({ M, K, N }, DIRECT4, true));
  // direct4a: K and N multiples of 4, M ragged (dinp's rows past M are clamped, never stored)
  test.each([
    [1, 4, 4],
    [7, 8, 32],
    [65, 20, 68],
    [33, 36, 4],
    [100, 64, 96],
  ])('direct4a (K, N multiples of 4) with dbias, M=%i K=%i N=%i', (M, K, N) => runBackward({ M, K, N }, DIRECT4A, true));
  test('tiled without bias, M=33 K=9 N=66', () => runBackward({ M: 33, K: 9, N: 66 }, TILED, false));
  test('selected (16-row tiles), M=5 K=70 N=9', () => runBackward({ M: 5, K: 70, N: 9 }, 'selected', true));
  test('dbias over more rows than lanes, M=300 K=1 N=45', () => runBackward({ M: 300, K: 1, N: 45 }, NAIVE, true));
});

// The subgroup products at the adapter's own lanes, in 1, 2 and 4 row groups and 1 or 2 column
// quads a lane: M ragged (dinp's rows past M and dweight's reduction tail of M % 4 rows), N
// ragged for dweight (its rows; dinp then runs direct4, which takes any N).
describe.skipIf(!LANES)('subgroup backward accumulates its float64 reference', () => {
  const L = LANES!;
  const sg = (rows: number, cols: number, dinp = true) => ({
    dinp: dinp ? matmulBackwardSubgroup('dinp', L, { rows, cols }) : matmulBackwardInp('direct4'),
    dweight: matmulBackwardSubgroup('dweight', L, { rows, cols }),
  });
  test.each([
    [1, 4, 4, 1, 1],
    [7, 8, 32, 1, 2],
    [2 * L + 1, 16, 8, 2, 1],
    [65, 20, 68, 4, 1],
    [33, 36, 4, 1, 1],
    [100, 64, 96, 2, 2],
  ])('dinp and dweight with dbias, M=%i K=%i N=%i, tile %i row groups x %i column quads a lane', (M, K, N, rows, cols) =>
    runBackward({ M, K, N }, sg(rows, cols), true),
  );
  test.each([
    [37, 12, 70, 4],
    [6, 8, 5, 1],
  ])('dweight of ragged N (dinp direct4), M=%i K=%i N=%i, %i row groups', (M, K, N, rows) =>
    runBackward({ M, K, N }, sg(rows, 1, false), false),
  );
  test('selected by its strategy where the shape allows, else direct', () => {
    const s = `subgroup${L}` as const;
    const t = subgroupTile('dmat', L, 64);
    expect(selectMatmulBackward({ M: 64, K: 8, N: 12 }, s).dinp.name).toBe(`matmul_backward_dinp_sg${L}_${t.rows}x${t.cols}`);
    expect(selectMatmulBackward({ M: 64, K: 8, N: 13 }, s).dinp.name).toBe('matmul_backward_dinp_direct4');
    expect(selectMatmulBackward({ M: 64, K: 8, N: 13 }, s).dweight.name).toMatch(new RegExp(`^matmul_backward_dweight_sg${L}_`));
    expect(selectMatmulBackward({ M: 64, K: 9, N: 12 }, s).dweight.name).toBe('matmul_backward_dweight_direct');
    expect(selectMatmulBackward({ M: 64, K: 8, N: 12 }, s, 'f16').dinp.name).toMatch(/_sg\d_\dx\d_f16$/);
    expect(() => matmulBackwardSubgroup('dinp', L, t).uniforms!({ M: 5, K: 8, N: 12, ldo: 22, col0: 8 })).toThrow(/ldo=22.*multiples of 4/);
    expect(() => matmulBackwardSubgroup('dweight', L, t).uniforms!({ M: 5, K: 6, N: 12 })).toThrow(/K=6 is not a multiple of 4/);
    expect(() => matmulBackwardSubgroup('dweight', L, t, 'bf16')).toThrow(/only dinp reads a packed weight/);
    return runBackward({ M: 70, K: 24, N: 44 }, 'selected', true);
  });
});

test('direct selects direct4a where K, N, ldo and col0 are multiples of 4, else direct4 where K is, else direct', () => {
  const pick = (p: MatmulProblem): string => selectMatmulBackward(p, 'direct').dinp.name;
  expect(pick({ M: 5, K: 8, N: 12 })).toBe('matmul_backward_dinp_direct4a');
  expect(selectMatmulBackward({ M: 5, K: 8, N: 12 }, 'direct').dweight.name).toBe('matmul_backward_dweight_direct4a');
  expect(pick({ M: 5, K: 8, N: 12, ldo: 20, col0: 8 })).toBe('matmul_backward_dinp_direct4a');
  expect(pick({ M: 5, K: 8, N: 13 })).toBe('matmul_backward_dinp_direct4');
  expect(pick({ M: 5, K: 8, N: 12, ldo: 21, col0: 8 })).toBe('matmul_backward_dinp_direct4');
  expect(pick({ M: 5, K: 8, N: 12, ldo: 20, col0: 6 })).toBe('matmul_backward_dinp_direct4');
  expect(pick({ M: 5, K: 9, N: 12 })).toBe('matmul_backward_dinp_direct');
  expect(() => matmulBackwardInp('direct4a').uniforms!({ M: 5, K: 8, N: 12, ldo: 21 })).toThrow(/ldo=21.*multiples of 4/);
});

test('matmulBackwardRef is the gradient of matmulForwardRef (finite differences)', () => {
  const [M, K, N] = [3, 4, 5];
  const rng = new Rng(1);
  const f64 = (n: number): Float64Array => Float64Array.from(rng.float32(n));
  const inp = f64(M * K);
  const weight = f64(N * K);
  const bias = f64(N);
  const g = f64(M * N); // loss = sum(g * out), so dout = g
  const loss = (): number => {
    const out = new Float64Array(M * N);
    matmulForwardRef(out, inp, weight, bias, M, K, N);
    return out.reduce((s, o, i) => s + o * g[i]!, 0);
  };
  const dinp = new Float64Array(M * K);
  const dweight = new Float64Array(N * K);
  const dbias = new Float64Array(N);
  matmulBackwardRef(dinp, dweight, dbias, g, inp, weight, M, K, N);
  // the loss is linear in each input, so the central difference is exact up to rounding (~1e-10)
  const tol = { atol: 1e-8, rtol: 1e-8 };
  for (const [x, grad, name] of [
    [inp, dinp, 'dinp'],
    [weight, dweight, 'dweight'],
    [bias, dbias, 'dbias'],
  ] as const) {
    const fd = Array.from(x, (_, i) => centralDiff(loss, x, i, 1e-4));
    expectClose(grad, fd, tol, `${name} vs finite differences`);
  }
  // and it accumulates: a second call adds the same again
  const again = Float64Array.from(dweight);
  matmulBackwardRef(dinp, again, null, g, inp, weight, M, K, N);
  expectClose(
    again,
    dweight.map((v) => 2 * v),
    tol,
    'dweight after two calls',
  );
  expect(dbias.some((v) => v !== 0)).toBe(true);
});

/**
 * Strided dout, as the LM head of a vocabulary in chunks reads it: each chunk [col0, col0 + N) of
 * one (M, ldo) dlogits (ldo = V + 3: padding columns no chunk owns, filled with a sentinel that
 * must not leak in) differentiates into its own dweight and one shared dinp, which every chunk
 * adds to; a frozen weight (dweight null) leaves only dinp. Same tolerance as the dense products.
 */
describe('matmul backward reads a column block of a wider dout', () => {
  // the aligned case (K, both chunks, col0 and ldo multiples of 4) runs direct's direct4a
  test.each([
    ['tiled', false],
    ['direct', false],
    ['naive', false],
    ['direct', true],
    ...(LANES ? [[`subgroup${LANES}` as const, true] as const] : []),
  ] as const)('%s: two chunks of about 70 columns, and a frozen weight (aligned for direct4a: %s)', async (strategy, aligned) => {
    const rt = await testRuntime();
    const [M, K, V] = aligned ? [37, 20, 72] : [37, 19, 70];
    const ldo = V + (aligned ? 4 : 3);
    const blocks: readonly (readonly [number, number])[] = aligned
      ? [
          [0, 40],
          [40, 32],
        ]
      : [
          [0, 41],
          [41, 29],
        ]; // [col0, N]
    if (aligned) expect(selectMatmulBackward({ M, K, N: 32, ldo, col0: 40 }, strategy).dinp.name).toMatch(/direct4a$|_sg\d_\dx\d$/);
    const rng = new Rng(ldo + ['tiled', 'direct', 'naive', 'subgroup4', 'subgroup8'].indexOf(strategy));
    const dlogits = rng.float32(M * ldo);
    for (let m = 0; m < M; m++) dlogits.fill(1e6, m * ldo + V, (m + 1) * ldo);
    const inp = rng.float32(M * K);
    const weights = blocks.map(([, N]) => rng.float32(N * K));
    const dinpInit = rng.float32(M * K);
    const bufs = {
      dout: rt.upload(dlogits, 'dlogits'),
      inp: rt.upload(inp, 'inp'),
      dinp: rt.upload(dinpInit, 'dinp'),
      frozen: rt.upload(dinpInit, 'dinp (frozen weights)'),
      weights: weights.map((w, i) => rt.upload(w, `weight ${i}`)),
      dweights: blocks.map(([, N], i) => rt.storage(N * K * 4, `dweight ${i}`)),
    };
    const rec = rt.record('matmul backward strided');
    for (const [i, [col0, N]] of blocks.entries()) {
      const p: MatmulProblem = { M, K, N, ldo, col0 };
      const w = bufs.weights[i]!;
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: bufs.dinp, dweight: bufs.dweights[i]!, dout: bufs.dout, inp: bufs.inp, weight: w },
        p,
        strategy,
      );
      await recordMatmulBackward(rt, rec, { dinp: bufs.frozen, dweight: null, dout: bufs.dout, inp: bufs.inp, weight: w }, p, strategy);
    }
    const reads = [rec.read(bufs.dinp), rec.read(bufs.frozen), ...bufs.dweights.map((d) => rec.read(d))];
    await rec.submit();
    const wantDinp = Float64Array.from(dinpInit);
    const wantDweights = blocks.map(([, N]) => new Float64Array(N * K));
    for (const [i, [col0, N]] of blocks.entries()) {
      const dense = new Float64Array(M * N);
      for (let m = 0; m < M; m++) dense.set(dlogits.subarray(m * ldo + col0, m * ldo + col0 + N), m * N);
      matmulBackwardRef(wantDinp, wantDweights[i]!, null, dense, inp, weights[i]!, M, K, N);
    }
    const [dinp, frozen, ...dweights] = (await Promise.all(reads)).map((r) => new Float32Array(r));
    expectClose(dinp!, wantDinp, TOL, `${strategy} dinp over both chunks`);
    expectClose(frozen!, wantDinp, TOL, `${strategy} dinp with frozen weights`);
    dweights.forEach((d, i) => expectClose(d, wantDweights[i]!, TOL, `${strategy} dweight of chunk ${i}`));
    for (const b of [bufs.dout, bufs.inp, bufs.dinp, bufs.frozen, ...bufs.weights, ...bufs.dweights]) b.destroy();
  });

  test('a strided dout with a bias gradient is refused (dbias reads a dense dout)', async () => {
    const rt = await testRuntime();
    const b = rt.storage(64, 'any');
    const bufs = { dinp: b, dweight: b, dbias: b, dout: b, inp: b, weight: b };
    await expect(recordMatmulBackward(rt, rt.record('refused'), bufs, { M: 1, K: 1, N: 1, ldo: 2, col0: 1 })).rejects.toThrow(
      /assumes a dense/,
    );
    b.destroy();
  });
});
