/**
 * An imported ONNX causal LM (onnx/policy.ts OnnxPolicy, run in onnxruntime) as a frozen Policy:
 * it describes itself, generates and scores (evaluation, the KL reference of a run); every
 * training or saving call is an error saying the model is frozen.
 */
import type { BackendKind } from '../model/backend';
import type { ForwardInput } from '../model/cpu';
import type { GenerateOptions } from '../model/generate-common';
import { frozenError, type OnnxPolicy } from '../onnx/policy';
import type { Tokenizer } from '../tokenizer';
import type { Policy, PolicyDescription } from './index';

export class FrozenOnnxPolicy implements Policy {
  /** `model` and `tokenizer` as importOnnxModel returns them (checked to agree on the vocabulary) */
  constructor(
    readonly model: OnnxPolicy,
    readonly tokenizer: Tokenizer,
  ) {}

  get kind(): BackendKind {
    return this.model.kind;
  }

  get config() {
    return this.model.config;
  }

  describe(): PolicyDescription {
    return this.model.describe();
  }

  generate(prompts: ArrayLike<number>[], opts: GenerateOptions) {
    return this.model.generate(prompts, opts);
  }

  forward(input: ForwardInput) {
    return this.model.forward(input);
  }

  trainStep(): Promise<never> {
    return this.model.trainStep();
  }

  rlStep(): Promise<never> {
    return this.model.rlStep();
  }

  setOptim(): void {
    this.model.setOptim();
  }

  getParams(): Promise<never> {
    return this.model.getParams();
  }

  getOptimizerState(): Promise<never> {
    return this.model.getOptimizerState();
  }

  save(): Promise<never> {
    return Promise.reject(frozenError(this.model.info.file, 'save a checkpoint'));
  }

  dispose(): void {
    this.model.dispose();
  }
}
