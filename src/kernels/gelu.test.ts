/**
 * GELU forward and backward on the GPU vs their float64 references; the backward reference vs
 * central finite differences of the forward one. Shape legend: N elements.
 */
import { describe, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { geluBackward, geluBackwardRef, geluForward, geluForwardRef } from './gelu';

// WGSL's tanh is only as accurate as (e^x - e^-x) / (e^x + e^-x) in f32: absolute error ~1e-7,
// scaled by 0.5 |x| <= 3 in the forward and by |x| * d/dx(u) <= ~20 in the backward's sech^2 term.
// Observed over 1e5 values in [-6, 6): forward 5.9e-7, backward 1.9e-6.
const FWD_TOL = { atol: 2e-6, rtol: 1e-5 };
const BWD_TOL = { atol: 1e-5, rtol: 1e-5 };

/** Values in [-6, 6) (where GELU bends) plus large magnitudes (tanh's argument clamped; no NaN). */
function inputs(n: number, rng: Rng): Float32Array {
  const x = rng.float32(n, -6, 6);
  const big = [0, -10, 10, -50, 50, -1e4, 1e4];
  for (let i = 0; i < Math.min(n, big.length); i++) x[(i * 37) % n] = big[i]!;
  return x;
}

async function runForward(n: number): Promise<void> {
  const rt = await testRuntime();
  const inp = inputs(n, new Rng(n + 21));
  const b = { out: rt.storage(n * 4, 'out'), inp: rt.upload(inp, 'inp') };
  const rec = rt.record(`gelu forward n=${n}`);
  rec.dispatch(await rt.compile(geluForward), b, { n });
  const got = rec.read(b.out);
  await rec.submit();
  const want = new Float64Array(n);
  geluForwardRef(want, inp, n);
  expectClose(new Float32Array(await got), want, FWD_TOL, `gelu forward n=${n}`);
  for (const buf of Object.values(b)) buf.destroy();
}

/** Backward twice into a random dinp: init + grad, then init + 2 grad. */
async function runBackward(n: number): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(n + 22);
  const inp = inputs(n, rng);
  const dout = rng.float32(n);
  const init = rng.float32(n);
  const b = { dinp: rt.upload(init, 'dinp'), inp: rt.upload(inp, 'inp'), dout: rt.upload(dout, 'dout') };
  const rec = rt.record(`gelu backward n=${n}`);
  const kernel = await rt.compile(geluBackward);
  const reads: Promise<ArrayBuffer>[] = [];
  for (let pass = 0; pass < 2; pass++) {
    rec.dispatch(kernel, b, { n });
    reads.push(rec.read(b.dinp));
  }
  await rec.submit();
  const want = Float64Array.from(init);
  for (let pass = 0; pass < 2; pass++) {
    geluBackwardRef(want, inp, dout, n);
    expectClose(new Float32Array(await reads[pass]!), want, BWD_TOL, `gelu backward n=${n} after pass ${pass + 1}`);
  }
  for (const buf of Object.values(b)) buf.destroy();
}

describe('gelu matches its float64 reference', () => {
  test.each([1, 255, 257, 4099])('forward n=%i', (n) => runForward(n));
  test.each([1, 255, 257, 4099])('backward n=%i', (n) => runBackward(n));
});

test('geluBackwardRef is the derivative of geluForwardRef (finite differences)', () => {
  const x = Float64Array.from([-6, -3, -1.5, -0.7, -0.1, 0, 0.05, 0.5, 1, 2.5, 4, 7]);
  const n = x.length;
  const dout = Float64Array.from(new Rng(5).float32(n));
  const dinp = new Float64Array(n);
  geluBackwardRef(dinp, x, dout, n);
  // h = 1e-5: truncation ~h^2 |gelu'''| < 1e-9, rounding ~1e-16 / h ~1e-11
  const h = 1e-5;
  const fd = Array.from(x, (xi, i) => {
    const y = new Float64Array(2);
    geluForwardRef(y, [xi + h, xi - h], 2);
    return ((y[0]! - y[1]!) / (2 * h)) * dout[i]!;
  });
  expectClose(dinp, fd, { atol: 1e-8, rtol: 1e-7 }, 'gelu backward vs finite differences');
});
