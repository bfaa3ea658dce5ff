import wgsl from '../../shaders/reduce_sum.wgsl';
import { linearWorkgroups, withConstants, type KernelSpec } from '../gpu/kernel';
import type { Bindings, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';

/** Shape legend: N inputs, G = ceil(N / WG_X) partial sums. */
export interface ReduceProblem {
  n: number;
}

const WG = 256;

/** One pass: (N) -> (ceil(N / WG_X)) partial sums. */
export const reduceSumPass: KernelSpec<ReduceProblem> = {
  name: 'reduce_sum',
  wgsl,
  bindings: [
    { name: 'inp', kind: 'read-only-storage' }, // (N)
    { name: 'out', kind: 'storage' }, // (G)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.n, WG, limits),
  uniforms: (p) => new Uint32Array([p.n]),
};

/** A variant with another power-of-two workgroup size. */
export function reduceSumVariant(wg: number): KernelSpec<ReduceProblem> {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`reduce_sum: workgroup size must be a power of two, got ${wg}`);
  return { ...withConstants(reduceSumPass, { workgroupSize: [wg] }), dispatch: (p, limits) => linearWorkgroups(p.n, wg, limits) };
}

/**
 * Records the passes that sum `input` (N floats) into element 0 of the returned buffer.
 * Temporaries come from the runtime's pool; the caller releases the result with rt.pool.release.
 */
export async function recordSum(
  rt: GpuRuntime,
  rec: Recorder,
  input: GPUBuffer,
  n: number,
  spec: KernelSpec<ReduceProblem> = reduceSumPass,
): Promise<{ result: GPUBuffer; temporaries: GPUBuffer[] }> {
  if (n < 1) throw new Error(`reduce_sum: need at least one element, got n=${n}`);
  const kernel = await rt.compile(spec);
  const wg = spec.workgroupSize[0];
  const temporaries: GPUBuffer[] = [];
  let src = input;
  let len = n;
  do {
    const outLen = Math.ceil(len / wg);
    const dst = rt.pool.acquire(outLen * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, 'reduce partials');
    const bindings: Bindings = { inp: src, out: dst };
    rec.dispatch(kernel, bindings, { n: len });
    temporaries.push(dst);
    src = dst;
    len = outLen;
  } while (len > 1);
  return { result: src, temporaries: temporaries.slice(0, -1) };
}

/** float64 reference: the exact sum of the inputs. */
export function sumRef(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i]!;
  return s;
}
