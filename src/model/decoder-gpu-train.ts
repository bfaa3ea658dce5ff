/**
 * Training the data-described decoder (GPT-2, Llama, Qwen2 from Hugging Face) on the GPU, full
 * fine-tuning or LoRA, as the lab GPT's GpuTrainer (gpu-train.ts) trains it: an optimizer step
 * (every micro-batch's training forward, masked cross-entropy and backward, the global gradient
 * norm, clipping and AdamW) is one recording and one submit; the loss and the gradient norm are
 * read back only when asked. The passes are decoder-gpu-pass.ts, checked against DecoderCpu.
 *
 * Full fine-tuning updates the model's own buffers in place (DecoderGpu's tensors and its
 * embedding / LM head chunks) and holds a gradient and two AdamW moments per tensor. With LoRA
 * the base is frozen: no base gradient buffer exists at all, only the adapters A (r, in),
 * B (out, r) per module (lora.ts), their gradients and moments; `loraEnabled = false` runs the
 * frozen base (the KL reference) from the same weights, without a second copy.
 * Shape legend: arch.ts; r the LoRA rank.
 */
import { rowWorkgroup, withConstants } from '../gpu/kernel';
import type { DispatchTiming, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { GRAD_STATUS_WORDS, selectAdamw, recordGradNormOf, STATUS_NONFINITE_NOW } from '../kernels/adamw';
import { GQA_TRAIN_MAX_HS } from '../kernels/attention_gqa_train';
import { crossEntropy } from '../kernels/crossentropy';
import { logprobBackward, logprobForward } from '../kernels/logprob';
import { recordLoraForward } from '../kernels/lora_linear';
import { DTOK_FIELDS, packRollout, plane, planeStride, ppoLoss, PPO_STATS } from '../kernels/ppo_loss';
import { RL_ROLLOUT_FIELDS, RL_STAT_FIELDS, validateRlLossConfig, type RlLossConfig, type RlLossSums } from '../kernels/ppo_loss_ref';
import { recordSum } from '../kernels/reduce_sum';
import { accumulate } from '../kernels/residual';
import type { WeightFormat } from '../kernels/weight_format';
import { archWeightBytes, decoderTensors, type DecoderArch } from './arch';
import { checkInput, defaultPositions, type ForwardInput } from './cpu';
import type { DecoderGpu } from './decoder-gpu';
import { allocTrainActs, decoderTrainActFloats, destroyTrainActs, trainActBuffers, type DecoderTrainActs } from './decoder-gpu-acts';
import { recordTrainBackward, recordTrainForward, type GpuAdapters, type PassIds, type TrainPassContext } from './decoder-gpu-pass';
import type { GpuRlStepResult, GpuStepResult } from './gpu-train';
import { peftKeys, type LoraModule } from './lora';
import { lossTokens, NumericsError, trainableLr, type OptimConfig, type RlBatch, type TokenBatch } from './optim';

/** A micro-batch for the decoder: a TokenBatch with the positions and left padding of a Hugging Face batch. */
export interface DecoderBatch extends TokenBatch {
  /** (B, T) position ids (default 0..T-1 in each row) */
  positions?: Uint32Array<ArrayBuffer>;
  /** (B) left padding: the first real position of each row (default 0) */
  start?: Uint32Array<ArrayBuffer>;
}

/** A minibatch for the PPO / GRPO step: a DecoderBatch with the per-token rollout data (kernels/ppo_loss_ref.ts). */
export interface DecoderRlBatch extends DecoderBatch, Omit<RlBatch, keyof TokenBatch> {}

/** Layout of the RL report buffer: the loss sums, then the grad norm and status, read in one go. */
const RL_NORM = PPO_STATS; // f32
const RL_STATUS = RL_NORM + 1; // GRAD_STATUS_WORDS u32
const RL_REPORT_WORDS = RL_STATUS + GRAD_STATUS_WORDS;

/** LoRA adapters to train (lora.ts loraModules; A (r, in), B (out, r) per module in that order, as PEFT stores them). */
export interface DecoderLoraInit {
  modules: LoraModule[];
  rank: number;
  /** alpha / r (lora.ts loraScaling) */
  scaling: number;
  A: ArrayLike<number>[];
  B: ArrayLike<number>[];
}

/** One tensor the optimizer updates: the parameter, its gradient and AdamW's moments, (n) f32 each. */
export interface DecoderTrainable {
  /** engine name (a chunk: `embed[v0..v1)`), or PEFT's key of an adapter */
  name: string;
  param: GPUBuffer;
  grad: GPUBuffer;
  m: GPUBuffer;
  v: GPUBuffer;
  n: number;
  /** decoupled weight decay applies (matrices and embeddings, the adapters; not norms or biases) */
  decay: boolean;
  /** in LoRA+'s fast group: learns at lr x OptimConfig.loraPlusRatio (lora_B; with LoRA, the value head's bias) */
  plus: boolean;
}

/** Bytes a training setup holds on the GPU, from the buffers it allocates (decoderTrainMemory). */
export interface DecoderTrainMemory {
  /** the model's weights (DecoderGpu), frozen or not */
  weights: number;
  /** the adapters' parameters (0 with full fine-tuning: the weights are the parameters) */
  adapters: number;
  /** the value head's parameters (PPO's critic; 0 without one) */
  valueHead: number;
  /** one gradient per trainable value */
  grads: number;
  /** AdamW's two moments per trainable value */
  adam: number;
  /** the activations, backward scratch and inputs of one micro-batch shape (decoder-gpu-acts.ts) */
  acts: number;
  total: number;
}

/** The adapters' values, r (in + out) per module. */
const adapterFloats = (modules: readonly LoraModule[], r: number) => modules.reduce((s, m) => s + r * (m.inFeatures + m.outFeatures), 0);

/**
 * What training `arch` at micro-batch (B, T) holds, full fine-tuning (lora null) or LoRA: the
 * same tables the trainer allocates from (decoderTensors for the weights and full fine-tuning's
 * gradients, the modules for LoRA's, buildTrainActs for the activations).
 */
export function decoderTrainMemory(
  arch: DecoderArch,
  B: number,
  T: number,
  lora: { modules: readonly LoraModule[]; rank: number } | null,
  withValueHead = false,
  weightFormat: WeightFormat = 'f32',
): DecoderTrainMemory {
  const weights = archWeightBytes(arch, weightFormat);
  const adapters = lora ? adapterFloats(lora.modules, lora.rank) * 4 : 0;
  const valueHead = withValueHead ? (arch.dModel + 1) * 4 : 0;
  const grads = (lora ? adapters : weights) + valueHead;
  const acts = decoderTrainActFloats(arch, B, T, lora && { modules: lora.modules.length, rank: lora.rank }) * 4;
  return { weights, adapters, valueHead, grads, adam: 2 * grads, acts, total: weights + adapters + valueHead + 3 * grads + acts };
}

/** Buffers a recording borrowed: pooled ones go back to the pool after the submit, others are destroyed. */
interface Borrowed {
  release: GPUBuffer[];
  destroy: GPUBuffer[];
}

export class DecoderGpuTrainer {
  readonly rt: GpuRuntime;
  /** whether the forward adds the adapters (false: the frozen base, the KL reference) */
  loraEnabled = true;
  /** optimizer steps taken */
  step = 0;
  /** per-dispatch GPU times of the last step recorded with `profile` (null without timestamp-query) */
  lastTimings: DispatchTiming[] | null = null;
  private readonly gradByName = new Map<string, GPUBuffer>();
  private readonly embedGrads: GPUBuffer[] | null = null;
  private readonly headGrads: GPUBuffer[] | null = null;
  private readonly adapters: GpuAdapters | null = null;
  private readonly list: DecoderTrainable[] = [];
  private valueHead: TrainPassContext['valueHead'] = null;
  private readonly frozen: [GPUBuffer, GPUBuffer];
  private readonly norm: GPUBuffer; // (1) global grad norm
  private readonly status: GPUBuffer; // (GRAD_STATUS_WORDS) u32
  private readonly lossSum: GPUBuffer; // (1) summed loss of the step
  private readonly rlReport: GPUBuffer; // (RL_REPORT_WORDS) RL loss sums (6), grad norm, status (4)
  private actsCache: DecoderTrainActs | null = null;
  /** (M, r) xa of the adapters in DecoderGpu.recordForward, grown on demand; outgrown ones kept until dispose (a recording may hold them) */
  private samplingXa: GPUBuffer[] = [];

  constructor(
    readonly model: DecoderGpu,
    public opt: OptimConfig,
    lora: DecoderLoraInit | null = null,
  ) {
    const rt = (this.rt = model.rt);
    const a = model.arch;
    if (a.headDim > GQA_TRAIN_MAX_HS)
      throw new Error(`DecoderGpuTrainer: head size ${a.headDim} exceeds the ${GQA_TRAIN_MAX_HS} the training attention serves`);
    if (!lora && model.weightFormat !== 'f32')
      throw new Error(
        `DecoderGpuTrainer: full fine-tuning updates every weight, but this model's are stored as frozen ${model.weightFormat}; load it with weightFormat f32, or train LoRA adapters on it`,
      );
    const f32 = (n: number, label: string) => rt.storage(n * 4, label);
    const add = (name: string, param: GPUBuffer, n: number, decay: boolean, grad?: GPUBuffer, plus = false) =>
      this.addTrainable(name, param, n, decay, grad, plus);
    if (lora) {
      this.adapters = uploadAdapters(rt, lora);
      model.linearHook = this.samplingHook;
      const ad = this.adapters;
      lora.modules.forEach((m, i) => {
        const k = peftKeys(m);
        add(k.A, ad.A[i]!, lora.rank * m.inFeatures, true, ad.dA[i]);
        add(k.B, ad.B[i]!, m.outFeatures * lora.rank, true, ad.dB[i], true);
      });
    } else {
      const C = a.dModel;
      const chunks = (name: string, table: DecoderGpu['embedTable']) =>
        table.map((c) => add(`${name}[${c.v0}..${c.v0 + c.rows})`, c.buffer, c.rows * C, true));
      this.embedGrads = chunks('embed', model.embedTable);
      this.headGrads = a.tiedEmbeddings ? this.embedGrads : chunks('head', model.headTable);
      for (const t of decoderTensors(a)) {
        if (t.name === 'embed' || t.name === 'head') continue;
        const n = t.shape.reduce((x, y) => x * y, 1);
        this.gradByName.set(t.name, add(t.name, model.tensor(t.name), n, t.shape.length === 2));
      }
    }
    this.frozen = [f32(1, 'frozen norm weight grad (unused)'), f32(1, 'frozen norm bias grad (unused)')];
    this.norm = f32(1, 'grad norm');
    this.status = f32(GRAD_STATUS_WORDS, 'grad status');
    this.lossSum = f32(1, 'loss sum');
    this.rlReport = f32(RL_REPORT_WORDS, 'rl report');
  }

  /** What the optimizer updates: every tensor (full fine-tuning) or the adapters (LoRA); the value head's two tensors last. */
  get trainables(): readonly DecoderTrainable[] {
    return this.list;
  }

  private addTrainable(name: string, param: GPUBuffer, n: number, decay: boolean, grad?: GPUBuffer, plus = false): GPUBuffer {
    const f32 = (label: string) => this.rt.storage(n * 4, label);
    const g = grad ?? f32(`grad ${name}`);
    this.list.push({ name, param, grad: g, m: f32(`adam m ${name}`), v: f32(`adam v ${name}`), n, decay, plus });
    return g;
  }

  /**
   * Adds a scalar value head on the final norm's output (PPO's critic, as DecoderCpu.addValueHead):
   * values = hf . w^T + b, w (1, C), trained in every mode (weight decay on w, not b), before the first step.
   */
  addValueHead(init: { w: ArrayLike<number>; b: number }): void {
    const C = this.model.arch.dModel;
    if (this.valueHead) throw new Error('DecoderGpuTrainer.addValueHead: the model has one already');
    if (init.w.length !== C) throw new Error(`DecoderGpuTrainer.addValueHead: ${init.w.length} weights for d_model ${C}`);
    const w = this.rt.upload(Float32Array.from(init.w), 'value.w');
    const b = this.rt.upload(Float32Array.of(init.b), 'value.b');
    this.valueHead = {
      w,
      b,
      dw: this.addTrainable('value.w', w, C, true),
      db: this.addTrainable('value.b', b, 1, false, undefined, this.adapters !== null),
    };
  }

  /**
   * Makes DecoderGpu's inference forward (sampling, scoring) run this trainer's adapters. LoRA
   * trainers may share one frozen DecoderGpu (policy/hf-train.ts: the policy, the KL reference and
   * the reward model over one copy of the weights); the one constructed last is active until
   * another activates. The training passes always use their own trainer's adapters.
   */
  activate(): void {
    if (this.adapters) this.model.linearHook = this.samplingHook;
  }

  /**
   * Sets trainables from `values` by name (readParams' names: engine tensors with the embedding's
   * and head's chunks joined, PEFT keys, value.w / value.b): `what` 'param' or AdamW's 'm' / 'v'.
   * Every trainable must be given, with its size.
   */
  writeTrainables(what: 'param' | 'm' | 'v', values: ReadonlyMap<string, ArrayLike<number>>): void {
    const q = this.rt.device.queue;
    const offsets = new Map<string, number>();
    for (const t of this.trainables) {
      const chunk = /^(embed|head)\[(\d+)\.\./.exec(t.name);
      const name = chunk ? chunk[1]! : t.name;
      const src = values.get(name);
      if (!src) throw new Error(`DecoderGpuTrainer.writeTrainables: no ${what} for ${name}`);
      const off = chunk ? Number(chunk[2]) * this.model.arch.dModel : 0;
      if (off + t.n > src.length || (!chunk && src.length !== t.n))
        throw new Error(`DecoderGpuTrainer.writeTrainables: ${what} of ${name} has ${src.length} values, expected ${chunk ? 'more' : t.n}`);
      const part = Float32Array.from({ length: t.n }, (_, i) => src[off + i]!);
      q.writeBuffer(t[what], 0, part);
      offsets.set(name, (offsets.get(name) ?? 0) + t.n);
    }
    for (const [name, n] of offsets) {
      const len = values.get(name)!.length;
      if (n !== len) throw new Error(`DecoderGpuTrainer.writeTrainables: ${what} of ${name} has ${len} values, the trainables hold ${n}`);
    }
  }

  /** The adapters' modules, or null (full fine-tuning). */
  get loraModules(): readonly LoraModule[] | null {
    return this.adapters?.modules ?? null;
  }

  /** Activation buffers for (B, T), reused while the shape stays the same. */
  acts(B: number, T: number): DecoderTrainActs {
    const c = this.actsCache;
    if (c && c.B === B && c.T === T) return c;
    const V = this.model.vocabSize;
    const max = this.rt.limits.maxStorageBufferBindingSize;
    if (B * T * V * 4 > max)
      throw new Error(
        `DecoderGpuTrainer: logits of B * T = ${B * T} rows of ${V} need ${B * T * V * 4} bytes, over one storage binding (${max}): use smaller micro-batches`,
      );
    if (c) destroyTrainActs(c);
    const l = this.adapters;
    this.actsCache = allocTrainActs(this.rt, this.model.arch, B, T, l && { modules: l.modules.length, rank: l.rank });
    return this.actsCache;
  }

  /**
   * DecoderGpu.linearHook with LoRA: the adapters on `weight` add to the inference forward's
   * output, so sampling (generate.ts on the DecoderGpu) runs the adapted policy, and the base
   * again while loraEnabled is false, as the training forward does.
   */
  private readonly samplingHook = async (rec: Recorder, weight: string, out: GPUBuffer, inp: GPUBuffer, M: number): Promise<void> => {
    const l = this.adapters;
    if (!l || !this.loraEnabled) return;
    const Ntot = decoderTensors(this.model.arch).find((t) => t.name === weight)!.shape[0]!;
    let xa = this.samplingXa.at(-1);
    if (!xa || xa.size < M * l.rank * 4) {
      xa = this.rt.storage(Math.max(M * l.rank * 4, 2 * (xa?.size ?? 0)), 'lora xa (sampling)'); // bytes
      this.samplingXa.push(xa);
    }
    for (const [i, m] of l.modules.entries()) {
      if (m.engine !== weight) continue;
      const p = { M, K: m.inFeatures, r: l.rank, N: m.outFeatures, ldo: Ntot, col0: m.rows[0], scale: l.scaling };
      await recordLoraForward(this.rt, rec, { out, inp, A: l.A[i]!, B: l.B[i]!, xa }, p);
    }
  };

  /** What the passes record against (decoder-gpu-pass.ts). */
  private context(): TrainPassContext {
    return {
      model: this.model,
      grad: (name) => this.gradByName.get(name) ?? null,
      chunkGrads: (which) => (which === 'embed' ? this.embedGrads : this.headGrads),
      lora: this.adapters,
      loraOn: this.loraEnabled,
      valueHead: this.valueHead,
      frozen: this.frozen,
    };
  }

  /**
   * One optimizer step over the micro-batches (masked next-token cross-entropy, the mean over
   * every counted token of the step), in one submit. With `read` the loss and the gradient norm
   * are read back and checked (the numerics guard); otherwise nothing is read.
   */
  async trainStep(batches: DecoderBatch[], read: boolean, profile = false): Promise<GpuStepResult> {
    return this.run('trainStep', batches, read, true, profile);
  }

  /**
   * The step's gradient without the update, left in the trainables' grad buffers (readGrads): the
   * check against the float64 reference. With `read`, the loss and the gradient norm come back.
   */
  async computeGradients(batches: DecoderBatch[], read: boolean): Promise<GpuStepResult> {
    return this.run('computeGradients', batches, read, false, false);
  }

  private async run(what: string, batches: DecoderBatch[], read: boolean, update: boolean, profile: boolean): Promise<GpuStepResult> {
    const { rt } = this;
    const V = this.model.vocabSize;
    const tokens = this.checkBatches(what, batches, []);
    const [ce, acc] = await Promise.all([
      rt.compile(withConstants(crossEntropy, { workgroupSize: [rowWorkgroup(V, 8)] })),
      rt.compile(accumulate),
    ]);
    if (update) this.step++;
    const rec = rt.record(`decoder ${what} ${this.step}`, { profile });
    const borrowed: Borrowed = { release: [], destroy: [] };
    rec.clear(this.lossSum);
    // losses (BT), dlogits (BT, V) = masked cross-entropy, scaled by 1 / the step's loss tokens
    await this.recordMicroBatches(rec, batches, false, borrowed, async (acts) => {
      const BT = acts.B * acts.T;
      const ceBufs = { logits: acts.logits, targets: acts.targets, mask: acts.mask, losses: acts.losses, dlogits: acts.dlogits };
      rec.dispatch(ce, ceBufs, { BT, V, scale: 1 / tokens, writeGrad: true });
      if (!read) return;
      const { result, temporaries } = await recordSum(rt, rec, acts.losses, BT);
      rec.dispatch(acc, { dst: this.lossSum, src: { buffer: result, offset: 0, size: 4 } }, { n: 1 });
      borrowed.release.push(result, ...temporaries);
    });
    if (update) await this.recordUpdate(rec, borrowed);
    else if (read) borrowed.release.push(...(await this.recordNorm(rec)));
    const lossP = read ? rec.read(this.lossSum) : null;
    const normP = read ? rec.read(this.norm) : null;
    const statusP = read ? rec.read(this.status) : null;
    await this.submit(rec, borrowed);
    if (!read) return { tokens };
    const loss = new Float32Array(await lossP!)[0]! / tokens;
    const gradNorm = new Float32Array(await normP!)[0]!;
    if (!Number.isFinite(loss)) throw new NumericsError(this.step, 'loss', loss);
    await this.guardGradients(gradNorm, new Uint32Array(await statusP!)[STATUS_NONFINITE_NOW]!);
    return { loss, gradNorm, tokens };
  }

  /**
   * One PPO / GRPO optimizer step over the micro-batches, in one submit, as GpuTrainer.rlStep:
   * per micro-batch the forward; log-probs and entropies at the sampling temperature; the loss's
   * per-token derivatives and statistics (ppo_loss); their backward into dlogits; the model's
   * backward (and the value head's, when there is one: without it the values are zeros and the
   * value loss has no gradient, as on the CPU). Then the global gradient norm and AdamW. With
   * `read` the loss sums and the gradient norm come back in one readback and are checked.
   */
  async rlStep(batches: DecoderRlBatch[], cfg: RlLossConfig, read: boolean, profile = false): Promise<GpuRlStepResult> {
    const { rt } = this;
    validateRlLossConfig(cfg);
    const tokens = this.checkBatches('rlStep', batches, RL_ROLLOUT_FIELDS);
    const BT = batches[0]!.B * batches[0]!.T;
    const S = planeStride(BT, rt.limits);
    const rollouts = batches.map((b) => packRollout(b, BT, S)); // (5, S) each
    const wg = { workgroupSize: [rowWorkgroup(this.model.vocabSize, 8)] as const };
    const [lpFwd, lpBwd, ppo] = await Promise.all([
      rt.compile(withConstants(logprobForward, wg)),
      rt.compile(withConstants(logprobBackward, wg)),
      rt.compile(ppoLoss),
    ]);
    this.step++;
    const rec = rt.record(`decoder rl step ${this.step}`, { profile });
    const borrowed: Borrowed = { release: [], destroy: [] };
    rec.clear(this.rlReport);
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    const lp = { BT, V: this.model.vocabSize, invTemp: cfg.invTemp };
    await this.recordMicroBatches(rec, batches, !!this.valueHead, borrowed, async (acts, i) => {
      const rollout = rt.pool.acquire(rollouts[i]!.byteLength, usage, 'rl rollout'); // (5, S)
      rt.device.queue.writeBuffer(rollout, 0, rollouts[i]!);
      const logp = rt.pool.acquire(BT * 4, usage, 'rl logp'); // (BT)
      const entropy = rt.pool.acquire(BT * 4, usage, 'rl entropy'); // (BT)
      const dtok = rt.pool.acquire(DTOK_FIELDS.length * S * 4, usage, 'rl dlogp, dentropy'); // (2, S)
      borrowed.release.push(rollout, logp, entropy, dtok);
      const sums = { buffer: this.rlReport, offset: 0, size: PPO_STATS * 4 };
      rec.dispatch(lpFwd, { logits: acts.logits, targets: acts.targets, logp, entropy }, lp);
      const ppoBufs = { logp, entropy, values: acts.values, mask: acts.mask, rollout, dtok, dvalue: acts.dvalues, sums };
      rec.dispatch(ppo, ppoBufs, { ...cfg, n: BT, stride: S, scale: 1 / tokens });
      const dlogp = plane(dtok, 0, BT, S);
      const dentropy = plane(dtok, 1, BT, S);
      rec.dispatch(lpBwd, { logits: acts.logits, targets: acts.targets, dlogp, dentropy, dlogits: acts.dlogits }, lp);
    });
    await this.recordUpdate(rec, borrowed);
    let reportP: Promise<ArrayBuffer> | null = null;
    if (read) {
      rec.copy(this.norm, 0, this.rlReport, RL_NORM * 4, 4);
      rec.copy(this.status, 0, this.rlReport, RL_STATUS * 4, GRAD_STATUS_WORDS * 4);
      reportP = rec.read(this.rlReport);
    }
    await this.submit(rec, borrowed);
    if (!reportP) return { tokens };
    const report = await reportP;
    const f = new Float32Array(report);
    const sums: RlLossSums = { tokens, policyLoss: 0, valueLoss: 0, entropy: 0, kl: 0, approxKl: 0, clipped: 0 };
    RL_STAT_FIELDS.forEach((k, j) => (sums[k] = f[j]!));
    for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const)
      if (!Number.isFinite(sums[k])) throw new NumericsError(this.step, k, sums[k]);
    const gradNorm = f[RL_NORM]!;
    await this.guardGradients(gradNorm, new Uint32Array(report)[RL_STATUS + STATUS_NONFINITE_NOW]!);
    return { sums, gradNorm, tokens };
  }

  /**
   * Records every micro-batch's staged inputs, training forward, loss (`loss`: from acts.logits
   * and acts.values to acts.dlogits and acts.dvalues) and backward, after zeroing the gradients.
   */
  private async recordMicroBatches(
    rec: Recorder,
    batches: readonly DecoderBatch[],
    withValues: boolean,
    borrowed: Borrowed,
    loss: (acts: DecoderTrainActs, i: number) => Promise<void>,
  ): Promise<void> {
    const ctx = this.context();
    for (const t of this.list) rec.clear(t.grad);
    for (const [i, b] of batches.entries()) {
      const { acts, ids } = this.stageInputs(rec, b, borrowed);
      await recordTrainForward(this.rt, rec, ctx, acts);
      await loss(acts, i);
      const back = await recordTrainBackward(this.rt, rec, ctx, acts, ids, withValues);
      borrowed.release.push(...back.release);
      borrowed.destroy.push(...back.destroy);
    }
  }

  /**
   * Checks the micro-batches (one shape; B * T values in each field, `fields` included; ids,
   * positions and padding as the forward checks them; counted targets in the vocabulary) and
   * returns the loss tokens (the masks' sum).
   */
  private checkBatches<K extends string>(
    what: string,
    batches: readonly (DecoderBatch & Record<K, ArrayLike<number>>)[],
    fields: readonly K[],
  ): number {
    const first = batches[0];
    if (first && batches.some((b) => b.B !== first.B || b.T !== first.T))
      throw new Error(`${what}: micro-batches must share one shape (B, T)`);
    const tokens = lossTokens(what, batches, fields);
    const V = this.model.vocabSize;
    batches.forEach((b, i) => {
      checkInput(b, V, this.model.contextLength);
      if (b.start && b.start.length !== b.B)
        throw new Error(`${what}: micro-batch ${i}: start has ${b.start.length} values, expected B = ${b.B}`);
      b.targets.forEach((t, j) => {
        if (b.mask[j] !== 0 && !(t < V)) throw new Error(`${what}: micro-batch ${i}: target ${t} at ${j} is outside the vocabulary`);
      });
    });
    return tokens;
  }

  /**
   * Stages a micro-batch's inputs (tokens, positions, start, targets, mask): each is written to a
   * pooled buffer now and copied into the shared activation buffers at this point of the
   * recording, so every micro-batch sees its own.
   */
  private stageInputs(rec: Recorder, b: DecoderBatch, borrowed: Borrowed): { acts: DecoderTrainActs; ids: PassIds } {
    const { rt } = this;
    const { B, T } = b;
    const positions = b.positions ?? defaultPositions(B, T);
    const acts = this.acts(B, T);
    for (const [dst, data] of [
      [acts.tokens, b.tokens],
      [acts.positions, positions],
      [acts.start, b.start ?? new Uint32Array(B)],
      [acts.targets, b.targets],
      [acts.mask, b.mask],
    ] as const) {
      const staged = rt.pool.acquire(data.byteLength, GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'staged input');
      rt.device.queue.writeBuffer(staged, 0, data);
      rec.copy(staged, 0, dst, 0, data.byteLength);
      borrowed.release.push(staged);
    }
    return { acts, ids: { tokens: b.tokens, positions } };
  }

  /** The global gradient norm over every trainable (into `norm`, `status`); returns pooled temporaries. */
  private recordNorm(rec: Recorder): Promise<GPUBuffer[]> {
    const grads = this.list.map((t) => ({ buffer: t.grad, n: t.n }));
    return recordGradNormOf(this.rt, rec, grads, this.norm, this.status);
  }

  /** The global gradient norm, then AdamW on each trainable (clipped by that norm; skipped when it is not finite). */
  private async recordUpdate(rec: Recorder, borrowed: Borrowed): Promise<void> {
    borrowed.release.push(...(await this.recordNorm(rec)));
    const o = this.opt;
    const common = { lr: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, step: this.step, maxNorm: o.gradClip, offset: 0 };
    for (const t of this.trainables) {
      const bind = { param: t.param, grad: t.grad, m: t.m, v: t.v, norm: this.norm, status: this.status };
      const p = { ...common, lr: trainableLr(o, t.plus), n: t.n, weightDecay: t.decay ? o.weightDecay : 0 };
      rec.dispatch(await this.rt.compile(selectAdamw(p)), bind, p);
    }
  }

  /** Submits and gives back what the recording borrowed. */
  private async submit(rec: Recorder, borrowed: Borrowed): Promise<void> {
    try {
      this.lastTimings = (await rec.submit()).timings;
    } finally {
      for (const b of borrowed.release) this.rt.pool.release(b);
      for (const b of borrowed.destroy) b.destroy();
    }
  }

  /** The numerics guard on the gradient: throws naming the first non-finite tensor. */
  private async guardGradients(gradNorm: number, nonFiniteNow: number): Promise<void> {
    if (!nonFiniteNow && Number.isFinite(gradNorm)) return;
    const grads = await this.readTrainables('grad');
    const bad = this.trainables.find((t, i) => grads[i]!.some((x) => !Number.isFinite(x)));
    throw new NumericsError(this.step, `gradient of ${bad?.name ?? 'unknown tensor'}`, gradNorm);
  }

  /**
   * Logits (BT, V) of the training forward (with the adapters unless loraEnabled is false: the
   * KL reference's logits from the same weights), read back: tests and scoring.
   */
  async forwardLogits(input: ForwardInput): Promise<Float32Array> {
    return (await this.readForward(input, false)).logits;
  }

  /**
   * Logits (BT, V) and values (BT; zeros without a value head) of the training forward, read back
   * in one submit: a policy's scoring (log-probs, PPO's old values, the reward model's scores).
   */
  async forwardWithValues(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }> {
    const r = await this.readForward(input, true);
    return { logits: r.logits, values: r.values! };
  }

  /** The training forward of `input`, its logits (and values, with `withValues`) read back in one submit. */
  private async readForward(input: ForwardInput, withValues: boolean): Promise<{ logits: Float32Array; values: Float32Array | null }> {
    const { rt } = this;
    const { B, T } = input;
    checkInput(input, this.model.vocabSize, this.model.contextLength);
    const acts = this.acts(B, T);
    const q = rt.device.queue;
    q.writeBuffer(acts.tokens, 0, Uint32Array.from(input.tokens));
    q.writeBuffer(acts.positions, 0, Uint32Array.from(input.positions ?? defaultPositions(B, T)));
    q.writeBuffer(acts.start, 0, input.start ? Uint32Array.from(input.start) : new Uint32Array(B));
    const rec = rt.record(withValues ? 'decoder scoring forward' : 'decoder training forward');
    if (withValues && !this.valueHead) rec.clear(acts.values);
    await recordTrainForward(rt, rec, this.context(), acts);
    const logits = rec.read(acts.logits);
    const values = withValues ? rec.read(acts.values) : null;
    await rec.submit();
    return { logits: new Float32Array(await logits), values: values && new Float32Array(await values) };
  }

  /** Parameters, gradients or AdamW moments by name (readParams' names), one submit. */
  async readNamed(what: 'param' | 'grad' | 'm' | 'v'): Promise<Map<string, Float32Array>> {
    return this.joinChunks(await this.readTrainables(what));
  }

  /** Each trainable's parameter or gradient, in `trainables` order (one submit). */
  async readTrainables(what: 'param' | 'grad' | 'm' | 'v'): Promise<Float32Array[]> {
    const rec = this.rt.record(`read ${what}`);
    const reads = this.trainables.map((t) => rec.read(t[what], 0, t.n * 4));
    await rec.submit();
    return (await Promise.all(reads)).map((b) => new Float32Array(b));
  }

  /**
   * Gradients by name: full fine-tuning in engine names (arch.ts decoderTensors; the embedding's
   * and the head's chunks joined), LoRA by PEFT's keys (lora.ts peftKeys).
   */
  async readGrads(): Promise<Map<string, Float32Array>> {
    return this.joinChunks(await this.readTrainables('grad'));
  }

  /** Parameters by name, as readGrads. */
  async readParams(): Promise<Map<string, Float32Array>> {
    return this.joinChunks(await this.readTrainables('param'));
  }

  private joinChunks(values: Float32Array[]): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    const parts = new Map<string, Float32Array[]>();
    this.trainables.forEach((t, i) => {
      const chunk = /^(embed|head)\[/.exec(t.name);
      if (!chunk) out.set(t.name, values[i]!);
      else parts.set(chunk[1]!, [...(parts.get(chunk[1]!) ?? []), values[i]!]);
    });
    for (const [name, list] of parts) {
      const joined = new Float32Array(list.reduce((s, x) => s + x.length, 0));
      list.reduce((off, x) => (joined.set(x, off), off + x.length), 0);
      out.set(name, joined);
    }
    return out;
  }

  /** Bytes this trainer holds on the GPU now, buffer by buffer (decoderTrainMemory predicts them). */
  memory(): DecoderTrainMemory {
    const bytes = (bs: readonly GPUBuffer[]) => bs.reduce((s, b) => s + b.size, 0);
    const ts = this.trainables;
    const adapters = this.adapters ? bytes([...this.adapters.A, ...this.adapters.B]) : 0;
    const grads = bytes(ts.map((t) => t.grad));
    const adam = bytes(ts.flatMap((t) => [t.m, t.v]));
    const acts = this.actsCache ? bytes(trainActBuffers(this.actsCache)) : 0;
    const weights = this.model.weightBytes;
    const vh = this.valueHead;
    const valueHead = vh ? bytes([vh.w, vh.b]) : 0;
    return { weights, adapters, valueHead, grads, adam, acts, total: weights + adapters + valueHead + grads + adam + acts };
  }

  dispose(): void {
    if (this.model.linearHook === this.samplingHook) this.model.linearHook = null;
    for (const b of this.samplingXa) b.destroy();
    if (this.actsCache) destroyTrainActs(this.actsCache);
    this.actsCache = null;
    const own = [...this.frozen, this.norm, this.status, this.lossSum, this.rlReport];
    for (const t of this.list) own.push(t.grad, t.m, t.v);
    if (this.adapters) own.push(...this.adapters.A, ...this.adapters.B);
    if (this.valueHead) own.push(this.valueHead.w, this.valueHead.b);
    for (const b of own) b.destroy();
  }
}

/** The adapters on the GPU, A and B checked against each module's shape; gradients zero. */
function uploadAdapters(rt: GpuRuntime, l: DecoderLoraInit): GpuAdapters {
  const r = l.rank;
  if (l.A.length !== l.modules.length || l.B.length !== l.modules.length)
    throw new Error(`DecoderGpuTrainer: ${l.A.length} A and ${l.B.length} B for ${l.modules.length} modules`);
  l.modules.forEach((m, i) => {
    if (l.A[i]!.length !== r * m.inFeatures)
      throw new Error(
        `DecoderGpuTrainer: ${m.path} A has ${l.A[i]!.length} values, (r, in) = (${r}, ${m.inFeatures}) needs ${r * m.inFeatures}`,
      );
    if (l.B[i]!.length !== m.outFeatures * r)
      throw new Error(
        `DecoderGpuTrainer: ${m.path} B has ${l.B[i]!.length} values, (out, r) = (${m.outFeatures}, ${r}) needs ${m.outFeatures * r}`,
      );
  });
  const up = (x: ArrayLike<number>, label: string) => rt.upload(Float32Array.from(x), label);
  return {
    modules: l.modules,
    rank: r,
    scaling: l.scaling,
    A: l.modules.map((m, i) => up(l.A[i]!, peftKeys(m).A)),
    B: l.modules.map((m, i) => up(l.B[i]!, peftKeys(m).B)),
    dA: l.modules.map((m) => rt.storage(r * m.inFeatures * 4, `grad ${peftKeys(m).A}`)),
    dB: l.modules.map((m) => rt.storage(m.outFeatures * r * 4, `grad ${peftKeys(m).B}`)),
  };
}
