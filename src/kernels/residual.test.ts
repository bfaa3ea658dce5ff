/** Residual add and accumulate on the GPU vs their float64 references. Shape legend: N elements. */
import { describe, expect, test } from 'vitest';
import { linearWorkgroups } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { accumulate, accumulateRef, residualForward, residualForwardRef, type ElementwiseProblem } from './residual';

// One f32 addition, correctly rounded: |got - exact| <= 2^-24 |exact|; allow one ulp.
const TOL = { atol: 0, rtol: 2 ** -23 };

async function runResidual(n: number, spec = residualForward): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(n + 11);
  const a = rng.float32(n, -3, 3);
  const b = rng.float32(n, -3, 3);
  const bufs = { out: rt.storage(n * 4, 'out'), a: rt.upload(a, 'a'), b: rt.upload(b, 'b') };
  const rec = rt.record(`residual n=${n}`);
  rec.dispatch(await rt.compile(spec), bufs, { n });
  const got = rec.read(bufs.out);
  await rec.submit();
  const want = new Float64Array(n);
  residualForwardRef(want, a, b, n);
  expectClose(new Float32Array(await got), want, TOL, `residual n=${n}`);
  for (const buf of Object.values(bufs)) buf.destroy();
}

/** Accumulates twice into a random dst: dst + src, then dst + 2 src. */
async function runAccumulate(n: number): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(n + 12);
  const dst = rng.float32(n, -3, 3);
  const src = rng.float32(n, -3, 3);
  const bufs = { dst: rt.upload(dst, 'dst'), src: rt.upload(src, 'src') };
  const rec = rt.record(`accumulate n=${n}`);
  const kernel = await rt.compile(accumulate);
  rec.dispatch(kernel, bufs, { n });
  const once = rec.read(bufs.dst);
  rec.dispatch(kernel, bufs, { n });
  const twice = rec.read(bufs.dst);
  await rec.submit();
  const want = Float64Array.from(dst);
  accumulateRef(want, src, n);
  expectClose(new Float32Array(await once), want, TOL, `accumulate n=${n} once`);
  // the second add rounds again, from an already rounded f32 value: two roundings
  accumulateRef(want, src, n);
  expectClose(new Float32Array(await twice), want, { atol: 2 ** -23 * 3, rtol: 2 ** -23 }, `accumulate n=${n} twice`);
  for (const buf of Object.values(bufs)) buf.destroy();
}

describe('residual and accumulate match their float64 references', () => {
  test.each([1, 255, 257, 5000])('residual n=%i', (n) => runResidual(n));
  test.each([1, 255, 257, 5000])('accumulate n=%i', (n) => runAccumulate(n));
  test('residual with a 2-D folded dispatch (per-dimension limit forced to 5)', async () => {
    const fold = (p: ElementwiseProblem): ReturnType<typeof linearWorkgroups> =>
      linearWorkgroups(p.n, 256, { maxComputeWorkgroupsPerDimension: 5 } as GPUSupportedLimits);
    expect(fold({ n: 4500 })).toEqual([5, 4, 1]); // 18 groups as 5 x 4; the 2 extra write nothing
    await runResidual(4500, { ...residualForward, name: 'residual_forward_folded', dispatch: fold });
  });
});
