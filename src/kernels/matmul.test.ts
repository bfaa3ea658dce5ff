/**
 * Matmul forward on the GPU vs its float64 reference.
 * Shape legend: M rows (= BT), K inner (= C), N output columns (= OC); row-major f32.
 */
import { describe, expect, test } from 'vitest';
import type { KernelSpec } from '../gpu/kernel';
import { expectClose, testRuntime, testSubgroupLanes } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  checkMatmulProblem,
  defaultMatmulStrategy,
  matmulForwardBindings,
  matmulForwardDirect,
  matmulForwardDirect4,
  matmulForwardFusedRef,
  matmulForwardNaive,
  matmulForwardRef,
  matmulForwardSubgroup,
  matmulForwardTiled,
  matmulWorkgroup,
  recordMatmulForward,
  selectMatmulForward,
  subgroupStrategy,
  type MatmulForwardVariant,
  type MatmulProblem,
} from './matmul';
import { subgroupForwardWgsl, subgroupTile } from './matmul_subgroup';

/** The subgroup kernels' lanes on this adapter (lavapipe 8, SwiftShader 4); null: they cannot run here. */
const LANES = await testSubgroupLanes();

// f32 dot products of K <= 100 terms with |inp|, |weight| < 1 (|out| up to ~15): the rounding
// error grows like sqrt(K) * 2^-24 * |terms| in practice (K * 2^-24 * sum|term| = 1.5e-4 at
// worst for K = 100, never approached). Observed at M = K = N = 100: max abs error 4.2e-6, GELU
// included. A wrong index or a missed K slice is off by O(0.1).
const TOL = { atol: 1e-5, rtol: 1e-4 };

/** Runs `spec` (or the selected kernel when spec is null) and compares out (and pre) with the reference. */
async function runForward(p: MatmulProblem, v: MatmulForwardVariant, spec: KernelSpec<MatmulProblem> | null): Promise<void> {
  const { M, K, N } = p;
  const rt = await testRuntime();
  const rng = new Rng(M * 10007 + K * 101 + N);
  const inp = rng.float32(M * K);
  const weight = rng.float32(N * K);
  const bias = v.bias ? rng.float32(N) : null;
  const bufs = {
    out: rt.storage(M * N * 4, 'out'),
    pre: v.pre ? rt.storage(M * N * 4, 'pre') : null,
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
    bias: bias ? rt.upload(bias, 'bias') : null,
  };
  const rec = rt.record(`matmul ${M}x${K}x${N}`);
  if (spec) rec.dispatch(await rt.compile(spec), matmulForwardBindings(rt, bufs), p);
  else await recordMatmulForward(rt, rec, bufs, p, { gelu: v.gelu });
  const out = rec.read(bufs.out);
  const pre = bufs.pre ? rec.read(bufs.pre) : null;
  await rec.submit();

  const wantOut = new Float64Array(M * N);
  const wantPre = new Float64Array(M * N);
  matmulForwardFusedRef(wantOut, wantPre, inp, weight, bias, M, K, N, v.gelu);
  const what = `${spec?.name ?? 'selected'} ${JSON.stringify(v)} M=${M} K=${K} N=${N}`;
  expectClose(new Float32Array(await out), wantOut, TOL, `${what} out`);
  if (pre) expectClose(new Float32Array(await pre), wantPre, TOL, `${what} pre`);
  for (const b of Object.values(bufs)) b?.destroy();
}

// ragged: 1, primes, one past the 64 tile, K not a multiple of the 8-deep slice
const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 7, 33],
  [7, 33, 1],
  [65, 17, 70],
  [33, 100, 65],
  [100, 65, 97],
];
const PLAIN = { bias: false, gelu: false, pre: false };
const FULL = { bias: true, gelu: true, pre: true };
const VARIANTS: MatmulForwardVariant[] = [
  PLAIN,
  { bias: true, gelu: false, pre: false },
  { bias: false, gelu: true, pre: false },
  { bias: true, gelu: true, pre: false },
  FULL,
  { bias: false, gelu: true, pre: true },
];

// Each tiled pipeline costs SwiftShader 1-3 s of compilation, so the tiled kernel gets four
// (64x64 plain and full; the 16- and 32-row tiles with the other two variant mixes); every
// variant runs on the naive kernel, whose epilogue (store() in the shader) is the tiled one's.
describe('matmul forward matches its float64 reference', () => {
  test.each(SHAPES)('tiled 64x64 plain, M=%i K=%i N=%i', (M, K, N) => runForward({ M, K, N }, PLAIN, matmulForwardTiled(PLAIN)));
  test.each(SHAPES)('naive plain, M=%i K=%i N=%i', (M, K, N) => runForward({ M, K, N }, PLAIN, matmulForwardNaive(PLAIN)));
  test.each([
    [100, 33, 129],
    [1, 9, 65],
  ])('tiled 64x64 bias+gelu+pre, M=%i K=%i N=%i', (M, K, N) => runForward({ M, K, N }, FULL, matmulForwardTiled(FULL)));
  test.each(VARIANTS)('naive, every variant: %o', (v) => runForward({ M: 19, K: 35, N: 21 }, v, matmulForwardNaive(v)));
  // direct: ragged shapes (K below, at and past a multiple of 4; M and N past a 4-block), and the epilogue
  test.each(SHAPES)('direct 64x64 plain, M=%i K=%i N=%i', (M, K, N) => runForward({ M, K, N }, PLAIN, matmulForwardDirect(PLAIN)));
  test.each([
    [100, 33, 129, [16, 16]],
    [5, 8, 6, [16, 4]],
  ] as const)('direct bias+gelu+pre, M=%i K=%i N=%i, workgroup %o', (M, K, N, wg) =>
    runForward({ M, K, N }, FULL, matmulForwardDirect(FULL, wg)),
  );
  // direct4: K a multiple of 4, M and N ragged
  test.each([
    [1, 4, 33],
    [7, 8, 1],
    [65, 20, 70],
    [33, 100, 65],
  ])('direct4 plain, M=%i K=%i N=%i', (M, K, N) => runForward({ M, K, N }, PLAIN, matmulForwardDirect4(PLAIN)));
  test('direct4 bias+gelu+pre, M=37 K=36 N=67', () => runForward({ M: 37, K: 36, N: 67 }, FULL, matmulForwardDirect4(FULL, [16, 8])));
  test.each([
    [1, 40, 70, { bias: true, gelu: false, pre: false }], // 16-row tile
    [13, 9, 130, { bias: true, gelu: false, pre: false }], // 16-row tile
    [20, 33, 65, { bias: false, gelu: true, pre: false }], // 32-row tile
    [32, 1, 3, { bias: false, gelu: true, pre: false }], // 32-row tile
  ] as const)('selected tile, M=%i K=%i N=%i %o', (M, K, N, v) => runForward({ M, K, N }, v, null));
});

// The subgroup kernel at the adapter's own lanes, in each tile the selection makes (1, 2 and 4
// row groups; the columns a lane as measured, and 1): M and N ragged against every tile (rows
// and columns past them are clamped loads, never stores), K a multiple of 4 from 4 to 100.
describe.skipIf(!LANES)('subgroup forward matches its float64 reference', () => {
  const L = LANES!;
  const cols = subgroupTile('forward', L, 1000).cols;
  test.each([
    [1, 4, 1, 1, cols],
    [5, 8, 33, 1, cols],
    [L + 3, 36, 70, 2, cols],
    [4 * L + 5, 20, 17, 4, cols],
    [33, 100, 65, 4, 1],
    [64, 12, 2 * L * cols + 1, 2, 1],
  ])('M=%i K=%i N=%i, tile %i row groups x %i columns a lane', (M, K, N, rows, c) =>
    runForward({ M, K, N }, PLAIN, matmulForwardSubgroup(PLAIN, L, { rows, cols: c })),
  );
  test('bias+gelu+pre, M=37 K=36 N=67', () =>
    runForward({ M: 37, K: 36, N: 67 }, FULL, matmulForwardSubgroup(FULL, L, subgroupTile('forward', L, 37))));
  test('into a column block of a wider output, bias+gelu+pre (K 20)', () =>
    runStrided(matmulForwardSubgroup(FULL, L, subgroupTile('forward', L, 5)), FULL, 20));
  test('selected by its strategy where K is a multiple of 4, M=70 K=24 N=45', () => {
    expect(selectMatmulForward({ M: 70, K: 24, N: 45 }, PLAIN, `subgroup${L}`).name).toBe(`matmul_forward_sg${L}_4x${cols}`);
    return runForward({ M: 70, K: 24, N: 45 }, PLAIN, null);
  });
});

test('subgroup tiles: fewer row groups for few rows; the strategy falls back to direct where K is not a multiple of 4', () => {
  expect(subgroupTile('forward', 8, 64)).toEqual({ rows: 4, cols: 2 });
  expect(subgroupTile('forward', 8, 32)).toEqual({ rows: 4, cols: 2 });
  expect(subgroupTile('forward', 8, 31)).toEqual({ rows: 2, cols: 2 });
  expect(subgroupTile('forward', 8, 16)).toEqual({ rows: 2, cols: 2 });
  expect(subgroupTile('forward', 8, 15)).toEqual({ rows: 1, cols: 2 });
  expect(subgroupTile('forward', 8, 1)).toEqual({ rows: 1, cols: 2 });
  expect(subgroupTile('forward', 4, 16)).toEqual({ rows: 4, cols: 4 });
  expect(subgroupTile('dmat', 8, 64)).toEqual({ rows: 2, cols: 1 });
  expect(subgroupTile('dmat', 4, 7)).toEqual({ rows: 1, cols: 2 });
  expect(selectMatmulForward({ M: 8, K: 8, N: 5 }, PLAIN, 'subgroup8').name).toBe('matmul_forward_sg8_1x2');
  expect(selectMatmulForward({ M: 8, K: 8, N: 5 }, PLAIN, 'subgroup4', 'bf16').name).toBe('matmul_forward_sg4_2x4_bf16');
  expect(selectMatmulForward({ M: 8, K: 6, N: 5 }, PLAIN, 'subgroup8').entryPoint).toBe('direct');
  expect(selectMatmulForward({ M: 64, K: 8, N: 5 }, PLAIN, 'subgroup8').dispatch({ M: 64, K: 8, N: 33 }, {} as GPUSupportedLimits)).toEqual(
    [3, 2, 1],
  );
  expect(() =>
    matmulForwardSubgroup(PLAIN, 8, subgroupTile('forward', 8, 9)).dispatch({ M: 2, K: 6, N: 2 }, {} as GPUSupportedLimits),
  ).toThrow(/K=6 is not a multiple of 4/);
  expect(() => subgroupForwardWgsl(16, { rows: 1, cols: 1 })).toThrow(/16 lanes; written for 4, 8/);
  expect(() => subgroupForwardWgsl(8, { rows: 0, cols: 1 })).toThrow(/rows must be an integer in 1..8, got 0/);
});

test('tile selection follows M', () => {
  expect(matmulWorkgroup({ M: 1, K: 8, N: 8 })).toEqual([16, 4]);
  expect(matmulWorkgroup({ M: 32, K: 8, N: 8 })).toEqual([16, 8]);
  expect(matmulWorkgroup({ M: 33, K: 8, N: 8 })).toEqual([16, 16]);
  expect(selectMatmulForward({ M: 5, K: 5, N: 5 }, PLAIN, 'naive').entryPoint).toBe('naive');
  expect(selectMatmulForward({ M: 5, K: 5, N: 5 }, PLAIN, 'direct').entryPoint).toBe('direct');
  expect(selectMatmulForward({ M: 5, K: 8, N: 5 }, PLAIN, 'direct').name).toBe('matmul_forward_direct4');
  expect(() => matmulForwardDirect4(PLAIN).dispatch({ M: 2, K: 6, N: 2 }, {} as GPUSupportedLimits)).toThrow(/K=6 is not a multiple of 4/);
  expect(() => matmulForwardTiled({ bias: false, gelu: false, pre: true })).toThrow(/only with gelu/);
});

test('matmulForwardRef on a hand-computed case', () => {
  // inp (2, 3), weight (2, 3), bias (2)
  const out = new Float64Array(4);
  matmulForwardRef(out, [1, 2, 3, 4, 5, 6], [1, 0, -1, 2, 1, 0], [10, 20], 2, 3, 2);
  expect(Array.from(out)).toEqual([1 - 3 + 10, 2 + 2 + 20, 4 - 6 + 10, 8 + 5 + 20]);
});

test('tiled: a non-finite input stays in its row (slices past K are masked on both operands)', async () => {
  // K = 17 leaves 7 padded columns in the last 8-deep slice; unmasked, row M-2 would read row
  // M-1's first values there, and inf * 0 = NaN.
  const [M, K, N] = [65, 17, 70];
  const rt = await testRuntime();
  const rng = new Rng(4);
  const inp = rng.float32(M * K);
  inp[(M - 1) * K] = Infinity;
  const weight = rng.float32(N * K);
  const bufs = { out: rt.storage(M * N * 4, 'out'), inp: rt.upload(inp, 'inp'), weight: rt.upload(weight, 'weight') };
  const rec = rt.record('matmul inf row');
  rec.dispatch(await rt.compile(matmulForwardTiled(PLAIN)), matmulForwardBindings(rt, bufs), { M, K, N });
  const out = rec.read(bufs.out, 0, (M - 1) * N * 4); // every row but the last
  await rec.submit();
  const want = new Float64Array(M * N);
  matmulForwardRef(want, inp, weight, null, M, K, N);
  expectClose(new Float32Array(await out), want.subarray(0, (M - 1) * N), TOL, 'rows 0..M-2 with inf in row M-1');
  for (const b of Object.values(bufs)) b.destroy();
});

/**
 * The LM head of a vocabulary in chunks: each chunk's product writes its column block
 * [col0, col0 + N) of one (M, ldo) logits matrix (ldo = V + 3 here: the padding columns past V,
 * like every column of another block, must keep what they held). pre is strided the same way.
 */
async function runStrided(spec: KernelSpec<MatmulProblem> | 'selected', v: MatmulForwardVariant, K = 17): Promise<void> {
  const M = 5;
  const blocks = [
    [0, 33],
    [33, 37],
  ] as const; // [col0, N]: V = 70 columns in two chunks
  const ldo = 73;
  const rt = await testRuntime();
  const rng = new Rng(ldo);
  const inp = rng.float32(M * K);
  const weights = blocks.map(([, N]) => rng.float32(N * K));
  const biases = blocks.map(([, N]) => rng.float32(N));
  const sentinel = new Float32Array(M * ldo).fill(-7.5);
  const bufs = {
    out: rt.upload(sentinel, 'logits'),
    pre: v.pre ? rt.upload(sentinel, 'pre') : null,
    inp: rt.upload(inp, 'inp'),
  };
  const chunkBufs = blocks.map((_, i) => ({
    weight: rt.upload(weights[i]!, `weight ${i}`),
    bias: v.bias ? rt.upload(biases[i]!, `bias ${i}`) : null,
  }));
  const rec = rt.record('matmul strided');
  for (const [i, [col0, N]] of blocks.entries()) {
    const p: MatmulProblem = { M, K, N, ldo, col0 };
    const b = { ...bufs, ...chunkBufs[i]! };
    if (spec === 'selected') await recordMatmulForward(rt, rec, b, p, { gelu: v.gelu });
    else rec.dispatch(await rt.compile(spec), matmulForwardBindings(rt, b), p);
  }
  const out = rec.read(bufs.out);
  const pre = bufs.pre ? rec.read(bufs.pre) : null;
  await rec.submit();

  const wantOut = Float64Array.from(sentinel);
  const wantPre = Float64Array.from(sentinel);
  for (const [i, [col0, N]] of blocks.entries()) {
    const o = new Float64Array(M * N);
    const q = new Float64Array(M * N);
    matmulForwardFusedRef(o, q, inp, weights[i]!, v.bias ? biases[i]! : null, M, K, N, v.gelu);
    for (let m = 0; m < M; m++) {
      wantOut.set(o.subarray(m * N, (m + 1) * N), m * ldo + col0);
      wantPre.set(q.subarray(m * N, (m + 1) * N), m * ldo + col0);
    }
  }
  const what = `${spec === 'selected' ? 'selected' : spec.name} strided ${JSON.stringify(v)}`;
  expectClose(new Float32Array(await out), wantOut, TOL, `${what} out`);
  if (pre) expectClose(new Float32Array(await pre), wantPre, TOL, `${what} pre`);
  for (const b of [...Object.values(bufs), ...chunkBufs.flatMap((c) => Object.values(c))]) b?.destroy();
}

describe('matmul forward writes a column block of a wider output (ldo, col0)', () => {
  test('tiled 64x64 plain', () => runStrided(matmulForwardTiled(PLAIN), PLAIN));
  test('tiled 64x64 bias+gelu+pre (pre strided too)', () => runStrided(matmulForwardTiled(FULL), FULL));
  test('naive bias+gelu+pre', () => runStrided(matmulForwardNaive(FULL), FULL));
  test('direct bias+gelu+pre', () => runStrided(matmulForwardDirect(FULL), FULL));
  test('direct4 bias+gelu+pre (K 20)', () => runStrided(matmulForwardDirect4(FULL), FULL, 20));
  test('selected 16-row tile, bias', () => runStrided('selected', { bias: true, gelu: false, pre: false }));
  test('problems whose block does not fit the stride are refused; the backward refuses any stride', async () => {
    const rt = await testRuntime();
    const tiled = matmulForwardTiled(PLAIN);
    expect(() => tiled.dispatch({ M: 2, K: 3, N: 4, ldo: 5, col0: 2 }, rt.limits)).toThrow(/ldo=5 must be/);
    expect(() => matmulForwardNaive(PLAIN).dispatch({ M: 2, K: 3, N: 4, ldo: 3 }, rt.limits)).toThrow(/ldo=3/);
    expect(() => tiled.dispatch({ M: 2, K: 3, N: 4, col0: -1, ldo: 8 }, rt.limits)).toThrow(/col0/);
    expect(tiled.dispatch({ M: 2, K: 3, N: 4, ldo: 9, col0: 5 }, rt.limits)).toEqual([1, 1, 1]);
    expect(() => checkMatmulProblem({ M: 2, K: 3, N: 4, ldo: 8 }, 'matmul_backward')).toThrow(/dense/);
    expect(() => checkMatmulProblem({ M: 2, K: 3, N: 4, ldo: 4, col0: 0 }, 'matmul_backward')).not.toThrow();
  });
});

test('the default strategy: subgroup or direct on a software adapter, tiled on a GPU; CODERL_MATMUL overrides it and is checked', async () => {
  const rt = await testRuntime();
  const saved = process.env.CODERL_MATMUL;
  try {
    delete process.env.CODERL_MATMUL;
    expect(subgroupStrategy(rt)).toBe(LANES ? `subgroup${LANES}` : null);
    expect(defaultMatmulStrategy(rt)).toBe(rt.adapterSummary.software ? (LANES ? `subgroup${LANES}` : 'direct') : 'tiled');
    process.env.CODERL_MATMUL = 'tiled';
    expect(defaultMatmulStrategy(rt)).toBe('tiled');
    process.env.CODERL_MATMUL = 'direct';
    expect(defaultMatmulStrategy(rt)).toBe('direct');
    // a subgroup strategy the adapter cannot run is refused with its subgroup sizes
    process.env.CODERL_MATMUL = LANES === 4 ? 'subgroup8' : 'subgroup4';
    expect(() => defaultMatmulStrategy(rt)).toThrow(/CODERL_MATMUL=subgroup\d: this adapter's subgroups are /);
    process.env.CODERL_MATMUL = 'fast';
    expect(() => defaultMatmulStrategy(rt)).toThrow(/CODERL_MATMUL must be tiled, direct, naive, subgroup4, subgroup8, got 'fast'/);
  } finally {
    if (saved === undefined) delete process.env.CODERL_MATMUL;
    else process.env.CODERL_MATMUL = saved;
  }
});
