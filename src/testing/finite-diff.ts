/** Central difference of f with respect to x[i], in float64 (x[i] is restored). */
export function centralDiff(f: () => number, x: Float64Array, i: number, h: number): number {
  const x0 = x[i]!;
  x[i] = x0 + h;
  const up = f();
  x[i] = x0 - h;
  const down = f();
  x[i] = x0;
  return (up - down) / (2 * h);
}
