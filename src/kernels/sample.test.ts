import { describe, expect, test } from 'vitest';
import { linearWorkgroups, withConstants } from '../gpu/kernel';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { randUniform } from './rand';
import { NO_TOKEN, sample, sampleDistributionRef, sampleRef, type SampleProblem } from './sample';

interface Case {
  B: number;
  V: number;
  temperature: number;
  topK: number;
  topP: number;
  bias?: boolean;
  mask?: boolean;
  /** logits rounded to multiples of 1/2 so values tie often */
  ties?: boolean;
}

function inputs(c: Case, seed: number) {
  const rng = new Rng(seed);
  const logits = rng.float32(c.B * c.V, -4, 4);
  if (c.ties) logits.forEach((x, i) => (logits[i] = Math.round(x * 2) / 2));
  const bias = c.bias ? rng.float32(c.B * c.V, -2, 2) : null;
  const W = Math.ceil(c.V / 32);
  const allowMask = c.mask ? new Uint32Array(c.B * W).map(() => (rng.next() * 2 ** 32) >>> 0) : null;
  if (allowMask && c.B > 2) {
    allowMask.fill(0, W, 3 * W); // row 1: nothing allowed
    allowMask[3 * W - 1] = (1 << ((c.V - 1) % 32)) >>> 0; // row 2: only the last id
  }
  const u = new Float32Array(c.B).map(() => rng.next());
  return { logits, bias, allowMask, u };
}

/** Dispatches sample; `uBuffer` replaces u when given (the rand kernel's output). */
async function gpuSample(
  c: Case,
  logits: Float32Array,
  u: Float32Array | GPUBuffer,
  bias: Float32Array | null,
  allowMask: Uint32Array | null,
  spec = sample,
) {
  const rt = await testRuntime();
  const dummy = rt.storage(4, 'dummy');
  const bufs = {
    logits: rt.upload(logits, 'logits'),
    u: u instanceof Float32Array ? rt.upload(u, 'u') : u,
    bias: bias ? rt.upload(bias, 'bias') : dummy,
    allowMask: allowMask ? rt.upload(allowMask, 'allowMask') : dummy,
    tokens: rt.storage(c.B * 4, 'tokens'),
    logp: rt.storage(c.B * 4, 'logp'),
  };
  const problem: SampleProblem = {
    B: c.B,
    V: c.V,
    temperature: c.temperature,
    topK: c.topK,
    topP: c.topP,
    useBias: !!bias,
    useMask: !!allowMask,
  };
  const rec = rt.record(`sample ${c.B}x${c.V}`);
  rec.dispatch(await rt.compile(spec), bufs, problem);
  const outs = [rec.read(bufs.tokens), rec.read(bufs.logp)];
  await rec.submit();
  const [tokens, logp] = await Promise.all(outs);
  for (const b of new Set(Object.values(bufs))) if (b !== u) b.destroy();
  return { tokens: new Uint32Array(tokens!), logp: new Float32Array(logp!) };
}

async function runExact(c: Case, spec = sample): Promise<void> {
  const { logits, bias, allowMask, u } = inputs(c, c.B * 131 + c.V);
  const got = await gpuSample(c, logits, u, bias, allowMask, spec);
  const want = sampleRef(logits, c.B, c.V, u, { ...c, bias, allowMask });
  expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
  const nan = Array.from(want.logp, Number.isNaN);
  expect(Array.from(got.logp, Number.isNaN)).toEqual(nan);
  // logp = (s_tok - m) - log sum exp(s - m): exp good to 3 + 2|x| ulp of WGSL, |s| <= 6 / T
  expectClose(
    got.logp.filter((_, i) => !nan[i]),
    want.logp.filter((_, i) => !nan[i]),
    { atol: 1e-5, rtol: 1e-5 },
    'logp',
  );
  if (c.mask && c.B > 2) {
    expect(got.tokens[1]).toBe(NO_TOKEN);
    expect(got.tokens[2]).toBe(c.V - 1);
  }
}

describe('sample makes the same choice as its reference', () => {
  const cases: [string, Case][] = [];
  for (const V of [1, 7, 50, 300, 1000]) {
    const B = V >= 300 ? 8 : 20;
    cases.push(
      [`V=${V} T=1`, { B, V, temperature: 1, topK: 0, topP: 1 }],
      [`V=${V} T=0.7 top-k 5`, { B, V, temperature: 0.7, topK: 5, topP: 1 }],
      [`V=${V} T=1.3 top-p 0.9`, { B, V, temperature: 1.3, topK: 0, topP: 0.9 }],
      [`V=${V} T=0.8 top-k 20 top-p 0.8 bias mask`, { B, V, temperature: 0.8, topK: 20, topP: 0.8, bias: true, mask: true }],
      [`V=${V} greedy bias mask ties`, { B, V, temperature: 0, topK: 3, topP: 0.5, bias: true, mask: true, ties: true }],
    );
  }
  cases.push(
    ['V=50 greedy ties (lowest id wins)', { B: 20, V: 50, temperature: 0, topK: 0, topP: 1, ties: true }],
    ['V=1000 greedy ties mask', { B: 8, V: 1000, temperature: 0, topK: 0, topP: 1, ties: true, mask: true }],
    ['V=50 T=1 ties top-k 4 top-p 0.6', { B: 20, V: 50, temperature: 1, topK: 4, topP: 0.6, ties: true }],
    ['V=300 T=1 ties top-p 0.3 mask', { B: 8, V: 300, temperature: 1, topK: 0, topP: 0.3, ties: true, mask: true }],
    ['V=4100 T=0.9 top-k 50 top-p 0.95 bias', { B: 2, V: 4100, temperature: 0.9, topK: 50, topP: 0.95, bias: true }],
  );
  test.each(cases)('%s', (_, c) => runExact(c));

  test('2-D folded dispatch (per-dimension limit forced to 3 workgroups)', async () => {
    const spec = {
      ...sample,
      name: 'sample_folded',
      dispatch: (p: SampleProblem) => linearWorkgroups(p.B, 1, { maxComputeWorkgroupsPerDimension: 3 } as GPUSupportedLimits),
    };
    await runExact({ B: 7, V: 40, temperature: 1, topK: 10, topP: 0.9, mask: true }, spec); // 7 rows in 3 x 3
  });
});

describe('sampleRef', () => {
  test('top-k keeps every token tied with the k-th largest value; top-p keeps the smallest nucleus', () => {
    const logits = [1, 3, 2, 3, 2, 0]; // sorted: 3 3 2 2 1 0
    const dist = (topK: number, topP: number) =>
      Array.from(sampleDistributionRef(logits, 1, 6, { temperature: 1, topK, topP }), (p) => p > 0);
    expect(dist(3, 1)).toEqual([false, true, true, true, true, false]); // 3rd largest is 2: both 2s kept
    expect(dist(2, 1)).toEqual([false, true, false, true, false, false]);
    // masses e^3 e^3 e^2 e^2 e^1 e^0 / Z: the two 3s hold 0.665; the 2s bring it to 0.910
    expect(dist(0, 0.6)).toEqual([false, true, false, true, false, false]);
    expect(dist(0, 0.7)).toEqual([false, true, true, true, true, false]);
    expect(dist(0, 0.95)).toEqual([true, true, true, true, true, false]);
  });

  test('greedy picks the lowest id of the max; logp is at temperature 1 over allowed tokens', () => {
    const r = sampleRef([1, 5, 5, 2], 1, 4, [0.99], { temperature: 0, topK: 0, topP: 1 });
    expect(r.tokens[0]).toBe(1);
    expect(r.logp[0]).toBeCloseTo(5 - Math.log(Math.exp(1) + 2 * Math.exp(5) + Math.exp(2)), 12);
    const masked = sampleRef([1, 5, 5, 2], 1, 4, [0.5], { temperature: 0, topK: 0, topP: 1, allowMask: [0b1001] });
    expect(masked.tokens[0]).toBe(3);
    expect(masked.logp[0]).toBeCloseTo(2 - Math.log(Math.exp(1) + Math.exp(2)), 12);
  });

  test('inverse CDF in id order: u just below a cumulative boundary picks the earlier token', () => {
    // temperature 1, logits 0 0 0 0: each token 1/4, kept all; u in [0.25, 0.5) picks id 1
    const pick = (u: number) => sampleRef([0, 0, 0, 0], 1, 4, [u], { temperature: 1, topK: 0, topP: 1 }).tokens[0];
    expect([0, 0.2499, 0.25, 0.4999, 0.5, 0.99].map(pick)).toEqual([0, 0, 1, 1, 2, 3]);
  });
});

/** Wilson-Hilferty upper quantile of chi-square with k degrees of freedom at z = 3.29 (p = 0.0005). */
const chi2Upper = (k: number) => k * (1 - 2 / (9 * k) + 3.29 * Math.sqrt(2 / (9 * k))) ** 3;

describe('sample: frequencies follow the truncated distribution', () => {
  // A 32-invocation variant: SwiftShader's cost is per invocation and barrier, and V is 12.
  test('3000 draws of one row, u from the rand kernel (workgroup 32)', async () => {
    const V = 12;
    const B = 3000;
    const rng = new Rng(77);
    const row = rng.float32(V, -2, 2);
    const rowBias = rng.float32(V, -1, 1);
    const logits = new Float32Array(B * V);
    const bias = new Float32Array(B * V);
    for (let r = 0; r < B; r++) {
      logits.set(row, r * V);
      bias.set(rowBias, r * V);
    }
    const c: Case = { B, V, temperature: 0.9, topK: 7, topP: 0.85, bias: true };
    const rt = await testRuntime();
    const uBuf = rt.storage(B * 4, 'u');
    const rec = rt.record('rand for sampling');
    rec.dispatch(await rt.compile(randUniform), { out: uBuf }, { n: B, seed: 4242, stream: 0 });
    await rec.submit();
    const got = await gpuSample(c, logits, uBuf, bias, null, { ...withConstants(sample, { workgroupSize: [32] }) });
    uBuf.destroy();

    const p = sampleDistributionRef(row, 1, V, { ...c, bias: rowBias });
    const counts = new Array<number>(V).fill(0);
    for (const t of got.tokens) counts[t]!++;
    const kept = p.reduce((n, x) => n + (x > 0 ? 1 : 0), 0);
    expect(kept).toBeGreaterThan(2); // the truncation leaves a real choice...
    expect(kept).toBeLessThan(7); // ...and top-p cut below top-k
    const stat = (q: ArrayLike<number>) =>
      counts.reduce((s, n, i) => (q[i]! > 0 ? s + (n - B * q[i]!) ** 2 / (B * q[i]!) : s + (n > 0 ? Infinity : 0)), 0);
    expect(stat(p)).toBeLessThan(chi2Upper(kept - 1));
    // the same statistic rejects the untruncated distribution (tokens outside the nucleus never drawn)
    const full = sampleDistributionRef(row, 1, V, { ...c, bias: rowBias, topK: 0, topP: 1 });
    expect(stat(full)).toBeGreaterThan(chi2Upper(V - 1));
  });
});
