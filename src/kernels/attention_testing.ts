/** Helpers shared by the attention tests. */

/** Rows [t0, t1) of each b of x (B, T, W) as (B, t1 - t0, W). */
export function sliceRows(x: ArrayLike<number>, B: number, T: number, W: number, t0: number, t1: number): Float64Array {
  const out = new Float64Array(B * (t1 - t0) * W);
  for (let b = 0; b < B; b++) {
    for (let t = t0; t < t1; t++) {
      for (let w = 0; w < W; w++) out[(b * (t1 - t0) + t - t0) * W + w] = x[(b * T + t) * W + w]!;
    }
  }
  return out;
}
