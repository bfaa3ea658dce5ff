/**
 * An imported Hugging Face model (hf/load.ts: GPT-2, Llama, Qwen2) as a frozen Policy on the
 * lab's own engine: the WGSL decoder (model/decoder-gpu.ts) on webgpu, the float64 reference
 * (model/decoder-cpu.ts) on cpu. It samples, scores (evaluation, pass@k) and serves as the KL
 * reference of a run; training it (LoRA, full fine-tuning) is the next step and every training
 * or saving call says so. It has no value head: values are zeros.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { describeArch } from '../model/arch';
import type { BackendKind } from '../model/backend';
import type { ModelConfig } from '../model/config';
import type { ForwardInput } from '../model/cpu';
import { cpuGenerateOn } from '../model/cpu-generate';
import { DecoderCpu } from '../model/decoder-cpu';
import { DEFAULT_DECODER_CONTEXT, DecoderGpu } from '../model/decoder-gpu';
import { generateOn } from '../model/generate';
import type { GenerateOptions, GenerateResult } from '../model/generate-common';
import { hfWeightFormat, type HfModel } from '../hf/load';
import type { HfTokenizer } from '../tokenizer/hf';
import type { Policy, PolicyDescription } from './index';

export interface HfPolicyOptions {
  backend: BackendKind;
  /** required for webgpu */
  runtime?: GpuRuntime;
  /** the longest sequence served (default: the model's positions, at most DEFAULT_DECODER_CONTEXT) */
  contextLength?: number;
}

export class HfPolicy implements Policy {
  readonly kind: BackendKind;
  readonly config: ModelConfig;
  private readonly cpu: DecoderCpu | null = null;
  private readonly gpu: DecoderGpu | null = null;

  constructor(
    readonly model: HfModel,
    opts: HfPolicyOptions,
  ) {
    const a = model.arch;
    const contextLength = opts.contextLength ?? Math.min(a.maxPositions, DEFAULT_DECODER_CONTEXT);
    if (!Number.isInteger(contextLength) || contextLength < 2 || contextLength > a.maxPositions) {
      throw new Error(
        `${model.folder}: context length ${contextLength} must be an integer in 2..${a.maxPositions} (the model's positions)`,
      );
    }
    this.kind = opts.backend;
    this.config = { nLayer: a.nLayer, dModel: a.dModel, nHead: a.nHead, contextLength, vocabSize: a.vocabSize };
    if (opts.backend === 'cpu') this.cpu = new DecoderCpu(a, model.weights, contextLength);
    else {
      if (!opts.runtime) throw new Error('HfPolicy: the webgpu backend needs a GpuRuntime');
      // frozen: the checkpoint's own F16 / BF16 stays 16-bit on the GPU (exact, half the memory)
      this.gpu = new DecoderGpu(opts.runtime, a, model.weights, { contextLength, weightFormat: hfWeightFormat(model.dtypes) });
    }
  }

  get tokenizer(): HfTokenizer {
    return this.model.tokenizer;
  }

  /** the float64 decoder computes a prefix its sequences share once (ForwardInput.readRows) */
  get sharesPrefixes(): boolean {
    return this.cpu !== null;
  }

  describe(): PolicyDescription {
    return {
      family: 'hf',
      architecture: describeArch(this.model.arch),
      parameters: this.model.parameters,
      vocabSize: this.model.arch.vocabSize,
      contextLength: this.config.contextLength,
      backend: this.kind,
    };
  }

  /**
   * Generation stops at any of the model's end ids (generation_config.json), not only the first,
   * and samples only ids the tokenizer has.
   */
  async generate(prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult> {
    const o = hfGenerateOptions(this.model, opts);
    return this.cpu ? cpuGenerateOn(this.cpu, prompts, o) : generateOn(this.gpu!, prompts, o);
  }

  async forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }> {
    const logits = this.cpu ? Float32Array.from(this.cpu.forward(input).logits) : await this.gpu!.forward(input);
    return { logits, values: new Float32Array(input.B * input.T) };
  }

  trainStep(): Promise<never> {
    return this.frozen('train (SFT)');
  }

  rlStep(): Promise<never> {
    return this.frozen('train (PPO / GRPO)');
  }

  setOptim(): void {
    throw frozenHfError(this.model.folder, 'set an optimizer');
  }

  getParams(): Promise<never> {
    return this.frozen('give a parameter slab');
  }

  getOptimizerState(): Promise<never> {
    return this.frozen('give an optimizer state');
  }

  save(): Promise<never> {
    return this.frozen('save a lab checkpoint (export it with coderl export-hf or coderl onnx export)');
  }

  dispose(): void {
    this.gpu?.dispose();
  }

  private frozen(what: string): Promise<never> {
    return Promise.reject(frozenHfError(this.model.folder, what));
  }
}

/**
 * Sampling options for an imported model: generation stops at any of the model's end ids
 * (generation_config.json), not only the first, and samples only ids the tokenizer has (the
 * padded rows of a vocabulary bigger than the tokenizer's are never sampled).
 */
export function hfGenerateOptions(model: HfModel, opts: GenerateOptions): GenerateOptions {
  const eos = model.eosIds;
  let o: GenerateOptions =
    opts.eosId !== undefined && eos.includes(opts.eosId) && eos.length > 1
      ? { ...opts, stop: [...(opts.stop ?? []), ...eos.filter((id) => id !== opts.eosId).map((id) => [id])] }
      : opts;
  if (model.tokenizer.vocabSize < model.arch.vocabSize)
    o = { ...o, vocabLimit: Math.min(o.vocabLimit ?? Infinity, model.tokenizer.vocabSize) };
  return o;
}

/** A training or saving call on an imported Hugging Face model, which is frozen in this version. */
export function frozenHfError(folder: string, what: string): Error {
  return new Error(
    `${folder}: an imported Hugging Face model samples, scores and serves as the KL reference, but cannot ${what} yet (LoRA and fine-tuning of imported models are not built)`,
  );
}
