/** Optimizer settings (AdamW with global-norm clipping), validated; shared by both backends. */
import type { RlRollout } from '../kernels/ppo_loss_ref';
import { ConfigError } from './config';

export interface OptimConfig {
  /** learning rate */
  lr: number;
  /** Adam first-moment decay */
  beta1: number;
  /** Adam second-moment decay */
  beta2: number;
  /** Adam denominator epsilon */
  eps: number;
  /** decoupled weight decay for matrices and embeddings (not biases or LayerNorm) */
  weightDecay: number;
  /** clip the global gradient L2 norm to this; 0 disables */
  gradClip: number;
  /**
   * LoRA+ (Hayou et al. 2024; PEFT's create_loraplus_optimizer, loraplus_lr_ratio): with LoRA, the
   * lora_B tensors and the 1-D parameters (PEFT's groupB) learn at lr x this, lora_A and the rest
   * at lr. 1: plain LoRA. Full fine-tuning ignores it.
   */
  loraPlusRatio: number;
}

export const DEFAULT_OPTIM: OptimConfig = {
  lr: 3e-4,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  gradClip: 1.0,
  loraPlusRatio: 1,
};

/** The learning rate of one trainable: lr, or lr x loraPlusRatio in LoRA+'s fast group (`plus`). */
export function trainableLr(o: OptimConfig, plus: boolean): number {
  return plus ? o.lr * o.loraPlusRatio : o.lr;
}

const RANGES: Record<keyof OptimConfig, [number, number]> = {
  lr: [0, 1],
  beta1: [0, 0.999999],
  beta2: [0, 0.999999],
  eps: [0, 1],
  weightDecay: [0, 10],
  gradClip: [0, 1e6],
  loraPlusRatio: [0, 1e4],
};

export function validateOptimConfig(input: unknown, where = 'optimizer'): OptimConfig {
  if (typeof input !== 'object' || input === null) throw new ConfigError(`${where}: expected an object`);
  const obj = { ...DEFAULT_OPTIM, ...(input as Record<string, unknown>) } as Record<string, unknown>;
  const unknown = Object.keys(input).filter((k) => !(k in RANGES));
  if (unknown.length) throw new ConfigError(`${where}: unknown field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  for (const [k, [lo, hi]] of Object.entries(RANGES)) {
    const v = obj[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi) {
      throw new ConfigError(`${where}.${k}: must be a number in [${lo}, ${hi}], got ${JSON.stringify(v)}`);
    }
  }
  return obj as unknown as OptimConfig;
}

/** A batch of token sequences for next-token training. */
export interface TokenBatch {
  B: number;
  T: number;
  /** (B, T) inputs */
  tokens: Uint32Array<ArrayBuffer>;
  /** (B, T) next-token targets */
  targets: Uint32Array<ArrayBuffer>;
  /** (B, T) 1 where the loss counts (e.g. the solution, not the prompt), else 0 */
  mask: Float32Array<ArrayBuffer>;
}

/** A minibatch for a policy-gradient step: tokens and targets as for SFT, plus per-token rollout data (kernels/ppo_loss_ref.ts). */
export interface RlBatch extends TokenBatch, RlRollout {}

/**
 * Checks micro-batches before a step: at least one, each named field holding B * T values,
 * and a loss mask that selects something. Returns the number of loss tokens (the mask's sum).
 */
export function lossTokens<K extends string>(
  what: string,
  batches: readonly (TokenBatch & Record<K, ArrayLike<number>>)[],
  fields: readonly K[],
): number {
  if (batches.length === 0) throw new Error(`${what}: no micro-batch`);
  let tokens = 0;
  batches.forEach((b, i) => {
    const n = b.B * b.T;
    for (const k of ['tokens', 'targets', 'mask', ...fields] as const) {
      const len = (b as unknown as Record<string, ArrayLike<number>>)[k]!.length;
      if (len !== n) throw new Error(`${what}: micro-batch ${i}: ${k} has ${len} values, expected B * T = ${n}`);
    }
    for (const m of b.mask) tokens += m;
  });
  if (tokens === 0) throw new Error(`${what}: the loss mask selects no token`);
  return tokens;
}

/** Thrown by the numerics guard: names the step and the tensor that went non-finite. */
export class NumericsError extends Error {
  override readonly name = 'NumericsError';
  constructor(
    readonly step: number,
    readonly tensor: string,
    readonly value: number,
  ) {
    super(`non-finite ${tensor} (${value}) at step ${step}: training stopped; lower the learning rate or resume from the last checkpoint`);
  }
}
