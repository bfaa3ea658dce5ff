/** Test helpers: a shared Node runtime per test file, and a tolerance check with a readable failure. */
import { nodeProvider } from '../gpu/node';
import { GpuRuntime } from '../gpu/runtime';
import { subgroupLanes, subgroupStrategy } from '../kernels/matmul';
import type { SubgroupLanes } from '../kernels/matmul_subgroup';
import { compareArrays, describeComparison, type Tolerance } from '../util/compare';

let shared: Promise<GpuRuntime> | null = null;

/** The runtime every GPU test in this file uses (whatever adapter exists; SwiftShader on CI). */
export function testRuntime(): Promise<GpuRuntime> {
  shared ??= nodeProvider().then((p) => GpuRuntime.create(p));
  return shared;
}

/**
 * The lanes of the subgroup matmul kernels the test runtime runs (lavapipe 8, SwiftShader 4), or
 * null where it cannot (no subgroups feature, or no fixed size they are written for).
 */
export async function testSubgroupLanes(): Promise<SubgroupLanes | null> {
  const s = subgroupStrategy(await testRuntime());
  return s ? subgroupLanes(s) : null;
}

/** A fresh runtime of its own (for tests that lose or dispose the device). */
export async function freshRuntime(): Promise<GpuRuntime> {
  return GpuRuntime.create(await nodeProvider());
}

/** Throws with the worst element and the first values when `actual` is not within tolerance. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: Tolerance, what = 'values'): void {
  const c = compareArrays(actual, expected, tol);
  if (!c.ok) throw new Error(`${what} differ from the reference:\n${describeComparison(c, actual, expected, tol)}`);
}
