/**
 * The lab's GPT as a Policy: the engine's PolicyBackend (model/backend.ts: the WGSL kernels on
 * webgpu, the float64 reference model on cpu) with the run's tokenizer, and checkpoints in the
 * model file format (model/model-file.ts: config, tokenizer, named tensors, AdamW state).
 */
import type { GpuRuntime } from '../gpu/runtime';
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import { createBackend, type BackendKind, type PolicyBackend } from '../model/backend';
import type { ModelConfig } from '../model/config';
import type { ForwardInput } from '../model/cpu';
import type { GenerateOptions } from '../model/generate-common';
import { initParams } from '../model/init';
import { loadModel, saveModel, type OptimizerState } from '../model/model-file';
import type { OptimConfig, RlBatch, TokenBatch } from '../model/optim';
import { paramTable } from '../model/params';
import { Tokenizer } from '../tokenizer';
import type { TextTokenizer } from '../tokenizer/types';
import type { Policy, PolicyCheckpoint, PolicyDescription, PolicyFactory, PolicySpec } from './index';

export class LabGptPolicy implements Policy {
  constructor(
    private readonly backend: PolicyBackend,
    readonly tokenizer: Tokenizer,
  ) {}

  get kind(): BackendKind {
    return this.backend.kind;
  }

  get config(): ModelConfig {
    return this.backend.config;
  }

  describe(): PolicyDescription {
    const c = this.config;
    return {
      family: 'lab-gpt',
      architecture: `${c.nLayer} layers, d_model ${c.dModel}, ${c.nHead} heads`,
      parameters: paramTable(c).count,
      vocabSize: c.vocabSize,
      contextLength: c.contextLength,
      backend: this.kind,
    };
  }

  generate(prompts: ArrayLike<number>[], opts: GenerateOptions) {
    return this.backend.generate(prompts, opts);
  }

  forward(input: ForwardInput) {
    return this.backend.forward(input);
  }

  trainStep(batches: TokenBatch[], read: boolean) {
    return this.backend.trainStep(batches, read);
  }

  rlStep(batches: RlBatch[], cfg: RlLossConfig) {
    return this.backend.rlStep(batches, cfg);
  }

  setOptim(opt: OptimConfig): void {
    this.backend.setOptim(opt);
  }

  getParams() {
    return this.backend.getParams();
  }

  getOptimizerState() {
    return this.backend.getOptimizerState();
  }

  async save(o: { optimizer: boolean; meta: Record<string, unknown> }): Promise<Uint8Array> {
    return saveModel({
      config: this.config,
      tokenizer: this.tokenizer.toJSON(),
      params: await this.getParams(),
      optimizer: o.optimizer ? await this.getOptimizerState() : null,
      meta: o.meta,
    });
  }

  dispose(): void {
    this.backend.dispose();
  }
}

/** The lab's own tokenizer of a spec: lab GPT checkpoints store it (Tokenizer.toJSON). */
function labTokenizer(t: TextTokenizer): Tokenizer {
  if (!(t instanceof Tokenizer))
    throw new Error(
      "the lab's GPT needs the lab's own tokenizer (an imported model's tokenizer goes with its own policies: hfPolicyFactory)",
    );
  return t;
}

/** Lab GPT policies on `kind` (webgpu needs the caller's runtime, which outlives them). */
export function labGptFactory(kind: BackendKind, runtime?: GpuRuntime): PolicyFactory {
  const fromParams = (spec: PolicySpec, params: Float32Array, optim: OptimConfig, optimizer?: OptimizerState | null): Policy =>
    new LabGptPolicy(createBackend(kind, { config: spec.config, params, optim, optimizer, runtime }), labTokenizer(spec.tokenizer));
  const readCheckpoint = (spec: PolicySpec, bytes: Uint8Array): PolicyCheckpoint => {
    const s = loadModel(bytes, spec.config);
    return { params: s.params, optimizer: s.optimizer ?? null, meta: s.meta ?? {} };
  };
  return {
    family: 'lab-gpt',
    backend: kind,
    init: (spec, seed, optim) => fromParams(spec, initParams(paramTable(spec.config), seed), optim),
    fromParams,
    load: (spec, bytes, optim, withOptimizer = false) => {
      const c = readCheckpoint(spec, bytes);
      return fromParams(spec, c.params, optim, withOptimizer ? c.optimizer : null);
    },
    readCheckpoint,
    writeCheckpoint: (spec, c) =>
      saveModel({
        config: spec.config,
        tokenizer: labTokenizer(spec.tokenizer).toJSON(),
        params: c.params,
        optimizer: c.optimizer,
        meta: c.meta,
      }),
  };
}
