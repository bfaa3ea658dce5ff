/**
 * The comparison side of `coderl bench train`: the imported decoder's training step (Llama /
 * Qwen2, arch.ts) written with TensorFlow.js ops and autodiff (tf.variableGrads) on its WebGPU
 * backend, the same step DecoderGpuTrainer takes (decoder-gpu-train.ts): the training forward,
 * masked next-token cross-entropy (the mean over the counted tokens), the global gradient norm,
 * clipping, and AdamW (decoupled weight decay on matrices and embeddings) on the trainables.
 *
 * The model as transformers writes it: RMSNorm, q/k/v projections (Qwen2: with biases), rotary
 * embedding in the rotate-half layout, grouped-query attention with a causal mask, o_proj,
 * SwiGLU (silu(gate) * up, down), a tied or untied LM head. Each HF linear module is its own
 * matrix here (sliced from the engine's packed qkv and gate|up tensors), as a TF.js user would
 * write it. Full fine-tuning: every tensor is a tf.variable. LoRA: the base is tf.tensor
 * constants (no gradient flows into them) and each adapted module gets A (r, in) and B (out, r)
 * variables whose (alpha / r) * B (A x) adds to its output, as PEFT does.
 *
 * Batches have no left padding (positions 0..T-1 in every row). GPT-2 (LayerNorm, learned
 * positions, GELU) is not written here. Shape legend: arch.ts; r the LoRA rank.
 */
import { archDims, decoderTensors, layerTensor, type DecoderArch } from '../model/arch';
import type { DecoderLoraInit } from '../model/decoder-gpu-train';
import type { OptimConfig, TokenBatch } from '../model/optim';
import { ropeTables } from '../kernels/rope';
import type { Tf } from './tfjs';

type Tensor = import('@tensorflow/tfjs-core').Tensor;
type Tensor2D = import('@tensorflow/tfjs-core').Tensor2D;
type Scalar = import('@tensorflow/tfjs-core').Scalar;
type Variable = import('@tensorflow/tfjs-core').Variable;

/** The linear modules of a Llama / Qwen2 layer, by transformers' names. */
const LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
type LinearName = (typeof LINEARS)[number];

/** One linear layer: y = x W^T (+ b) (+ scale * (x A^T) B^T). */
interface Linear {
  w: Tensor2D; // (out, in)
  b: Tensor | null; // (out)
  lora: { A: Tensor2D; B: Tensor2D; scale: number } | null; // A (r, in), B (out, r)
}

export interface TfjsDecoderOptions {
  /** the optimizer: AdamW with global-norm clipping, as ours */
  opt: OptimConfig;
  /** LoRA adapters (the base frozen), or null: full fine-tuning */
  lora: DecoderLoraInit | null;
}

export class TfjsDecoder {
  /** what the optimizer updates */
  private readonly trainables: Variable[] = [];
  /** trainables with decoupled weight decay (matrices, embeddings, adapters) */
  private readonly decayed: Variable[] = [];
  /** every tensor this model holds (constants and variables) */
  private readonly held: Tensor[] = [];
  private readonly embed: Tensor2D; // (V, C)
  /** the LM head: w (V, C), the embedding when tied; its adapter changes the output only, not the lookup */
  private readonly head: Linear;
  private readonly normf: Tensor;
  private readonly layers: { norm1: Tensor; norm2: Tensor; lin: Record<LinearName, Linear> }[] = [];
  private readonly adam: import('@tensorflow/tfjs-core').Optimizer;
  /** causal mask bias (T, T) and rope tables (1, T, 1, HS/2) per sequence length */
  private readonly perT = new Map<number, { mask: Tensor; cos: Tensor; sin: Tensor }>();
  /** optimizer steps taken */
  steps = 0;

  constructor(
    private readonly tf: Tf,
    readonly arch: DecoderArch,
    weights: ReadonlyMap<string, ArrayLike<number>>,
    private readonly opts: TfjsDecoderOptions,
  ) {
    if (arch.family === 'gpt2' || arch.norm.kind !== 'rmsnorm' || arch.positions.kind !== 'rope' || arch.mlp !== 'swiglu')
      throw new Error(`TfjsDecoder: ${arch.hfArchitecture} is not written here (Llama and Qwen2 only)`);
    const full = opts.lora === null;
    const { dModel: C, dFf: F } = arch;
    const { QD, KVD } = archDims(arch);
    const spec = new Map(decoderTensors(arch).map((t) => [t.name, t.shape]));
    const data = (name: string): Float32Array => {
      const w = weights.get(name);
      const n = spec.get(name)!.reduce((a, b) => a * b, 1);
      if (!w || w.length !== n) throw new Error(`TfjsDecoder: tensor ${name} needs ${n} values, got ${w?.length ?? 'none'}`);
      return w instanceof Float32Array ? w : Float32Array.from(w);
    };
    /** rows [r0, r1) of an engine tensor (rows of `cols` values, or a vector when cols is 1) as a constant or a variable */
    const part = (name: string, r0: number, r1: number, cols: number, decay: boolean): Tensor => {
      const values = data(name).subarray(r0 * cols, r1 * cols);
      const shape = cols === 1 ? [r1 - r0] : [r1 - r0, cols];
      return this.hold(values, shape, full, decay);
    };
    const whole = (name: string, decay: boolean): Tensor => {
      const shape = spec.get(name)!;
      return part(name, 0, shape[0]!, shape.length === 2 ? shape[1]! : 1, decay);
    };

    this.embed = whole('embed', true) as Tensor2D;
    for (let l = 0; l < arch.nLayer; l++) {
      const p = (n: string) => layerTensor(l, n);
      const b = arch.bias;
      const lin = (w: string, r0: number, r1: number, cols: number, bias: boolean): Linear => ({
        w: part(p(`${w}.w`), r0, r1, cols, true) as Tensor2D,
        b: bias ? part(p(`${w}.b`), r0, r1, 1, false) : null,
        lora: null,
      });
      this.layers.push({
        norm1: whole(p('norm1.w'), false),
        norm2: whole(p('norm2.w'), false),
        lin: {
          q_proj: lin('qkv', 0, QD, C, b.qkv),
          k_proj: lin('qkv', QD, QD + KVD, C, b.qkv),
          v_proj: lin('qkv', QD + KVD, QD + 2 * KVD, C, b.qkv),
          o_proj: lin('o', 0, C, QD, b.o),
          gate_proj: lin('up', 0, F, C, b.mlp),
          up_proj: lin('up', F, 2 * F, C, b.mlp),
          down_proj: lin('down', 0, C, F, b.mlp),
        },
      });
    }
    this.normf = whole('normf.w', false);
    this.head = { w: arch.tiedEmbeddings ? this.embed : (whole('head', true) as Tensor2D), b: null, lora: null };

    const lora = opts.lora;
    if (lora) {
      if (lora.A.length !== lora.modules.length || lora.B.length !== lora.modules.length)
        throw new Error(`TfjsDecoder: ${lora.A.length} A and ${lora.B.length} B for ${lora.modules.length} modules`);
      lora.modules.forEach((m, i) => {
        const hit = /^model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)$/.exec(m.path);
        const name = hit?.[2] as LinearName | undefined;
        if (m.path !== 'lm_head' && (!hit || !name || !LINEARS.includes(name)))
          throw new Error(`TfjsDecoder: LoRA module ${m.path} is not a Llama / Qwen2 linear or lm_head`);
        const target = m.path === 'lm_head' ? this.head : this.layers[Number(hit![1])]!.lin[name!];
        const A = this.hold(Float32Array.from(lora.A[i]!), [lora.rank, m.inFeatures], true, true) as Tensor2D;
        const B = this.hold(Float32Array.from(lora.B[i]!), [m.outFeatures, lora.rank], true, true) as Tensor2D;
        target.lora = { A, B, scale: lora.scaling };
      });
    }
    const o = opts.opt;
    this.adam = this.tf.train.adam(o.lr, o.beta1, o.beta2, o.eps);
  }

  /** A constant, or a variable the optimizer updates (`decay`: with weight decay). */
  private hold(values: Float32Array, shape: number[], trainable: boolean, decay: boolean): Tensor {
    const tf = this.tf;
    const t = tf.tensor(values, shape, 'float32');
    if (!trainable) {
      this.held.push(t);
      return t;
    }
    const v = tf.variable(t, true); // unnamed: TF.js variable names are global, and two models may coexist
    t.dispose();
    this.trainables.push(v);
    if (decay) this.decayed.push(v);
    this.held.push(v);
    return v;
  }

  /** Values the optimizer updates. */
  get trainableCount(): number {
    return this.trainables.reduce((s, v) => s + v.size, 0);
  }

  private tables(T: number): { mask: Tensor; cos: Tensor; sin: Tensor } {
    let t = this.perT.get(T);
    if (t) return t;
    const tf = this.tf;
    const { headDim: HS, positions } = this.arch;
    const { cos, sin } = ropeTables(T, HS, positions.kind === 'rope' ? positions.theta : 10000);
    // kept: the first call may come from inside a tf.tidy, and the tables outlive it
    const mask = tf.keep(tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9)));
    t = { mask, cos: tf.keep(tf.tensor(cos, [1, T, 1, HS / 2])), sin: tf.keep(tf.tensor(sin, [1, T, 1, HS / 2])) };
    this.perT.set(T, t);
    return t;
  }

  private rmsnorm(x: Tensor, w: Tensor): Tensor {
    const tf = this.tf;
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), this.arch.norm.eps))), w);
  }

  private linear(x: Tensor2D, l: Linear): Tensor2D {
    const tf = this.tf;
    let y: Tensor2D = tf.matMul(x, l.w, false, true);
    if (l.b) y = tf.add(y, l.b);
    if (l.lora) {
      const xa = tf.mul(tf.matMul(x, l.lora.A, false, true), l.lora.scale) as Tensor2D; // (M, r)
      y = tf.add(y, tf.matMul(xa, l.lora.B, false, true));
    }
    return y;
  }

  /** Rotate-half RoPE of x (B, T, heads, HS) at positions 0..T-1. */
  private rope(x: Tensor, cos: Tensor, sin: Tensor): Tensor {
    const tf = this.tf;
    const [x1, x2] = tf.split(x, 2, -1) as [Tensor, Tensor];
    return tf.concat([tf.sub(tf.mul(x1, cos), tf.mul(x2, sin)), tf.add(tf.mul(x2, cos), tf.mul(x1, sin))], -1);
  }

  /** Logits (BT, V) of tokens (B, T). */
  logits(tokens: Tensor2D): Tensor2D {
    const tf = this.tf;
    const { dModel: C, nHead: NH, nKvHead: NKV, headDim: HS } = this.arch;
    const G = NH / NKV;
    const QD = NH * HS;
    const [B, T] = tokens.shape;
    const { mask, cos, sin } = this.tables(T);
    let x = tf.gather(this.embed, tf.reshape(tokens, [B * T])) as Tensor2D; // (BT, C)
    for (const layer of this.layers) {
      const h = this.rmsnorm(x, layer.norm1) as Tensor2D;
      const q = this.rope(tf.reshape(this.linear(h, layer.lin.q_proj), [B, T, NH, HS]), cos, sin);
      const k = this.rope(tf.reshape(this.linear(h, layer.lin.k_proj), [B, T, NKV, HS]), cos, sin);
      const v = tf.reshape(this.linear(h, layer.lin.v_proj), [B, T, NKV, HS]);
      // query head h reads key/value head floor(h / G): the G query heads of a kv head as G * T rows
      const qg = tf.reshape(tf.transpose(tf.reshape(q, [B, T, NKV, G, HS]), [0, 2, 3, 1, 4]), [B * NKV, G * T, HS]);
      const kg = tf.reshape(tf.transpose(k, [0, 2, 1, 3]), [B * NKV, T, HS]);
      const vg = tf.reshape(tf.transpose(v, [0, 2, 1, 3]), [B * NKV, T, HS]);
      const scores = tf.reshape(tf.mul(tf.matMul(qg, kg, false, true), 1 / Math.sqrt(HS)), [B * NKV * G, T, T]);
      const att = tf.reshape(tf.softmax(tf.add(scores, mask)), [B * NKV, G * T, T]);
      const y = tf.reshape(tf.transpose(tf.reshape(tf.matMul(att, vg), [B, NKV, G, T, HS]), [0, 3, 1, 2, 4]), [B * T, QD]) as Tensor2D;
      const x2 = tf.add(x, this.linear(y, layer.lin.o_proj)) as Tensor2D;
      const h2 = this.rmsnorm(x2, layer.norm2) as Tensor2D;
      const gate = this.linear(h2, layer.lin.gate_proj);
      const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), this.linear(h2, layer.lin.up_proj)) as Tensor2D;
      x = tf.add(x2, this.linear(act, layer.lin.down_proj));
    }
    const hf = tf.reshape(this.rmsnorm(x, this.normf), [B * T, C]) as Tensor2D;
    return this.linear(hf, this.head);
  }

  /** Masked next-token cross-entropy: the sum over counted tokens / their count (ours: the same mean). */
  loss(tokens: Tensor2D, targets: Tensor, mask: Tensor): Scalar {
    const tf = this.tf;
    const logits = this.logits(tokens);
    const onehot = tf.oneHot(targets, this.arch.vocabSize, 1, 0, 'float32');
    const perToken = tf.losses.softmaxCrossEntropy(onehot, logits, undefined, 0, tf.Reduction.NONE); // (BT)
    return tf.div(tf.sum(tf.mul(perToken, mask)), tf.sum(mask));
  }

  private inputs(b: TokenBatch): { tok: Tensor2D; tgt: Tensor; mask: Tensor } {
    const tf = this.tf;
    return {
      tok: tf.tensor2d(Int32Array.from(b.tokens), [b.B, b.T], 'int32'),
      tgt: tf.tensor1d(Int32Array.from(b.targets), 'int32'),
      mask: tf.tensor1d(Float32Array.from(b.mask), 'float32'),
    };
  }

  /** The masked loss of a batch, forward only, read back. */
  async lossOf(b: TokenBatch): Promise<number> {
    const inp = this.inputs(b);
    const loss = this.tf.tidy(() => this.loss(inp.tok, inp.tgt, inp.mask));
    const value = (await loss.data())[0]!;
    this.tf.dispose([loss, inp.tok, inp.tgt, inp.mask]);
    return value;
  }

  /**
   * One optimizer step on one batch, as DecoderGpuTrainer.trainStep: the loss and its gradients
   * (tf.variableGrads over the trainables), the global norm, the gradients scaled by
   * min(1, clip / (norm + 1e-6)), decoupled weight decay p -= lr * wd * p, then Adam. Reads the
   * loss (before the update) back only when asked; otherwise nothing waits for the GPU.
   */
  async step(b: TokenBatch, read: boolean): Promise<number | null> {
    const tf = this.tf;
    const o = this.opts.opt;
    const inp = this.inputs(b);
    this.steps++;
    const loss = tf.tidy(() => {
      const { value, grads } = tf.variableGrads(() => this.loss(inp.tok, inp.tgt, inp.mask), this.trainables);
      const names = Object.keys(grads);
      let scale: Tensor | null = null;
      if (o.gradClip > 0) {
        // pairwise: tf.addN of many tensors binds them all in one shader, over WebGPU's 8 storage buffers a stage
        const norm = tf.sqrt(names.map((n) => tf.sum(tf.square(grads[n]!))).reduce((a, b) => tf.add(a, b)));
        scale = tf.minimum(1, tf.div(o.gradClip, tf.add(norm, 1e-6)));
      }
      if (o.weightDecay > 0) for (const v of this.decayed) v.assign(tf.mul(v, 1 - o.lr * o.weightDecay));
      const scaled = scale ? Object.fromEntries(names.map((n) => [n, tf.mul(grads[n]!, scale)])) : grads;
      this.adam.applyGradients(scaled);
      return value;
    });
    const value = read ? (await loss.data())[0]! : null;
    tf.dispose([loss, inp.tok, inp.tgt, inp.mask]);
    return value;
  }

  dispose(): void {
    this.tf.dispose(this.held);
    for (const t of this.perT.values()) this.tf.dispose([t.mask, t.cos, t.sin]);
    this.perT.clear();
    this.adam.dispose();
  }
}
