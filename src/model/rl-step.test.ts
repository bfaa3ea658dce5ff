import { describe, expect, test } from 'vitest';
import { logprobEntropyRef } from '../kernels/logprob';
import { RL_STAT_FIELDS, type RlLossConfig } from '../kernels/ppo_loss_ref';
import { testRuntime } from '../testing/gpu';
import { gaussian, Rng } from '../util/random';
import { createBackend, type BackendKind, type PolicyBackend } from './backend';
import type { ModelConfig } from './config';
import { CpuModel } from './cpu';
import { GpuModel } from './gpu';
import { GpuTrainer } from './gpu-train';
import { initParams } from './init';
import { DEFAULT_OPTIM, NumericsError, type RlBatch } from './optim';
import { paramTable } from './params';

const cfg: ModelConfig = { nLayer: 2, dModel: 32, nHead: 2, contextLength: 32, vocabSize: 64 };
const optim = { ...DEFAULT_OPTIM, lr: 1e-3, weightDecay: 0.1, gradClip: 1 };
const rl: RlLossConfig = { clip: 0.2, vclip: 0.2, vfCoef: 0.5, entCoef: 0.01, klCoef: 0.05, invTemp: 1 / 0.8 };
const B = 2;
const T = 12;
const PROMPT = 3; // the first positions of each row are prompt: mask 0

/** log-probs (BT) of the targets and values (BT) under `params`, in float64. */
function cpuLogp(params: Float32Array, tokens: Uint32Array, targets: Uint32Array, invTemp: number) {
  const { logits, values } = new CpuModel(cfg, params).forward({ tokens, B, T });
  const logp = new Float64Array(B * T);
  logprobEntropyRef(logp, new Float64Array(B * T), logits, targets, B * T, cfg.vocabSize, invTemp);
  return { logp, values };
}

/** ±[lo, hi): a perturbation at least `lo` from 0, so a clip boundary can be kept away from. */
function offset(rng: Rng, lo: number, hi: number): number {
  return (rng.next() < 0.5 ? -1 : 1) * rng.uniform(lo, hi);
}

/**
 * A micro-batch of random tokens whose rollout data is taken relative to the current policy:
 * old log-probs off by 0.05..0.12 (ratio inside the clip 0.2) or 0.3..0.5 (outside), old values
 * off by 0.05..0.15 or 0.25..0.4 (value clip 0.2), so float32 differences between backends cannot
 * move a token across a clip boundary.
 */
function rlBatch(params: Float32Array, seed: number): RlBatch {
  const rng = new Rng(seed);
  const BT = B * T;
  const ids = () => Uint32Array.from({ length: BT }, () => Math.floor(rng.next() * cfg.vocabSize));
  const tokens = ids();
  const targets = ids();
  const mask = Float32Array.from({ length: BT }, (_, i) => (i % T < PROMPT ? 0 : 1));
  const { logp, values } = cpuLogp(params, tokens, targets, rl.invTemp);
  const far = () => rng.next() < 0.4;
  return {
    B,
    T,
    tokens,
    targets,
    mask,
    oldLogp: Float32Array.from(logp, (x) => x + (far() ? offset(rng, 0.3, 0.5) : offset(rng, 0.05, 0.12))),
    oldValues: Float32Array.from(values, (v) => v + (far() ? offset(rng, 0.25, 0.4) : offset(rng, 0.05, 0.15))),
    advantages: Float32Array.from({ length: BT }, () => gaussian(rng)),
    returns: Float32Array.from(values, (v) => v + 0.5 * gaussian(rng)),
    refLogp: Float32Array.from(logp, (x) => x + rng.uniform(-0.3, 0.3)),
  };
}

async function backend(kind: BackendKind, params: Float32Array, opt = optim): Promise<PolicyBackend> {
  return createBackend(kind, { config: cfg, params, optim: opt, runtime: await testRuntime() });
}

/** log-probs (BT) of the batch's targets under a backend's current parameters. */
async function logpOf(be: PolicyBackend, b: RlBatch): Promise<Float64Array> {
  const { logits } = await be.forward({ tokens: b.tokens, B, T });
  const logp = new Float64Array(B * T);
  logprobEntropyRef(logp, new Float64Array(B * T), logits, b.targets, B * T, cfg.vocabSize, rl.invTemp);
  return logp;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('rlStep: webgpu follows the float64 cpu backend', () => {
  test('loss sums, gradient norm and parameters over two steps of two micro-batches', { timeout: 120_000 }, async () => {
    const params = initParams(paramTable(cfg), 21);
    const batches = [rlBatch(params, 1), rlBatch(params, 2)];
    const cpu = await backend('cpu', params);
    const gpu = await backend('webgpu', params);
    for (let step = 1; step <= 2; step++) {
      const c = await cpu.rlStep(batches, rl);
      const g = await gpu.rlStep(batches, rl);
      expect(g.sums.tokens).toBe(c.sums.tokens);
      expect(c.sums.clipped).toBeGreaterThan(0); // both sides of the ratio clip are exercised
      expect(c.sums.clipped).toBeLessThan(c.sums.tokens);
      for (const k of RL_STAT_FIELDS) {
        const [gv, cv] = [g.sums[k], c.sums[k]];
        expect(Math.abs(gv - cv), `step ${step} ${k}: gpu ${gv} cpu ${cv}`).toBeLessThan(1e-3 * Math.abs(cv) + 1e-5 * c.sums.tokens);
      }
      expect(Math.abs(g.gradNorm - c.gradNorm), `step ${step} grad norm: gpu ${g.gradNorm} cpu ${c.gradNorm}`).toBeLessThan(
        1e-3 * c.gradNorm,
      );
      // Early Adam steps move every parameter by up to ~lr whatever the gradient's size, so the
      // backends' parameters are compared against lr. (SwiftShader: 7e-7 = 7e-4 lr after 2 steps.)
      const d = maxAbsDiff(await gpu.getParams(), await cpu.getParams());
      expect(d, `step ${step}: max parameter difference`).toBeLessThan(1e-2 * optim.lr);
    }
    gpu.dispose();
  });
});

describe('rlStep behaviour', () => {
  test.each(['cpu', 'webgpu'] as const)(
    "%s: advantages raise (A > 0) and lower (A < 0) the chosen tokens' log-probs",
    { timeout: 120_000 },
    async (kind) => {
      const params = initParams(paramTable(cfg), 22);
      const batch = rlBatch(params, 3);
      batch.oldLogp = Float32Array.from(cpuLogp(params, batch.tokens, batch.targets, rl.invTemp).logp); // ratio 1 at the start
      batch.advantages = batch.advantages.map((_, i) => (i % 2 === 0 ? 1 : -1));
      const be = await backend(kind, params, { ...optim, lr: 1e-2, weightDecay: 0 });
      const before = await logpOf(be, batch);
      for (let s = 0; s < 5; s++) await be.rlStep([batch], { ...rl, vfCoef: 0, entCoef: 0, klCoef: 0 });
      const after = await logpOf(be, batch);
      const meanGain = (sign: number) => {
        const idx = [...batch.mask.keys()].filter((i) => batch.mask[i] === 1 && batch.advantages[i] === sign);
        return idx.reduce((a, i) => a + after[i]! - before[i]!, 0) / idx.length;
      };
      expect(meanGain(1)).toBeGreaterThan(0.1);
      expect(meanGain(-1)).toBeLessThan(-0.1);
      be.dispose();
    },
  );

  test.each(['cpu', 'webgpu'] as const)('%s: a mask that selects no token is rejected', async (kind) => {
    const params = initParams(paramTable(cfg), 23);
    const batch = { ...rlBatch(params, 4), mask: new Float32Array(B * T) };
    const be = await backend(kind, params);
    await expect(be.rlStep([batch, batch], rl)).rejects.toThrow('rlStep: the loss mask selects no token');
    be.dispose();
  });

  test.each(['cpu', 'webgpu'] as const)('%s: a non-finite loss stops training naming the step', async (kind) => {
    const table = paramTable(cfg);
    const params = initParams(table, 24);
    const batch = rlBatch(params, 5);
    params[table.byName.get('lnfb')!.offset] = NaN;
    const be = await backend(kind, params);
    await expect(be.rlStep([batch], rl)).rejects.toThrow(NumericsError);
    // WGSL leaves NaN propagation through max() to the implementation: NaN or an infinity, and the
    // first statistic it reaches (SwiftShader: the policy loss; Mesa 25's lavapipe: the value loss)
    await expect(be.rlStep([batch], rl)).rejects.toThrow(/non-finite (policyLoss|valueLoss) \((NaN|-?Infinity)\) at step 2/);
    be.dispose();
  });
});

describe('GpuTrainer.rlStep', () => {
  test('one submit per step; one readback on logging steps, none otherwise', async () => {
    const rt = await testRuntime();
    const params = initParams(paramTable(cfg), 25);
    const t = new GpuTrainer(new GpuModel(rt, cfg, params), optim);
    const batches = [rlBatch(params, 6), rlBatch(params, 7)];
    await t.rlStep(batches, rl, false); // warm-up: pipelines compiled
    const before = { ...rt.stats };
    const quiet = await t.rlStep(batches, rl, false);
    expect(quiet).toEqual({ tokens: 2 * B * (T - PROMPT) });
    expect(rt.stats.submits - before.submits).toBe(1);
    expect(rt.stats.readbacks - before.readbacks).toBe(0);
    const mid = { ...rt.stats };
    const loud = await t.rlStep(batches, rl, true);
    expect(loud.sums!.tokens).toBe(2 * B * (T - PROMPT));
    expect(rt.stats.submits - mid.submits).toBe(1);
    expect(rt.stats.readbacks - mid.readbacks).toBe(1); // sums, grad norm and status together
    t.model.dispose();
    t.dispose();
  });

  test('rollout fields of the wrong length and a bad loss config are rejected before recording', async () => {
    const rt = await testRuntime();
    const params = initParams(paramTable(cfg), 26);
    const t = new GpuTrainer(new GpuModel(rt, cfg, params), optim);
    const batch = rlBatch(params, 8);
    await expect(t.rlStep([{ ...batch, returns: batch.returns.subarray(1) }], rl, true)).rejects.toThrow(
      `returns has ${B * T - 1} values, expected B * T = ${B * T}`,
    );
    await expect(t.rlStep([batch], { ...rl, clip: 0 }, true)).rejects.toThrow(/clip must be in \(0, 1\)/);
    await expect(t.rlStep([batch, { ...batch, T: T - 1 }], rl, true)).rejects.toThrow(/one shape/);
    expect(t.step).toBe(0);
    t.model.dispose();
    t.dispose();
  });
});
