/**
 * Training on the GPU: a whole optimizer step (every micro-batch's forward, loss and backward,
 * the global gradient norm and AdamW) is one recording and one submit. The loss and the
 * numerics status are read back only on logging steps.
 */
import { rowWorkgroup, withConstants } from '../gpu/kernel';
import type { DispatchTiming } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { adamw, GRAD_STATUS_WORDS, recordGradNorm, STATUS_NONFINITE_NOW } from '../kernels/adamw';
import { crossEntropy } from '../kernels/crossentropy';
import { recordSum } from '../kernels/reduce_sum';
import { accumulate } from '../kernels/residual';
import { defaultPositions } from './cpu';
import type { StepResult } from './cpu-train';
import type { GpuModel } from './gpu';
import { NumericsError, type OptimConfig, type TokenBatch } from './optim';

export interface GpuStepResult extends Partial<StepResult> {
  /** tokens that counted in the loss */
  tokens: number;
}

export class GpuTrainer {
  readonly m: GPUBuffer; // (P) first moments
  readonly v: GPUBuffer; // (P) second moments
  private readonly norm: GPUBuffer; // (1) global grad norm
  private readonly status: GPUBuffer; // (GRAD_STATUS_WORDS) u32
  private readonly lossSum: GPUBuffer; // (1) summed loss of the step
  step = 0;
  /** per-dispatch GPU times of the last step recorded with `profile` */
  lastTimings: DispatchTiming[] | null = null;

  constructor(readonly model: GpuModel, public opt: OptimConfig) {
    const rt = model.rt;
    const bytes = model.table.total * 4;
    this.m = rt.storage(bytes, 'adam m');
    this.v = rt.storage(bytes, 'adam v');
    this.norm = rt.storage(4, 'grad norm');
    this.status = rt.storage(GRAD_STATUS_WORDS * 4, 'grad status');
    this.lossSum = rt.storage(4, 'loss sum');
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
    let tokens = 0;
    for (const b of batches) for (const m of b.mask) tokens += m;
    if (tokens === 0) throw new Error('trainStep: the loss mask selects no token');
    if (batches.some((b) => b.B !== batches[0]!.B || b.T !== batches[0]!.T)) throw new Error('trainStep: micro-batches must share one shape (B, T)');
    const ceSpec = withConstants(crossEntropy, { workgroupSize: [rowWorkgroup(V, 8)] });
    const [ce, acc, opt] = await Promise.all([rt.compile(ceSpec), rt.compile(accumulate), rt.compile(adamw)]);
    this.step++;
    const rec = rt.record(`train step ${this.step}`, { profile });
    const release: GPUBuffer[] = [];
    const destroy: GPUBuffer[] = [];
    rec.clear(model.grads).clear(this.lossSum);
    for (const b of batches) {
      const { B, T } = b;
      const positions = defaultPositions(B, T);
      const acts = model.acts(B, T);
      // Each micro-batch's inputs are staged, then copied in at their place in the recording.
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
        release.push(staged);
      }
      await model.recordForward(rec, acts);
      rec.dispatch(ce, { logits: acts.logits, targets: acts.targets, mask: acts.mask, losses: acts.losses, dlogits: acts.dlogits }, { BT: B * T, V, scale: 1 / tokens, writeGrad: true });
      const back = await model.recordBackward(rec, acts, b.tokens, positions, false);
      release.push(...back.release);
      destroy.push(...back.destroy);
      if (read) {
        const { result, temporaries } = await recordSum(rt, rec, acts.losses, B * T);
        rec.dispatch(acc, { dst: this.lossSum, src: { buffer: result, offset: 0, size: 4 } }, { n: 1 });
        release.push(result, ...temporaries);
      }
    }
    release.push(...(await recordGradNorm(rt, rec, model.grads, model.table.total, this.norm, this.status)));
    const o = this.opt;
    const common = { lr: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, step: this.step, maxNorm: o.gradClip };
    const bind = { param: model.params, grad: model.grads, m: this.m, v: this.v, norm: this.norm, status: this.status };
    const { decayEnd, total } = model.table;
    rec.dispatch(opt, bind, { ...common, offset: 0, n: decayEnd, weightDecay: o.weightDecay });
    rec.dispatch(opt, bind, { ...common, offset: decayEnd, n: total - decayEnd, weightDecay: 0 });
    const lossP = read ? rec.read(this.lossSum) : null;
    const normP = read ? rec.read(this.norm) : null;
    const statusP = read ? rec.read(this.status) : null;
    const report = await rec.submit();
    this.lastTimings = report.timings;
    for (const b of release) rt.pool.release(b);
    for (const b of destroy) b.destroy();
    if (!read) return { tokens };
    const loss = new Float32Array(await lossP!)[0]! / tokens;
    const gradNorm = new Float32Array(await normP!)[0]!;
    const status = new Uint32Array(await statusP!);
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    if (status[STATUS_NONFINITE_NOW] || !Number.isFinite(gradNorm)) {
      throw new NumericsError(this.step, `gradient of ${await this.firstNonFiniteTensor()}`, gradNorm);
    }
    return { loss, gradNorm, tokens };
  }

  /** After a non-finite norm: the first tensor whose gradient holds NaN or Inf (one readback). */
  private async firstNonFiniteTensor(): Promise<string> {
    const g = await this.model.readGrads();
    const bad = this.model.table.entries.find((e) => g.subarray(e.offset, e.offset + e.size).some((x) => !Number.isFinite(x)));
    return bad?.name ?? 'unknown tensor';
  }

  dispose(): void {
    for (const b of [this.m, this.v, this.norm, this.status, this.lossSum]) b.destroy();
  }
}
