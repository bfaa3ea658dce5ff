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
 * The table may be stored packed as f16 / bf16 (gatherRowsFor(format), ./weight_format.ts): a frozen
 * embedding at half the memory. Its chunks then hold twice the rows (gatherRowChunks' elemBytes).
 *
 * Ids are not checked on the GPU: an id no chunk holds leaves its row of out as it was.
 *
 * Backward (recordGatherRowsBackward): the scatter-add dtable[ids[n] - v0] += dout[n] into each
 * chunk's gradient. Ids repeat, so it is made race-free and deterministic as embedding_backward
 * does it, with the same shader (shaders/embedding_backward.wgsl, entry point `buckets`): the rows
 * of each chunk are grouped by id on the CPU (gatherRowsBuckets, a counting sort), and one
 * workgroup per distinct id owns that chunk row and adds its dout rows in ascending n. Here the
 * ids must be on the CPU (an RL step knows its tokens there) and each must lie in exactly one
 * chunk: a gradient silently dropped (or added twice) would be worse than an error.
 */
import wgsl from '../../shaders/gather_rows.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { embeddingBackwardBuckets, embeddingBuckets } from './embedding';
import { formatName, weightReader, type WeightFormat } from './weight_format';

/** N ids gathering C channels from a chunk of `rows` table rows starting at id v0; accumulate 0 or 1. */
export interface GatherRowsProblem {
  N: number;
  C: number;
  v0: number;
  rows: number;
  accumulate: number;
}

const WG = 256;

/** out (N, C) rows n with v0 <= ids[n] < v0 + rows = (or +=) table (rows, C) row ids[n] - v0; the table stored in `format`. */
export const gatherRowsFor = (format: WeightFormat): KernelSpec<GatherRowsProblem> => ({
  name: formatName('gather_rows', format),
  wgsl: wgsl + weightReader('table', 2, format),
  bindings: [
    { name: 'out', kind: 'storage' }, // (N, C)
    { name: 'ids', kind: 'read-only-storage' }, // (N) u32
    { name: 'table', kind: 'read-only-storage' }, // (rows, C), f32 or packed 16-bit
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
});

/** gatherRowsFor('f32'): a table of floats. */
export const gatherRows: KernelSpec<GatherRowsProblem> = gatherRowsFor('f32');

/**
 * Row chunks for a table of V rows of C elements of `elemBytes` each (4: f32, 2: packed 16-bit,
 * whose odd element count pads a last word): the largest number of rows whose bytes fit
 * `maxBytes` (the device's maxStorageBufferBindingSize), as [v0, rows] pairs covering [0, V).
 */
export function gatherRowChunks(V: number, C: number, maxBytes: number, elemBytes: 4 | 2 = 4): [number, number][] {
  const per = Math.floor((elemBytes === 4 ? maxBytes : maxBytes - 2) / (C * elemBytes));
  if (per < 1) throw new Error(`gatherRowChunks: one row of ${C} ${elemBytes === 4 ? 'f32' : '16-bit'} elements exceeds ${maxBytes} bytes`);
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

/**
 * The rows n whose id lies in the chunk [v0, v0 + rows), grouped by id for the `buckets` shader
 * of embedding_backward: [ids - v0 (NB) | starts (NB + 1) | n (count)], buckets by ascending id,
 * the n of a bucket ascending (embeddingBuckets on the chunk's own rows, mapped back to n).
 */
export function gatherRowsBuckets(ids: ArrayLike<number>, v0: number, rows: number): { index: Uint32Array<ArrayBuffer>; NB: number } {
  const picked: number[] = []; // n of the chunk's rows, ascending
  const local: number[] = []; // their ids - v0
  for (let n = 0; n < ids.length; n++) {
    const r = ids[n]! - v0;
    if (r >= 0 && r < rows) {
      picked.push(n);
      local.push(r);
    }
  }
  const { index, NB } = embeddingBuckets(local, rows);
  for (let k = 2 * NB + 1; k < index.length; k++) index[k] = picked[index[k]!]!;
  return { index, NB };
}

/** Throws unless every id is an integer that lies in exactly one of the chunks. */
export function checkGatherIds(ids: ArrayLike<number>, chunks: readonly (readonly [number, number])[]): void {
  for (let n = 0; n < ids.length; n++) {
    const id = ids[n]!;
    const holders = chunks.filter(([v0, rows]) => id >= v0 && id < v0 + rows).length;
    if (!Number.isInteger(id) || holders !== 1) {
      const where = holders > 1 ? `in ${holders} chunks` : 'in no chunk';
      throw new Error(`gather_rows backward: ids[${n}] = ${id} is ${Number.isInteger(id) ? where : 'not an integer'}`);
    }
  }
}

export interface GatherRowsBackwardBuffers {
  /** one per chunk, in the order of `chunks`: (rows, C) each, accumulated */
  dtables: readonly BufferBinding[];
  dout: BufferBinding; // (N, C)
}

/**
 * Records dtables[k] += the dout rows whose ids chunk k holds, for the chunks [v0, rows] of the
 * forward (gatherRowChunks): validates the ids (checkGatherIds), builds and uploads each chunk's
 * buckets and dispatches once per chunk that any id falls in. Returns the index buffers, which the
 * caller destroys once the recording has been submitted.
 */
export async function recordGatherRowsBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: GatherRowsBackwardBuffers,
  ids: ArrayLike<number>,
  chunks: readonly (readonly [number, number])[],
  p: { N: number; C: number },
): Promise<GPUBuffer[]> {
  if (ids.length !== p.N) throw new Error(`gather_rows backward: ${ids.length} ids for N = ${p.N}`);
  if (b.dtables.length !== chunks.length)
    throw new Error(`gather_rows backward: ${b.dtables.length} gradient tables for ${chunks.length} chunks`);
  checkGatherIds(ids, chunks);
  const kernel = await rt.compile(embeddingBackwardBuckets);
  const temporaries: GPUBuffer[] = [];
  chunks.forEach(([v0, rows], k) => {
    const { index, NB } = gatherRowsBuckets(ids, v0, rows);
    if (NB === 0) return;
    const buf = rt.upload(index, `gather_rows buckets ${v0}`);
    temporaries.push(buf);
    rec.dispatch(kernel, { dtable: b.dtables[k]!, dout: b.dout, index: buf }, { BT: p.N, C: p.C, R: rows, NB });
  });
  return temporaries;
}

/** float64 reference (accumulates): dtable (rows, C) row ids[n] - v0 += dout (N, C) row n, for the ids the chunk holds. */
export function gatherRowsBackwardRef(
  dtable: Float64Array,
  dout: ArrayLike<number>,
  ids: ArrayLike<number>,
  N: number,
  C: number,
  v0: number,
  rows: number,
): void {
  // differentiates out[n, c] = table[ids[n] - v0, c] (or +=) for v0 <= ids[n] < v0 + rows
  for (let n = 0; n < N; n++) {
    const r = ids[n]! - v0;
    if (r < 0 || r >= rows) continue;
    for (let c = 0; c < C; c++) dtable[r * C + c]! += dout[n * C + c]!;
  }
}
