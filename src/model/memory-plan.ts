/**
 * The GPU memory a training run of the data-described decoder needs, before it starts: weights,
 * adapters (or every tensor's gradient with full fine-tuning), AdamW's two moments, the value
 * head, the rollouts' KV cache, and one micro-batch's activations (what the training forward
 * saves per layer, the backward's scratch, the logits and their gradient). The micro-batch is
 * the largest number of sequences that fits the budget, so a step is that many sequences at a
 * time with gradient accumulation; a plan whose fixed part or single-sequence micro-batch does not
 * fit is refused with the numbers. All f32 (the engine's storage; see docs/models.md), but for a
 * LoRA base stored as packed F16 / BF16 (weightFormat: 2 bytes an element of every matrix).
 *
 * Per token and layer the training forward keeps (decoder-cpu.ts DecoderLayerActs, the same on
 * the GPU): x, h1, x2, h2 (4 C), qkv (W), atty (QD), u (2F SwiGLU / F GELU), act (F), the norms'
 * mean and rstd (4) and the attention's logsumexp (NH); the backward adds its scratch (the
 * residual gradient and one layer's gradients: about 2 C + W + QD + up + F).
 */
import { archDims, archParameterCount, archWeightBytes, type DecoderArch } from './arch';
import { loraModules, type LoraConfig } from './lora';
import type { WeightFormat } from '../kernels/weight_format';

export interface MemoryPlanInput {
  arch: DecoderArch;
  /** how the matrices are stored (default f32; 16-bit only for a frozen LoRA base) */
  weightFormat?: WeightFormat;
  /** LoRA settings, or null: full fine-tuning */
  lora: LoraConfig | null;
  /** sequences per RL iteration (prompts x samples) */
  sequences: number;
  /** prompt + new tokens of a sequence (its training length and KV-cache rows) */
  seqLen: number;
  /** a PPO critic on top (value head); GRPO has none */
  valueHead: boolean;
  /** the bytes the plan may use (e.g. 4 GiB, or the adapter's maxBufferSize x buffers) */
  budgetBytes: number;
}

export interface MemoryPlan {
  weights: number;
  /** how the matrices among them are stored */
  weightFormat: WeightFormat;
  /** adapters (LoRA) or nothing extra (full: the weights train themselves) */
  adapters: number;
  /** trainable gradients */
  gradients: number;
  /** AdamW m and v */
  optimizer: number;
  valueHead: number;
  /** the rollouts' KV cache: sequences x seqLen rows, every layer, k and v */
  kvCache: number;
  /** one micro-batch's activations and scratch */
  activations: number;
  /** sequences per micro-batch (gradient accumulation over sequences / microBatch) */
  microBatch: number;
  total: number;
  budget: number;
  /** trainable parameters */
  trainable: number;
}

export class MemoryPlanError extends Error {
  override readonly name = 'MemoryPlanError';
}

const MiB = 2 ** 20;
export const formatBytes = (b: number): string =>
  b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(2)} GiB` : b >= MiB ? `${(b / MiB).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`;

/** f32 bytes one training token needs across the model, saved activations and scratch. */
export function activationBytesPerToken(a: DecoderArch): number {
  const { dModel: C, nHead: NH, dFf: F, vocabSize: V } = a;
  const { QD, W, up } = archDims(a);
  const saved = 4 * C + W + QD + up + F + 4 + NH;
  const scratch = 2 * C + W + QD + up + F;
  return 4 * (a.nLayer * saved + scratch + 2 * C + 2 * V); // + final, hf; logits and dlogits
}

export function planMemory(p: MemoryPlanInput): MemoryPlan {
  const a = p.arch;
  const f = 4;
  const params = archParameterCount(a);
  const weightFormat = p.weightFormat ?? 'f32';
  if (weightFormat !== 'f32' && !p.lora)
    throw new MemoryPlanError(`full fine-tuning trains every weight, so they are f32, not ${weightFormat}`);
  const weights = archWeightBytes(a, weightFormat);
  let trainable: number;
  let adapters = 0;
  if (p.lora) {
    const r = p.lora.rank;
    trainable = loraModules(a, p.lora).reduce((s, m) => s + r * (m.inFeatures + m.outFeatures), 0);
    adapters = trainable * f;
  } else {
    trainable = params;
  }
  const valueHead = p.valueHead ? (a.dModel + 1) * f : 0;
  const trainableAll = trainable + (p.valueHead ? a.dModel + 1 : 0);
  const gradients = trainableAll * f;
  const optimizer = 2 * trainableAll * f;
  const kvCache = p.sequences * p.seqLen * a.nLayer * 2 * a.nKvHead * a.headDim * f;
  const fixed = weights + adapters + gradients + optimizer + valueHead + kvCache;
  const perSeq = activationBytesPerToken(a) * p.seqLen;
  const room = p.budgetBytes - fixed;
  const microBatch = Math.min(p.sequences, Math.floor(room / perSeq));
  const plan: MemoryPlan = {
    weights,
    weightFormat,
    adapters,
    gradients,
    optimizer,
    valueHead,
    kvCache,
    activations: Math.max(1, microBatch) * perSeq,
    microBatch,
    total: fixed + Math.max(1, microBatch) * perSeq,
    budget: p.budgetBytes,
    trainable: trainableAll,
  };
  if (microBatch < 1) {
    throw new MemoryPlanError(
      `the step does not fit ${formatBytes(p.budgetBytes)}: ${describeMemoryPlan({ ...plan, microBatch: 1 })}; ` +
        (p.lora ? 'use fewer sequences or shorter ones' : 'use LoRA ({"lora":{"rank":8}}), fewer sequences or shorter ones'),
    );
  }
  return plan;
}

/** "weights 513.0 MiB, adapters 3.4 MiB, gradients ..., total 3.21 GiB of 4.00 GiB, micro-batch 6 sequences" */
export function describeMemoryPlan(m: MemoryPlan): string {
  const parts = [
    `weights ${formatBytes(m.weights)}${m.weightFormat === 'f32' ? '' : ` (${m.weightFormat.toUpperCase()})`}`,
    ...(m.adapters ? [`adapters ${formatBytes(m.adapters)}`] : []),
    `gradients ${formatBytes(m.gradients)}`,
    `optimizer ${formatBytes(m.optimizer)}`,
    ...(m.valueHead ? [`value head ${formatBytes(m.valueHead)}`] : []),
    `KV cache ${formatBytes(m.kvCache)}`,
    `activations ${formatBytes(m.activations)} (${m.microBatch} sequence${m.microBatch === 1 ? '' : 's'} a micro-batch)`,
  ];
  return `${parts.join(', ')}; total ${formatBytes(m.total)} of ${formatBytes(m.budget)}`;
}
