/** Seeded pseudo-random numbers (mulberry32): the same seed gives the same stream on every platform. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new Error(`Rng: seed must be an integer, got ${seed}`);
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** A Float32Array of n values uniform in [lo, hi). */
  float32(n: number, lo = -1, hi = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.uniform(lo, hi);
    return out;
  }
}

/** Shuffles `xs` in place (Fisher-Yates, drawing from `rng`) and returns it. */
export function shuffle<T>(xs: T[], rng: Rng): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** A standard normal sample from `rng` (Box-Muller; one of the pair is discarded for simplicity). */
export function gaussian(rng: Rng): number {
  let u = 0;
  while (u === 0) u = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}
