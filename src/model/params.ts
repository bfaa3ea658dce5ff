/**
 * The parameter table: one list of tensors (name, shape, init, weight decay) that drives the
 * offsets of parameters, gradients and both AdamW moments, which all live in slabs of the
 * same layout. Tensors that take weight decay come first, so AdamW is two dispatches.
 * Every tensor starts on a 64-float (256-byte) boundary, the storage-offset alignment.
 */
import type { ModelConfig } from './config';

export interface ParamSpec {
  name: string;
  shape: number[];
  /** init: normal(0, std), or a constant */
  init: { std: number } | { value: number };
  decay: boolean;
}

export interface ParamEntry extends ParamSpec {
  /** offset in floats within the slab */
  offset: number;
  size: number;
}

export interface ParamTable {
  entries: ParamEntry[];
  byName: Map<string, ParamEntry>;
  /** floats in the slab, padding included */
  total: number;
  /** the decayed tensors are [0, decayEnd); the rest [decayEnd, total) */
  decayEnd: number;
  /** real parameter count (no padding) */
  count: number;
}

export const ALIGN_FLOATS = 64;

/** Names of layer l's tensors. */
export const layerParam = (l: number, name: string): string => `h${l}.${name}`;

export function paramSpecs(cfg: ModelConfig): ParamSpec[] {
  const { nLayer: L, dModel: C, contextLength: maxT, vocabSize: V } = cfg;
  const std = 0.02;
  const projStd = 0.02 / Math.sqrt(2 * L); // GPT-2: residual projections scaled by depth
  const zero = { value: 0 };
  const one = { value: 1 };
  const decayed: ParamSpec[] = [
    { name: 'wte', shape: [V, C], init: { std }, decay: true }, // tied with the LM head
    { name: 'wpe', shape: [maxT, C], init: { std: 0.01 }, decay: true },
  ];
  const plain: ParamSpec[] = [];
  for (let l = 0; l < L; l++) {
    const p = (name: string) => layerParam(l, name);
    decayed.push(
      { name: p('qkvw'), shape: [3 * C, C], init: { std }, decay: true },
      { name: p('attprojw'), shape: [C, C], init: { std: projStd }, decay: true },
      { name: p('fcw'), shape: [4 * C, C], init: { std }, decay: true },
      { name: p('fcprojw'), shape: [C, 4 * C], init: { std: projStd }, decay: true },
    );
    plain.push(
      { name: p('ln1w'), shape: [C], init: one, decay: false },
      { name: p('ln1b'), shape: [C], init: zero, decay: false },
      { name: p('qkvb'), shape: [3 * C], init: zero, decay: false },
      { name: p('attprojb'), shape: [C], init: zero, decay: false },
      { name: p('ln2w'), shape: [C], init: one, decay: false },
      { name: p('ln2b'), shape: [C], init: zero, decay: false },
      { name: p('fcb'), shape: [4 * C], init: zero, decay: false },
      { name: p('fcprojb'), shape: [C], init: zero, decay: false },
    );
  }
  decayed.push({ name: 'valuew', shape: [1, C], init: { std }, decay: true });
  plain.push(
    { name: 'lnfw', shape: [C], init: one, decay: false },
    { name: 'lnfb', shape: [C], init: zero, decay: false },
    { name: 'valueb', shape: [1], init: zero, decay: false },
  );
  return [...decayed, ...plain];
}

export function paramTable(cfg: ModelConfig): ParamTable {
  const entries: ParamEntry[] = [];
  let offset = 0;
  let decayEnd = 0;
  let count = 0;
  for (const spec of paramSpecs(cfg)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    entries.push({ ...spec, offset, size });
    count += size;
    offset += Math.ceil(size / ALIGN_FLOATS) * ALIGN_FLOATS;
    if (spec.decay) decayEnd = offset;
  }
  return { entries, byName: new Map(entries.map((e) => [e.name, e])), total: offset, decayEnd, count };
}

/** A view of tensor `name` inside a slab laid out by `table`. */
export function view<A extends Float32Array | Float64Array>(table: ParamTable, slab: A, name: string): A {
  const e = table.byName.get(name);
  if (!e) throw new Error(`no parameter named "${name}"`);
  return slab.subarray(e.offset, e.offset + e.size) as A;
}
