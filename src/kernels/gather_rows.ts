/**
 * Row gather from a table stored in chunks of rows: the token embedding of a vocabulary too
 * big for one storage binding (maxStorageBufferBindingSize is often 128 MiB: 49152 x 576 f32 is
 * 108 MiB, 151936 x 896 is 519 MiB), one dispatch per chunk, each filling the rows whose id it
 * holds. With accumulate = 1 it adds instead (a learned position table, ids = positions).
 * Shader: shaders/gather_rows.wgsl.
 *
 * Shape legend: N rows (= BT), C channels, V vocabulary, a chunk holds table rows
 * [v0, v0 + rows) of the V. Row-major f32; ids u32.
 *
 * Ids are not checked on the GPU: an id no chunk holds leaves its row of out as it was.
 */
import wgsl from '../../shaders/gather_rows.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

/** N ids gathering C channels from a chunk of `rows` table rows starting at id v0; accumulate 0 or 1. */
export interface GatherRowsProblem {
  N: number;
  C: number;
  v0: number;
  rows: number;
  accumulate: number;
}

const WG = 256;

/** out (N, C) rows n with v0 <= ids[n] < v0 + rows = (or +=) table (rows, C) row ids[n] - v0. */
export const gatherRows: KernelSpec<GatherRowsProblem> = {
  name: 'gather_rows',
  wgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (N, C)
    { name: 'ids', kind: 'read-only-storage' }, // (N) u32
    { name: 'table', kind: 'read-only-storage' }, // (rows, C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => {
    if (p.accumulate !== 0 && p.accumulate !== 1) throw new Error(`gather_rows: accumulate must be 0 or 1, got ${p.accumulate}`);
    for (const k of ['v0', 'rows'] as const) {
      if (!Number.isInteger(p[k]) || p[k] < 0) throw new Error(`gather_rows: ${k} must be a non-negative integer, got ${p[k]}`);
    }
    return linearWorkgroups(p.N * p.C, WG, limits);
  },
  uniforms: (p) => new Uint32Array([p.N, p.C, p.v0, p.rows, p.accumulate]),
};

/**
 * Row chunks for a table of V rows of C f32 each: the largest number of rows whose bytes fit
 * `maxBytes` (the device's maxStorageBufferBindingSize), as [v0, rows] pairs covering [0, V).
 */
export function gatherRowChunks(V: number, C: number, maxBytes: number): [number, number][] {
  const per = Math.floor(maxBytes / (C * 4));
  if (per < 1) throw new Error(`gatherRowChunks: one row of ${C} f32 exceeds ${maxBytes} bytes`);
  const chunks: [number, number][] = [];
  for (let v0 = 0; v0 < V; v0 += per) chunks.push([v0, Math.min(per, V - v0)]);
  return chunks;
}

/** float64 reference: out (N, C) rows with v0 <= ids[n] < v0 + rows = (or +=) table (rows, C) row ids[n] - v0. */
export function gatherRowsRef(
  out: Float64Array,
  ids: ArrayLike<number>,
  table: ArrayLike<number>,
  N: number,
  C: number,
  v0: number,
  rows: number,
  accumulate: number,
): void {
  for (let n = 0; n < N; n++) {
    const r = ids[n]! - v0;
    if (r < 0 || r >= rows) continue;
    for (let c = 0; c < C; c++) out[n * C + c] = (accumulate ? out[n * C + c]! : 0) + table[r * C + c]!;
  }
}
