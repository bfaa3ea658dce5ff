/**
 * Matmul backward, accumulating into the gradients (zeroed once per optimizer step, so several
 * backward passes add up: gradient accumulation):
 *   dinp (M, K)    += dout (M, N) · weight (N, K)      shaders/matmul_backward_dmat.wgsl, A_T = false
 *   dweight (N, K) += dout^T (N, M) · inp (M, K)       shaders/matmul_backward_dmat.wgsl, A_T = true
 *   dbias (N)      += column sums of dout (M, N)        shaders/matmul_backward_dbias.wgsl
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * Here M = BT rows, K = C inner, N = OC columns. All tensors row-major f32.
 *
 * Deterministic: every gradient element is owned by one thread that sums in a fixed order and
 * adds once (the reduction over M for dweight runs inside the owning thread's loop; dbias's over
 * row lanes in a fixed tree). No atomics, no racing writes.
 *
 * Strided dout: as the forward writes a column block of a wider output (MatmulProblem ldo, col0),
 * the two matrix products read dout (M, N) as the columns [col0, col0 + N) of an (M, ldo) matrix:
 * the LM head of a vocabulary in chunks takes each chunk's block of the (M, V) dlogits in place.
 * dbias reads a dense dout only (recordMatmulBackward refuses a strided problem with a bias).
 * A frozen weight (LoRA's base) passes dweight: null, and only dinp is computed; it may be stored
 * packed as f16 / bf16 (MatmulBackwardBuffers.weightFormat, ./weight_format.ts), which only a
 * frozen weight can be.
 */
import dbiasWgsl from '../../shaders/matmul_backward_dbias.wgsl';
import dmatWgsl from '../../shaders/matmul_backward_dmat.wgsl';
import { linearWorkgroups, type KernelSpec, type WorkgroupCount } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import {
  checkMatmulOutput,
  checkMatmulProblem,
  defaultMatmulStrategy,
  matmulWorkgroup,
  subgroupLanes,
  type MatmulProblem,
  type MatmulStrategy,
  type MatmulWorkgroup,
  type SubgroupStrategy,
} from './matmul';
import { subgroupDmatWgsl, subgroupTile, type SubgroupLanes, type SubgroupTile } from './matmul_subgroup';
import { formatName, weightReader, weightReader4, type WeightFormat } from './weight_format';

/** The float64 reference lives beside the forward one (src/model/cpu.ts imports both from ./matmul). */
export { matmulBackwardRef } from './matmul';

/** Which matrix gradient a dmat kernel computes. */
export type MatmulGrad = 'dinp' | 'dweight';

/** grad (R, S) += op(a) (R, Q) · b (Q, S): the generic product of the dmat shader. */
function dims(p: MatmulProblem, grad: MatmulGrad): { R: number; Q: number; S: number } {
  return grad === 'dinp' ? { R: p.M, Q: p.N, S: p.K } : { R: p.N, Q: p.M, S: p.K };
}

/**
 * A dmat kernel of the shader: a strategy other than the subgroup ones (matmulBackwardSubgroup),
 * direct4 (direct with b read four at a time; S = K a multiple of 4),
 * or direct4a (direct4 with dout read four at a time too; N, ldo and col0 multiples of 4 as well).
 */
type DmatKernel = Exclude<MatmulStrategy, SubgroupStrategy> | 'direct4' | 'direct4a';

/** Whether direct4a can run p: K, N, ldo and col0 all multiples of 4. */
function fitsDirect4a(p: MatmulProblem): boolean {
  return [p.K, p.N, p.ldo ?? p.N, p.col0 ?? 0].every((x) => x % 4 === 0);
}

function dmatBindings(grad: MatmulGrad): KernelSpec<MatmulProblem>['bindings'] {
  return grad === 'dinp'
    ? [
        { name: 'dinp', kind: 'storage' }, // (M, K), accumulated
        { name: 'dout', kind: 'read-only-storage' }, // (M, ldo), columns [col0, col0 + N)
        { name: 'weight', kind: 'read-only-storage' }, // (N, K)
        { name: 'params', kind: 'uniform' },
      ]
    : [
        { name: 'dweight', kind: 'storage' }, // (N, K), accumulated
        { name: 'dout', kind: 'read-only-storage' }, // (M, ldo), columns [col0, col0 + N), read transposed
        { name: 'inp', kind: 'read-only-storage' }, // (M, K)
        { name: 'params', kind: 'uniform' },
      ];
}

/** The shader's Params for p, after `check` (a kernel's shape requirements) passes. */
function dmatUniforms(grad: MatmulGrad, check: (p: MatmulProblem) => void): (p: MatmulProblem) => Uint32Array<ArrayBuffer> {
  return (p) => {
    checkMatmulOutput(p, `matmul_backward_${grad}`);
    check(p);
    const d = dims(p, grad);
    return new Uint32Array([d.R, d.Q, d.S, p.ldo ?? p.N, p.col0 ?? 0]);
  };
}

function checkPacked(grad: MatmulGrad, format: WeightFormat): void {
  if (grad === 'dweight' && format !== 'f32')
    throw new Error('matmul_backward_dweight: its b is the f32 input; only dinp reads a packed weight');
}

function direct4aRefusal(grad: MatmulGrad, kernel: string, p: MatmulProblem): string {
  return (
    `matmul_backward_${grad}_${kernel}: K=${p.K}, N=${p.N}, ldo=${p.ldo ?? p.N}, col0=${p.col0 ?? 0} must all be ` +
    'multiples of 4 (use direct4 or direct)'
  );
}

function dmatSpec(grad: MatmulGrad, strategy: DmatKernel, wg: MatmulWorkgroup, format: WeightFormat): KernelSpec<MatmulProblem> {
  const [wx, wy] = wg;
  const per = strategy === 'naive' ? 1 : 4; // outputs per thread along each axis
  checkPacked(grad, format);
  return {
    name: formatName(`matmul_backward_${grad}_${strategy}`, format),
    wgsl: dmatWgsl + (strategy === 'direct4' || strategy === 'direct4a' ? weightReader4 : weightReader)('b', 2, format),
    entryPoint: strategy === 'tiled' ? 'main' : strategy,
    bindings: dmatBindings(grad),
    workgroupSize: [wx, wy],
    constants: { A_T: grad === 'dweight' ? 1 : 0 },
    dispatch: (p) => {
      const d = dims(p, grad);
      return [Math.ceil(d.S / (per * wx)), Math.ceil(d.R / (per * wy)), 1] satisfies WorkgroupCount;
    },
    uniforms: dmatUniforms(grad, (p) => {
      if (strategy === 'direct4' && p.K % 4 !== 0)
        throw new Error(`matmul_backward_${grad}_direct4: K=${p.K} is not a multiple of 4 (use the direct kernel)`);
      if (strategy === 'direct4a' && !fitsDirect4a(p)) throw new Error(direct4aRefusal(grad, strategy, p));
    }),
  };
}

/**
 * The subgroup kernel of one product (./matmul_subgroup.ts): a workgroup is one subgroup of
 * `lanes` invocations (the adapter's fixed subgroup size) owning tile.rows * lanes rows and
 * tile.cols * lanes * 4 columns of the gradient. K a multiple of 4; dinp also N, ldo and col0
 * (dout read four values a load), dweight any M.
 */
export function matmulBackwardSubgroup(
  grad: MatmulGrad,
  lanes: SubgroupLanes,
  tile: SubgroupTile,
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  checkPacked(grad, format);
  const kernel = `sg${lanes}_${tile.rows}x${tile.cols}`;
  return {
    name: formatName(`matmul_backward_${grad}_${kernel}`, format),
    wgsl: 'enable subgroups;\n' + subgroupDmatWgsl(lanes, tile, grad === 'dweight') + weightReader4('b', 2, format),
    bindings: dmatBindings(grad),
    workgroupSize: [lanes],
    dispatch: (p) => {
      const d = dims(p, grad);
      return [Math.ceil(d.S / (4 * lanes * tile.cols)), Math.ceil(d.R / (lanes * tile.rows)), 1] satisfies WorkgroupCount;
    },
    uniforms: dmatUniforms(grad, (p) => {
      if (grad === 'dinp' && !fitsDirect4a(p)) throw new Error(direct4aRefusal(grad, kernel, p));
      if (p.K % 4 !== 0) throw new Error(`matmul_backward_${grad}_${kernel}: K=${p.K} is not a multiple of 4 (use the direct kernel)`);
    }),
  };
}

/** dinp (M, K) += dout (M, N) · weight (N, K), weight stored in `format`. Tiled: workgroup [wx, wy] owns a (4*wy) x (4*wx) tile. */
export function matmulBackwardInp(
  strategy: DmatKernel = 'tiled',
  wg: MatmulWorkgroup = [16, 16],
  format: WeightFormat = 'f32',
): KernelSpec<MatmulProblem> {
  return dmatSpec('dinp', strategy, wg, format);
}

/** dweight (N, K) += dout^T · inp (M, K). Tiled: workgroup [wx, wy] owns a (4*wy) x (4*wx) tile. */
export function matmulBackwardWeight(strategy: DmatKernel = 'tiled', wg: MatmulWorkgroup = [16, 16]): KernelSpec<MatmulProblem> {
  return dmatSpec('dweight', strategy, wg, 'f32');
}

const BIAS_WG = [32, 8] as const; // 32 columns per workgroup, 8 row lanes

/** dbias (N) += column sums of dout (M, N). */
export const matmulBackwardBias: KernelSpec<MatmulProblem> = {
  name: 'matmul_backward_dbias',
  wgsl: dbiasWgsl,
  bindings: [
    { name: 'dbias', kind: 'storage' }, // (N), accumulated
    { name: 'dout', kind: 'read-only-storage' }, // (M, N)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: BIAS_WG,
  dispatch: (p, limits) => linearWorkgroups(p.N, BIAS_WG[0], limits),
  uniforms: (p) => new Uint32Array([p.M, p.N]),
};

/**
 * Kernel selection for the two products: tiled with the row count of the product picking the
 * tile (as the forward does), naive, or direct: direct4a where the shape allows, else direct4
 * where K does, else direct. A subgroup strategy runs matmulBackwardSubgroup where the product
 * allows it (dinp: K, N, ldo, col0 multiples of 4; dweight: K) and falls back to direct's choice.
 */
export function selectMatmulBackward(
  p: MatmulProblem,
  strategy: MatmulStrategy = 'tiled',
  format: WeightFormat = 'f32',
): { dinp: KernelSpec<MatmulProblem>; dweight: KernelSpec<MatmulProblem> } {
  if (strategy === 'naive') return { dinp: matmulBackwardInp('naive', [16, 16], format), dweight: matmulBackwardWeight('naive') };
  const lanes = subgroupLanes(strategy);
  const kernel: DmatKernel = strategy === 'tiled' ? strategy : fitsDirect4a(p) ? 'direct4a' : p.K % 4 === 0 ? 'direct4' : 'direct';
  return {
    dinp:
      lanes && fitsDirect4a(p)
        ? matmulBackwardSubgroup('dinp', lanes, subgroupTile('dmat', lanes, p.M), format)
        : matmulBackwardInp(kernel, matmulWorkgroup({ M: p.M, K: p.N, N: p.K }), format),
    dweight:
      lanes && p.K % 4 === 0
        ? matmulBackwardSubgroup('dweight', lanes, subgroupTile('dmat', lanes, p.N))
        : matmulBackwardWeight(kernel, matmulWorkgroup({ M: p.N, K: p.M, N: p.K })),
  };
}

export interface MatmulBackwardBuffers {
  dinp: BufferBinding; // (M, K), accumulated
  dweight: BufferBinding | null; // (N, K), accumulated; null for a frozen weight (not computed)
  dbias?: BufferBinding | null; // (N), accumulated; absent when the layer has no bias (or it is frozen)
  dout: BufferBinding; // (M, ldo), columns [col0, col0 + N) (dense (M, N) by default)
  inp: BufferBinding; // (M, K)
  weight: BufferBinding; // (N, K)
  /** how `weight` is stored (default f32); a packed one must be frozen (dweight null) */
  weightFormat?: WeightFormat;
}

/**
 * Records the backward of out = inp · weight^T + bias: one to three dispatches (dinp; dweight
 * unless frozen; dbias when given). dout may be strided (p.ldo, p.col0) unless there is a dbias.
 */
export async function recordMatmulBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: MatmulBackwardBuffers,
  p: MatmulProblem,
  strategy: MatmulStrategy = defaultMatmulStrategy(rt),
): Promise<void> {
  checkMatmulProblem(p, 'matmul_backward', !b.dbias);
  const format = b.weightFormat ?? 'f32';
  if (format !== 'f32' && b.dweight)
    throw new Error(`matmul_backward: a ${format} weight is frozen storage, it has no gradient (dweight must be null)`);
  const specs = selectMatmulBackward(p, strategy, format);
  rec.dispatch(await rt.compile(specs.dinp), { dinp: b.dinp, dout: b.dout, weight: b.weight }, p);
  if (b.dweight) rec.dispatch(await rt.compile(specs.dweight), { dweight: b.dweight, dout: b.dout, inp: b.inp }, p);
  if (b.dbias) rec.dispatch(await rt.compile(matmulBackwardBias), { dbias: b.dbias, dout: b.dout }, p);
}
