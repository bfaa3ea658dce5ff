/**
 * The built-in self-check: real kernels on the live device, verified against float64
 * references. Shown by the app at start-up and printed by `coderl gpu-info`. Besides saxpy and
 * the reduction it runs the matmul forward this adapter's strategy selects (`matmul subgroup4`
 * on SwiftShader, `matmul tiled` on a GPU), on a shape ragged against every tile, so an adapter
 * where that kernel's assumptions fail (a subgroup kernel's lanes, say) shows it here.
 */
import type { CheckResult, SelfCheckResult } from '../gpu/info';
import type { GpuRuntime } from '../gpu/runtime';
import { compareArrays, describeComparison, type Tolerance } from '../util/compare';
import { Rng } from '../util/random';
import type { KernelSpec } from '../gpu/kernel';
import {
  defaultMatmulStrategy,
  isMatmulStrategy,
  matmulForwardBindings,
  matmulForwardRef,
  selectMatmulForward,
  type MatmulProblem,
  type MatmulStrategy,
} from './matmul';
import { recordSum, sumRef } from './reduce_sum';
import { saxpy, saxpyRef } from './saxpy';
import { errorText } from '../util/errors';

export interface SelfCheckOptions {
  seed?: number;
  /** element count; deliberately not a multiple of any workgroup size */
  n?: number;
}

/** The matmul check's shape: K a multiple of 4 (the shapes models have), M and N past every tile's multiple. */
const MATMUL_CHECK: MatmulProblem = { M: 37, K: 36, N: 67 };

/** The check's name for a strategy (`matmul subgroup4`), and back (null: not a matmul check). */
export function matmulCheckName(strategy: MatmulStrategy): string {
  return `matmul ${strategy}`;
}
export function matmulCheckStrategy(name: string): MatmulStrategy | null {
  const s = name.startsWith('matmul ') ? name.slice('matmul '.length) : '';
  return isMatmulStrategy(s) ? s : null;
}

/** The kernel the matmul check runs for a strategy (the app's Kernels tab shows its WGSL). */
export function selfCheckMatmulSpec(strategy: MatmulStrategy): KernelSpec<MatmulProblem> {
  return selectMatmulForward(MATMUL_CHECK, { bias: true, gelu: false, pre: false }, strategy);
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

    // the matmul: out (M, N) = inp (M, K) . weight (N, K)^T + bias
    const strategy = defaultMatmulStrategy(rt);
    const mm = MATMUL_CHECK;
    const inp = rng.float32(mm.M * mm.K);
    const weight = rng.float32(mm.N * mm.K);
    const bias = rng.float32(mm.N);
    const mmBufs = {
      out: rt.storage(mm.M * mm.N * 4, 'selfcheck matmul out'),
      inp: rt.upload(inp, 'selfcheck matmul inp'),
      weight: rt.upload(weight, 'selfcheck matmul weight'),
      bias: rt.upload(bias, 'selfcheck matmul bias'),
    };
    created.push(...Object.values(mmBufs));

    const saxpyK = await rt.compile(saxpy);
    const rec = rt.record('self-check', { profile: true });
    rec.dispatch(saxpyK, { x: xBuf, y: yBuf }, { n, a });
    const { result, temporaries } = await recordSum(rt, rec, yBuf, n);
    rec.dispatch(await rt.compile(selfCheckMatmulSpec(strategy)), matmulForwardBindings(rt, mmBufs), mm);
    const yOut = rec.read(yBuf, 0, n * 4);
    const sumOut = rec.read(result, 0, 4);
    const mmOut = rec.read(mmBufs.out);
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

    // f32 dot products of 36 terms of |x| < 1 against float64 (as src/kernels/matmul.test.ts)
    const mmGot = new Float32Array(await mmOut);
    const mmRef = new Float64Array(mm.M * mm.N);
    matmulForwardRef(mmRef, inp, weight, bias, mm.M, mm.K, mm.N);
    const mTol = { atol: 1e-5, rtol: 1e-4 };
    const mCmp = compareArrays(mmGot, mmRef, mTol);

    const checks: CheckResult[] = [
      check('saxpy', n, yCmp.ok, yCmp.maxAbsDiff, yTol, yCmp.ok ? undefined : describeComparison(yCmp, yGot, yRef, yTol)),
      check('reduce_sum', n, sCmp.ok, sCmp.maxAbsDiff, sTol, sCmp.ok ? undefined : `got ${sumGot}, want ${sumExpected}`),
      check(
        matmulCheckName(strategy),
        mm.M * mm.N,
        mCmp.ok,
        mCmp.maxAbsDiff,
        mTol,
        mCmp.ok ? undefined : `${mm.M}x${mm.K}x${mm.N}: ${describeComparison(mCmp, mmGot, mmRef, mTol)}`,
      ),
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
