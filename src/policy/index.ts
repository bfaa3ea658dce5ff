/**
 * The policy layer: everything the RL stages (src/rl/stages) need from a language model, behind
 * one interface, so a run trains, samples and evaluates any model the same way.
 *
 *   Policy         one live model with its tokenizer: describe, generate, forward, the SFT and
 *                  RL optimizer steps, its parameters and optimizer state, checkpoint bytes
 *   PolicyFactory  what a run needs to make policies: a fresh seeded init, from checkpoint
 *                  bytes (with or without the optimizer state), from parameters; and the
 *                  checkpoint codec of its family
 *
 * Implementations: the lab's GPT (lab-gpt.ts: the WGSL engine or the float64 CPU model, the
 * checkpoints of model/model-file.ts); an imported Hugging Face model, trained with LoRA or in full
 * (hf-train.ts; hf.ts is its frozen form for evaluation and the KL reference); and an imported
 * ONNX model (onnx.ts), which is frozen: it samples and scores but does not train or save. Another
 * architecture adds a Policy and a PolicyFactory here; the stages do not change.
 */
import type { RlLossConfig, RlLossSums } from '../kernels/ppo_loss_ref';
import type { BackendKind, TrainStepResult } from '../model/backend';
import type { ModelConfig } from '../model/config';
import type { ForwardInput } from '../model/cpu';
import type { GenerateOptions, GenerateResult } from '../model/generate-common';
import type { OptimizerState } from '../model/model-file';
import type { OptimConfig, RlBatch, TokenBatch } from '../model/optim';
import type { TextTokenizer } from '../tokenizer/types';

export { DEFAULT_OPTIM, type OptimConfig, type RlBatch, type TokenBatch } from '../model/optim';
export type { BackendKind, TrainStepResult } from '../model/backend';
export type { ModelConfig } from '../model/config';
export type { ForwardInput } from '../model/cpu';
export type { GenerateOptions, GenerateResult } from '../model/generate-common';
export type { OptimizerState } from '../model/model-file';
export { labGptFactory, LabGptPolicy } from './lab-gpt';
export { FrozenOnnxPolicy } from './onnx';
export { hfPolicyFactory, HfTrainablePolicy } from './hf-train';

/** What a policy says about itself (logs, panels, the checks of a KL reference). */
export interface PolicyDescription {
  /** the implementation: 'lab-gpt' (ours), 'onnx' (an imported graph) */
  family: string;
  /** the architecture in a few words, e.g. '2 layers, d_model 64, 4 heads' */
  architecture: string;
  /** trainable parameters, padding excluded; null where unknown (a foreign ONNX graph) */
  parameters: number | null;
  /** V: the tokenizer's vocabulary, the logits' last dim */
  vocabSize: number;
  /** the longest sequence it scores or generates */
  contextLength: number;
  /** where it runs: the engine's 'cpu' or 'webgpu', or onnxruntime */
  backend: BackendKind | 'onnxruntime';
}

/** What a run's policies are made of: the architecture's config and the run's tokenizer. */
export interface PolicySpec {
  config: ModelConfig;
  /** the lab's Tokenizer (trained by the run) or an imported model's (PolicyFactory.pretrained) */
  tokenizer: TextTokenizer;
}

/** What a factory of an imported model tells a run: its tokenizer and shape are the run's, not trained ones. */
export interface PretrainedInfo {
  tokenizer: TextTokenizer;
  /** the model's shape at the run's context (the policies' config) */
  config: ModelConfig;
  /** e.g. 'gpt2, 2 layers, ...; LoRA r8 alpha 16 on c_attn (2 modules)' */
  describe(): string;
}

/** A checkpoint's content: parameters, the optimizer state it carries (or null), its meta. */
export interface PolicyCheckpoint {
  /** (P) parameters in slab layout */
  params: Float32Array;
  optimizer: OptimizerState | null;
  meta: Record<string, unknown>;
}

/**
 * One live model. `kind` and `config` are what the rl code reads to batch and bound sequences
 * (data.ts, episodes.ts, sample.ts: the micro-batching, contextLength, vocabSize), so any Policy
 * also serves where the engine's PolicyBackend is asked for.
 */
export interface Policy {
  /** the tokenizer its token ids are of (the lab's own, or an imported model's tokenizer.json) */
  readonly tokenizer: TextTokenizer;
  /** where its steps run: the micro-batching of training steps (rl/data.ts) depends on it */
  readonly kind: BackendKind;
  /** its shape (a foreign model's layers, width and heads may be 0: unknown) */
  readonly config: ModelConfig;
  /** forward() computes a prefix its sequences share once (PolicyBackend.sharesPrefixes) */
  readonly sharesPrefixes?: boolean;
  describe(): PolicyDescription;
  /** samples continuations of token prompts (temperature, top-k/p, seed, constraints: GenerateOptions) */
  generate(prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult>;
  /** logits (BT, V) and values (BT) of (B, T) tokens: log-probs for scoring, the KL, the value head */
  forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }>;
  /** one SFT optimizer step over the micro-batches; `read` asks for the loss (a readback on webgpu) */
  trainStep(batches: TokenBatch[], read: boolean): Promise<TrainStepResult>;
  /** one PPO / GRPO optimizer step over the micro-batches: loss sums over the masked tokens, pre-clip gradient norm */
  rlStep(batches: RlBatch[], cfg: RlLossConfig): Promise<{ sums: RlLossSums; gradNorm: number }>;
  /** the optimizer's settings for the steps that follow (learning rate, weight decay, clip) */
  setOptim(opt: OptimConfig): void;
  /** (P) parameters in slab layout */
  getParams(): Promise<Float32Array>;
  getOptimizerState(): Promise<OptimizerState>;
  /** its checkpoint bytes (its factory's `load` reads them), with the optimizer state when `optimizer` */
  save(o: { optimizer: boolean; meta: Record<string, unknown> }): Promise<Uint8Array>;
  /** frees what it holds (GPU buffers, a session); the policy is unusable after */
  dispose(): void;
}

/** How a run makes its policies (one family, one backend); the caller owns any device they need. */
export interface PolicyFactory {
  /** the family of its policies (PolicyDescription.family) */
  readonly family: string;
  /** where its policies run (config.json and summary.json record it) */
  readonly backend: BackendKind;
  /** set for an imported model (policy/hf-train.ts): the run takes its tokenizer and shape */
  readonly pretrained?: PretrainedInfo;
  /** a new policy, its parameters initialised from `seed` */
  init(spec: PolicySpec, seed: number, optim: OptimConfig): Policy;
  /** a policy of these parameters (slab layout), with this optimizer state when given */
  fromParams(spec: PolicySpec, params: Float32Array, optim: OptimConfig, optimizer?: OptimizerState | null): Policy;
  /** a policy from checkpoint bytes (checked against spec.config), with their optimizer state when `withOptimizer` */
  load(spec: PolicySpec, bytes: Uint8Array, optim: OptimConfig, withOptimizer?: boolean): Policy;
  /** decodes checkpoint bytes, checked against spec.config */
  readCheckpoint(spec: PolicySpec, bytes: Uint8Array): PolicyCheckpoint;
  /** the checkpoint bytes of parameters no live policy holds (e.g. SFT's best so far) */
  writeCheckpoint(spec: PolicySpec, ckpt: PolicyCheckpoint): Uint8Array;
}
