import { describe, expect, test } from 'vitest';
import { linearWorkgroups } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { saxpy, saxpyRef, type SaxpyProblem } from './saxpy';

async function runSaxpy(n: number, a: number, spec = saxpy): Promise<void> {
  const rt = await testRuntime();
  const rng = new Rng(n);
  const x = rng.float32(n, -3, 3);
  const y = rng.float32(n, -3, 3);
  const xb = rt.upload(x, 'x');
  const yb = rt.upload(y, 'y');
  const rec = rt.record(`saxpy n=${n}`);
  rec.dispatch(await rt.compile(spec), { x: xb, y: yb }, { n, a });
  const out = rec.read(yb, 0, n * 4);
  await rec.submit();
  expectClose(new Float32Array(await out), saxpyRef(a, x, y), { atol: 1e-6, rtol: 1e-6 }, `saxpy n=${n}`);
  xb.destroy();
  yb.destroy();
}

describe('saxpy matches its float64 reference', () => {
  test.each([1, 3, 63, 64, 65, 1000, 4099])('n=%i', (n) => runSaxpy(n, -1.25));

  test('2-D folded dispatch (per-dimension limit forced to 7 workgroups)', async () => {
    const folded = {
      ...saxpy,
      name: 'saxpy_folded',
      dispatch: (p: SaxpyProblem) => linearWorkgroups(p.n, 64, { maxComputeWorkgroupsPerDimension: 7 } as GPUSupportedLimits),
    };
    expect(folded.dispatch({ n: 3000, a: 1 })).toEqual([7, 7, 1]); // 47 groups folded into 7x7; the shader skips the 2 extra;
    await runSaxpy(3000, 0.5, folded);
  });
});
