import { describe, expect, test } from 'vitest';
import { linearWorkgroups } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  logprobBackward,
  logprobEntropyBackwardRef,
  logprobEntropyRef,
  logprobForward,
  rowLogprob,
  rowLogprobEntropy,
  type LogprobProblem,
} from './logprob';

async function runLogprob(BT: number, V: number, invTemp: number, specs = { fwd: logprobForward, bwd: logprobBackward }): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(7 * BT + V);
  const logits = rng.float32(BT * V, -6, 6);
  if (BT > 1) for (let i = 0; i < V; i++) logits[V + i]! -= 60; // far from 0: needs the max shift
  const targets = new Uint32Array(BT).map(() => Math.floor(rng.next() * V));
  if (BT > 2) targets[2] = V; // out of range: logp NaN, no one-hot term in the gradient
  const dlogp = rng.float32(BT, -1, 1);
  const dentropy = rng.float32(BT, -1, 1);
  const bufs = {
    logits: rt.upload(logits, 'logits'),
    targets: rt.upload(targets, 'targets'),
    logp: rt.storage(BT * 4, 'logp'),
    entropy: rt.storage(BT * 4, 'entropy'),
    dlogp: rt.upload(dlogp, 'dlogp'),
    dentropy: rt.upload(dentropy, 'dentropy'),
    dlogits: rt.upload(new Float32Array(BT * V).fill(7), 'dlogits'), // 7s: "written, not accumulated"
  };
  const problem: LogprobProblem = { BT, V, invTemp };
  const rec = rt.record(`logprob ${BT}x${V}`);
  const { logits: l, targets: t, logp, entropy, dlogits } = bufs;
  rec.dispatch(await rt.compile(specs.fwd), { logits: l, targets: t, logp, entropy }, problem);
  rec.dispatch(await rt.compile(specs.bwd), { logits: l, targets: t, dlogp: bufs.dlogp, dentropy: bufs.dentropy, dlogits }, problem);
  const outs = [rec.read(logp), rec.read(entropy), rec.read(dlogits)];
  await rec.submit();
  const [gotLogp, gotH, gotD] = (await Promise.all(outs)).map((b) => new Float32Array(b));

  const refLogp = new Float64Array(BT);
  const refH = new Float64Array(BT);
  const refD = new Float64Array(BT * V);
  logprobEntropyRef(refLogp, refH, logits, targets, BT, V, invTemp);
  logprobEntropyBackwardRef(refD, dlogp, dentropy, logits, targets, BT, V, invTemp);
  const nan = Array.from(refLogp, Number.isNaN);
  expect(Array.from(gotLogp!, Number.isNaN)).toEqual(nan);
  // logp = (z_t - m) - log S and H = log S - sum p (z - m): WGSL exp is good to 3 + 2|x| ulp
  // (|x| <= 24 here: ~6e-6 relative per term), log to 2^-21 absolute near 1. (SwiftShader: 8e-7.)
  const tol = { atol: 1e-5, rtol: 1e-5 };
  expectClose(
    gotLogp!.filter((_, i) => !nan[i]),
    refLogp.filter((_, i) => !nan[i]),
    tol,
    `logp ${BT}x${V}`,
  );
  expectClose(gotH!, refH, tol, `entropy ${BT}x${V}`);
  // dlogits: p carries the exp error (relative); log p + H can cancel, leaving ~1e-5 * |log p|
  // absolute times p <= 1, times |dentropy| <= 1 and invTemp <= 2. (SwiftShader: 6e-8 absolute.)
  expectClose(gotD!, refD, { atol: 5e-7, rtol: 1e-5 }, `dlogits ${BT}x${V}`);
  for (const b of Object.values(bufs)) b.destroy();
}

describe('logprob forward and backward match their float64 references', () => {
  test.each([
    [1, 1, 1],
    [3, 7, 1],
    [5, 50, 1 / 0.7],
    [20, 300, 1],
    [6, 1000, 0.5],
    [2, 4100, 2],
  ])('BT=%i V=%i invTemp=%f', (BT, V, k) => runLogprob(BT, V, k));
  test('2-D folded dispatch (per-dimension limit forced to 3 workgroups)', async () => {
    const dispatch = (p: LogprobProblem) => linearWorkgroups(p.BT, 1, { maxComputeWorkgroupsPerDimension: 3 } as GPUSupportedLimits);
    expect(dispatch({ BT: 8, V: 1, invTemp: 1 })).toEqual([3, 3, 1]); // 9 groups, 1 extra
    await runLogprob(8, 50, 1.3, {
      fwd: { ...logprobForward, name: 'logprob_forward_folded', dispatch },
      bwd: { ...logprobBackward, name: 'logprob_backward_folded', dispatch },
    });
  });
});

describe('logprob references', () => {
  test('the one-row helpers agree with the batched reference and with -sum p log p', () => {
    const V = 7;
    const rng = new Rng(5);
    const logits = Float64Array.from(rng.float32(2 * V, -3, 3));
    const lp = new Float64Array(2);
    const h = new Float64Array(2);
    logprobEntropyRef(lp, h, logits, [3, 6], 2, V, 0.8);
    const one = rowLogprobEntropy(logits, 1, V, 0.8, 6);
    expect(one.logp).toBeCloseTo(lp[1]!, 12);
    expect(one.entropy).toBeCloseTo(h[1]!, 12);
    expect(rowLogprob(logits, 1, V, 0.8, 6)).toBeCloseTo(lp[1]!, 12);
    const p = Array.from({ length: V }, (_, i) => Math.exp(rowLogprob(logits, 1, V, 0.8, i)));
    expect(one.entropy).toBeCloseTo(-p.reduce((a, q) => a + q * Math.log(q), 0), 12);
  });
  test('backward equals central differences of sum(dlogp * logp + dentropy * entropy)', () => {
    const BT = 3;
    const V = 5;
    const invTemp = 1.7;
    const rng = new Rng(11);
    const logits = Float64Array.from(rng.float32(BT * V, -2, 2));
    const targets = [4, 0, 2];
    const dlogp = [0.7, -1.2, 0.4];
    const dentropy = [-0.3, 0.9, 1.1];
    const objective = (x: Float64Array): number => {
      const lp = new Float64Array(BT);
      const h = new Float64Array(BT);
      logprobEntropyRef(lp, h, x, targets, BT, V, invTemp);
      let s = 0;
      for (let r = 0; r < BT; r++) s += dlogp[r]! * lp[r]! + dentropy[r]! * h[r]!;
      return s;
    };
    const got = new Float64Array(BT * V);
    logprobEntropyBackwardRef(got, dlogp, dentropy, logits, targets, BT, V, invTemp);
    const fd = new Float64Array(BT * V);
    const h = 1e-5;
    for (let i = 0; i < BT * V; i++) {
      const x = logits.slice();
      x[i] = logits[i]! + h;
      const up = objective(x);
      x[i] = logits[i]! - h;
      fd[i] = (up - objective(x)) / (2 * h);
    }
    // central differences: truncation O(h^2) ~ 1e-10, cancellation ~ 1e-16 / h ~ 1e-11
    expectClose(got, fd, { atol: 1e-8, rtol: 0 }, 'dlogits vs finite differences');
  });

  test('entropy of a uniform row is log V; logp of a one-hot-ish row is ~0', () => {
    const lp = new Float64Array(2);
    const h = new Float64Array(2);
    logprobEntropyRef(lp, h, [0, 0, 0, 0, 0, 0, 50, 0], [1, 2], 2, 4, 1);
    expect(h[0]).toBeCloseTo(Math.log(4), 12);
    expect(lp[0]).toBeCloseTo(-Math.log(4), 12);
    expect(lp[1]).toBeCloseTo(0, 12);
    expect(h[1]).toBeLessThan(1e-18);
  });
});
