import { gaussian, Rng } from '../util/random';
import type { ParamTable } from './params';

/** GPT-2 initialisation of a parameter slab, deterministic in `seed`. Padding stays 0. */
export function initParams(table: ParamTable, seed: number): Float32Array {
  const slab = new Float32Array(table.total);
  const rng = new Rng(seed);
  for (const e of table.entries) {
    const t = slab.subarray(e.offset, e.offset + e.size);
    if ('std' in e.init) for (let i = 0; i < t.length; i++) t[i] = gaussian(rng) * e.init.std;
    else t.fill(e.init.value);
  }
  return slab;
}
