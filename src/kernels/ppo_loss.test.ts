import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { gaussian, Rng } from '../util/random';
import { packRollout, planeStride, ppoLoss } from './ppo_loss';
import { RL_STAT_FIELDS, rlTokenGradsRef, type RlLossConfig, type RlLossSums } from './ppo_loss_ref';

const BASE: RlLossConfig = { clip: 0.2, vclip: 0, vfCoef: 0.5, entCoef: 0.01, klCoef: 0, invTemp: 1 };

/** Random per-token inputs: log-ratios in (-0.6, 0.6) (inside and outside the clip), about 20% masked, weights 0.5..1.5. */
function inputs(n: number, seed: number) {
  const rng = new Rng(seed);
  const u = (lo: number, hi: number) => Float32Array.from({ length: n }, () => rng.uniform(lo, hi));
  const logp = u(-6, -0.01);
  const values = u(-2, 2);
  const mask = Float32Array.from({ length: n }, () => (rng.next() < 0.2 ? 0 : rng.next() < 0.5 ? 1 : rng.uniform(0.5, 1.5)));
  mask[0] = 1;
  if (n > 3) {
    mask[3] = 0;
    logp[3] = NaN; // a masked row may hold anything (e.g. an out-of-range target's NaN log-prob)
  }
  return {
    logp,
    entropy: u(0, 4),
    values,
    mask,
    oldLogp: logp.map((x) => x - rng.uniform(-0.6, 0.6)),
    oldValues: values.map((v) => v - rng.uniform(-0.5, 0.5)),
    advantages: Float32Array.from({ length: n }, () => gaussian(rng)),
    returns: values.map((v) => v + rng.uniform(-1, 1)),
    refLogp: logp.map((x) => x + rng.uniform(-0.5, 0.5)),
  };
}

/** Runs the kernel against the reference; returns the reference's fraction of clipped ratios. */
async function runPpo(n: number, cfg: RlLossConfig, extraStride = 0): Promise<number> {
  const rt = await testRuntime();
  const x = inputs(n, 31 * n + 7);
  const stride = planeStride(n, rt.limits) + extraStride;
  let tokens = 0;
  for (const m of x.mask) tokens += m;
  const scale = 1 / tokens;
  const prior = [1, -2, 3, 0.5, 0.25, 7]; // sums are accumulated, not written
  const bufs = {
    logp: rt.upload(x.logp, 'logp'),
    entropy: rt.upload(x.entropy, 'entropy'),
    values: rt.upload(x.values, 'values'),
    mask: rt.upload(x.mask, 'mask'),
    rollout: rt.upload(packRollout(x, n, stride), 'rollout'),
    dtok: rt.upload(new Float32Array(2 * stride).fill(7), 'dtok'), // 7s: "written, not accumulated"
    dvalue: rt.upload(new Float32Array(n).fill(7), 'dvalue'),
    sums: rt.upload(Float32Array.from(prior), 'sums'), // (PPO_STATS)
  };
  const rec = rt.record(`ppo_loss n=${n}`);
  rec.dispatch(await rt.compile(ppoLoss), bufs, { ...cfg, n, stride, scale });
  const outs = [rec.read(bufs.dtok), rec.read(bufs.dvalue), rec.read(bufs.sums)];
  await rec.submit();
  const [dtok, dvalue, sums] = (await Promise.all(outs)).map((b) => new Float32Array(b));

  const ref = { dlogp: new Float64Array(n), dentropy: new Float64Array(n), dvalue: new Float64Array(n) };
  const refSums: RlLossSums = { tokens: 0, ...Object.fromEntries(RL_STAT_FIELDS.map((f, k) => [f, prior[k]!])) } as RlLossSums;
  rlTokenGradsRef(ref, x.logp, x.entropy, x.values, x, n, cfg, scale, refSums);
  // Each output is a few f32 operations on O(1) inputs times w * scale: exp (|x| < 1) is good to
  // a few ulp, the k3 term uses the cancellation-free exp(d) - 1. (SwiftShader: ~1e-7 relative.)
  const tol = { atol: 1e-6 * scale, rtol: 1e-5 };
  expectClose(dtok!.subarray(0, n), ref.dlogp, tol, `dlogp n=${n}`);
  expectClose(dtok!.subarray(stride, stride + n), ref.dentropy, tol, `dentropy n=${n}`);
  expectClose(dvalue!, ref.dvalue, tol, `dvalue n=${n}`);
  // float32 sums of n terms of magnitude <= ~10 (per-invocation runs, then a tree)
  expectClose(
    sums!,
    RL_STAT_FIELDS.map((f) => refSums[f]),
    { atol: 2e-6 * (n + 10), rtol: 1e-5 },
    `sums n=${n}`,
  );
  for (const b of Object.values(bufs)) b.destroy();
  return (refSums.clipped - prior[5]!) / tokens;
}

describe('ppo_loss matches rlTokenGradsRef', () => {
  test.each([
    ['n=1', 1, BASE],
    ['n=7 vclip 0 kl 0', 7, BASE],
    ['n=257 vclip 0.2 kl 0.05', 257, { ...BASE, vclip: 0.2, klCoef: 0.05 }],
    ['n=1100 vclip 0.3 kl 0.1, clip 0.1', 1100, { ...BASE, clip: 0.1, vclip: 0.3, klCoef: 0.1, entCoef: 0.03 }],
    ['n=300 GRPO (no critic)', 300, { ...BASE, vfCoef: 0, klCoef: 0.04 }],
  ] as const)('%s', async (_, n, cfg) => {
    const clipFrac = await runPpo(n, cfg);
    if (n > 100) expect(clipFrac).toBeGreaterThan(0.1); // both sides of the ratio clip are exercised
    if (n > 100) expect(clipFrac).toBeLessThan(0.9);
  });
  test('planes at a stride larger than the alignment needs', () => runPpo(70, { ...BASE, vclip: 0.1, klCoef: 0.2 }, 64));
  test('shapes it cannot index are rejected', () => {
    expect(() => ppoLoss.uniforms!({ ...BASE, n: 0, stride: 64, scale: 1 })).toThrow(/token count/);
    expect(() => ppoLoss.uniforms!({ ...BASE, n: 100, stride: 64, scale: 1 })).toThrow(/stride/);
    const short = {
      oldLogp: new Float32Array(3),
      oldValues: new Float32Array(4),
      advantages: new Float32Array(4),
      returns: new Float32Array(4),
      refLogp: new Float32Array(4),
    };
    expect(() => packRollout(short, 4, 64)).toThrow(/oldLogp has 3 values, expected B \* T = 4/);
  });
});

describe('rlTokenGradsRef', () => {
  test('derivatives equal central differences of the per-token loss', () => {
    const n = 40;
    const x = inputs(n, 5);
    x.logp[3] = -1;
    const cfg: RlLossConfig = { clip: 0.2, vclip: 0.25, vfCoef: 0.7, entCoef: 0.02, klCoef: 0.3, invTemp: 1 };
    const scale = 1 / 9;
    // loss = scale * sum_i w_i (policy + vfCoef value - entCoef entropy + klCoef kl), from the sums
    const loss = (lp: Float64Array, h: Float64Array, v: Float64Array): number => {
      const s: RlLossSums = { tokens: 0, policyLoss: 0, valueLoss: 0, entropy: 0, kl: 0, approxKl: 0, clipped: 0 };
      const o = { dlogp: new Float64Array(n), dentropy: new Float64Array(n), dvalue: new Float64Array(n) };
      rlTokenGradsRef(o, lp, h, v, x, n, cfg, scale, s);
      return scale * (s.policyLoss + cfg.vfCoef * s.valueLoss - cfg.entCoef * s.entropy + cfg.klCoef * s.kl);
    };
    const lp = Float64Array.from(x.logp);
    const h = Float64Array.from(x.entropy);
    const v = Float64Array.from(x.values);
    const got = { dlogp: new Float64Array(n), dentropy: new Float64Array(n), dvalue: new Float64Array(n) };
    rlTokenGradsRef(got, lp, h, v, x, n, cfg, scale, {
      tokens: 0,
      policyLoss: 0,
      valueLoss: 0,
      entropy: 0,
      kl: 0,
      approxKl: 0,
      clipped: 0,
    });
    const eps = 1e-6;
    for (const [name, arr, d] of [
      ['dlogp', lp, got.dlogp],
      ['dentropy', h, got.dentropy],
      ['dvalue', v, got.dvalue],
    ] as const) {
      const fd = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const keep = arr[i]!;
        arr[i] = keep + eps;
        const up = loss(lp, h, v);
        arr[i] = keep - eps;
        fd[i] = (up - loss(lp, h, v)) / (2 * eps);
        arr[i] = keep;
      }
      // random points are almost surely not at a kink of the clips (1e-6 away)
      expectClose(d, fd, { atol: 1e-8, rtol: 1e-6 }, `${name} vs finite differences`);
    }
  });
});
