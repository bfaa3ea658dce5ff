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

  /** One optimizer step over the micro-batches (gradient accumulation when there are several). */
  trainStep(batches: TokenBatch[]): StepResult {
    const { loss, tokens } = sftGradients(this.model, this.model.config.vocabSize, batches);
    this.step++;
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    const gradNorm = this.applyGradients();
    return { loss, gradNorm, tokens };
  }

  /** One PPO / GRPO optimizer step over the micro-batches (rlGradients), then AdamW. */
  rlStep(batches: RlBatch[], cfg: RlLossConfig): RlStepResult {
    const sums = rlGradients(this.model, this.model.config.vocabSize, batches, cfg);
    this.step++;
    checkRlSums(this.step, sums);
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

/** What the float64 training loops need of a model: the lab GPT (cpu.ts) and the imported decoder (decoder-cpu.ts). */
export interface CpuGradientModel {
  zeroGrad(): void;
  /** a training forward: logits (BT, V) and, with a value head, values (BT) */
  forward(input: { tokens: ArrayLike<number>; B: number; T: number; logitRows?: ArrayLike<number> }): {
    logits: Float64Array;
    values?: Float64Array;
  };
  /** accumulates the gradient of a loss with these derivatives w.r.t. the last forward's logits and values */
  backward(dlogits: ArrayLike<number>, dvalues: ArrayLike<number> | null): void;
}

/** Zeroes the gradients, then accumulates SFT's masked cross-entropy over the micro-batches; its mean and token count. */
export function sftGradients(model: CpuGradientModel, V: number, batches: TokenBatch[]): { loss: number; tokens: number } {
  const tokens = lossTokens('trainStep', batches, []);
  model.zeroGrad();
  let lossSum = 0;
  for (const b of batches) {
    const BT = b.B * b.T;
    const { logits } = model.forward({ tokens: b.tokens, B: b.B, T: b.T, logitRows: b.mask });
    const losses = new Float64Array(BT);
    const dlogits = new Float64Array(BT * V);
    crossEntropyRef(losses, dlogits, logits, b.targets, b.mask, BT, V, 1 / tokens);
    model.backward(dlogits, null);
    for (const l of losses) lossSum += l;
  }
  return { loss: lossSum / tokens, tokens };
}

/**
 * Zeroes the gradients, then accumulates the PPO / GRPO loss over the micro-batches: forward,
 * per-token log-probs and entropies at the sampling temperature, the loss's per-token derivatives
 * (kernels/ppo_loss_ref.ts), backward through log-probs, entropies and the value head (a model
 * without one gets values 0 and no value gradient). Returns the loss sums.
 */
export function rlGradients(model: CpuGradientModel, V: number, batches: RlBatch[], cfg: RlLossConfig): RlLossSums {
  validateRlLossConfig(cfg);
  const tokens = lossTokens('rlStep', batches, RL_ROLLOUT_FIELDS);
  model.zeroGrad();
  const sums = emptyRlSums();
  for (const b of batches) {
    const BT = b.B * b.T;
    const { logits, values } = model.forward({ tokens: b.tokens, B: b.B, T: b.T, logitRows: b.mask });
    const logp = new Float64Array(BT);
    const entropy = new Float64Array(BT);
    logprobEntropyRef(logp, entropy, logits, b.targets, BT, V, cfg.invTemp);
    const d = { dlogp: new Float64Array(BT), dentropy: new Float64Array(BT), dvalue: new Float64Array(BT) };
    rlTokenGradsRef(d, logp, entropy, values ?? new Float64Array(BT), b, BT, cfg, 1 / tokens, sums);
    const dlogits = new Float64Array(BT * V);
    logprobEntropyBackwardRef(dlogits, d.dlogp, d.dentropy, logits, b.targets, BT, V, cfg.invTemp);
    model.backward(dlogits, values ? d.dvalue : null);
  }
  return sums;
}

/** The numerics guard of an RL step's sums (step is the optimizer step they belong to). */
export function checkRlSums(step: number, sums: RlLossSums): void {
  for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) if (!Number.isFinite(sums[k])) throw new NumericsError(step, k, sums[k]);
}
