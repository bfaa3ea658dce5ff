/**
 * An imported Hugging Face model (hf/load.ts: GPT-2, Llama, Qwen2) as a trainable Policy: LoRA
 * (model/lora.ts, PEFT's adapters, the base frozen) or full fine-tuning, with a scalar value head
 * on the final norm (PPO's critic, the reward model's score; fresh from the seed). The float64
 * decoder (DecoderCpu + DecoderCpuTrainer) on cpu, the WGSL decoder (DecoderGpu +
 * DecoderGpuTrainer) on webgpu.
 *
 * With LoRA every policy of a factory (the one being trained, the KL reference, the reward model)
 * runs on one copy of the base weights: each holds only its adapters, value head and AdamW state,
 * and installs them before it runs (calls are serialised by the factory). Full fine-tuning gives
 * each policy its own weights.
 *
 * Parameters in "slab layout" (Policy.getParams, PolicyFactory.fromParams) are the trainables
 * end to end in slabTensors order: the adapters (A then B per module, PEFT's keys) or every
 * engine tensor (arch.ts decoderTensors), then value.w (1, C) and value.b (1). A checkpoint is a
 * safetensors file of those tensors by name (and AdamW's `optimizer.m.<name>` / `optimizer.v.<name>`),
 * its metadata naming the format, the architecture and the LoRA settings it was trained with.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { hfWeightFormat, type HfModel } from '../hf/load';
import { mergeLora, type LoraAdapter } from '../hf/peft';
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import { RL_ROLLOUT_FIELDS } from '../kernels/ppo_loss_ref';
import { archModelConfig, decoderTensors, describeArch, type DecoderArch } from '../model/arch';
import type { BackendKind, TrainStepResult } from '../model/backend';
import type { ModelConfig } from '../model/config';
import type { ForwardInput } from '../model/cpu';
import { cpuGenerateOn } from '../model/cpu-generate';
import { DecoderCpu, type DecoderCpuState } from '../model/decoder-cpu';
import { DecoderGpu, roundedWeights } from '../model/decoder-gpu';
import { DecoderGpuTrainer } from '../model/decoder-gpu-train';
import { DecoderCpuTrainer } from '../model/decoder-train-cpu';
import { generateOn } from '../model/generate';
import type { GenerateOptions, GenerateResult } from '../model/generate-common';
import { initLoraAdapters, loraModules, loraScaling, peftKeys, type LoraConfig, type LoraModule } from '../model/lora';
import type { OptimizerState } from '../model/model-file';
import type { OptimConfig, RlBatch, TokenBatch } from '../model/optim';
import { readSafetensors, writeSafetensors } from '../model/safetensors';
import { checkWeightFormat, type WeightFormat } from '../kernels/weight_format';
import type { TextTokenizer } from '../tokenizer/types';
import { gaussian, Rng } from '../util/random';
import { hfGenerateOptions } from './hf';
import type { Policy, PolicyCheckpoint, PolicyDescription, PolicyFactory, PolicySpec } from './index';

/** The checkpoint format's name, in the safetensors metadata. */
export const HF_POLICY_FORMAT = 'coderl-hf-policy/1';

export interface HfTrainOptions {
  backend: BackendKind;
  /** required for webgpu */
  runtime?: GpuRuntime;
  /** LoRA settings (targets resolved), or null: full fine-tuning */
  lora: LoraConfig | null;
  /** the longest sequence trained or sampled (at most the model's positions) */
  contextLength: number;
  /**
   * webgpu: sequences per micro-batch of a training or scoring pass (the memory plan's,
   * model/memory-plan.ts); longer batches are split into micro-batches of this many rows with
   * gradient accumulation. Default 8.
   */
  microBatch?: number;
  /** LoRA: the adapters start from this one (a PEFT adapter of the same settings) instead of PEFT's init */
  initAdapter?: LoraAdapter;
  /**
   * LoRA: how the frozen base's matrices are stored (rl/pretrained.ts runWeightFormat; default
   * f32). 16-bit on webgpu halves their memory; the cpu backend rounds its copy the same way, so
   * both backends train the same model (exact, a no-op, for a checkpoint stored in that dtype).
   */
  weightFormat?: WeightFormat;
}

/** One tensor of the slab: its name (engine, PEFT key or value.*), shape and size. */
export interface SlabTensor {
  name: string;
  shape: number[];
  n: number;
}

/** The slab's tensors in order: the trainables, then the value head. */
export function slabTensors(arch: DecoderArch, lora: { modules: readonly LoraModule[]; rank: number } | null): SlabTensor[] {
  const out: SlabTensor[] = [];
  const push = (name: string, shape: number[]) => out.push({ name, shape, n: shape.reduce((a, b) => a * b, 1) });
  if (lora) {
    for (const m of lora.modules) {
      const k = peftKeys(m);
      push(k.A, [lora.rank, m.inFeatures]);
      push(k.B, [m.outFeatures, lora.rank]);
    }
  } else {
    for (const t of decoderTensors(arch)) push(t.name, [...t.shape]);
  }
  push('value.w', [1, arch.dModel]);
  push('value.b', [1]);
  return out;
}

/** Serialises calls on a shared base (one at a time, in order). */
class Exclusive {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/** The frozen base a factory's LoRA policies share, made on first use and freed with the last. */
class SharedBase {
  readonly lock = new Exclusive();
  private cpu: DecoderCpu | null = null;
  private gpu: DecoderGpu | null = null;
  private users = 0;

  constructor(private readonly make: () => DecoderCpu | DecoderGpu) {}

  acquire(): DecoderCpu | DecoderGpu {
    this.users++;
    if (!this.cpu && !this.gpu) {
      const m = this.make();
      if (m instanceof DecoderCpu) this.cpu = m;
      else this.gpu = m;
    }
    return (this.cpu ?? this.gpu)!;
  }

  release(): void {
    if (--this.users > 0) return;
    this.gpu?.dispose();
    this.gpu = null;
    this.cpu = null;
  }
}

/** A policy's state before it runs: its trainables by name, AdamW's, and the step. */
interface Start {
  params: Map<string, Float32Array>;
  optimizer: { m: Map<string, Float32Array>; v: Map<string, Float32Array>; step: number } | null;
}

export class HfTrainablePolicy implements Policy {
  readonly kind: BackendKind;
  readonly config: ModelConfig;
  private readonly slab: SlabTensor[];
  private cpu: { model: DecoderCpu; trainer: DecoderCpuTrainer; state: DecoderCpuState } | null = null;
  private gpu: { model: DecoderGpu; trainer: DecoderGpuTrainer } | null = null;
  private disposed = false;

  constructor(
    readonly model: HfModel,
    private readonly o: HfTrainOptions,
    private readonly shared: SharedBase | null,
    modules: LoraModule[] | null,
    opt: OptimConfig,
    start: Start,
  ) {
    const a = model.arch;
    this.kind = o.backend;
    this.config = hfModelConfig(model, o.contextLength);
    this.slab = slabTensors(a, modules && o.lora && { modules, rank: o.lora.rank });
    const lora =
      modules && o.lora
        ? {
            modules,
            rank: o.lora.rank,
            scaling: loraScaling(o.lora),
            A: modules.map((m) => start.params.get(peftKeys(m).A)!),
            B: modules.map((m) => start.params.get(peftKeys(m).B)!),
          }
        : null;
    const head = { w: start.params.get('value.w')!, b: start.params.get('value.b')![0]! };
    if (o.backend === 'cpu') {
      let model: DecoderCpu;
      if (shared) model = shared.acquire() as DecoderCpu;
      else {
        const weights = new Map<string, Float32Array>();
        for (const t of decoderTensors(a)) weights.set(t.name, start.params.get(t.name)!);
        model = new DecoderCpu(a, weights, o.contextLength);
      }
      model.setLora(lora);
      model.addValueHead(0, 0, head);
      const trainer = new DecoderCpuTrainer(model, opt);
      if (start.optimizer) {
        trainer.step = start.optimizer.step;
        for (const t of model.trainables())
          trainer.moments.set(t.name, {
            m: Float64Array.from(start.optimizer.m.get(t.name)!),
            v: Float64Array.from(start.optimizer.v.get(t.name)!),
          });
      }
      this.cpu = { model, trainer, state: model.headState };
    } else {
      if (!o.runtime) throw new Error('HfTrainablePolicy: the webgpu backend needs a GpuRuntime');
      const model = shared
        ? (shared.acquire() as DecoderGpu)
        : new DecoderGpu(o.runtime, a, fullWeights(a, start.params), { contextLength: o.contextLength });
      const trainer = new DecoderGpuTrainer(model, opt, lora);
      trainer.addValueHead(head);
      if (lora) trainer.writeTrainables('param', start.params);
      if (start.optimizer) {
        trainer.step = start.optimizer.step;
        trainer.writeTrainables('m', start.optimizer.m);
        trainer.writeTrainables('v', start.optimizer.v);
      }
      this.gpu = { model, trainer };
    }
  }

  get tokenizer(): TextTokenizer {
    return this.model.tokenizer;
  }

  /** the float64 decoder computes a prefix its sequences share once (ForwardInput.readRows) */
  get sharesPrefixes(): boolean {
    return this.cpu !== null;
  }

  describe(): PolicyDescription {
    const l = this.o.lora;
    return {
      family: 'hf',
      architecture: `${describeArch(this.model.arch)}; ${l ? `LoRA r${l.rank} alpha ${l.alpha} on ${l.targets.join(', ')}` : 'full fine-tuning'}`,
      parameters: this.model.parameters,
      vocabSize: this.model.arch.vocabSize,
      contextLength: this.config.contextLength,
      backend: this.kind,
    };
  }

  /** Runs `fn` with this policy's adapters and value head installed (one caller at a time on a shared base). */
  private run<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.disposed) return Promise.reject(new Error(`${this.model.folder}: this policy was disposed of`));
    const go = () => {
      if (this.cpu) this.cpu.model.headState = this.cpu.state;
      else this.gpu!.trainer.activate();
      return fn();
    };
    return this.shared ? this.shared.lock.run(go) : Promise.resolve().then(go);
  }

  generate(prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult> {
    const o = hfGenerateOptions(this.model, opts);
    return this.run(() => (this.cpu ? cpuGenerateOn(this.cpu.model, prompts, o) : generateOn(this.gpu!.model, prompts, o)));
  }

  forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }> {
    return this.run(async () => {
      if (this.cpu) {
        const r = this.cpu.model.forward(input);
        return {
          logits: Float32Array.from(r.logits),
          values: r.values ? Float32Array.from(r.values) : new Float32Array(input.B * input.T),
        };
      }
      // the rows in micro-batches: logits of a big vocabulary for every row would exceed a binding
      const { B, T } = input;
      const V = this.model.arch.vocabSize;
      const logits = new Float32Array(B * T * V);
      const values = new Float32Array(B * T);
      const rows = this.microRows(T);
      for (let b0 = 0; b0 < B; b0 += rows) {
        const n = Math.min(rows, B - b0);
        const part = (x: ArrayLike<number> | null | undefined, w: number) =>
          x ? Array.prototype.slice.call(x, b0 * w, (b0 + n) * w) : undefined;
        const r = await this.gpu!.trainer.forwardWithValues({
          B: n,
          T,
          tokens: part(input.tokens, T)!,
          positions: part(input.positions, T),
          start: part(input.start, 1),
        });
        logits.set(r.logits, b0 * T * V);
        values.set(r.values, b0 * T);
      }
      return { logits, values };
    });
  }

  trainStep(batches: TokenBatch[], read: boolean): Promise<TrainStepResult> {
    return this.run(async () => {
      if (this.cpu) return this.cpu.trainer.trainStep(batches);
      return this.gpu!.trainer.trainStep(this.split(batches, []), read);
    });
  }

  rlStep(batches: RlBatch[], cfg: RlLossConfig) {
    return this.run(async () => {
      if (this.cpu) return this.cpu.trainer.rlStep(batches, cfg);
      const r = await this.gpu!.trainer.rlStep(this.split(batches, RL_ROLLOUT_FIELDS), cfg, true);
      return { sums: r.sums!, gradNorm: r.gradNorm! };
    });
  }

  setOptim(opt: OptimConfig): void {
    if (this.cpu) this.cpu.trainer.opt = opt;
    else this.gpu!.trainer.opt = opt;
  }

  getParams(): Promise<Float32Array> {
    return this.run(async () => this.toSlab(await this.named('param')));
  }

  getOptimizerState(): Promise<OptimizerState> {
    return this.run(async () => {
      const [m, v] = [await this.named('m'), await this.named('v')];
      const step = this.cpu ? this.cpu.trainer.step : this.gpu!.trainer.step;
      return { m: this.toSlab(m), v: this.toSlab(v), step };
    });
  }

  async save(o: { optimizer: boolean; meta: Record<string, unknown> }): Promise<Uint8Array> {
    const params = await this.getParams();
    const optimizer = o.optimizer ? await this.getOptimizerState() : null;
    return writeHfCheckpoint(this.model.arch, this.o.lora, this.slab, { params, optimizer, meta: o.meta }, this.o.weightFormat ?? 'f32');
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.gpu?.trainer.dispose();
    if (this.shared) this.shared.release();
    else this.gpu?.model.dispose();
    this.cpu = null;
    this.gpu = null;
  }

  /** Rows a webgpu micro-batch of length T holds: the plan's, and no more than one binding of logits. */
  private microRows(T: number): number {
    const V = this.model.arch.vocabSize;
    const max = this.o.runtime!.limits.maxStorageBufferBindingSize;
    return Math.max(1, Math.min(this.o.microBatch ?? 8, Math.floor(max / (T * V * 4))));
  }

  /**
   * The GPU trainer's micro-batches: every given batch cut into row blocks of microRows (the last
   * block filled with rows whose mask is 0, so all share one shape).
   */
  private split<B extends TokenBatch>(batches: B[], fields: readonly string[]): B[] {
    const T = Math.max(...batches.map((b) => b.T));
    const rows = this.microRows(T);
    const out: B[] = [];
    const pad = this.model.tokenizer.padId;
    for (const b of batches) {
      for (let b0 = 0; b0 < b.B; b0 += rows) {
        const n = Math.min(rows, b.B - b0);
        const block = (x: ArrayLike<number>, Ctor: Uint32ArrayConstructor | Float32ArrayConstructor, fill: number) => {
          const y = new Ctor(rows * T).fill(fill);
          for (let r = 0; r < n; r++) for (let t = 0; t < b.T; t++) y[r * T + t] = x[(b0 + r) * b.T + t]!;
          return y;
        };
        const mb: Record<string, unknown> = {
          B: rows,
          T,
          tokens: block(b.tokens, Uint32Array, pad),
          targets: block(b.targets, Uint32Array, pad),
          mask: block(b.mask, Float32Array, 0),
        };
        for (const f of fields) mb[f] = block((b as unknown as Record<string, ArrayLike<number>>)[f]!, Float32Array, 0);
        out.push(mb as unknown as B);
      }
    }
    return out;
  }

  /** Trainables (or AdamW's moments) by slab name. */
  private async named(what: 'param' | 'm' | 'v'): Promise<Map<string, ArrayLike<number>>> {
    if (this.gpu) return this.gpu.trainer.readNamed(what);
    const out = new Map<string, ArrayLike<number>>();
    const { model, trainer } = this.cpu!;
    for (const t of model.trainables()) {
      const mv = trainer.moments.get(t.name);
      out.set(
        t.name,
        what === 'param' ? t.w : what === 'm' ? (mv?.m ?? new Float64Array(t.w.length)) : (mv?.v ?? new Float64Array(t.w.length)),
      );
    }
    return out;
  }

  private toSlab(named: Map<string, ArrayLike<number>>): Float32Array<ArrayBuffer> {
    return joinSlab(this.slab, named, this.model.folder);
  }
}

/** The slab (P) of named tensors, each checked for its size. */
function joinSlab(slab: readonly SlabTensor[], named: ReadonlyMap<string, ArrayLike<number>>, where: string): Float32Array<ArrayBuffer> {
  const out = new Float32Array(slab.reduce((s, t) => s + t.n, 0));
  let off = 0;
  for (const t of slab) {
    const x = named.get(t.name);
    if (!x || x.length !== t.n) throw new Error(`${where}: tensor ${t.name} has ${x?.length ?? 'no'} values, [${t.shape}] needs ${t.n}`);
    out.set(x, off);
    off += t.n;
  }
  return out;
}

/** The named tensors of a slab (views into it). */
function splitSlab(slab: readonly SlabTensor[], params: Float32Array, where: string): Map<string, Float32Array> {
  const P = slab.reduce((s, t) => s + t.n, 0);
  if (params.length !== P) throw new Error(`${where}: ${params.length} parameters given, the policy has ${P}`);
  const out = new Map<string, Float32Array>();
  let off = 0;
  for (const t of slab) {
    out.set(t.name, params.subarray(off, off + t.n));
    off += t.n;
  }
  return out;
}

function fullWeights(a: DecoderArch, named: ReadonlyMap<string, Float32Array>): Map<string, Float32Array> {
  const w = new Map<string, Float32Array>();
  for (const t of decoderTensors(a)) w.set(t.name, named.get(t.name)!);
  return w;
}

/** What a run records of an imported model's shape: layers, width, heads, the run's context, the model's vocabulary. */
export const hfModelConfig = (model: HfModel, contextLength: number): ModelConfig => archModelConfig(model.arch, contextLength);

/** The checkpoint bytes of a slab (and its AdamW state). */
function writeHfCheckpoint(
  arch: DecoderArch,
  lora: LoraConfig | null,
  slab: readonly SlabTensor[],
  c: PolicyCheckpoint,
  weightFormat: WeightFormat,
): Uint8Array {
  const tensors: { name: string; shape: number[]; data: Float32Array }[] = [];
  const add = (prefix: string, values: Float32Array) => {
    for (const [name, data] of splitSlab(slab, values, 'checkpoint'))
      tensors.push({ name: prefix + name, shape: slab.find((t) => t.name === name)!.shape, data });
  };
  add('', c.params);
  if (c.optimizer) {
    add('optimizer.m.', c.optimizer.m);
    add('optimizer.v.', c.optimizer.v);
  }
  return writeSafetensors(tensors, {
    format: HF_POLICY_FORMAT,
    family: arch.family,
    lora: JSON.stringify(lora),
    step: String(c.optimizer?.step ?? 0),
    meta: JSON.stringify(c.meta),
    // the base the adapters trained on, when it was rounded to 16 bits (a merge adds them to that one)
    ...(weightFormat === 'f32' ? {} : { base_format: weightFormat }),
  });
}

/** Whether bytes are a policy checkpoint of an imported model (safetensors with HF_POLICY_FORMAT). */
export function isHfPolicyCheckpoint(bytes: Uint8Array): boolean {
  try {
    return readSafetensors(bytes, 'checkpoint').metadata['format'] === HF_POLICY_FORMAT;
  } catch {
    return false;
  }
}

/** A checkpoint's file, checked to be this format for this architecture family. */
function openHfCheckpoint(a: DecoderArch, bytes: Uint8Array, file: string, where: string) {
  const f = readSafetensors(bytes, file);
  const md = f.metadata ?? {};
  if (md['format'] !== HF_POLICY_FORMAT)
    throw new Error(
      `${file}: not a policy checkpoint of an imported model (format ${JSON.stringify(md['format'] ?? null)}, expected ${HF_POLICY_FORMAT})`,
    );
  if (md['family'] !== a.family) throw new Error(`${file}: trained on a ${md['family']} model, ${where} is ${a.family}`);
  return { file: f, metadata: md };
}

/**
 * What a policy checkpoint of `model` holds, for export: with LoRA its adapter (PEFT's modules
 * and A, B) and the base with it merged (the base as the run held it: rounded to F16 / BF16 when
 * the checkpoint's base_format says the run's lora.baseDtype rounded it, exact otherwise); with full fine-tuning the trained weights. The value
 * head is not part of a causal LM and is left out.
 */
export function hfCheckpointWeights(
  model: HfModel,
  bytes: Uint8Array,
  file: string,
): {
  lora: LoraConfig | null;
  adapter: LoraAdapter | null;
  /** the model's architecture, untied where a merged lm_head adapter unties it (peft.ts mergeLora) */
  arch: DecoderArch;
  weights: Map<string, Float32Array>;
  meta: Record<string, unknown>;
} {
  const a = model.arch;
  const { file: f, metadata: md } = openHfCheckpoint(a, bytes, file, model.folder);
  const lora = JSON.parse(md['lora'] ?? 'null') as LoraConfig | null;
  const meta = JSON.parse(md['meta'] ?? '{}') as Record<string, unknown>;
  const tensor = (name: string, n: number) => {
    const t = f.tensors.get(name);
    if (!t) throw new Error(`${file}: no tensor ${name}`);
    if (t.data.length !== n) throw new Error(`${file}: tensor ${name} has ${t.data.length} values, ${model.folder} needs ${n}`);
    return t.data;
  };
  if (!lora) {
    const weights = new Map<string, Float32Array>();
    for (const t of decoderTensors(a))
      weights.set(
        t.name,
        tensor(
          t.name,
          t.shape.reduce((x, y) => x * y, 1),
        ),
      );
    return { lora: null, adapter: null, arch: a, weights, meta };
  }
  const modules = loraModules(a, lora, `${file} (lora)`);
  const adapter: LoraAdapter = {
    config: lora,
    modules,
    A: modules.map((m) => tensor(peftKeys(m).A, lora.rank * m.inFeatures)),
    B: modules.map((m) => tensor(peftKeys(m).B, m.outFeatures * lora.rank)),
  };
  // the adapters learned on the base as the run held it: rounded to 16 bits when lora.baseDtype said so
  const format = md['base_format'] ?? 'f32';
  checkWeightFormat(format, `${file}: base_format`);
  return { lora, adapter, ...mergeLora(a, baseWeights(model, format), adapter), meta };
}

/**
 * The model's weights as a base stored in `format` holds them: the loaded ones when that changes
 * nothing (f32, or the checkpoint's own 16-bit dtype: no copy of the model), else rounded copies.
 */
function baseWeights(model: HfModel, format: WeightFormat): ReadonlyMap<string, Float32Array> {
  return format === 'f32' || hfWeightFormat(model.dtypes) === format ? model.weights : roundedWeights(model.arch, model.weights, format);
}

/**
 * Trainable policies of an imported model on `o.backend`: LoRA when `o.lora` is set (adapters
 * from PEFT's initialisation, seeded), else full fine-tuning from the pretrained weights; a fresh
 * value head (normal(0, 0.02), seeded) in both. `pretrained` tells the run to use the model's
 * tokenizer and shape instead of training its own.
 */
export function hfPolicyFactory(model: HfModel, o: HfTrainOptions): PolicyFactory {
  const a = model.arch;
  const where = model.folder;
  if (!Number.isInteger(o.contextLength) || o.contextLength < 2 || o.contextLength > a.maxPositions)
    throw new Error(`${where}: the run's context of ${o.contextLength} tokens must be in 2..${a.maxPositions} (the model's positions)`);
  const modules = o.lora ? loraModules(a, o.lora, 'lora') : null;
  const slab = slabTensors(a, modules && o.lora && { modules, rank: o.lora.rank });
  const weightFormat = o.weightFormat ?? 'f32';
  if (weightFormat !== 'f32' && !o.lora)
    throw new Error(`${where}: full fine-tuning trains every weight, so they stay f32; a ${weightFormat} base needs LoRA`);
  const shared = o.lora
    ? new SharedBase(() =>
        o.backend === 'cpu'
          ? new DecoderCpu(a, baseWeights(model, weightFormat), o.contextLength)
          : new DecoderGpu(o.runtime!, a, model.weights, { contextLength: o.contextLength, weightFormat }),
      )
    : null;
  const config = hfModelConfig(model, o.contextLength);
  const check = (spec: PolicySpec) => {
    if (
      spec.config.vocabSize !== config.vocabSize ||
      spec.config.contextLength !== config.contextLength ||
      spec.config.dModel !== config.dModel
    )
      throw new Error(`${where}: the run's model config (${JSON.stringify(spec.config)}) is not this model's (${JSON.stringify(config)})`);
  };
  const fromParams = (spec: PolicySpec, params: Float32Array, optim: OptimConfig, optimizer?: OptimizerState | null): Policy => {
    check(spec);
    const start: Start = {
      params: splitSlab(slab, params, where),
      optimizer: optimizer
        ? {
            m: splitSlab(slab, optimizer.m, `${where} (optimizer m)`),
            v: splitSlab(slab, optimizer.v, `${where} (optimizer v)`),
            step: optimizer.step,
          }
        : null,
    };
    return new HfTrainablePolicy(model, o, shared, modules, optim, start);
  };
  const readCheckpoint = (spec: PolicySpec, bytes: Uint8Array): PolicyCheckpoint => {
    check(spec);
    const { file: f, metadata: md } = openHfCheckpoint(a, bytes, 'checkpoint', where);
    if (md['lora'] !== JSON.stringify(o.lora))
      throw new Error(`checkpoint: trained with lora ${md['lora']}, the run has ${JSON.stringify(o.lora)}`);
    const get = (prefix: string) => {
      const named = new Map<string, Float32Array>();
      for (const t of slab) {
        const x = f.tensors.get(prefix + t.name);
        if (!x) return null;
        named.set(t.name, x.data);
      }
      return joinSlab(slab, named, 'checkpoint');
    };
    const params = get('');
    if (!params) throw new Error(`checkpoint: a tensor of the policy is missing (${slab.find((t) => !f.tensors.has(t.name))?.name})`);
    const m = get('optimizer.m.');
    const v = get('optimizer.v.');
    const meta = JSON.parse(md['meta'] ?? '{}') as Record<string, unknown>;
    return { params, optimizer: m && v ? { m, v, step: Number(md['step'] ?? 0) } : null, meta };
  };
  const initSlab = (seed: number): Float32Array => {
    const named = new Map<string, Float32Array>();
    const rng = new Rng(seed);
    const from = o.initAdapter;
    if (modules && o.lora && from) {
      if (JSON.stringify(from.config) !== JSON.stringify(o.lora) || from.modules.length !== modules.length)
        throw new Error(
          `${where}: the adapter to start from has lora ${JSON.stringify(from.config)}, the run has ${JSON.stringify(o.lora)}`,
        );
      modules.forEach((m, i) => {
        const k = peftKeys(m);
        named.set(k.A, from.A[i]!);
        named.set(k.B, from.B[i]!);
      });
    } else if (modules && o.lora) {
      // PEFT's init (lora.ts initLoraAdapters): A kaiming-uniform, B zero: the base model at step 0
      const init = initLoraAdapters(modules, o.lora.rank, rng);
      modules.forEach((m, i) => {
        const k = peftKeys(m);
        named.set(k.A, init.A[i]!);
        named.set(k.B, init.B[i]!);
      });
    } else {
      for (const [k, w] of model.weights) named.set(k, w);
    }
    named.set(
      'value.w',
      Float32Array.from({ length: a.dModel }, () => gaussian(rng) * 0.02),
    );
    named.set('value.b', new Float32Array(1));
    return joinSlab(slab, named, where);
  };
  return {
    family: 'hf',
    backend: o.backend,
    pretrained: {
      tokenizer: model.tokenizer,
      config,
      describe: () =>
        `${describeArch(a)}; ${o.lora ? `LoRA r${o.lora.rank} alpha ${o.lora.alpha} on ${o.lora.targets.join(', ')} (${modules!.length} modules)` : 'full fine-tuning'}`,
    },
    init: (spec, seed, optim) => fromParams(spec, initSlab(seed), optim),
    fromParams,
    load: (spec, bytes, optim, withOptimizer = false) => {
      const c = readCheckpoint(spec, bytes);
      return fromParams(spec, c.params, optim, withOptimizer ? c.optimizer : null);
    },
    readCheckpoint,
    writeCheckpoint: (spec, c) => {
      check(spec);
      return writeHfCheckpoint(a, o.lora, slab, c, weightFormat);
    },
  };
}
