/**
 * A kernel is data: a name, WGSL source, its bindings, a workgroup size and how a problem maps
 * to a dispatch. It holds no GPU state; the runtime compiles it into a cached pipeline.
 *
 * Conventions for the WGSL:
 * - all bindings live in @group(0), numbered in the order of `bindings`;
 * - the workgroup size is given by overrides `WG_X` (and `WG_Y`, `WG_Z` when `workgroupSize`
 *   has 2 or 3 entries), so one shader serves several sizes;
 * - a binding of kind 'uniform' is filled from `uniforms(problem)` at each dispatch.
 */
import { GpuError } from './errors';

export type BindingKind = 'storage' | 'read-only-storage' | 'uniform';

export interface BindingSpec {
  readonly name: string;
  readonly kind: BindingKind;
}

export type WorkgroupCount = readonly [number, number, number];

export interface KernelSpec<P> {
  /** unique name; labels the pipeline and keys the cache */
  readonly name: string;
  readonly wgsl: string;
  /** default 'main' */
  readonly entryPoint?: string;
  readonly bindings: readonly BindingSpec[];
  readonly workgroupSize: readonly [number] | readonly [number, number] | readonly [number, number, number];
  /** other pipeline-overridable constants of the shader */
  readonly constants?: Readonly<Record<string, number>>;
  /** workgroup counts for a problem */
  dispatch(problem: P, limits: GPUSupportedLimits): WorkgroupCount;
  /** bytes of the uniform binding for a problem (needed when a binding has kind 'uniform') */
  uniforms?(problem: P): ArrayBufferView<ArrayBuffer>;
}

/** The override constants a pipeline is built with: WG_X/WG_Y/WG_Z plus the kernel's own. */
export function pipelineConstants(spec: KernelSpec<unknown>): Record<string, number> {
  const [x, y, z] = spec.workgroupSize;
  const c: Record<string, number> = { WG_X: x };
  if (y !== undefined) c.WG_Y = y;
  if (z !== undefined) c.WG_Z = z;
  return { ...c, ...spec.constants };
}

/** Cache key: name, entry point and constants, so variants of one shader get their own pipelines. */
export function pipelineKey(spec: KernelSpec<unknown>): string {
  const c = pipelineConstants(spec);
  const consts = Object.keys(c)
    .sort()
    .map((k) => `${k}=${c[k]}`)
    .join(',');
  const entry = spec.entryPoint && spec.entryPoint !== 'main' ? `.${spec.entryPoint}` : '';
  return `${spec.name}${entry}{${consts}}`;
}

/** Returns a copy of `spec` with other constants or workgroup size (a new pipeline variant). */
export function withConstants<P>(
  spec: KernelSpec<P>,
  change: { workgroupSize?: KernelSpec<P>['workgroupSize']; constants?: Record<string, number> },
): KernelSpec<P> {
  return {
    ...spec,
    workgroupSize: change.workgroupSize ?? spec.workgroupSize,
    constants: { ...spec.constants, ...change.constants },
  };
}

/**
 * Workgroups for `n` independent items with `perGroup` items per workgroup. When the count
 * exceeds maxComputeWorkgroupsPerDimension it is folded into 2-D; shaders recover the linear
 * index as `wid.x + wid.y * nwg.x` (see shaders/saxpy.wgsl).
 */
export function linearWorkgroups(n: number, perGroup: number, limits: GPUSupportedLimits): WorkgroupCount {
  if (!Number.isInteger(n) || n < 0) throw new GpuError('usage', `item count must be a non-negative integer, got ${n}`);
  const groups = Math.ceil(n / perGroup);
  const max = limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1, 1];
  const y = Math.ceil(groups / max);
  if (y > max) throw new GpuError('limit', `${n} items need ${groups} workgroups, more than ${max}^2`);
  return [Math.ceil(groups / y), y, 1];
}

/**
 * Threads for a one-workgroup-per-row kernel over rows of n elements, about `perThread`
 * elements each: a power of two from 32 to 256. Idle threads still pay for every barrier (on
 * SwiftShader a 256-wide LayerNorm over C = 32 ran 8x slower than a 32-wide one), so the
 * workgroup follows the row length.
 */
export function rowWorkgroup(n: number, perThread = 1): number {
  return Math.min(256, Math.max(32, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(n / perThread))))));
}
