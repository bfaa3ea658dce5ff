/**
 * Two backends behind one interface: `webgpu` (the product: WGSL kernels) and `cpu` (the
 * float64 reference model: the test oracle, and the fallback where WebGPU is missing). The
 * same weights and inputs give the same logits within 1e-4 relative.
 */
import type { GpuRuntime } from '../gpu/runtime';
import type { RlLossConfig, RlLossSums } from '../kernels/ppo_loss_ref';
import type { ModelConfig } from './config';
import { CpuModel, type ForwardInput } from './cpu';
import { cpuGenerate } from './cpu-generate';
import { CpuTrainer } from './cpu-train';
import { generate, type GenerateOptions, type GenerateResult } from './generate';
import { GpuModel } from './gpu';
import { GpuTrainer } from './gpu-train';
import type { OptimizerState } from './model-file';
import type { OptimConfig, RlBatch, TokenBatch } from './optim';

export type BackendKind = 'cpu' | 'webgpu';

export interface TrainStepResult {
  /** present on logging steps (always on the cpu backend) */
  loss?: number;
  gradNorm?: number;
  tokens: number;
}

export interface PolicyBackend {
  readonly kind: BackendKind;
  readonly config: ModelConfig;
  /**
   * true when forward() computes a prefix that several sequences of one call share once
   * (ForwardInput.readRows; the float64 decoder of an imported model): callers then batch
   * sequences of one prompt together instead of sequences of like length
   */
  readonly sharesPrefixes?: boolean;
  /** logits (BT, V) and values (BT) */
  forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }>;
  /** one optimizer step over the micro-batches; `read` asks for the loss (a readback on webgpu) */
  trainStep(batches: TokenBatch[], read: boolean): Promise<TrainStepResult>;
  /**
   * One PPO / GRPO optimizer step (kernels/ppo_loss_ref.ts) over the micro-batches; returns the
   * loss sums over the masked tokens and the pre-clip gradient norm.
   */
  rlStep(batches: RlBatch[], cfg: RlLossConfig): Promise<{ sums: RlLossSums; gradNorm: number }>;
  generate(prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult>;
  /** (P) parameters in slab layout */
  getParams(): Promise<Float32Array>;
  getOptimizerState(): Promise<OptimizerState>;
  setOptim(opt: OptimConfig): void;
  dispose(): void;
}

export interface BackendInit {
  config: ModelConfig;
  /** (P) initial parameters */
  params: Float32Array;
  optim: OptimConfig;
  optimizer?: OptimizerState | null;
  /** required for webgpu */
  runtime?: GpuRuntime;
}

export function createBackend(kind: BackendKind, init: BackendInit): PolicyBackend {
  if (kind === 'cpu') return new CpuBackend(init);
  if (!init.runtime) throw new Error('createBackend: the webgpu backend needs a GpuRuntime');
  return new WebGpuBackend(init.runtime, init);
}

class CpuBackend implements PolicyBackend {
  readonly kind = 'cpu';
  readonly config: ModelConfig;
  private readonly trainer: CpuTrainer;

  constructor(init: BackendInit) {
    this.config = init.config;
    this.trainer = new CpuTrainer(new CpuModel(init.config, init.params), init.optim);
    if (init.optimizer) {
      this.trainer.m.set(init.optimizer.m);
      this.trainer.v.set(init.optimizer.v);
      this.trainer.step = init.optimizer.step;
    }
  }

  async forward(input: ForwardInput) {
    const r = this.trainer.model.forward(input);
    return { logits: Float32Array.from(r.logits), values: Float32Array.from(r.values) };
  }

  async trainStep(batches: TokenBatch[]) {
    return this.trainer.trainStep(batches);
  }

  async rlStep(batches: RlBatch[], cfg: RlLossConfig) {
    return this.trainer.rlStep(batches, cfg);
  }

  async generate(prompts: ArrayLike<number>[], opts: GenerateOptions) {
    return cpuGenerate(this.trainer.model, prompts, opts);
  }

  async getParams() {
    return Float32Array.from(this.trainer.model.params);
  }

  async getOptimizerState() {
    return { m: Float32Array.from(this.trainer.m), v: Float32Array.from(this.trainer.v), step: this.trainer.step };
  }

  setOptim(opt: OptimConfig) {
    this.trainer.opt = opt;
  }

  dispose() {}
}

class WebGpuBackend implements PolicyBackend {
  readonly kind = 'webgpu';
  readonly config: ModelConfig;
  private readonly model: GpuModel;
  private readonly trainer: GpuTrainer;

  constructor(
    private readonly rt: GpuRuntime,
    init: BackendInit,
  ) {
    this.config = init.config;
    this.model = new GpuModel(rt, init.config, init.params);
    this.trainer = new GpuTrainer(this.model, init.optim);
    if (init.optimizer) {
      rt.device.queue.writeBuffer(this.trainer.m, 0, init.optimizer.m);
      rt.device.queue.writeBuffer(this.trainer.v, 0, init.optimizer.v);
      this.trainer.step = init.optimizer.step;
    }
  }

  forward(input: ForwardInput) {
    return this.model.forward(input);
  }

  trainStep(batches: TokenBatch[], read: boolean) {
    return this.trainer.trainStep(batches, read);
  }

  async rlStep(batches: RlBatch[], cfg: RlLossConfig) {
    const { sums, gradNorm } = await this.trainer.rlStep(batches, cfg, true);
    return { sums: sums!, gradNorm: gradNorm! };
  }

  generate(prompts: ArrayLike<number>[], opts: GenerateOptions) {
    return generate(this.model, prompts, opts);
  }

  getParams() {
    return this.model.readParams();
  }

  async getOptimizerState() {
    const [m, v] = await Promise.all([this.rt.read(this.trainer.m), this.rt.read(this.trainer.v)]);
    return { m: new Float32Array(m), v: new Float32Array(v), step: this.trainer.step };
  }

  setOptim(opt: OptimConfig) {
    this.trainer.opt = opt;
  }

  dispose() {
    this.trainer.dispose();
    this.model.dispose();
  }
}
