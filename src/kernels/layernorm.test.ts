/**
 * Layernorm forward and backward on the GPU vs their float64 references (accumulation included);
 * the backward reference vs central finite differences of the forward reference.
 * Shape legend: N rows (= BT), C channels; row-major f32.
 */
import { describe, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { centralDiff } from '../testing/finite-diff';
import {
  layernormBackwardChannels,
  layernormBackwardRef,
  layernormBackwardRows,
  layernormForward,
  layernormForwardRef,
  recordLayernormBackward,
} from './layernorm';

// f32 sums over C <= 1024 values of magnitude <= 4 (mean, variance; dnorm means in the backward;
// over N <= 70 rows for dweight/dbias): relative error ~sqrt(C) * 2^-24 in practice, times rstd
// (<= 2 here, 316 for C = 1 where the centred values are exactly 0). Observed at C = 1024:
// max abs error 1.2e-6 forward, 2.5e-6 backward (dweight, summed over 40 rows).
const TOL = { atol: 1e-5, rtol: 1e-4 };

/** Rows of values in [-1, 1) shifted by a per-row offset in [-3, 3) (|mean| > std: tests the two-pass variance). */
function rows(rng: Rng, N: number, C: number): Float32Array {
  const x = rng.float32(N * C);
  for (let n = 0; n < N; n++) {
    const shift = rng.uniform(-3, 3);
    for (let c = 0; c < C; c++) x[n * C + c]! += shift;
  }
  return x;
}

async function runForward(N: number, C: number, wg = 256): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 1009 + C);
  const inp = rows(rng, N, C);
  const weight = rng.float32(C, -2, 2);
  const bias = rng.float32(C);
  const b = {
    out: rt.storage(N * C * 4, 'out'),
    mean: rt.storage(N * 4, 'mean'),
    rstd: rt.storage(N * 4, 'rstd'),
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
    bias: rt.upload(bias, 'bias'),
  };
  const rec = rt.record(`layernorm forward N=${N} C=${C}`);
  rec.dispatch(await rt.compile(layernormForward(wg)), b, { N, C });
  const got = [rec.read(b.out), rec.read(b.mean), rec.read(b.rstd)];
  await rec.submit();
  const want = [new Float64Array(N * C), new Float64Array(N), new Float64Array(N)] as const;
  layernormForwardRef(want[0], want[1], want[2], inp, weight, bias, N, C);
  const names = ['out', 'mean', 'rstd'];
  for (let i = 0; i < 3; i++) expectClose(new Float32Array(await got[i]!), want[i]!, TOL, `layernorm N=${N} C=${C} ${names[i]}`);
  for (const buf of Object.values(b)) buf.destroy();
}

/** Backward twice into gradients that start random: init + grad after one pass, init + 2 grad after two. */
async function runBackward(N: number, C: number, via: 'specs' | 'record'): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 7 + C * 13);
  const inp = rows(rng, N, C);
  const weight = rng.float32(C, -2, 2);
  const dout = rng.float32(N * C);
  const mean64 = new Float64Array(N);
  const rstd64 = new Float64Array(N);
  layernormForwardRef(new Float64Array(N * C), mean64, rstd64, inp, rng.float32(C), rng.float32(C), N, C);
  const mean = Float32Array.from(mean64); // the GPU backward gets what the f32 forward saved
  const rstd = Float32Array.from(rstd64);
  const init = { dinp: rng.float32(N * C), dweight: rng.float32(C), dbias: rng.float32(C) };
  const b = {
    dinp: rt.upload(init.dinp, 'dinp'),
    dweight: rt.upload(init.dweight, 'dweight'),
    dbias: rt.upload(init.dbias, 'dbias'),
    dout: rt.upload(dout, 'dout'),
    inp: rt.upload(inp, 'inp'),
    weight: rt.upload(weight, 'weight'),
    mean: rt.upload(mean, 'mean'),
    rstd: rt.upload(rstd, 'rstd'),
  };
  const rec = rt.record(`layernorm backward N=${N} C=${C}`);
  const reads: Promise<ArrayBuffer>[][] = [];
  for (let pass = 0; pass < 2; pass++) {
    if (via === 'record') {
      await recordLayernormBackward(rt, rec, b, { N, C });
    } else {
      rec.dispatch(await rt.compile(layernormBackwardRows()), b, { N, C });
      rec.dispatch(await rt.compile(layernormBackwardChannels()), b, { N, C });
    }
    reads.push([rec.read(b.dinp), rec.read(b.dweight), rec.read(b.dbias)]);
  }
  await rec.submit();
  const want = [Float64Array.from(init.dinp), Float64Array.from(init.dweight), Float64Array.from(init.dbias)] as const;
  const names = ['dinp', 'dweight', 'dbias'];
  for (let pass = 0; pass < 2; pass++) {
    layernormBackwardRef(want[0], want[1], want[2], dout, inp, weight, mean, rstd, N, C);
    const got = await Promise.all(reads[pass]!);
    for (let i = 0; i < 3; i++) {
      expectClose(new Float32Array(got[i]!), want[i]!, TOL, `layernorm backward N=${N} C=${C} ${names[i]} after pass ${pass + 1}`);
    }
  }
  for (const buf of Object.values(b)) buf.destroy();
}

// ragged C around the 256-thread workgroup and the 32-channel blocks, up to 1024; N = 1 included
const SHAPES: [number, number][] = [
  [1, 1],
  [1, 7],
  [3, 256],
  [5, 257],
  [2, 1024],
  [33, 100],
  [70, 33],
];

describe('layernorm matches its float64 reference', () => {
  test.each(SHAPES)('forward N=%i C=%i', (N, C) => runForward(N, C));
  test('forward with a 32-thread workgroup, N=4 C=77', () => runForward(4, 77, 32));
  test.each(SHAPES)('backward N=%i C=%i', (N, C) => runBackward(N, C, 'specs'));
  test('backward via recordLayernormBackward, N=9 C=65', () => runBackward(9, 65, 'record'));
});

test('layernormBackwardRef is the gradient of layernormForwardRef (finite differences)', () => {
  const [N, C] = [3, 5];
  const rng = new Rng(2);
  const f64 = (n: number, lo = -1, hi = 1): Float64Array => Float64Array.from(rng.float32(n, lo, hi));
  const inp = f64(N * C);
  const weight = f64(C, -2, 2);
  const bias = f64(C);
  const g = f64(N * C); // loss = sum(g * out), so dout = g
  const forward = (): { out: Float64Array; mean: Float64Array; rstd: Float64Array } => {
    const r = { out: new Float64Array(N * C), mean: new Float64Array(N), rstd: new Float64Array(N) };
    layernormForwardRef(r.out, r.mean, r.rstd, inp, weight, bias, N, C);
    return r;
  };
  const loss = (): number => forward().out.reduce((s, o, i) => s + o * g[i]!, 0);
  const { mean, rstd } = forward();
  const grads = { dinp: new Float64Array(N * C), dweight: new Float64Array(C), dbias: new Float64Array(C) };
  layernormBackwardRef(grads.dinp, grads.dweight, grads.dbias, g, inp, weight, mean, rstd, N, C);
  // central differences with h = 1e-5: truncation ~h^2 * |f'''| ~1e-9, rounding ~1e-16 / h ~1e-11
  const tol = { atol: 1e-7, rtol: 1e-6 };
  for (const [x, grad, name] of [
    [inp, grads.dinp, 'dinp'],
    [weight, grads.dweight, 'dweight'],
    [bias, grads.dbias, 'dbias'],
  ] as const) {
    expectClose(
      grad,
      Array.from(x, (_, i) => centralDiff(loss, x, i, 1e-5)),
      tol,
      `${name} vs finite differences`,
    );
  }
});
