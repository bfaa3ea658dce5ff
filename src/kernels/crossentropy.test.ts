import { describe, expect, test } from 'vitest';
import { linearWorkgroups } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { crossEntropy, crossEntropyRef, type CrossEntropyProblem } from './crossentropy';

/** Random logits (BT, V) in [-8, 8), row 1 shifted by +100 (overflows exp without the max). */
function inputs(BT: number, V: number, seed: number) {
  const rng = new Rng(seed);
  const logits = rng.float32(BT * V, -8, 8);
  if (BT > 1) for (let i = 0; i < V; i++) logits[V + i]! += 100;
  const targets = new Uint32Array(BT).map(() => Math.floor(rng.next() * V));
  const mask = new Float32Array(BT).map(() => (rng.next() < 0.25 ? 0 : rng.uniform(0.5, 1.5)));
  mask[0] = 1;
  if (BT > 3) {
    targets[2] = V + 3; // unmasked out-of-range target: NaN loss
    mask[2] = 1;
    targets[3] = V + 5; // masked out-of-range target: loss 0
    mask[3] = 0;
  }
  return { logits, targets, mask };
}

async function runCrossEntropy(BT: number, V: number, writeGrad: boolean, spec = crossEntropy): Promise<void> {
  const rt = await testRuntime();
  const { logits, targets, mask } = inputs(BT, V, 1000 * BT + V);
  const scale =
    1 /
    Math.max(
      1,
      mask.reduce((a, b) => a + b, 0),
    );
  const bufs = {
    logits: rt.upload(logits, 'logits'),
    targets: rt.upload(targets, 'targets'),
    mask: rt.upload(mask, 'mask'),
    losses: rt.storage(BT * 4, 'losses'),
    dlogits: rt.upload(new Float32Array(writeGrad ? BT * V : 1).fill(7), 'dlogits'), // 7s: "written, not accumulated"
  };
  const rec = rt.record(`crossentropy ${BT}x${V}`);
  const problem: CrossEntropyProblem = { BT, V, scale, writeGrad };
  rec.dispatch(await rt.compile(spec), bufs, problem);
  const lossOut = rec.read(bufs.losses);
  const gradOut = rec.read(bufs.dlogits);
  await rec.submit();
  const losses = new Float64Array(BT);
  const dlogits = writeGrad ? new Float64Array(BT * V) : null;
  crossEntropyRef(losses, dlogits, logits, targets, mask, BT, V, scale);

  const got = new Float32Array(await lossOut, 0, BT);
  const nan = Array.from(losses, Number.isNaN);
  expect(Array.from(got, Number.isNaN)).toEqual(nan);
  // Loss = log(sum exp(x - max)) - (x_t - max): WGSL exp is good to 3 + 2|x| ulp (|x| <= 16 here,
  // ~4e-6 relative on each term), log to 2^-21 absolute near 1; x_t - max is exact or one rounding.
  // (SwiftShader: 1.7e-6 absolute at V=1000.)
  expectClose(
    got.filter((_, i) => !nan[i]),
    losses.filter((_, i) => !nan[i]),
    { atol: 1e-5, rtol: 1e-5 },
    `losses ${BT}x${V}`,
  );
  if (dlogits) {
    // p = exp(x - max) / s: the same exp error (relative to p) plus one division; the one-hot
    // element p - 1 loses nothing further. Scaled by mask * scale <= 1.5. (SwiftShader: 1.5e-6 relative.)
    expectClose(new Float32Array(await gradOut), dlogits, { atol: 1e-7, rtol: 1e-5 }, `dlogits ${BT}x${V}`);
  } else {
    expect(new Float32Array(await gradOut)[0]).toBe(7); // the dummy is not touched
  }
  for (const b of Object.values(bufs)) b.destroy();
}

describe('crossentropy matches its float64 reference', () => {
  test.each([
    [1, 1],
    [3, 7],
    [5, 50],
    [20, 300],
    [6, 1000],
    [2, 4100],
  ])('BT=%i V=%i, loss and gradient', (BT, V) => runCrossEntropy(BT, V, true));
  test('BT=9 V=300, loss only (dummy dlogits)', () => runCrossEntropy(9, 300, false));
  test('2-D folded dispatch (per-dimension limit forced to 4 workgroups)', async () => {
    const folded = {
      ...crossEntropy,
      name: 'crossentropy_folded',
      dispatch: (p: CrossEntropyProblem) => linearWorkgroups(p.BT, 1, { maxComputeWorkgroupsPerDimension: 4 } as GPUSupportedLimits),
    };
    expect(folded.dispatch({ BT: 11, V: 1, scale: 1, writeGrad: true })).toEqual([4, 3, 1]); // 12 groups, 1 extra
    await runCrossEntropy(11, 50, true, folded);
  });
});

describe('crossEntropyRef', () => {
  test('dlogits equal scale * central differences of sum(losses)', () => {
    const BT = 4;
    const V = 6;
    const rng = new Rng(5);
    const logits = Float64Array.from(rng.float32(BT * V, -3, 3));
    const targets = [0, 5, 2, 3];
    const mask = [1, 0.5, 0, 2];
    const scale = 0.3;
    const losses = new Float64Array(BT);
    const dlogits = new Float64Array(BT * V);
    crossEntropyRef(losses, dlogits, logits, targets, mask, BT, V, scale);
    const total = (x: Float64Array): number => {
      const l = new Float64Array(BT);
      crossEntropyRef(l, null, x, targets, mask, BT, V, scale);
      return l.reduce((a, b) => a + b, 0);
    };
    const fd = new Float64Array(BT * V);
    const h = 1e-5;
    for (let i = 0; i < BT * V; i++) {
      const x = logits.slice();
      x[i] = logits[i]! + h;
      const up = total(x);
      x[i] = logits[i]! - h;
      fd[i] = (scale * (up - total(x))) / (2 * h);
    }
    // central differences: truncation O(h^2) ~ 1e-10, cancellation ~ 1e-16 / h ~ 1e-11
    expectClose(dlogits, fd, { atol: 1e-8, rtol: 0 }, 'dlogits vs finite differences');
    expect(losses[2]).toBe(0);
  });
});
