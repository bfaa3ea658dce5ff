/** Element-wise comparison with `|actual - expected| <= atol + rtol * |expected|`, as every kernel test uses. */
export interface Tolerance {
  atol: number;
  rtol: number;
}

export interface Comparison {
  ok: boolean;
  n: number;
  maxAbsDiff: number;
  /** max |a - e| / max(|e|, tiny) over all elements */
  maxRelDiff: number;
  /** index of the element furthest outside its tolerance (or of the max abs diff when all pass) */
  worstIndex: number;
  /** number of elements outside tolerance, NaN mismatches included */
  failures: number;
}

export function compareArrays(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: Tolerance): Comparison {
  if (actual.length !== expected.length) {
    throw new Error(`compareArrays: length ${actual.length} (actual) != ${expected.length} (expected)`);
  }
  let maxAbsDiff = 0;
  let maxRelDiff = 0;
  let worstIndex = -1;
  let worstExcess = -Infinity;
  let failures = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    const diff = Math.abs(a - e);
    const bound = tol.atol + tol.rtol * Math.abs(e);
    const bad = !(diff <= bound); // NaN in either side is a failure
    if (bad) failures++;
    const excess = Number.isNaN(diff) ? Infinity : diff - bound;
    if (excess > worstExcess) {
      worstExcess = excess;
      worstIndex = i;
    }
    if (!Number.isNaN(diff)) {
      maxAbsDiff = Math.max(maxAbsDiff, diff);
      maxRelDiff = Math.max(maxRelDiff, diff / Math.max(Math.abs(e), 1e-30));
    }
  }
  return { ok: failures === 0, n: actual.length, maxAbsDiff, maxRelDiff, worstIndex, failures };
}

/** A readable failure report: the tolerance, the worst element, and the first values side by side. */
export function describeComparison(
  c: Comparison,
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  tol: Tolerance,
  first = 8,
): string {
  const head = Array.from({ length: Math.min(first, c.n) }, (_, i) => `  [${i}] got ${actual[i]} want ${expected[i]}`);
  const w = c.worstIndex;
  return [
    `${c.failures}/${c.n} elements outside atol=${tol.atol} + rtol=${tol.rtol}*|ref|; ` +
      `max abs diff ${c.maxAbsDiff.toExponential(3)}, max rel diff ${c.maxRelDiff.toExponential(3)}`,
    w >= 0 ? `  worst [${w}] got ${actual[w]} want ${expected[w]}` : '',
    ...head,
  ]
    .filter(Boolean)
    .join('\n');
}
