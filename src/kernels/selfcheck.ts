/**
 * The built-in self-check: real kernels on the live device, verified against float64
 * references. Shown by the app at start-up and printed by `coderl gpu-info`.
 */
import type { CheckResult, SelfCheckResult } from '../gpu/info';
import type { GpuRuntime } from '../gpu/runtime';
import { compareArrays, describeComparison, type Tolerance } from '../util/compare';
import { Rng } from '../util/random';
import { recordSum, sumRef } from './reduce_sum';
import { saxpy, saxpyRef } from './saxpy';
import { errorText } from '../util/errors';

export interface SelfCheckOptions {
  seed?: number;
  /** element count; deliberately not a multiple of any workgroup size */
  n?: number;
}

export async function runSelfCheck(rt: GpuRuntime, options: SelfCheckOptions = {}): Promise<SelfCheckResult> {
  const { seed = 1234, n = 4099 } = options;
  const t0 = performance.now();
  const before = { ...rt.stats };
  const created: GPUBuffer[] = [];
  try {
    const rng = new Rng(seed);
    const a = 0.75;
    const x = rng.float32(n);
    const y = rng.float32(n);
    const xBuf = rt.upload(x, 'selfcheck x');
    const yBuf = rt.upload(y, 'selfcheck y');
    created.push(xBuf, yBuf);

    const saxpyK = await rt.compile(saxpy);
    const rec = rt.record('self-check', { profile: true });
    rec.dispatch(saxpyK, { x: xBuf, y: yBuf }, { n, a });
    const { result, temporaries } = await recordSum(rt, rec, yBuf, n);
    const yOut = rec.read(yBuf, 0, n * 4);
    const sumOut = rec.read(result, 0, 4);
    const report = await rec.submit();
    for (const t of [...temporaries, result]) rt.pool.release(t);

    const yGot = new Float32Array(await yOut);
    const yRef = saxpyRef(a, x, y);
    const yTol = { atol: 1e-6, rtol: 1e-6 };
    const yCmp = compareArrays(yGot, yRef, yTol);

    // The reduction sums what the GPU wrote; bound its float32 rounding by the magnitude sum.
    const sumGot = new Float32Array(await sumOut)[0]!;
    const sumExpected = sumRef(yGot);
    let abs = 0;
    for (const v of yGot) abs += Math.abs(v);
    const sTol = { atol: 1e-6 * abs, rtol: 0 }; // tree error <= ceil(log2 N) * 2^-24 * sum|y|
    const sCmp = compareArrays([sumGot], [sumExpected], sTol);

    const checks: CheckResult[] = [
      check('saxpy', n, yCmp.ok, yCmp.maxAbsDiff, yTol, yCmp.ok ? undefined : describeComparison(yCmp, yGot, yRef, yTol)),
      check('reduce_sum', n, sCmp.ok, sCmp.maxAbsDiff, sTol, sCmp.ok ? undefined : `got ${sumGot}, want ${sumExpected}`),
    ];
    return {
      ok: checks.every((c) => c.ok),
      checks,
      dispatches: rt.stats.dispatches - before.dispatches,
      submits: rt.stats.submits - before.submits,
      gpuTimings: report.timings,
      wallMs: performance.now() - t0,
    };
  } catch (e) {
    return {
      ok: false,
      checks: [],
      dispatches: rt.stats.dispatches - before.dispatches,
      submits: rt.stats.submits - before.submits,
      gpuTimings: null,
      wallMs: performance.now() - t0,
      error: errorText(e),
    };
  } finally {
    if (rt.state === 'ready') for (const b of created) b.destroy();
  }
}

function check(name: string, n: number, ok: boolean, maxAbsDiff: number, tolerance: Tolerance, detail?: string): CheckResult {
  return detail ? { name, n, ok, maxAbsDiff, tolerance, detail } : { name, n, ok, maxAbsDiff, tolerance };
}
