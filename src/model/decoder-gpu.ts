/**
 * The data-described decoder (arch.ts) on WebGPU: GPT-2, Llama and Qwen2 from one forward,
 * recorded kernel by kernel in the order of the float64 reference (decoder-cpu.ts).
 *
 * Weights: one buffer per engine tensor. The matrices (every 2-D tensor: the linear layers, the
 * embedding, an untied LM head, GPT-2's position table) are stored in `weightFormat`: f32, or packed
 * 16-bit f16 / bf16 (kernels/weight_format.ts), half the memory, which only a frozen model can use
 * (inference, or a LoRA base); the kernels widen each element to f32 as they read it, so this works
 * on every adapter, shader-f16 or not. Norm weights and biases stay f32. A checkpoint stored in F16
 * or BF16 keeps exactly its numbers that way (hfWeightFormat).
 * The embedding, and an untied LM head, are stored in row chunks that each fit
 * maxStorageBufferBindingSize: the runtime already asks the adapter for its largest limits
 * (gpu/adapter.ts), and a vocabulary still too big for one binding (Qwen2's 151,936 x 896 f32 is
 * 519 MiB, over the 128 MiB many devices allow) is split, never refused: the token lookup is a
 * gather per chunk (kernels/gather_rows.ts), the LM head one matmul per chunk writing its column
 * block of the logits (the matmul's ldo / col0).
 *
 * Every forward reads and extends a KV cache, (B, NKV, Tmax, HS) per layer and for k and v; a
 * forward without one (forward(), scoring) uses a cache of its own T rows. Activations are reused
 * in place (the residual stream accumulates): this is the inference path; the training path
 * (decoder-gpu-train.ts, decoder-gpu-pass.ts) keeps per-layer activations, and its LoRA adapters
 * join this forward through linearHook, so sampling runs the adapted policy.
 * Shape legend: arch.ts.
 */
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { attentionGqaScratchFloats, GQA_MAX_SPLITS, kvWriteGqa, recordAttentionGqa } from '../kernels/attention_gqa';
import { gatherRowChunks, gatherRows, gatherRowsFor } from '../kernels/gather_rows';
import { geluForward } from '../kernels/gelu';
import { layernormForward, layernormWorkgroup } from '../kernels/layernorm';
import { recordMatmulForward } from '../kernels/matmul';
import { accumulate } from '../kernels/residual';
import { rmsnormForward, rmsnormWorkgroup } from '../kernels/rmsnorm';
import { rope, ropeTables } from '../kernels/rope';
import { swigluForward } from '../kernels/swiglu';
import { packWeights, roundWeights, weightBytes, type WeightFormat } from '../kernels/weight_format';
import { archDims, decoderTensors, layerTensor, type DecoderArch } from './arch';
import { checkInput, defaultPositions, type ForwardInput } from './cpu';
import type { GpuDecoder, StepBuffers } from './generate';
import { headTensor } from './lora';

/** Per-layer key and value caches, (B, NKV, Tmax, HS) each. */
export interface DecoderGpuCache {
  B: number;
  Tmax: number;
  layers: { k: GPUBuffer; v: GPUBuffer }[];
}

/** The activations of one forward shape (B, T). */
export interface DecoderStep extends StepBuffers {
  x: GPUBuffer; // (BT, C) the residual stream
  h: GPUBuffer; // (BT, C) a norm's output
  mean: GPUBuffer; // (BT) LayerNorm's mean (unused by RMSNorm)
  rstd: GPUBuffer; // (BT)
  qkv: GPUBuffer; // (BT, W)
  atty: GPUBuffer; // (BT, QD)
  o: GPUBuffer; // (BT, C) o_proj / down_proj output before the residual add
  u: GPUBuffer; // (BT, 2F) gate|up, or (BT, F) GELU's output
  act: GPUBuffer; // (BT, F) SwiGLU's output (GPT-2: GELU's, only with a linearHook; else unused)
  last: GPUBuffer; // (B, C) each row's last position, with lastOnly
  lastIdx: GPUBuffer; // (B) u32: b*T + T - 1
  hf: GPUBuffer; // (rows, C) the final norm's output, rows = B with lastOnly else BT
  scratch: GPUBuffer | null; // flash-decoding partials, decode steps only
}

/** Rows [v0, v0 + rows) of the embedding or LM head (V, C), stored as one buffer (rows, C). */
export interface DecoderGpuChunk {
  v0: number;
  rows: number;
  buffer: GPUBuffer;
  /** how the buffer stores its elements (the model's weightFormat) */
  format: WeightFormat;
}

type Chunk = DecoderGpuChunk;

export interface DecoderGpuOptions {
  /** the longest sequence it serves (KV cache, rope tables); default the model's maxPositions capped at 4096 */
  contextLength?: number;
  /** cap on the bytes of one embedding / LM-head chunk (tests force the split); default the device's binding limit */
  embedChunkBytes?: number;
  /** how the 2-D weights are stored (default f32); f16 / bf16 round them (exact for a checkpoint of that dtype) and freeze them */
  weightFormat?: WeightFormat;
}

/**
 * Called after each linear layer's matmul in recordForward: `out` (M, N) = `inp` (M, K) . W^T + b
 * for the engine weight named `weight`, before anything reads it (GELU included). LoRA adds its
 * adapters' rows there (DecoderGpuTrainer sets it), so sampling runs the adapted policy.
 */
export type DecoderLinearHook = (rec: Recorder, weight: string, out: GPUBuffer, inp: GPUBuffer, M: number) => Promise<void>;

/** Default context when the config allows more (Qwen2's 32768 would make large rope tables and caches for nothing). */
export const DEFAULT_DECODER_CONTEXT = 4096;

export class DecoderGpu implements GpuDecoder<DecoderGpuCache, DecoderStep> {
  readonly vocabSize: number;
  readonly contextLength: number;
  private readonly tensors = new Map<string, GPUBuffer>();
  /** the tensors stored in weightFormat (the 2-D ones); the rest are f32 */
  private readonly matrices = new Set<string>();
  private readonly embed: Chunk[];
  private readonly head: Chunk[];
  private readonly ropeCos: GPUBuffer | null = null;
  private readonly ropeSin: GPUBuffer | null = null;
  private readonly maxBinding: number;
  /** bytes of weights held on the GPU */
  readonly weightBytes: number;
  /** how the 2-D weights are stored: f32 (trainable), or packed f16 / bf16 (frozen) */
  readonly weightFormat: WeightFormat;
  /**
   * null (the default): the base model alone. Set (LoRA adapters, decoder-gpu-train.ts): called
   * after every linear layer of recordForward; GPT-2's GELU then runs apart from its matmul (on
   * the adapted pre-activation) and steps allocated meanwhile keep its output (BT, F).
   */
  linearHook: DecoderLinearHook | null = null;
  /** how many row chunks the embedding is stored in */
  get embedChunks(): number {
    return this.embed.length;
  }

  constructor(
    readonly rt: GpuRuntime,
    readonly arch: DecoderArch,
    weights: ReadonlyMap<string, Float32Array>,
    opts: DecoderGpuOptions = {},
  ) {
    this.vocabSize = arch.vocabSize;
    this.contextLength = opts.contextLength ?? Math.min(arch.maxPositions, DEFAULT_DECODER_CONTEXT);
    if (this.contextLength > arch.maxPositions)
      throw new Error(`DecoderGpu: contextLength ${this.contextLength} exceeds the model's ${arch.maxPositions} positions`);
    this.maxBinding = rt.limits.maxStorageBufferBindingSize;
    const chunkBytes = Math.min(opts.embedChunkBytes ?? Infinity, this.maxBinding);
    const format = (this.weightFormat = opts.weightFormat ?? 'f32');
    let bytes = 0;
    const { dModel: C } = arch;
    /** a tensor's buffer: f32, or the matrices packed in `format` (2-D) */
    const upload = (data: Float32Array, matrix: boolean, label: string): GPUBuffer => {
      const packed = matrix && format !== 'f32';
      bytes += weightBytes(data.length, packed ? format : 'f32');
      return rt.upload(packed ? packWeights(data, format, label) : data, label);
    };
    const chunked = (name: string): Chunk[] => {
      const data = need(weights, name);
      return gatherRowChunks(arch.vocabSize, C, chunkBytes, format === 'f32' ? 4 : 2).map(([v0, rows]) => {
        const buffer = upload(data.subarray(v0 * C, (v0 + rows) * C), true, `${name}[${v0}..${v0 + rows})`);
        return { v0, rows, buffer, format };
      });
    };
    this.embed = chunked('embed');
    this.head = arch.tiedEmbeddings ? this.embed : chunked('head');
    for (const t of decoderTensors(arch)) {
      if (t.name === 'embed' || t.name === 'head') continue;
      const data = need(weights, t.name);
      const size = t.shape.reduce((a, b) => a * b, 1);
      if (data.length !== size)
        throw new Error(`DecoderGpu: tensor ${t.name} has ${data.length} values, its shape [${t.shape}] needs ${size}`);
      const matrix = t.shape.length === 2;
      const stored = weightBytes(size, matrix ? format : 'f32');
      if (stored > this.maxBinding)
        throw new Error(`DecoderGpu: tensor ${t.name} (${stored} bytes) exceeds one storage binding (${this.maxBinding} bytes)`);
      this.tensors.set(t.name, upload(data, matrix, t.name));
      if (matrix) this.matrices.add(t.name);
    }
    if (arch.positions.kind === 'rope') {
      const { cos, sin } = ropeTables(this.contextLength, arch.headDim, arch.positions.theta);
      this.ropeCos = rt.upload(cos, 'rope cos');
      this.ropeSin = rt.upload(sin, 'rope sin');
    }
    this.weightBytes = bytes;
  }

  private t(name: string): GPUBuffer {
    const b = this.tensors.get(name);
    if (!b) throw new Error(`DecoderGpu: no tensor ${name}`);
    return b;
  }

  private tOpt(name: string): GPUBuffer | null {
    return this.tensors.get(name) ?? null;
  }

  /**
   * The buffer of an engine tensor (arch.ts decoderTensors) other than embed and head, whose row
   * chunks are embedTable and headTable: what the trainer (decoder-gpu-train.ts) reads, and with
   * full fine-tuning updates in place.
   */
  tensor(name: string): GPUBuffer {
    return this.t(name);
  }

  /** tensor(name), or null when the architecture has no such tensor (a bias it does not carry). */
  tensorOrNull(name: string): GPUBuffer | null {
    return this.tOpt(name);
  }

  /** How tensor(name)'s buffer stores its elements: weightFormat for a matrix, f32 for a norm weight or a bias. */
  formatOf(name: string): WeightFormat {
    return this.matrices.has(name) ? this.weightFormat : 'f32';
  }

  /** The embedding's row chunks, in order of v0. */
  get embedTable(): readonly DecoderGpuChunk[] {
    return this.embed;
  }

  /** The LM head's row chunks: the embedding's own with tied embeddings. */
  get headTable(): readonly DecoderGpuChunk[] {
    return this.head;
  }

  /** RoPE's cos and sin tables (contextLength, HS/2) (kernels/rope.ts), or null with learned positions. */
  get ropeTables(): { cos: GPUBuffer; sin: GPUBuffer } | null {
    return this.ropeCos && this.ropeSin ? { cos: this.ropeCos, sin: this.ropeSin } : null;
  }

  createKvCache(B: number, Tmax: number): DecoderGpuCache {
    const { nLayer: L, nKvHead: NKV, headDim: HS } = this.arch;
    if (Tmax > this.contextLength) throw new Error(`KV cache: ${Tmax} positions exceed contextLength ${this.contextLength}`);
    const bytes = B * NKV * Tmax * HS * 4;
    const layers = Array.from({ length: L }, (_, l) => ({
      k: this.rt.storage(bytes, `layers.${l}.kcache`),
      v: this.rt.storage(bytes, `layers.${l}.vcache`),
    }));
    return { B, Tmax, layers };
  }

  destroyKvCache(cache: DecoderGpuCache): void {
    for (const l of cache.layers) {
      l.k.destroy();
      l.v.destroy();
    }
  }

  allocStep(B: number, T: number, lastOnly: boolean): DecoderStep {
    const { dModel: C, nHead: NH, headDim: HS, dFf: F, vocabSize: V } = this.arch;
    const { QD, W, up } = archDims(this.arch);
    const BT = B * T;
    const rows = lastOnly ? B : BT;
    const f = (n: number, label: string) => this.rt.storage(Math.max(1, n) * 4, label);
    const idx = Uint32Array.from({ length: B }, (_, b) => b * T + T - 1);
    return {
      B,
      T,
      lastOnly,
      tokens: f(BT, 'tokens'),
      positions: f(BT, 'positions'),
      start: f(B, 'start'),
      logits: f(rows * V, 'logits'),
      values: f(rows, 'values (no value head: zeros)'),
      x: f(BT * C, 'x'),
      h: f(BT * C, 'h'),
      mean: f(BT, 'norm mean'),
      rstd: f(BT, 'norm rstd'),
      qkv: f(BT * W, 'qkv'),
      atty: f(BT * QD, 'atty'),
      o: f(BT * C, 'o'),
      u: f(BT * up, 'mlp up'),
      act: f(this.arch.mlp === 'swiglu' || this.linearHook ? BT * F : 1, 'mlp act'),
      last: f(B * C, 'last rows'),
      lastIdx: this.rt.upload(idx, 'last row index'),
      hf: f(rows * C, 'final norm'),
      scratch:
        T === 1
          ? f(
              attentionGqaScratchFloats({ B, Tnew: 1, NH, NKV: this.arch.nKvHead, HS, Tmax: 1, pos: 0 }, GQA_MAX_SPLITS),
              'attention partials',
            )
          : null,
    };
  }

  destroyStep(s: DecoderStep): void {
    for (const v of Object.values(s)) if (v && typeof v === 'object' && 'destroy' in v) (v as GPUBuffer).destroy();
  }

  private norm(rec: Recorder, kernels: Kernels, s: DecoderStep, out: GPUBuffer, inp: GPUBuffer, name: string, N: number): void {
    const { dModel: C, norm } = this.arch;
    if (kernels.rms) rec.dispatch(kernels.rms, { out, rstd: s.rstd, inp, weight: this.t(`${name}.w`) }, { N, C, eps: norm.eps });
    else
      rec.dispatch(kernels.ln!, { out, mean: s.mean, rstd: s.rstd, inp, weight: this.t(`${name}.w`), bias: this.t(`${name}.b`) }, { N, C });
  }

  private async kernels() {
    const { rt } = this;
    const C = this.arch.dModel;
    const rmsnorm = this.arch.norm.kind === 'rmsnorm';
    const [gather, gatherW, rms, ln, add, kvWrite, ropeK, swiglu, gelu] = await Promise.all([
      rt.compile(gatherRows),
      rt.compile(gatherRowsFor(this.weightFormat)),
      rmsnorm ? rt.compile(rmsnormForward(rmsnormWorkgroup(C))) : null,
      rmsnorm ? null : rt.compile(layernormForward(layernormWorkgroup(C))),
      rt.compile(accumulate),
      rt.compile(kvWriteGqa),
      rt.compile(rope),
      rt.compile(swigluForward),
      rt.compile(geluForward),
    ]);
    return { gather, gatherW, rms, ln, add, kvWrite, rope: ropeK, swiglu, gelu };
  }

  /**
   * Records a forward of s.T new positions from kv.pos: their keys and values go into the cache
   * and attention reads it. Logits land in s.logits: (B*T, V), or (B, V) with s.lastOnly.
   */
  async recordForward(
    rec: Recorder,
    s: DecoderStep,
    kv: { cache: DecoderGpuCache; pos: number; tokens?: BufferBinding; positions?: BufferBinding },
  ): Promise<void> {
    const { rt, arch: a } = this;
    const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, dFf: F, vocabSize: V } = a;
    const { QD, W, up } = archDims(a);
    const { B, T } = s;
    const BT = B * T;
    const k = await this.kernels();
    const tokens = kv.tokens ?? s.tokens;
    const positions = kv.positions ?? s.positions;
    const problem = { B, Tnew: T, NH, NKV, HS, Tmax: kv.cache.Tmax, pos: kv.pos };
    const hook = this.linearHook;
    if (hook && a.mlp === 'gelu' && s.act.size < BT * F * 4)
      throw new Error('DecoderGpu: this step was allocated before the linearHook was set (GELU needs its own output then)');

    // x (BT, C) = embed[tokens] (+ pos[positions])
    for (const c of this.embed)
      rec.dispatch(k.gatherW, { out: s.x, ids: tokens, table: c.buffer }, { N: BT, C, v0: c.v0, rows: c.rows, accumulate: 0 });
    if (a.positions.kind === 'learned') {
      rec.dispatch(k.gatherW, { out: s.x, ids: positions, table: this.t('pos') }, { N: BT, C, v0: 0, rows: a.maxPositions, accumulate: 1 });
    }
    for (let l = 0; l < L; l++) {
      const p = (n: string) => layerTensor(l, n);
      const { k: kcache, v: vcache } = kv.cache.layers[l]!;
      // attention: x += o_proj(attention(rope(qkv_proj(norm1(x)))))
      this.norm(rec, k, s, s.h, s.x, p('norm1'), BT);
      await recordMatmulForward(
        rt,
        rec,
        { out: s.qkv, inp: s.h, weight: this.t(p('qkv.w')), weightFormat: this.weightFormat, bias: this.tOpt(p('qkv.b')) },
        { M: BT, K: C, N: W },
      );
      await hook?.(rec, p('qkv.w'), s.qkv, s.h, BT);
      if (a.positions.kind === 'rope') {
        rec.dispatch(
          k.rope,
          { x: s.qkv, positions, cos: this.ropeCos!, sin: this.ropeSin! },
          { N: BT, W, nHeads: NH + NKV, HS, inverse: 0 },
        );
      }
      rec.dispatch(k.kvWrite, { qkv: s.qkv, kcache, vcache }, problem);
      await recordAttentionGqa(rt, rec, { qkv: s.qkv, kcache, vcache, start: s.start, out: s.atty, scratch: s.scratch }, problem);
      await recordMatmulForward(
        rt,
        rec,
        { out: s.o, inp: s.atty, weight: this.t(p('o.w')), weightFormat: this.weightFormat, bias: this.tOpt(p('o.b')) },
        { M: BT, K: QD, N: C },
      );
      await hook?.(rec, p('o.w'), s.o, s.atty, BT);
      rec.dispatch(k.add, { dst: s.x, src: s.o }, { n: BT * C });
      // MLP: x += down(swiglu(gate_up(norm2(x)))) or down(gelu(up(norm2(x))))
      this.norm(rec, k, s, s.h, s.x, p('norm2'), BT);
      const upBufs = { out: s.u, inp: s.h, weight: this.t(p('up.w')), weightFormat: this.weightFormat, bias: this.tOpt(p('up.b')) };
      await recordMatmulForward(rt, rec, upBufs, { M: BT, K: C, N: up }, { gelu: a.mlp === 'gelu' && !hook });
      await hook?.(rec, p('up.w'), s.u, s.h, BT);
      if (a.mlp === 'swiglu') rec.dispatch(k.swiglu, { out: s.act, gu: s.u }, { N: BT, F });
      else if (hook) rec.dispatch(k.gelu, { out: s.act, inp: s.u }, { n: BT * F });
      const actBuf = a.mlp === 'swiglu' || hook ? s.act : s.u;
      await recordMatmulForward(
        rt,
        rec,
        { out: s.o, inp: actBuf, weight: this.t(p('down.w')), weightFormat: this.weightFormat, bias: this.tOpt(p('down.b')) },
        { M: BT, K: F, N: C },
      );
      await hook?.(rec, p('down.w'), s.o, actBuf, BT);
      rec.dispatch(k.add, { dst: s.x, src: s.o }, { n: BT * C });
    }
    let rows = BT;
    let final = s.x;
    if (s.lastOnly) {
      rec.dispatch(k.gather, { out: s.last, ids: s.lastIdx, table: s.x }, { N: B, C, v0: 0, rows: BT, accumulate: 0 });
      rows = B;
      final = s.last;
    }
    this.norm(rec, k, s, s.hf, final, 'normf', rows);
    for (const c of this.head) {
      const head = { out: s.logits, inp: s.hf, weight: c.buffer, weightFormat: c.format };
      await recordMatmulForward(rt, rec, head, { M: rows, K: C, N: c.rows, ldo: V, col0: c.v0 });
    }
    await hook?.(rec, headTensor(a), s.logits, s.hf, rows); // lm_head's adapter (lora.ts)
  }

  /** Writes a forward's inputs into the step buffers (the CPU model's checks first: same errors). */
  writeInput(s: DecoderStep, input: ForwardInput): void {
    checkInput(input, this.vocabSize, this.contextLength);
    const q = this.rt.device.queue;
    q.writeBuffer(s.tokens, 0, Uint32Array.from(input.tokens));
    q.writeBuffer(s.positions, 0, Uint32Array.from(input.positions ?? defaultPositions(input.B, input.T)));
    q.writeBuffer(s.start, 0, input.start ? Uint32Array.from(input.start) : new Uint32Array(input.B));
  }

  /**
   * Logits (BT, V) of (B, T) tokens, computed in micro-batches of rows whose logits fit one
   * binding (a big vocabulary at a long T would not).
   */
  async forward(input: ForwardInput): Promise<Float32Array> {
    const { B, T } = input;
    checkInput(input, this.vocabSize, this.contextLength);
    const V = this.vocabSize;
    const perRow = T * V * 4;
    const mb = Math.max(1, Math.min(B, Math.floor(Math.min(this.maxBinding, 256 * 2 ** 20) / perRow)));
    const out = new Float32Array(B * T * V);
    const positions = input.positions ?? defaultPositions(B, T);
    for (let b0 = 0; b0 < B; b0 += mb) {
      const n = Math.min(mb, B - b0);
      const s = this.allocStep(n, T, false);
      const cache = this.createKvCache(n, T);
      try {
        this.writeInput(s, {
          B: n,
          T,
          tokens: Array.prototype.slice.call(input.tokens, b0 * T, (b0 + n) * T),
          positions: Array.prototype.slice.call(positions, b0 * T, (b0 + n) * T),
          start: input.start ? Array.prototype.slice.call(input.start, b0, b0 + n) : null,
        });
        const rec = this.rt.record('decoder forward');
        await this.recordForward(rec, s, { cache, pos: 0 });
        const logits = rec.read(s.logits, 0, n * T * V * 4);
        await rec.submit();
        out.set(new Float32Array(await logits), b0 * T * V);
      } finally {
        this.destroyStep(s);
        this.destroyKvCache(cache);
      }
    }
    return out;
  }

  dispose(): void {
    for (const b of this.tensors.values()) b.destroy();
    for (const c of this.embed) c.buffer.destroy();
    if (this.head !== this.embed) for (const c of this.head) c.buffer.destroy();
    this.ropeCos?.destroy();
    this.ropeSin?.destroy();
  }
}

type Kernels = Awaited<ReturnType<DecoderGpu['kernels']>>;

/**
 * The weights as a DecoderGpu with `format` holds them: the matrices rounded to it and widened back
 * (kernels/weight_format.ts roundWeights; the same map for f32), so the CPU model can compute the
 * same function. Exact, and a copy for nothing, when the checkpoint is stored in that format.
 */
export function roundedWeights(
  a: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
  format: WeightFormat,
): Map<string, Float32Array> {
  const out = new Map(weights);
  if (format === 'f32') return out;
  for (const t of decoderTensors(a)) if (t.shape.length === 2) out.set(t.name, roundWeights(need(weights, t.name), format, t.name));
  return out;
}

function need(weights: ReadonlyMap<string, Float32Array>, name: string): Float32Array {
  const w = weights.get(name);
  if (!w) throw new Error(`DecoderGpu: no tensor ${name}`);
  return w;
}
