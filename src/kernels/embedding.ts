/**
 * Token + position embedding, forward and backward.
 * Shaders: shaders/embedding_forward.wgsl, shaders/embedding_backward.wgsl (entry points
 * `buckets`, `channels`).
 *
 * Shape legend: B batch, T time, BT = B*T rows, C channels (d_model), OC output channels, V vocab.
 * maxT = rows of the position table. Tensors row-major f32; token ids and positions u32.
 *
 * Ids are validated here, where they are on the CPU (checkEmbeddingIds); the shaders skip
 * out-of-range ids so that a bad one cannot read or write outside a table.
 *
 * Backward: ids repeat, so the scatter dtable[ids[bt]] += dout[bt] is made race-free and
 * deterministic by grouping rows by id on the CPU (embeddingBuckets, a counting sort): one
 * workgroup per distinct id owns that table row and sums its rows in ascending order. The
 * `channels` variant needs no CPU data (one thread per channel walks all rows) for ids that
 * live only on the GPU, at C-wide parallelism.
 */
import backwardWgsl from '../../shaders/embedding_backward.wgsl';
import forwardWgsl from '../../shaders/embedding_forward.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';

export interface EmbeddingProblem {
  BT: number;
  C: number;
  V: number;
  maxT: number;
}

/** The backward of one table of R rows; NB = buckets (the `buckets` entry point only). */
export interface EmbeddingTableProblem {
  BT: number;
  C: number;
  R: number;
  NB: number;
}

const WG = 256;

/** out (BT, C) = wte[tokens] + wpe[positions]. */
export const embeddingForward: KernelSpec<EmbeddingProblem> = {
  name: 'embedding_forward',
  wgsl: forwardWgsl,
  bindings: [
    { name: 'out', kind: 'storage' }, // (BT, C)
    { name: 'tokens', kind: 'read-only-storage' }, // (BT) u32
    { name: 'positions', kind: 'read-only-storage' }, // (BT) u32
    { name: 'wte', kind: 'read-only-storage' }, // (V, C)
    { name: 'wpe', kind: 'read-only-storage' }, // (maxT, C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.BT * p.C, WG, limits),
  uniforms: (p) => new Uint32Array([p.BT, p.C, p.V, p.maxT]),
};

const BACKWARD_BINDINGS = [
  { name: 'dtable', kind: 'storage' }, // (R, C), accumulated: dwte (V, C) or dwpe (maxT, C)
  { name: 'dout', kind: 'read-only-storage' }, // (BT, C)
  { name: 'index', kind: 'read-only-storage' }, // buckets: (2 NB + 1 + BT) u32 from embeddingBuckets; channels: ids (BT) u32
  { name: 'params', kind: 'uniform' },
] as const;

function tableUniforms(p: EmbeddingTableProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.BT, p.C, p.R, p.NB]);
}

/** dtable[id] += sum of dout over the rows of each bucket: one workgroup per bucket (distinct id). */
export const embeddingBackwardBuckets: KernelSpec<EmbeddingTableProblem> = {
  name: 'embedding_backward_buckets',
  wgsl: backwardWgsl,
  entryPoint: 'buckets',
  bindings: BACKWARD_BINDINGS,
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.NB, 1, limits),
  uniforms: tableUniforms,
};

const CHANNEL_WG = 64;

/** dtable[ids[bt]] += dout[bt] with ids on the GPU: one thread per channel walks all rows. */
export const embeddingBackwardChannels: KernelSpec<EmbeddingTableProblem> = {
  name: 'embedding_backward_channels',
  wgsl: backwardWgsl,
  entryPoint: 'channels',
  bindings: BACKWARD_BINDINGS,
  workgroupSize: [CHANNEL_WG],
  dispatch: (p, limits) => linearWorkgroups(p.C, CHANNEL_WG, limits),
  uniforms: tableUniforms,
};

/** Throws unless every id is an integer in [0, rows). */
function checkIds(ids: ArrayLike<number>, rows: number, what: string): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (!Number.isInteger(id) || id < 0 || id >= rows) {
      throw new Error(`embedding: ${what}[${i}] = ${id} is outside [0, ${rows})`);
    }
  }
}

/** Throws unless tokens (BT) are < V and positions (BT) are < maxT (integers >= 0). */
export function checkEmbeddingIds(tokens: ArrayLike<number>, positions: ArrayLike<number>, V: number, maxT: number): void {
  if (tokens.length !== positions.length) {
    throw new Error(`embedding: ${tokens.length} tokens but ${positions.length} positions`);
  }
  checkIds(tokens, V, 'tokens');
  checkIds(positions, maxT, 'positions');
}

/** Validates the ids and uploads them as u32 storage buffers (BT each). */
export function uploadEmbeddingIds(
  rt: GpuRuntime,
  tokens: ArrayLike<number>,
  positions: ArrayLike<number>,
  V: number,
  maxT: number,
): { tokens: GPUBuffer; positions: GPUBuffer } {
  checkEmbeddingIds(tokens, positions, V, maxT);
  return { tokens: rt.upload(Uint32Array.from(tokens), 'tokens'), positions: rt.upload(Uint32Array.from(positions), 'positions') };
}

/**
 * Groups the rows bt by ids[bt] (validated < rows) with a counting sort, packed for the
 * `buckets` shader: [ids (NB) | starts (NB + 1) | rows (BT)], buckets by ascending id, rows
 * ascending within a bucket.
 */
export function embeddingBuckets(ids: ArrayLike<number>, rows: number): { index: Uint32Array<ArrayBuffer>; NB: number } {
  checkIds(ids, rows, 'ids');
  const BT = ids.length;
  const count = new Uint32Array(rows);
  for (let i = 0; i < BT; i++) count[ids[i]!]!++;
  let NB = 0;
  for (let r = 0; r < rows; r++) if (count[r]! > 0) NB++;
  const index = new Uint32Array(2 * NB + 1 + BT);
  const bucketOf = new Int32Array(rows).fill(-1);
  const next = new Uint32Array(NB); // write cursor per bucket, relative to the row lists
  let b = 0;
  let start = 0;
  for (let r = 0; r < rows; r++) {
    if (count[r] === 0) continue;
    index[b] = r; // ids
    index[NB + b] = start; // starts
    bucketOf[r] = b;
    next[b] = start;
    start += count[r]!;
    b++;
  }
  index[2 * NB] = BT; // starts[NB]
  const rowsAt = 2 * NB + 1;
  for (let bt = 0; bt < BT; bt++) index[rowsAt + next[bucketOf[ids[bt]!]!]!++] = bt;
  return { index, NB };
}

export interface EmbeddingBackwardBuffers {
  dwte: BufferBinding; // (V, C), accumulated
  dwpe: BufferBinding; // (maxT, C), accumulated
  dout: BufferBinding; // (BT, C)
}

/**
 * Records dwte += scatter(dout by tokens) and dwpe += scatter(dout by positions): builds and
 * uploads the buckets (validating the ids) and dispatches twice. Returns the two index buffers,
 * which the caller destroys once the recording has been submitted.
 */
export async function recordEmbeddingBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: EmbeddingBackwardBuffers,
  tokens: ArrayLike<number>,
  positions: ArrayLike<number>,
  p: EmbeddingProblem,
): Promise<GPUBuffer[]> {
  checkEmbeddingIds(tokens, positions, p.V, p.maxT);
  if (tokens.length !== p.BT) throw new Error(`embedding: ${tokens.length} tokens for BT = ${p.BT}`);
  const kernel = await rt.compile(embeddingBackwardBuckets);
  const temporaries: GPUBuffer[] = [];
  for (const [dtable, ids, R] of [
    [b.dwte, tokens, p.V],
    [b.dwpe, positions, p.maxT],
  ] as const) {
    const { index, NB } = embeddingBuckets(ids, R);
    const buf = rt.upload(index, 'embedding buckets');
    temporaries.push(buf);
    rec.dispatch(kernel, { dtable, dout: b.dout, index: buf }, { BT: p.BT, C: p.C, R, NB });
  }
  return temporaries;
}

/** float64 reference: out (BT, C) = wte[tokens[bt]] + wpe[positions[bt]]. */
export function embeddingForwardRef(
  out: Float64Array,
  tokens: ArrayLike<number>,
  positions: ArrayLike<number>,
  wte: ArrayLike<number>,
  wpe: ArrayLike<number>,
  BT: number,
  C: number,
): void {
  for (let bt = 0; bt < BT; bt++) {
    const t = tokens[bt]! * C;
    const p = positions[bt]! * C;
    for (let c = 0; c < C; c++) out[bt * C + c] = wte[t + c]! + wpe[p + c]!;
  }
}

/** float64 reference (accumulates): dwte[tokens[bt]] += dout[bt]; dwpe[positions[bt]] += dout[bt]. */
export function embeddingBackwardRef(
  dwte: Float64Array,
  dwpe: Float64Array,
  dout: ArrayLike<number>,
  tokens: ArrayLike<number>,
  positions: ArrayLike<number>,
  BT: number,
  C: number,
): void {
  for (let bt = 0; bt < BT; bt++) {
    const t = tokens[bt]! * C;
    const p = positions[bt]! * C;
    for (let c = 0; c < C; c++) {
      dwte[t + c]! += dout[bt * C + c]!;
      dwpe[p + c]! += dout[bt * C + c]!;
    }
  }
}
