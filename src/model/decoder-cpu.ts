/**
 * The float64 reference of the data-described decoder (arch.ts): GPT-2, Llama and Qwen2 from
 * one forward, composed only of the kernels' float64 reference functions in the order the GPU
 * decoder (decoder-gpu.ts) dispatches them, so a disagreement points at one kernel. It is the
 * oracle the GPU path is tested against and the cpu backend of an imported model.
 *
 * Every forward goes through the KV cache: a forward without one uses a cache of its own T
 * rows (pos 0), which gives the same causal attention with left padding as a prefill.
 * Shape legend: arch.ts.
 */
import { attentionGqaRef, kvWriteGqaRef } from '../kernels/attention_gqa';
import { geluForwardRef } from '../kernels/gelu';
import { layernormForwardRef } from '../kernels/layernorm';
import { matmulForwardRef } from '../kernels/matmul';
import { residualForwardRef } from '../kernels/residual';
import { rmsnormForwardRef } from '../kernels/rmsnorm';
import { ropeRef } from '../kernels/rope';
import { swigluForwardRef } from '../kernels/swiglu';
import { archDims, decoderTensors, layerTensor, type DecoderArch } from './arch';
import { checkInput, defaultPositions, type ForwardInput } from './cpu';

/** Per-layer key and value caches, (B, NKV, Tmax, HS) each (kernels/attention_gqa.ts). */
export interface DecoderCpuCache {
  B: number;
  Tmax: number;
  layers: { k: Float64Array; v: Float64Array }[];
}

export class DecoderCpu {
  /** the engine's tensors (arch.ts decoderTensors), float64 */
  readonly weights: Map<string, Float64Array>;

  /**
   * `contextLength`: the longest sequence it serves (the KV cache's capacity), at most the
   * architecture's maxPositions.
   */
  constructor(
    readonly arch: DecoderArch,
    weights: ReadonlyMap<string, ArrayLike<number>>,
    readonly contextLength = arch.maxPositions,
  ) {
    if (contextLength > arch.maxPositions) {
      throw new Error(`DecoderCpu: contextLength ${contextLength} exceeds the model's ${arch.maxPositions} positions`);
    }
    this.weights = new Map();
    for (const t of decoderTensors(arch)) {
      const w = weights.get(t.name);
      const size = t.shape.reduce((a, b) => a * b, 1);
      if (!w) throw new Error(`DecoderCpu: no tensor ${t.name}`);
      if (w.length !== size) throw new Error(`DecoderCpu: tensor ${t.name} has ${w.length} values, its shape [${t.shape}] needs ${size}`);
      this.weights.set(t.name, Float64Array.from(w));
    }
  }

  get vocabSize(): number {
    return this.arch.vocabSize;
  }

  private w(name: string): Float64Array {
    const t = this.weights.get(name);
    if (!t) throw new Error(`DecoderCpu: no tensor ${name}`);
    return t;
  }

  private wOpt(name: string): Float64Array | null {
    return this.weights.get(name) ?? null;
  }

  createKvCache(B: number, Tmax: number): DecoderCpuCache {
    const { nLayer: L, nKvHead: NKV, headDim: HS } = this.arch;
    if (Tmax > this.contextLength) throw new Error(`KV cache: ${Tmax} positions exceed contextLength ${this.contextLength}`);
    return {
      B,
      Tmax,
      layers: Array.from({ length: L }, () => ({ k: new Float64Array(B * NKV * Tmax * HS), v: new Float64Array(B * NKV * Tmax * HS) })),
    };
  }

  /**
   * Logits (BT, V) for (B, T) tokens, or (B, V) of each row's last position with `lastOnly` (a
   * prefill: a big vocabulary times every prompt position would be gigabytes). With `kv` the rows
   * are T new positions from kv.pos: their keys and values go into the cache and attention reads
   * it (prefill and decode).
   */
  forward(
    input: ForwardInput,
    kv?: { cache: DecoderCpuCache; pos: number },
    lastOnly = false,
  ): { logits: Float64Array; lastOnly: boolean } {
    const a = this.arch;
    const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, vocabSize: V, dFf: F } = a;
    const { QD, W, up } = archDims(a);
    const { B, T } = input;
    const BT = B * T;
    checkInput(input, V, this.contextLength);
    const positions = input.positions ?? defaultPositions(B, T);
    const start = input.start ?? new Uint32Array(B);
    const step = kv ?? { cache: this.createKvCache(B, T), pos: 0 };
    const problem = { B, Tnew: T, NH, NKV, HS, Tmax: step.cache.Tmax, pos: step.pos };

    // x (BT, C): token embedding, plus the learned position's row (GPT-2)
    let x = new Float64Array(BT * C);
    const embed = this.w('embed');
    for (let n = 0; n < BT; n++) x.set(embed.subarray(input.tokens[n]! * C, (input.tokens[n]! + 1) * C), n * C);
    if (a.positions.kind === 'learned') {
      const pos = this.w('pos');
      for (let n = 0; n < BT; n++) for (let c = 0; c < C; c++) x[n * C + c]! += pos[positions[n]! * C + c]!;
    }
    const norm = (out: Float64Array, inp: Float64Array, name: string) => {
      if (a.norm.kind === 'rmsnorm') rmsnormForwardRef(out, new Float64Array(BT), inp, this.w(`${name}.w`), BT, C, a.norm.eps);
      else layernormForwardRef(out, new Float64Array(BT), new Float64Array(BT), inp, this.w(`${name}.w`), this.w(`${name}.b`), BT, C);
    };
    for (let l = 0; l < L; l++) {
      const p = (n: string) => layerTensor(l, n);
      const h = new Float64Array(BT * C); // (BT, C)
      norm(h, x, p('norm1'));
      const qkv = new Float64Array(BT * W); // (BT, W)
      matmulForwardRef(qkv, h, this.w(p('qkv.w')), this.wOpt(p('qkv.b')), BT, C, W);
      if (a.positions.kind === 'rope') ropeRef(qkv, positions, BT, W, NH + NKV, HS, a.positions.theta, false);
      const { k, v } = step.cache.layers[l]!;
      kvWriteGqaRef(k, v, qkv, problem);
      const atty = new Float64Array(BT * QD); // (BT, QD)
      attentionGqaRef(atty, qkv, k, v, start, problem);
      const o = new Float64Array(BT * C);
      matmulForwardRef(o, atty, this.w(p('o.w')), this.wOpt(p('o.b')), BT, QD, C);
      const x2 = new Float64Array(BT * C);
      residualForwardRef(x2, x, o, BT * C);
      norm(h, x2, p('norm2'));
      const u = new Float64Array(BT * up); // (BT, 2F) gate|up, or (BT, F)
      matmulForwardRef(u, h, this.w(p('up.w')), this.wOpt(p('up.b')), BT, C, up);
      const act = new Float64Array(BT * F); // (BT, F)
      if (a.mlp === 'swiglu') swigluForwardRef(act, u, BT, F);
      else geluForwardRef(act, u, BT * F);
      const d = new Float64Array(BT * C);
      matmulForwardRef(d, act, this.w(p('down.w')), this.wOpt(p('down.b')), BT, F, C);
      x = new Float64Array(BT * C);
      residualForwardRef(x, x2, d, BT * C);
    }
    let rows = BT;
    if (lastOnly) {
      const last = new Float64Array(B * C); // (B, C) each row's last position
      for (let b = 0; b < B; b++) last.set(x.subarray((b * T + T - 1) * C, (b * T + T) * C), b * C);
      x = last;
      rows = B;
    }
    const hf = new Float64Array(rows * C);
    if (a.norm.kind === 'rmsnorm') rmsnormForwardRef(hf, new Float64Array(rows), x, this.w('normf.w'), rows, C, a.norm.eps);
    else layernormForwardRef(hf, new Float64Array(rows), new Float64Array(rows), x, this.w('normf.w'), this.w('normf.b'), rows, C);
    const logits = new Float64Array(rows * V);
    matmulForwardRef(logits, hf, this.w(a.tiedEmbeddings ? 'embed' : 'head'), null, rows, C, V);
    return { logits, lastOnly };
  }
}
