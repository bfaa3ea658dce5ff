/**
 * Training on the GPU: a whole optimizer step (every micro-batch's forward, loss and backward,
 * the global gradient norm and AdamW) is one recording and one submit. The loss and the
 * numerics status are read back only on logging steps. Two losses: masked next-token
 * cross-entropy (trainStep, SFT) and the PPO / GRPO policy-gradient loss (rlStep,
 * kernels/ppo_loss_ref.ts).
 */
import { rowWorkgroup, withConstants } from '../gpu/kernel';
import type { DispatchTiming, Recorder } from '../gpu/recorder';
import type { CompiledKernel, GpuRuntime } from '../gpu/runtime';
import { GRAD_STATUS_WORDS, selectAdamw, recordGradNorm, STATUS_NONFINITE_NOW } from '../kernels/adamw';
import { crossEntropy } from '../kernels/crossentropy';
import { logprobBackward, logprobForward, type LogprobProblem } from '../kernels/logprob';
import { DTOK_FIELDS, packRollout, plane, planeStride, ppoLoss, PPO_STATS, type PpoLossProblem } from '../kernels/ppo_loss';
import { RL_STAT_FIELDS, validateRlLossConfig, type RlLossConfig, type RlLossSums } from '../kernels/ppo_loss_ref';
import { recordSum } from '../kernels/reduce_sum';
import { accumulate } from '../kernels/residual';
import { defaultPositions } from './cpu';
import type { RlStepResult, StepResult } from './cpu-train';
import type { GpuModel } from './gpu';
import type { ActBuffers } from './gpu-acts';
import { lossTokens, NumericsError, type OptimConfig, type RlBatch, type TokenBatch } from './optim';

export interface GpuStepResult extends Partial<StepResult> {
  /** tokens that counted in the loss */
  tokens: number;
}

export interface GpuRlStepResult extends Partial<RlStepResult> {
  /** tokens that counted in the loss (the sum of the masks) */
  tokens: number;
}

/** Layout of the RL report buffer: the loss sums, then the grad norm and status, read in one go. */
const RL_NORM = PPO_STATS; // f32
const RL_STATUS = RL_NORM + 1; // GRAD_STATUS_WORDS u32
const RL_REPORT_WORDS = RL_STATUS + GRAD_STATUS_WORDS;

/** Buffers a recording borrowed: pooled ones go back to the pool after the submit, others are destroyed. */
interface Borrowed {
  release: GPUBuffer[];
  destroy: GPUBuffer[];
}

export class GpuTrainer {
  readonly m: GPUBuffer; // (P) first moments
  readonly v: GPUBuffer; // (P) second moments
  private readonly norm: GPUBuffer; // (1) global grad norm
  private readonly status: GPUBuffer; // (GRAD_STATUS_WORDS) u32
  private readonly lossSum: GPUBuffer; // (1) summed loss of the step
  private readonly rlReport: GPUBuffer; // (RL_REPORT_WORDS) RL loss sums (6), grad norm, status (4)
  step = 0;
  /** per-dispatch GPU times of the last step recorded with `profile` */
  lastTimings: DispatchTiming[] | null = null;

  constructor(
    readonly model: GpuModel,
    public opt: OptimConfig,
  ) {
    const rt = model.rt;
    const bytes = model.table.total * 4;
    this.m = rt.storage(bytes, 'adam m');
    this.v = rt.storage(bytes, 'adam v');
    this.norm = rt.storage(4, 'grad norm');
    this.status = rt.storage(GRAD_STATUS_WORDS * 4, 'grad status');
    this.lossSum = rt.storage(4, 'loss sum');
    this.rlReport = rt.storage(RL_REPORT_WORDS * 4, 'rl report');
  }

  private get rt(): GpuRuntime {
    return this.model.rt;
  }

  /**
   * One optimizer step over the micro-batches, in one submit. With `read` the loss and the
   * gradient norm are read back and checked (the numerics guard); otherwise nothing is read.
   */
  async trainStep(batches: TokenBatch[], read: boolean, profile = false): Promise<GpuStepResult> {
    const { rt, model } = this;
    const V = model.config.vocabSize;
    const tokens = checkBatches('trainStep', batches);
    const ceSpec = withConstants(crossEntropy, { workgroupSize: [rowWorkgroup(V, 8)] });
    const [ce, acc] = await Promise.all([rt.compile(ceSpec), rt.compile(accumulate)]);
    this.step++;
    const rec = rt.record(`train step ${this.step}`, { profile });
    const borrowed: Borrowed = { release: [], destroy: [] };
    rec.clear(model.grads).clear(this.lossSum);
    for (const b of batches) {
      const { B, T } = b;
      const { acts, positions } = this.stageInputs(rec, b, borrowed);
      await model.recordForward(rec, acts);
      rec.dispatch(
        ce,
        { logits: acts.logits, targets: acts.targets, mask: acts.mask, losses: acts.losses, dlogits: acts.dlogits },
        { BT: B * T, V, scale: 1 / tokens, writeGrad: true },
      );
      await this.recordBackward(rec, acts, b, positions, false, borrowed);
      if (read) {
        const { result, temporaries } = await recordSum(rt, rec, acts.losses, B * T);
        rec.dispatch(acc, { dst: this.lossSum, src: { buffer: result, offset: 0, size: 4 } }, { n: 1 });
        borrowed.release.push(result, ...temporaries);
      }
    }
    await this.recordUpdate(rec, borrowed);
    const lossP = read ? rec.read(this.lossSum) : null;
    const normP = read ? rec.read(this.norm) : null;
    const statusP = read ? rec.read(this.status) : null;
    await this.submit(rec, borrowed);
    if (!read) return { tokens };
    const loss = new Float32Array(await lossP!)[0]! / tokens;
    const gradNorm = new Float32Array(await normP!)[0]!;
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    await this.guardGradients(gradNorm, new Uint32Array(await statusP!)[STATUS_NONFINITE_NOW]!);
    return { loss, gradNorm, tokens };
  }

  /**
   * One PPO / GRPO optimizer step over the micro-batches, in one submit. Per micro-batch:
   * forward; log-probs and entropies at the sampling temperature; the loss's per-token
   * derivatives and statistics (ppo_loss); their backward into dlogits; backward through the
   * model and the value head. Then the global gradient norm and AdamW. With `read` the loss sums
   * and the gradient norm come back in one readback and are checked (the numerics guard, as in
   * the cpu trainer); otherwise nothing is read.
   */
  async rlStep(batches: RlBatch[], cfg: RlLossConfig, read: boolean, profile = false): Promise<GpuRlStepResult> {
    const { rt, model } = this;
    validateRlLossConfig(cfg);
    const tokens = checkBatches('rlStep', batches);
    const BT = batches[0]!.B * batches[0]!.T;
    const S = planeStride(BT, rt.limits);
    const rollouts = batches.map((b) => packRollout(b, BT, S)); // (5, S) each; checks the lengths
    const wg = { workgroupSize: [rowWorkgroup(model.config.vocabSize, 8)] as const };
    const [lpFwd, lpBwd, ppo] = await Promise.all([
      rt.compile(withConstants(logprobForward, wg)),
      rt.compile(withConstants(logprobBackward, wg)),
      rt.compile(ppoLoss),
    ]);
    this.step++;
    const rec = rt.record(`rl step ${this.step}`, { profile });
    const borrowed: Borrowed = { release: [], destroy: [] };
    rec.clear(model.grads).clear(this.rlReport);
    for (const [i, b] of batches.entries()) {
      await this.recordRlMicroBatch(rec, { lpFwd, lpBwd, ppo }, b, rollouts[i]!, S, cfg, 1 / tokens, borrowed);
    }
    await this.recordUpdate(rec, borrowed);
    let reportP: Promise<ArrayBuffer> | null = null;
    if (read) {
      rec.copy(this.norm, 0, this.rlReport, RL_NORM * 4, 4);
      rec.copy(this.status, 0, this.rlReport, RL_STATUS * 4, GRAD_STATUS_WORDS * 4);
      reportP = rec.read(this.rlReport);
    }
    await this.submit(rec, borrowed);
    if (!reportP) return { tokens };
    const report = await reportP;
    const f = new Float32Array(report);
    const sums: RlLossSums = { tokens, policyLoss: 0, valueLoss: 0, entropy: 0, kl: 0, approxKl: 0, clipped: 0 };
    RL_STAT_FIELDS.forEach((k, j) => (sums[k] = f[j]!));
    for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) {
      if (!Number.isFinite(sums[k])) throw new NumericsError(this.step, k, sums[k]);
    }
    const gradNorm = f[RL_NORM]!;
    await this.guardGradients(gradNorm, new Uint32Array(report)[RL_STATUS + STATUS_NONFINITE_NOW]!);
    return { sums, gradNorm, tokens };
  }

  /**
   * One micro-batch of rlStep: staged inputs, forward, log-probs and entropies (BT), ppo_loss
   * (dlogp, dentropy into dtok planes, dvalue into acts.dvalues, statistics added to the report),
   * the log-prob backward into acts.dlogits, and the model's backward. Shape legend: config.ts;
   * S is the plane stride of ppo_loss.ts.
   */
  private async recordRlMicroBatch(
    rec: Recorder,
    k: { lpFwd: CompiledKernel<LogprobProblem>; lpBwd: CompiledKernel<LogprobProblem>; ppo: CompiledKernel<PpoLossProblem> },
    b: RlBatch,
    packed: Float32Array<ArrayBuffer>,
    S: number,
    cfg: RlLossConfig,
    scale: number,
    borrowed: Borrowed,
  ): Promise<void> {
    const { rt, model } = this;
    const BT = b.B * b.T;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    const { acts, positions } = this.stageInputs(rec, b, borrowed);
    // a rollout buffer of its own, so it can be written before the submit like the staged inputs
    const rollout = rt.pool.acquire(packed.byteLength, usage, 'rl rollout'); // (5, S)
    rt.device.queue.writeBuffer(rollout, 0, packed);
    const logp = rt.pool.acquire(BT * 4, usage, 'rl logp'); // (BT)
    const entropy = rt.pool.acquire(BT * 4, usage, 'rl entropy'); // (BT)
    const dtok = rt.pool.acquire(DTOK_FIELDS.length * S * 4, usage, 'rl dlogp, dentropy'); // (2, S)
    borrowed.release.push(rollout, logp, entropy, dtok);

    await model.recordForward(rec, acts);
    const lp = { BT, V: model.config.vocabSize, invTemp: cfg.invTemp };
    const sums = { buffer: this.rlReport, offset: 0, size: PPO_STATS * 4 };
    rec.dispatch(k.lpFwd, { logits: acts.logits, targets: acts.targets, logp, entropy }, lp);
    rec.dispatch(
      k.ppo,
      { logp, entropy, values: acts.values, mask: acts.mask, rollout, dtok, dvalue: acts.dvalues, sums },
      { ...cfg, n: BT, stride: S, scale },
    );
    rec.dispatch(
      k.lpBwd,
      { logits: acts.logits, targets: acts.targets, dlogp: plane(dtok, 0, BT, S), dentropy: plane(dtok, 1, BT, S), dlogits: acts.dlogits },
      lp,
    );
    // without a critic (vfCoef 0) dvalues is all zeros: the value head's backward would add nothing
    await this.recordBackward(rec, acts, b, positions, cfg.vfCoef > 0, borrowed);
  }

  /**
   * Stages a micro-batch's inputs (tokens, positions, start, targets, mask): each is written to a
   * pooled buffer now and copied into the shared activation buffers at this point of the
   * recording, so every micro-batch sees its own.
   */
  private stageInputs(rec: Recorder, b: TokenBatch, borrowed: Borrowed): { acts: ActBuffers; positions: Uint32Array } {
    const { rt, model } = this;
    const { B, T } = b;
    const positions = defaultPositions(B, T);
    const acts = model.acts(B, T);
    for (const [dst, data] of [
      [acts.tokens, b.tokens],
      [acts.positions, positions],
      [acts.start, new Uint32Array(B)],
      [acts.targets, b.targets],
      [acts.mask, b.mask],
    ] as const) {
      const staged = rt.pool.acquire(data.byteLength, GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'staged input');
      rt.device.queue.writeBuffer(staged, 0, data);
      rec.copy(staged, 0, dst, 0, data.byteLength);
      borrowed.release.push(staged);
    }
    return { acts, positions };
  }

  /** Backward from acts.dlogits (and acts.dvalues with `withValues`), accumulating into the gradients. */
  private async recordBackward(
    rec: Recorder,
    acts: ActBuffers,
    b: TokenBatch,
    positions: Uint32Array,
    withValues: boolean,
    borrowed: Borrowed,
  ): Promise<void> {
    const back = await this.model.recordBackward(rec, acts, b.tokens, positions, withValues);
    borrowed.release.push(...back.release);
    borrowed.destroy.push(...back.destroy);
  }

  /** The global gradient norm (into `norm`, `status`) and AdamW over both slabs (decayed, then not). */
  private async recordUpdate(rec: Recorder, borrowed: Borrowed): Promise<void> {
    const { rt, model } = this;
    borrowed.release.push(...(await recordGradNorm(rt, rec, model.grads, model.table.total, this.norm, this.status)));
    const o = this.opt;
    const common = { lr: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, step: this.step, maxNorm: o.gradClip };
    const bind = { param: model.params, grad: model.grads, m: this.m, v: this.v, norm: this.norm, status: this.status };
    const { decayEnd, total } = model.table;
    for (const p of [
      { ...common, offset: 0, n: decayEnd, weightDecay: o.weightDecay },
      { ...common, offset: decayEnd, n: total - decayEnd, weightDecay: 0 },
    ])
      rec.dispatch(await rt.compile(selectAdamw(p)), bind, p);
  }

  /** Submits, keeps the timings, and gives back what the recording borrowed. */
  private async submit(rec: Recorder, borrowed: Borrowed): Promise<void> {
    const report = await rec.submit();
    this.lastTimings = report.timings;
    for (const b of borrowed.release) this.rt.pool.release(b);
    for (const b of borrowed.destroy) b.destroy();
  }

  /** The numerics guard on the gradient: throws naming the first non-finite tensor. */
  private async guardGradients(gradNorm: number, nonFiniteNow: number): Promise<void> {
    if (nonFiniteNow || !Number.isFinite(gradNorm)) {
      throw new NumericsError(this.step, `gradient of ${await this.firstNonFiniteTensor()}`, gradNorm);
    }
  }

  /** After a non-finite norm: the first tensor whose gradient holds NaN or Inf (one readback). */
  private async firstNonFiniteTensor(): Promise<string> {
    const g = await this.model.readGrads();
    const bad = this.model.table.entries.find((e) => g.subarray(e.offset, e.offset + e.size).some((x) => !Number.isFinite(x)));
    return bad?.name ?? 'unknown tensor';
  }

  dispose(): void {
    for (const b of [this.m, this.v, this.norm, this.status, this.lossSum, this.rlReport]) b.destroy();
  }
}

/** Checks the micro-batches (one shape, B * T values per field: lossTokens) and returns the sum of their masks. */
function checkBatches(what: string, batches: TokenBatch[]): number {
  const first = batches[0];
  if (first && batches.some((b) => b.B !== first.B || b.T !== first.T))
    throw new Error(`${what}: micro-batches must share one shape (B, T)`);
  return lossTokens(what, batches, []);
}
