import { describe, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { recordSum, reduceSumPass, reduceSumVariant, sumRef } from './reduce_sum';

async function runSum(n: number, wg?: number): Promise<void> {
  const rt = await testRuntime();
  const x = new Rng(n + 7).float32(n, -2, 2);
  const xb = rt.upload(x, 'x');
  const rec = rt.record(`sum n=${n}`);
  const { result, temporaries } = await recordSum(rt, rec, xb, n, wg ? reduceSumVariant(wg) : reduceSumPass);
  const out = rec.read(result, 0, 4);
  await rec.submit();
  for (const b of [...temporaries, result]) rt.pool.release(b);
  let abs = 0;
  for (const v of x) abs += Math.abs(v);
  // float32 tree reduction: error <= ceil(log2 N) * 2^-24 * sum|x|
  const atol = Math.max(1, Math.ceil(Math.log2(n))) * 2 ** -24 * abs;
  expectClose(new Float32Array(await out), [sumRef(x)], { atol, rtol: 0 }, `sum n=${n}`);
  xb.destroy();
}

describe('reduce_sum matches its float64 reference', () => {
  test.each([1, 2, 255, 256, 257, 4099, 65537])('n=%i (workgroup 256)', (n) => runSum(n));
  test.each([
    [1000, 64],
    [1000, 128],
    [70000, 32],
  ])('n=%i (workgroup %i)', (n, wg) => runSum(n, wg));
});

test('reduce_sum with a 2-D folded dispatch (per-dimension limit forced to 6)', async () => {
  const { linearWorkgroups } = await import('../gpu/kernel');
  const spec = {
    ...reduceSumVariant(32),
    name: 'reduce_sum_folded',
    dispatch: (p: { n: number }) => linearWorkgroups(p.n, 32, { maxComputeWorkgroupsPerDimension: 6 } as GPUSupportedLimits),
  };
  const rt = await testRuntime();
  const n = 999; // 32 groups folded into 6 x 6 = 36; the 4 extra write nothing
  const x = new Rng(3).float32(n);
  const xb = rt.upload(x, 'x');
  const rec = rt.record('folded sum');
  const { result, temporaries } = await recordSum(rt, rec, xb, n, spec);
  const out = rec.read(result, 0, 4);
  await rec.submit();
  for (const b of [...temporaries, result]) rt.pool.release(b);
  expectClose(new Float32Array(await out), [sumRef(x)], { atol: 1e-4, rtol: 0 }, 'folded sum');
  xb.destroy();
});
