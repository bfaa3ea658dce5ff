/**
 * Training the float64 decoder (decoder-cpu.ts): SFT's masked next-token cross-entropy and the
 * PPO / GRPO step (kernels/ppo_loss_ref.ts), gradient accumulation over micro-batches, one global
 * gradient norm with clipping, and AdamW over what trains: the LoRA adapters (the base frozen),
 * or every tensor (full fine-tuning), and the value head when the model has one. The same
 * recipe as the lab GPT's CpuTrainer (cpu-train.ts), over the decoder's trainables() list.
 */
import { adamwRef } from '../kernels/adamw';
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import { checkRlSums, rlGradients, sftGradients, type RlStepResult, type StepResult } from './cpu-train';
import type { DecoderCpu } from './decoder-cpu';
import { NumericsError, trainableLr, type OptimConfig, type RlBatch, type TokenBatch } from './optim';

export class DecoderCpuTrainer {
  /** AdamW moments by trainable name (created at a trainable's first step; a checkpoint may set them) */
  readonly moments = new Map<string, { m: Float64Array; v: Float64Array }>();
  /** optimizer steps taken */
  step = 0;

  constructor(
    readonly model: DecoderCpu,
    public opt: OptimConfig,
  ) {}

  /** One SFT optimizer step over the micro-batches. */
  trainStep(batches: TokenBatch[]): StepResult {
    const { loss, tokens } = sftGradients(this.model, this.model.arch.vocabSize, batches);
    this.step++;
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    return { loss, gradNorm: this.applyGradients(), tokens };
  }

  /** One PPO / GRPO optimizer step (cpu-train.ts rlGradients: through the value head for PPO), then AdamW. */
  rlStep(batches: RlBatch[], cfg: RlLossConfig): RlStepResult {
    const sums = rlGradients(this.model, this.model.arch.vocabSize, batches, cfg);
    this.step++;
    checkRlSums(this.step, sums);
    return { sums, gradNorm: this.applyGradients() };
  }

  /** Clips by the global norm of every trainable's gradient and applies AdamW; returns the pre-clip norm. */
  applyGradients(): number {
    const params = this.model.trainables();
    let sq = 0;
    for (const p of params) for (const g of p.g) sq += g * g;
    const gradNorm = Math.sqrt(sq);
    if (!Number.isFinite(gradNorm)) {
      const bad = params.find((p) => p.g.some((g) => !Number.isFinite(g)));
      throw new NumericsError(this.step, `gradient of ${bad?.name ?? 'unknown tensor'}`, gradNorm);
    }
    const o = this.opt;
    const gradScale = o.gradClip > 0 ? Math.min(1, o.gradClip / (gradNorm + 1e-6)) : 1;
    for (const p of params) {
      let mv = this.moments.get(p.name);
      if (!mv) {
        mv = { m: new Float64Array(p.w.length), v: new Float64Array(p.w.length) };
        this.moments.set(p.name, mv);
      }
      adamwRef(p.w, p.g, mv.m, mv.v, 0, p.w.length, {
        lr: trainableLr(o, p.plus),
        beta1: o.beta1,
        beta2: o.beta2,
        eps: o.eps,
        step: this.step,
        gradScale,
        weightDecay: p.decay ? o.weightDecay : 0,
      });
    }
    return gradNorm;
  }
}
