import { describe, expect, test } from 'vitest';
import { linearWorkgroups } from '../gpu/kernel';
import { testRuntime } from '../testing/gpu';
import { randBits, randUniform, randUniformRef, type RandProblem } from './rand';

async function gpuRand(p: RandProblem, spec = randUniform): Promise<Float32Array> {
  const rt = await testRuntime();
  const out = rt.storage(p.n * 4, 'rand out');
  const rec = rt.record(`rand n=${p.n}`);
  rec.dispatch(await rt.compile(spec), { out }, p);
  const data = rec.read(out, 0, p.n * 4);
  await rec.submit();
  out.destroy();
  return new Float32Array(await data);
}

describe('rand: GPU equals the CPU reference bit for bit', () => {
  test.each([
    [0, 0, 1],
    [12345, 7, 1000],
    [0xffffffff, 0xfffffffe, 4099],
    [-1, 3, 65], // seeds are taken mod 2^32: -1 is 0xffffffff
  ])('seed=%i stream=%i n=%i', async (seed, stream, n) => {
    const got = await gpuRand({ n, seed, stream });
    expect(Array.from(got)).toEqual(Array.from(randUniformRef(seed, stream, n)));
  });

  test('2-D folded dispatch (per-dimension limit forced to 5 workgroups)', async () => {
    const spec = {
      ...randUniform,
      name: 'rand_folded',
      dispatch: (p: RandProblem) => linearWorkgroups(p.n, 64, { maxComputeWorkgroupsPerDimension: 5 } as GPUSupportedLimits),
    };
    const got = await gpuRand({ n: 1500, seed: 9, stream: 2 }, spec); // 24 groups folded into 25
    expect(Array.from(got)).toEqual(Array.from(randUniformRef(9, 2, 1500)));
  });
});

// ---- statistics ---------------------------------------------------------------------------

/** Wilson-Hilferty quantile of chi-square with k degrees of freedom at normal score z. */
const chi2Quantile = (k: number, z: number) => k * (1 - 2 / (9 * k) + z * Math.sqrt(2 / (9 * k))) ** 3;
const Z = 3.29; // two-sided p = 0.001: a correct generator fails a given check 1 time in 1000 seeds

function chi2(counts: number[], expected: number): number {
  return counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
}

/** Pearson chi-square of u over `bins` equal bins; ok when inside the central 99.9%. */
function chi2Uniform1d(u: ArrayLike<number>, bins: number): { stat: number; ok: boolean } {
  const counts = new Array<number>(bins).fill(0);
  for (let i = 0; i < u.length; i++) counts[Math.floor(u[i]! * bins)]!++;
  const stat = chi2(counts, u.length / bins);
  return { stat, ok: stat > chi2Quantile(bins - 1, -Z) && stat < chi2Quantile(bins - 1, Z) };
}

/** Chi-square of the pairs (a[i], b[i]) over a bins x bins grid. */
function chi2Pairs(a: ArrayLike<number>, b: ArrayLike<number>, bins: number): { stat: number; ok: boolean } {
  const counts = new Array<number>(bins * bins).fill(0);
  for (let i = 0; i < a.length; i++) counts[Math.floor(a[i]! * bins) * bins + Math.floor(b[i]! * bins)]!++;
  const stat = chi2(counts, a.length / (bins * bins));
  const k = bins * bins - 1;
  return { stat, ok: stat > chi2Quantile(k, -Z) && stat < chi2Quantile(k, Z) };
}

/** Mean and variance within 5 standard errors of 1/2 and 1/12. */
function momentsOk(u: ArrayLike<number>): boolean {
  const n = u.length;
  let s = 0;
  for (let i = 0; i < n; i++) s += u[i]!;
  const mean = s / n;
  let q = 0;
  for (let i = 0; i < n; i++) q += (u[i]! - mean) ** 2;
  const variance = q / (n - 1);
  const seMean = Math.sqrt(1 / 12 / n);
  const seVar = Math.sqrt((1 / 80 - 1 / 144) / n); // (mu4 - sigma^4) / n for U(0, 1)
  return Math.abs(mean - 0.5) < 5 * seMean && Math.abs(variance - 1 / 12) < 5 * seVar;
}

/** Each of the 24 output bits is set in half the draws, within 5 standard errors. */
function bitsOk(u: ArrayLike<number>): boolean {
  const n = u.length;
  for (let b = 0; b < 24; b++) {
    let ones = 0;
    for (let i = 0; i < n; i++) ones += (Math.round(u[i]! * 16777216) >>> b) & 1;
    if (Math.abs(ones - n / 2) > 5 * Math.sqrt(n / 4)) return false;
  }
  return true;
}

const N = 65536;

describe('rand: uniformity (fixed seeds)', () => {
  test('moments, 1-D chi-square, pairs, bits and streams of the GPU output', async () => {
    const u = await gpuRand({ n: N, seed: 2024, stream: 0 });
    const next = await gpuRand({ n: N, seed: 2024, stream: 1 });
    const otherSeed = await gpuRand({ n: N, seed: 2025, stream: 0 });
    expect(momentsOk(u)).toBe(true);
    expect(chi2Uniform1d(u, 64).ok).toBe(true);
    const even = u.filter((_, i) => i % 2 === 0);
    const odd = u.filter((_, i) => i % 2 === 1);
    expect(chi2Pairs(even, odd, 16).ok).toBe(true); // consecutive indices independent
    expect(chi2Pairs(u.subarray(0, N - 3), u.subarray(3), 16).ok).toBe(true); // lag 3 as well
    expect(chi2Pairs(u, next, 16).ok).toBe(true); // neighbouring streams independent
    expect(chi2Pairs(u, otherSeed, 16).ok).toBe(true); // neighbouring seeds independent
    expect(bitsOk(u)).toBe(true);
    expect(Math.min(...u)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...u)).toBeLessThan(1);
  });

  test('more seeds and streams pass the 1-D and pair checks', () => {
    let failures = 0;
    for (const [seed, stream] of [
      [1, 0],
      [1, 2],
      [77, 5],
      [0xdeadbeef, 123456],
    ] as const) {
      const u = randUniformRef(seed, stream, 32768);
      if (!chi2Uniform1d(u, 32).ok) failures++;
      if (!chi2Pairs(u.subarray(0, 16384), u.subarray(16384), 8).ok) failures++;
      if (!momentsOk(u)) failures++;
    }
    expect(failures).toBe(0);
  });

  test('the checks reject broken generators', () => {
    const golden = (Math.sqrt(5) - 1) / 2;
    const weyl = Float64Array.from({ length: N }, (_, i) => (i * golden) % 1); // too regular
    expect(chi2Uniform1d(weyl, 64).ok).toBe(false); // chi-square far below its lower bound
    const we = weyl.filter((_, i) => i % 2 === 0);
    const wo = weyl.filter((_, i) => i % 2 === 1);
    expect(chi2Pairs(we, wo, 16).ok).toBe(false); // pairs lie on a few lines
    const u = randUniformRef(2024, 0, N);
    expect(chi2Pairs(u, randUniformRef(2024, 0, N), 16).ok).toBe(false); // a stream that ignores `stream`
    const stuck = u.map((x) => Math.floor(x * 16777216) / 16777216 + (Math.floor(x * 16777216) & 256 ? 0 : 256 / 16777216));
    expect(bitsOk(stuck)).toBe(false); // bit 8 always set
    const biased = u.map((x) => x * x);
    expect(momentsOk(biased)).toBe(false);
    expect(chi2Uniform1d(biased, 64).ok).toBe(false);
  });

  test('randBits is a bijection of the index for a fixed key (no repeats in 2^16 draws)', () => {
    const seen = new Set<number>();
    for (let i = 0; i < N; i++) seen.add(randBits(5, 6, i));
    expect(seen.size).toBe(N);
  });
});
