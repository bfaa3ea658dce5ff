/**
 * Training on the float64 CPU model: masked next-token cross-entropy, gradient accumulation
 * over micro-batches, global-norm clipping and AdamW, composed from the kernels' references.
 */
import { adamwRef, gradNormRef } from '../kernels/adamw';
import { crossEntropyRef } from '../kernels/crossentropy';
import { logprobEntropyBackwardRef, logprobEntropyRef } from '../kernels/logprob';
import {
  emptyRlSums,
  RL_ROLLOUT_FIELDS,
  rlTokenGradsRef,
  validateRlLossConfig,
  type RlLossConfig,
  type RlLossSums,
} from '../kernels/ppo_loss_ref';
import type { CpuModel } from './cpu';
import { lossTokens, NumericsError, type OptimConfig, type RlBatch, type TokenBatch } from './optim';

export interface RlStepResult {
  /** sums over the masked tokens of the step (see RlLossSums) */
  sums: RlLossSums;
  gradNorm: number;
}

export interface StepResult {
  /** mean masked cross-entropy over all micro-batches */
  loss: number;
  /** global gradient L2 norm before clipping */
  gradNorm: number;
  /** tokens that counted in the loss */
  tokens: number;
}

export class CpuTrainer {
  readonly m: Float64Array;
  readonly v: Float64Array;
  /** optimizer steps taken */
  step = 0;

  constructor(
    readonly model: CpuModel,
    public opt: OptimConfig,
  ) {
    this.m = new Float64Array(model.table.total);
    this.v = new Float64Array(model.table.total);
  }

  /** Forward, loss and backward of one micro-batch; gradients accumulate scaled by `scale`. Returns the summed loss. */
  accumulate(batch: TokenBatch, scale: number): number {
    const { B, T } = batch;
    const V = this.model.config.vocabSize;
    const { logits } = this.model.forward({ tokens: batch.tokens, B, T });
    const losses = new Float64Array(B * T);
    const dlogits = new Float64Array(B * T * V);
    crossEntropyRef(losses, dlogits, logits, batch.targets, batch.mask, B * T, V, scale);
    this.model.backward(dlogits, null);
    let sum = 0;
    for (const l of losses) sum += l;
    return sum;
  }

  /** One optimizer step over the micro-batches (gradient accumulation when there are several). */
  trainStep(batches: TokenBatch[]): StepResult {
    const tokens = lossTokens('trainStep', batches, []);
    this.model.zeroGrad();
    let lossSum = 0;
    for (const b of batches) lossSum += this.accumulate(b, 1 / tokens);
    const loss = lossSum / tokens;
    this.step++;
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    const gradNorm = this.applyGradients();
    return { loss, gradNorm, tokens };
  }

  /**
   * One PPO / GRPO optimizer step over the micro-batches: forward, per-token log-probs and
   * entropies at the sampling temperature, the loss's per-token derivatives
   * (kernels/ppo_loss_ref.ts), backward through log-probs, entropies and the value head, then AdamW.
   */
  rlStep(batches: RlBatch[], cfg: RlLossConfig): RlStepResult {
    validateRlLossConfig(cfg);
    const tokens = lossTokens('rlStep', batches, RL_ROLLOUT_FIELDS);
    const V = this.model.config.vocabSize;
    this.model.zeroGrad();
    const sums = emptyRlSums();
    for (const b of batches) {
      const BT = b.B * b.T;
      const { logits, values } = this.model.forward({ tokens: b.tokens, B: b.B, T: b.T });
      const logp = new Float64Array(BT);
      const entropy = new Float64Array(BT);
      logprobEntropyRef(logp, entropy, logits, b.targets, BT, V, cfg.invTemp);
      const d = { dlogp: new Float64Array(BT), dentropy: new Float64Array(BT), dvalue: new Float64Array(BT) };
      rlTokenGradsRef(d, logp, entropy, values, b, BT, cfg, 1 / tokens, sums);
      const dlogits = new Float64Array(BT * V);
      logprobEntropyBackwardRef(dlogits, d.dlogp, d.dentropy, logits, b.targets, BT, V, cfg.invTemp);
      this.model.backward(dlogits, d.dvalue);
    }
    this.step++;
    for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) {
      if (!Number.isFinite(sums[k])) throw new NumericsError(this.step, k, sums[k]);
    }
    const gradNorm = this.applyGradients();
    return { sums, gradNorm };
  }

  /** Clips and applies the accumulated gradients with AdamW; returns the pre-clip norm. */
  applyGradients(): number {
    const { table, params, grads } = this.model;
    const gradNorm = gradNormRef(grads, table.total);
    if (!Number.isFinite(gradNorm)) {
      const bad = table.entries.find((e) => grads.subarray(e.offset, e.offset + e.size).some((g) => !Number.isFinite(g)));
      throw new NumericsError(this.step, `gradient of ${bad?.name ?? 'unknown tensor'}`, gradNorm);
    }
    const o = this.opt;
    const gradScale = o.gradClip > 0 ? Math.min(1, o.gradClip / (gradNorm + 1e-6)) : 1;
    const common = { lr: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, step: this.step, gradScale };
    adamwRef(params, grads, this.m, this.v, 0, table.decayEnd, { ...common, weightDecay: o.weightDecay });
    adamwRef(params, grads, this.m, this.v, table.decayEnd, table.total - table.decayEnd, { ...common, weightDecay: 0 });
    return gradNorm;
  }
}
