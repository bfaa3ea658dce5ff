/**
 * RMSNorm forward and backward on the GPU vs their float64 references (eps as an f32 uniform:
 * rows small enough that eps dominates, and a zero row; the backward accumulating twice onto
 * random gradients); the backward reference vs central finite differences of the forward reference.
 * Shape legend: N rows (= BT), C channels; row-major f32.
 */
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { centralDiff } from '../testing/finite-diff';
import { Rng } from '../util/random';
import {
  recordRmsnormBackward,
  rmsnormBackwardChannels,
  rmsnormBackwardRef,
  rmsnormBackwardRows,
  rmsnormForward,
  rmsnormForwardRef,
  rmsnormWorkgroup,
  type RmsnormProblem,
} from './rmsnorm';

// One f32 sum of C <= 1024 squares (all positive, so no cancellation: relative error <=
// (log2(WG) + C/WG) * 2^-24, ~1e-6), inverseSqrt (a few ulp), two products: |out - ref| <=
// ~1e-6 |out|, with |out| <= ~8 here (rstd up to 1/sqrt(eps) = 1e3 on the rows where eps
// dominates, whose |x| <= 1e-3 keeps |out| <= 2). Observed on SwiftShader: max abs error 4.7e-7,
// max rel 2e-7. A wrong eps (1e-5 vs 1e-6) or a missing weight is off by more than 1e-2.
const TOL = { atol: 1e-6, rtol: 1e-5 };

/** Rows of values in [-1, 1) times a per-row scale in (0, 4]; row 1 (when N > 1) scaled by 1e-3 so eps matters. */
function rows(rng: Rng, N: number, C: number): Float32Array {
  const x = rng.float32(N * C);
  for (let n = 0; n < N; n++) {
    const scale = n === 1 ? 1e-3 : rng.uniform(0.01, 4);
    for (let c = 0; c < C; c++) x[n * C + c]! *= scale;
  }
  return x;
}

async function runForward(N: number, C: number, eps: number, wg = rmsnormWorkgroup(C), zeroRow = false): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 1009 + C);
  const inp = rows(rng, N, C);
  if (zeroRow) inp.fill(0, 0, C);
  const weight = rng.float32(C, -2, 2);
  const b = {
    out: rt.storage(N * C * 4, 'out'),
    rstd: rt.storage(N * 4, 'rstd'),
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
  };
  const rec = rt.record(`rmsnorm forward N=${N} C=${C}`);
  rec.dispatch(await rt.compile(rmsnormForward(wg)), b, { N, C, eps });
  const got = [rec.read(b.out), rec.read(b.rstd)];
  await rec.submit();
  const want = [new Float64Array(N * C), new Float64Array(N)] as const;
  rmsnormForwardRef(want[0], want[1], inp, weight, N, C, eps);
  const what = `rmsnorm N=${N} C=${C} eps=${eps} wg=${wg}`;
  expectClose(new Float32Array(await got[0]!), want[0], TOL, `${what} out`);
  expectClose(new Float32Array(await got[1]!), want[1], { atol: 0, rtol: 1e-5 }, `${what} rstd`);
  for (const buf of Object.values(b)) buf.destroy();
}

// ragged C around the 32..256-thread workgroups, up to 1024 (4 channels a thread); N = 1 included
const SHAPES: [number, number, number][] = [
  [1, 1, 1e-5],
  [1, 7, 1e-6],
  [3, 256, 1e-5],
  [5, 257, 1e-6],
  [2, 1024, 1e-5],
  [33, 100, 1e-6],
  [70, 33, 1e-5],
];

describe('rmsnorm forward matches its float64 reference', () => {
  test.each(SHAPES)('N=%i C=%i eps=%f', (N, C, eps) => runForward(N, C, eps));
  test('a 256-thread workgroup over C = 77 (idle threads)', () => runForward(4, 77, 1e-5, 256));
  test('a 32-thread workgroup over C = 576 (18 channels a thread)', () => runForward(3, 576, 1e-5, 32));
  test('a zero row gives out = 0 and rstd = 1/sqrt(eps)', () => runForward(3, 40, 1e-6, 64, true));
  test('workgroup selection and refusals', () => {
    expect(rmsnormWorkgroup(1)).toBe(32);
    expect(rmsnormWorkgroup(576)).toBe(256);
    expect(() => rmsnormForward(48)).toThrow(/power of two/);
  });
});

// Backward, per row: dinp = rstd (dn - n mean_c(dn n)) with n = x rstd (|n| <= ~2), dn = dout w
// (|dn| <= 2): one f32 sum of C <= 1024 terms of magnitude <= 4 (error ~sqrt(C) 2^-24 4 ~ 1e-5 at
// worst, then divided by C) and a few products, so |dinp - ref| <= ~1e-6 rstd whatever
// cancellation makes |dinp| small. rstd reaches 1/sqrt(eps) ~ 300 to 1000 on the rows where eps
// dominates, so dinp (less its random start) is compared divided by its row's rstd: a per-row
// atol of 1e-6 rstd. dweight: f32 sums over N <= 70 rows of |dout n| <= 2 (8 row lanes, then a
// tree), twice, onto a random start: ~N 2^-24 2 ~ 1e-5 at worst. Observed on SwiftShader:
// dinp / rstd 2.7e-7 at most, dweight 3.5e-6 (N = 70, after two passes). A missing rstd factor
// or a dropped mean term is off by 1e-2 or more (the mean term at C = 1024).
const BACKWARD_TOL = { atol: 1e-6, rtol: 1e-5 };
const DWEIGHT_TOL = { atol: 1e-5, rtol: 1e-5 };

/** Backward twice into gradients that start random: init + grad after one pass, init + 2 grad after two. */
async function runBackward(N: number, C: number, eps: number, via: 'specs' | 'record', wg = rmsnormWorkgroup(C)): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 7 + C * 13);
  const inp = rows(rng, N, C);
  const weight = rng.float32(C, -2, 2);
  const dout = rng.float32(N * C);
  const rstd64 = new Float64Array(N);
  rmsnormForwardRef(new Float64Array(N * C), rstd64, inp, weight, N, C, eps);
  const rstd = Float32Array.from(rstd64); // the GPU backward gets what the f32 forward saved
  const init = { dinp: rng.float32(N * C), dweight: rng.float32(C) };
  const b = {
    dinp: rt.upload(init.dinp, 'dinp'),
    dweight: rt.upload(init.dweight, 'dweight'),
    dout: rt.upload(dout, 'dout'),
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
    rstd: rt.upload(rstd, 'rstd'),
  };
  const rec = rt.record(`rmsnorm backward N=${N} C=${C}`);
  const reads: Promise<ArrayBuffer>[][] = [];
  for (let pass = 0; pass < 2; pass++) {
    if (via === 'record') {
      const forwardProblem: RmsnormProblem = { N, C, eps }; // the forward's problem will do
      await recordRmsnormBackward(rt, rec, b, forwardProblem);
    } else {
      rec.dispatch(await rt.compile(rmsnormBackwardRows(wg)), b, { N, C });
      rec.dispatch(await rt.compile(rmsnormBackwardChannels([16, 4])), b, { N, C });
    }
    reads.push([rec.read(b.dinp), rec.read(b.dweight)]);
  }
  await rec.submit();
  const want = { dinp: Float64Array.from(init.dinp), dweight: Float64Array.from(init.dweight) };
  const what = `rmsnorm backward N=${N} C=${C} eps=${eps}`;
  /** dinp minus its start, divided by the row's rstd (see BACKWARD_TOL). */
  const perRstd = (d: ArrayLike<number>, pass: number): Float64Array =>
    Float64Array.from({ length: N * C }, (_, i) => (d[i]! - init.dinp[i]!) / (pass + 1) / rstd[Math.floor(i / C)]!);
  for (let pass = 0; pass < 2; pass++) {
    rmsnormBackwardRef(want.dinp, want.dweight, dout, inp, weight, rstd, N, C);
    const [dinp, dweight] = (await Promise.all(reads[pass]!)).map((x) => new Float32Array(x));
    expectClose(perRstd(dinp!, pass), perRstd(want.dinp, pass), BACKWARD_TOL, `${what} dinp / rstd after pass ${pass + 1}`);
    expectClose(dweight!, want.dweight, DWEIGHT_TOL, `${what} dweight after pass ${pass + 1}`);
  }
  for (const buf of Object.values(b)) buf.destroy();
}

describe('rmsnorm backward accumulates its float64 reference', () => {
  test.each(SHAPES)('N=%i C=%i eps=%f', (N, C, eps) => runBackward(N, C, eps, 'specs'));
  test('a 32-thread workgroup over C = 576', () => runBackward(3, 576, 1e-5, 'specs', 32));
  test('via recordRmsnormBackward, N=9 C=65', () => runBackward(9, 65, 1e-6, 'record'));
});

test('rmsnormBackwardRef is the gradient of rmsnormForwardRef (finite differences), and accumulates', () => {
  const [N, C, eps] = [3, 5, 1e-5];
  const rng = new Rng(2);
  const f64 = (n: number, lo = -1, hi = 1): Float64Array => Float64Array.from(rng.float32(n, lo, hi));
  const inp = f64(N * C);
  for (let c = 0; c < C; c++) inp[C + c]! *= 1e-2; // row 1: eps is ~10% of the mean square
  const weight = f64(C, -2, 2);
  const g = f64(N * C); // loss = sum(g * out), so dout = g
  const forward = (): { out: Float64Array; rstd: Float64Array } => {
    const r = { out: new Float64Array(N * C), rstd: new Float64Array(N) };
    rmsnormForwardRef(r.out, r.rstd, inp, weight, N, C, eps);
    return r;
  };
  const loss = (): number => forward().out.reduce((s, o, i) => s + o * g[i]!, 0);
  const { rstd } = forward();
  const init = { dinp: f64(N * C), dweight: f64(C) };
  const grads = { dinp: Float64Array.from(init.dinp), dweight: Float64Array.from(init.dweight) };
  rmsnormBackwardRef(grads.dinp, grads.dweight, g, inp, weight, rstd, N, C);
  // central differences with h = 1e-6 (row 1 has |x| ~ 1e-2, where rstd ~ 1e2 curves fast):
  // truncation ~h^2 |f'''| <= 1e-12 * 1e6, rounding ~1e-16 * |loss| / h ~ 1e-10
  const tol = { atol: 1e-6, rtol: 1e-6 };
  for (const [x, grad, start, name] of [
    [inp, grads.dinp, init.dinp, 'dinp'],
    [weight, grads.dweight, init.dweight, 'dweight'],
  ] as const) {
    expectClose(
      grad.map((v, i) => v - start[i]!),
      Array.from(x, (_, i) => centralDiff(loss, x, i, 1e-6)),
      tol,
      `${name} vs finite differences`,
    );
  }
});
