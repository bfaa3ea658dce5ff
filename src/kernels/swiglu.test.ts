/**
 * SwiGLU forward and backward on the GPU vs their float64 references (large |gate| included,
 * where a naive exp(-x) overflows; the backward accumulating twice onto a random dgu); the
 * backward reference vs central finite differences.
 * Shape legend: N rows (= BT), F hidden features; gu (N, 2F) = [gate | up]. Row-major f32.
 */
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { centralDiff } from '../testing/finite-diff';
import { Rng } from '../util/random';
import { siluScalar, swigluBackward, swigluBackwardRef, swigluForward, swigluForwardRef } from './swiglu';

// Per output: exp (a few ulp on [-inf, 0]), one division, two products: relative error ~1e-6
// of |out| (<= 16 here, 4e30 with the extreme gates); atol covers silu's zero crossing.
// Observed on SwiftShader: max relative error 4.3e-7 (abs 1.6e-6 at |out| ~ 16). A gate/up swap
// or a wrong sign is off by O(1).
const TOL = { atol: 1e-6, rtol: 1e-5 };

async function runForward(N: number, F: number, extremes = false): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 101 + F);
  const gu = rng.float32(N * 2 * F, -4, 4); // gate and up in [-4, 4)
  if (extremes) {
    // gates far past where exp(-x) overflows f32 (x < -88) or the sigmoid saturates
    const gates = [-1e30, -1000, -100, -88.8, -20, -1e-30, 0, 1e-30, 20, 88.8, 100, 1000, 1e30];
    gates.forEach((g, i) => (gu[(i % N) * 2 * F + Math.floor(i / N)] = g));
  }
  const b = { out: rt.storage(N * F * 4, 'out'), gu: rt.upload(gu, 'gu') };
  const rec = rt.record(`swiglu N=${N} F=${F}`);
  rec.dispatch(await rt.compile(swigluForward), b, { N, F });
  const got = rec.read(b.out);
  await rec.submit();
  const want = new Float64Array(N * F);
  swigluForwardRef(want, gu, N, F);
  // with |gate| up to 1e30 the products reach 4e30: relative error only
  expectClose(new Float32Array(await got), want, TOL, `swiglu N=${N} F=${F}`);
  for (const buf of Object.values(b)) buf.destroy();
}

describe('swiglu forward matches its float64 reference', () => {
  test.each([
    [1, 1],
    [3, 7],
    [5, 257],
    [17, 100],
    [2, 1536], // SmolLM2-135M's intermediate size
  ])('N=%i F=%i', (N, F) => runForward(N, F));
  test('gates of |x| up to 1e30 stay finite and exact to rounding', () => runForward(3, 9, true));
});

// Backward: per element exp, one division and three or four products (relative error ~1e-6 of
// each term), then one f32 addition per pass onto the random start: |dgu| <= ~18 a pass (|dout|
// <= 1, |up| <= 4, |silu'| <= 1.1, |silu| <= 4) without the extremes, so after two passes the
// additions' rounding alone is up to 2^-24 * 36 ~ 2e-6 absolute; rtol covers the rest. With gates
// of 1e30 the dup terms reach 1e30: relative only. Observed on SwiftShader: max abs error 1.9e-6
// after two passes (F = 1536), relative 2e-6 on the extremes. A gate/up swap or a missing silu'
// term is off by O(1).
const BACKWARD_TOL = { atol: 4e-6, rtol: 1e-5 };

/** Backward twice into a dgu that starts random: init + grad after one pass, init + 2 grad after two. */
async function runBackward(N: number, F: number, extremes = false): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(N * 37 + F);
  const gu = rng.float32(N * 2 * F, -4, 4);
  if (extremes) {
    const gates = [-1e30, -1000, -100, -88.8, -20, -1e-30, 0, 1e-30, 20, 88.8, 100, 1000, 1e30];
    gates.forEach((g, i) => (gu[(i % N) * 2 * F + Math.floor(i / N)] = g));
  }
  const dout = rng.float32(N * F);
  const init = rng.float32(N * 2 * F);
  const b = { dgu: rt.upload(init, 'dgu'), dout: rt.upload(dout, 'dout'), gu: rt.upload(gu, 'gu') };
  const kernel = await rt.compile(swigluBackward);
  const rec = rt.record(`swiglu backward N=${N} F=${F}`);
  const reads = [0, 1].map(() => rec.dispatch(kernel, b, { N, F }).read(b.dgu));
  await rec.submit();
  const want = Float64Array.from(init);
  for (let pass = 0; pass < 2; pass++) {
    swigluBackwardRef(want, dout, gu, N, F);
    expectClose(new Float32Array(await reads[pass]!), want, BACKWARD_TOL, `swiglu backward N=${N} F=${F} after pass ${pass + 1}`);
  }
  for (const buf of Object.values(b)) buf.destroy();
}

describe('swiglu backward accumulates its float64 reference', () => {
  test.each([
    [1, 1],
    [3, 7],
    [5, 257],
    [2, 1536],
  ])('N=%i F=%i', (N, F) => runBackward(N, F));
  test('gates of |x| up to 1e30 give finite gradients, exact to rounding', () => runBackward(3, 9, true));
});

test('silu in float64 at the extremes', () => {
  expect(siluScalar(-1000)).toBe(-0);
  expect(siluScalar(1000)).toBe(1000);
  expect(siluScalar(0)).toBe(0);
  expect(siluScalar(1)).toBeCloseTo(1 / (1 + Math.exp(-1)), 15);
  expect(siluScalar(-3)).toBeCloseTo(-3 / (1 + Math.exp(3)), 15);
});

test('swigluBackwardRef is the gradient of swigluForwardRef (finite differences), and accumulates', () => {
  const [N, F] = [3, 4];
  const rng = new Rng(3);
  const gu = Float64Array.from(rng.float32(N * 2 * F, -4, 4));
  const g = Float64Array.from(rng.float32(N * F)); // loss = sum(g * out), so dout = g
  const loss = (): number => {
    const out = new Float64Array(N * F);
    swigluForwardRef(out, gu, N, F);
    return out.reduce((s, o, i) => s + o * g[i]!, 0);
  };
  const init = Float64Array.from(rng.float32(N * 2 * F));
  const dgu = Float64Array.from(init);
  swigluBackwardRef(dgu, g, gu, N, F);
  // h = 1e-5: truncation ~h^2 |f'''| ~1e-10, rounding ~1e-16 / h ~1e-11
  expectClose(
    dgu.map((v, i) => v - init[i]!),
    Array.from(gu, (_, i) => centralDiff(loss, gu, i, 1e-5)),
    { atol: 1e-8, rtol: 1e-7 },
    'dgu vs finite differences',
  );
});
