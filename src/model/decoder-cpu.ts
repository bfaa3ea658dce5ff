/**
 * The float64 reference of the data-described decoder (arch.ts): GPT-2, Llama and Qwen2 from
 * one forward, composed only of the kernels' float64 reference functions in the order the GPU
 * decoder (decoder-gpu.ts) dispatches them, so a disagreement points at one kernel. It is the
 * oracle the GPU path is tested against and the cpu backend of an imported model.
 *
 * A forward with a KV cache (prefill, decode) extends it; a forward without one is a training
 * forward (full-sequence attention saving each row's logsumexp; the same causal attention with
 * left padding), and backward() then accumulates every tensor's gradient, checked against torch
 * autograd on the fixtures (decoder-grad.test.ts). Shape legend: arch.ts.
 */
import { attentionGqaRef, kvWriteGqaRef } from '../kernels/attention_gqa';
import { attentionGqaBackwardRef, attentionGqaTrainForwardRef, attentionGqaTreeRef } from '../kernels/attention_gqa_train_ref';
import { geluBackwardRef, geluForwardRef } from '../kernels/gelu';
import { layernormBackwardRef, layernormForwardRef } from '../kernels/layernorm';
import { matmulBackwardRef, matmulForwardRef } from '../kernels/matmul';
import { residualForwardRef } from '../kernels/residual';
import { rmsnormBackwardRef, rmsnormForwardRef } from '../kernels/rmsnorm';
import { ropeRef } from '../kernels/rope';
import { swigluBackwardRef, swigluForwardRef } from '../kernels/swiglu';
import { archDims, decoderTensors, layerTensor, type DecoderArch } from './arch';
import { checkInput, defaultPositions, type ForwardInput } from './cpu';
import { headTensor, peftKeys, type LoraModule } from './lora';
import { prefixTree } from './prefix-tree';
import { gaussian, Rng } from '../util/random';

/** Per-layer key and value caches, (B, NKV, Tmax, HS) each (kernels/attention_gqa.ts). */
export interface DecoderCpuCache {
  B: number;
  Tmax: number;
  layers: { k: Float64Array; v: Float64Array }[];
  /** the adapted weights the prefill merged (DecoderCpu.merged), reused by every decode step of the same adapters */
  merged?: Merged;
}

/** Engine weights with the enabled adapters merged in, and the adapters they were merged from. */
interface Merged {
  lora: CpuLora | null;
  weights: Map<string, Float64Array>;
}

/** LoRA adapters on the float64 model and their gradients. */
interface CpuLora {
  modules: LoraModule[];
  rank: number;
  scaling: number;
  A: Float64Array[]; // (r, in) each
  B: Float64Array[]; // (out, r) each
  dA: Float64Array[];
  dB: Float64Array[];
}

/**
 * A LoRA module's B side of the backward, over rows four at a time (each B and dB element read
 * once per four rows): dxa (N, r) += scaling * dout[:, r0:r1] . B and dB (out, r) += scaling *
 * dout[:, r0:r1]^T . xa, dout (N, Ntot). A four-row block whose gradients are all 0 is skipped.
 */
function loraBackwardB(
  dxa: Float64Array,
  dB: Float64Array,
  dout: ArrayLike<number>,
  xa: Float64Array,
  B: Float64Array,
  N: number,
  Ntot: number,
  r0: number,
  r1: number,
  r: number,
  scaling: number,
): void {
  let n = 0;
  for (; n + 4 <= N; n += 4) {
    const x0 = n * r;
    const x1 = x0 + r;
    const x2 = x1 + r;
    const x3 = x2 + r;
    for (let o = r0; o < r1; o++) {
      const g0 = scaling * dout[n * Ntot + o]!;
      const g1 = scaling * dout[(n + 1) * Ntot + o]!;
      const g2 = scaling * dout[(n + 2) * Ntot + o]!;
      const g3 = scaling * dout[(n + 3) * Ntot + o]!;
      if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) continue;
      const w = (o - r0) * r;
      for (let j = 0; j < r; j++) {
        const b = B[w + j]!;
        dxa[x0 + j]! += g0 * b;
        dxa[x1 + j]! += g1 * b;
        dxa[x2 + j]! += g2 * b;
        dxa[x3 + j]! += g3 * b;
        dB[w + j]! += g0 * xa[x0 + j]! + g1 * xa[x1 + j]! + g2 * xa[x2 + j]! + g3 * xa[x3 + j]!;
      }
    }
  }
  for (; n < N; n++)
    for (let o = r0; o < r1; o++) {
      const g = scaling * dout[n * Ntot + o]!;
      if (g === 0) continue;
      const w = (o - r0) * r;
      for (let j = 0; j < r; j++) {
        dxa[n * r + j]! += g * B[w + j]!;
        dB[w + j]! += g * xa[n * r + j]!;
      }
    }
}

/** A LoRA module's A side: dA (r, K) += dxa^T . inp, dxa (N, r), inp (N, K), rows four at a time. */
function loraBackwardA(dA: Float64Array, dxa: Float64Array, inp: Float64Array, N: number, K: number, r: number): void {
  let n = 0;
  for (; n + 4 <= N; n += 4) {
    const i0 = n * K;
    const i1 = i0 + K;
    const i2 = i1 + K;
    const i3 = i2 + K;
    for (let j = 0; j < r; j++) {
      const g0 = dxa[n * r + j]!;
      const g1 = dxa[(n + 1) * r + j]!;
      const g2 = dxa[(n + 2) * r + j]!;
      const g3 = dxa[(n + 3) * r + j]!;
      if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) continue;
      const a0 = j * K;
      for (let k = 0; k < K; k++) dA[a0 + k]! += g0 * inp[i0 + k]! + g1 * inp[i1 + k]! + g2 * inp[i2 + k]! + g3 * inp[i3 + k]!;
    }
  }
  for (; n < N; n++)
    for (let j = 0; j < r; j++) {
      const g = dxa[n * r + j]!;
      if (g === 0) continue;
      const a0 = j * K;
      const i0 = n * K;
      for (let k = 0; k < K; k++) dA[a0 + k]! += g * inp[i0 + k]!;
    }
}

/** The rows `rows` of x (?, C), in that order, as one (rows.length, C) array. */
function gatherRows(x: Float64Array, rows: readonly number[], C: number): Float64Array {
  const out = new Float64Array(rows.length * C);
  rows.forEach((r, i) => out.set(x.subarray(r * C, (r + 1) * C), i * C));
  return out;
}

/** Whether two lists of arrays hold the same numbers, element for element. */
function sameArrays(a: readonly Float64Array[], b: readonly Float64Array[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.length !== y.length) return false;
    for (let k = 0; k < x.length; k++) if (x[k] !== y[k]) return false;
  }
  return true;
}

/** One tensor the optimizer updates (DecoderCpu.trainables). */
export interface DecoderCpuTrainable {
  name: string;
  w: Float64Array;
  g: Float64Array;
  /** decoupled weight decay applies */
  decay: boolean;
  /** in LoRA+'s fast group: learns at lr x OptimConfig.loraPlusRatio */
  plus: boolean;
}

/** DecoderCpu.headState: opaque outside this file. */
export interface DecoderCpuState {
  readonly lora: unknown;
  readonly valueHead: unknown;
}

/** What a training forward keeps for backward, per layer. */
interface DecoderLayerActs {
  x: Float64Array; // (BT, C) the block's input
  h1: Float64Array; // (BT, C) norm1(x)
  mean1: Float64Array; // (BT) (LayerNorm only)
  rstd1: Float64Array; // (BT)
  qkv: Float64Array; // (BT, W) after rope
  atty: Float64Array; // (BT, QD)
  lse: Float64Array; // (B, NH, T) each attention row's logsumexp
  x2: Float64Array; // (BT, C) x + o(atty)
  h2: Float64Array; // (BT, C) norm2(x2)
  mean2: Float64Array; // (BT)
  rstd2: Float64Array; // (BT)
  u: Float64Array; // (BT, 2F) gate|up, or (BT, F) GELU's input
  act: Float64Array; // (BT, F)
}

export class DecoderCpu {
  /** the engine's tensors (arch.ts decoderTensors), float64 */
  readonly weights: Map<string, Float64Array>;
  /** gradients by engine tensor name, accumulated by backward() (created on first use; not with LoRA: the base is frozen) */
  readonly grads = new Map<string, Float64Array>();
  /** LoRA adapters (lora.ts), or null: full fine-tuning */
  private lora: CpuLora | null = null;
  /** whether forward() adds the adapters (off: the frozen base, the KL reference) */
  loraEnabled = true;
  /** a scalar value head on the final norm's output (PPO's critic), fresh on a pretrained model */
  private valueHead: { w: Float64Array; b: Float64Array; dw: Float64Array; db: Float64Array } | null = null;
  /**
   * The last merge (merged()) and copies of the adapter values it was made from: a forward whose
   * adapters are the same object holding the same numbers reuses it (the optimizer changes them in
   * place, so they are compared, not trusted). The base is frozen while adapters are on.
   */
  private mergeMemo: { merged: Merged; scaling: number; A: Float64Array[]; B: Float64Array[] } | null = null;
  private saved: {
    tokens: number[];
    positions: number[];
    start: ArrayLike<number>;
    B: number;
    T: number;
    layers: DecoderLayerActs[];
    final: Float64Array; // (BT, C) the last block's output
    hf: Float64Array; // (BT, C) normf(final)
    meanf: Float64Array;
    rstdf: Float64Array;
    merged: Merged;
  } | null = null;

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
   * it (prefill and decode). Without `kv` (and without lastOnly) it is a training forward: the
   * full-sequence attention that saves each row's logsumexp, and every activation the backward
   * needs is kept until the next forward.
   */
  forward(
    input: ForwardInput,
    kv?: { cache: DecoderCpuCache; pos: number },
    lastOnly = false,
  ): { logits: Float64Array; values?: Float64Array; lastOnly: boolean } {
    const a = this.arch;
    const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, vocabSize: V } = a;
    const { B, T } = input;
    const BT = B * T;
    checkInput(input, V, this.contextLength);
    const positions = input.positions ?? defaultPositions(B, T);
    const start = input.start ?? new Uint32Array(B);
    const train = !kv && !lastOnly;
    this.saved = null;
    if (train && input.readRows && !input.positions && !(input.start && Array.from(input.start).some((s) => s > 0)))
      return this.forwardTree({ ...input, readRows: input.readRows });
    if (kv && kv.pos === 0) {
      const shared = this.sharedPrefill(input, positions, start, kv.cache, lastOnly);
      if (shared) return shared;
    }
    // the adapters merged into their weights for this forward (a prefill's stay with its cache for the decode steps)
    const merged = this.merged(kv?.cache);
    const lw = (name: string) => merged.weights.get(name) ?? this.w(name);

    let x = this.embed(input.tokens, positions, BT);
    const layers: DecoderLayerActs[] = [];
    for (let l = 0; l < L; l++) {
      const s = this.layer(l, x, BT, positions, lw, train ? B * NH * T : 0, (s) => {
        if (train) attentionGqaTrainForwardRef(s.atty, s.lse, s.qkv, start, { B, T, NH, NKV, HS });
        else {
          const step = kv ?? { cache: this.createKvCache(B, T), pos: 0 };
          const problem = { B, Tnew: T, NH, NKV, HS, Tmax: step.cache.Tmax, pos: step.pos };
          const { k, v } = step.cache.layers[l]!;
          kvWriteGqaRef(k, v, s.qkv, problem);
          attentionGqaRef(s.atty, s.qkv, k, v, start, problem);
        }
      });
      x = s.out;
      if (train) layers.push(s);
    }
    let rows = BT;
    let final = x;
    if (lastOnly) {
      final = new Float64Array(B * C); // (B, C) each row's last position
      for (let b = 0; b < B; b++) final.set(x.subarray((b * T + T - 1) * C, (b * T + T) * C), b * C);
      rows = B;
    }
    const hf = new Float64Array(rows * C);
    const meanf = new Float64Array(rows);
    const rstdf = new Float64Array(rows);
    this.norm(hf, meanf, rstdf, final, 'normf', rows);
    // lm_head's adapter is merged in (the lookup above read the base)
    const logits = new Float64Array(rows * V);
    const head = lw(headTensor(a));
    const need = train && input.logitRows ? nonzeroRows(input.logitRows) : null;
    if (!need) matmulForwardRef(logits, hf, head, null, rows, C, V);
    else if (need.length) {
      // only the rows the caller reads: gathered, multiplied, scattered (each output the same sum)
      const R = need.length;
      const out = new Float64Array(R * V);
      matmulForwardRef(out, gatherRows(hf, need, C), head, null, R, C, V);
      need.forEach((n, i) => logits.set(out.subarray(i * V, (i + 1) * V), n * V));
    }
    if (train)
      this.saved = {
        tokens: Array.from(input.tokens),
        positions: Array.from(positions),
        start,
        B,
        T,
        layers,
        final,
        hf,
        meanf,
        rstdf,
        merged,
      };
    if (!this.valueHead) return { logits, lastOnly };
    const values = new Float64Array(rows); // (rows) the value head on the final norm's output
    matmulForwardRef(values, hf, this.valueHead.w, this.valueHead.b, rows, C, 1);
    return { logits, values, lastOnly };
  }

  /**
   * Block l over N rows x (N, C) at `positions`: norm, qkv (rope), attention by `attend` (which
   * fills s.atty from s.qkv, and s.lse for a training forward: `lse` values), o, residual, norm,
   * MLP, residual. Returns the activations the backward reads, and the block's output.
   */
  private layer(
    l: number,
    x: Float64Array,
    N: number,
    positions: ArrayLike<number>,
    lw: (name: string) => Float64Array,
    lse: number,
    attend: (s: DecoderLayerActs) => void,
  ): DecoderLayerActs & { out: Float64Array<ArrayBuffer> } {
    const a = this.arch;
    const { dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, dFf: F } = a;
    const { QD, W, up } = archDims(a);
    const p = (n: string) => layerTensor(l, n);
    const s: DecoderLayerActs = {
      x,
      h1: new Float64Array(N * C),
      mean1: new Float64Array(N),
      rstd1: new Float64Array(N),
      qkv: new Float64Array(N * W),
      atty: new Float64Array(N * QD),
      lse: new Float64Array(lse),
      x2: new Float64Array(N * C),
      h2: new Float64Array(N * C),
      mean2: new Float64Array(N),
      rstd2: new Float64Array(N),
      u: new Float64Array(N * up),
      act: new Float64Array(N * F),
    };
    this.norm(s.h1, s.mean1, s.rstd1, x, p('norm1'), N);
    matmulForwardRef(s.qkv, s.h1, lw(p('qkv.w')), this.wOpt(p('qkv.b')), N, C, W);
    if (a.positions.kind === 'rope') ropeRef(s.qkv, positions, N, W, NH + NKV, HS, a.positions.theta, false);
    attend(s);
    const o = new Float64Array(N * C);
    matmulForwardRef(o, s.atty, lw(p('o.w')), this.wOpt(p('o.b')), N, QD, C);
    residualForwardRef(s.x2, x, o, N * C);
    this.norm(s.h2, s.mean2, s.rstd2, s.x2, p('norm2'), N);
    matmulForwardRef(s.u, s.h2, lw(p('up.w')), this.wOpt(p('up.b')), N, C, up); // (N, 2F) gate|up, or (N, F)
    if (a.mlp === 'swiglu') swigluForwardRef(s.act, s.u, N, F);
    else geluForwardRef(s.act, s.u, N * F);
    const d = new Float64Array(N * C);
    matmulForwardRef(d, s.act, lw(p('down.w')), this.wOpt(p('down.b')), N, F, C);
    const out = new Float64Array(N * C);
    residualForwardRef(out, s.x2, d, N * C);
    return Object.assign(s, { out });
  }

  /**
   * A prefill whose batch repeats rows (a GRPO group: one prompt, G samples) computes each
   * distinct row once, into a cache of the distinct rows, and copies their keys and values (and
   * logits and values) to every row that repeats them: each row's numbers are its own (no row
   * reads another), so the result is the plain prefill's. Null when every row is distinct.
   */
  private sharedPrefill(
    input: ForwardInput,
    positions: ArrayLike<number>,
    start: ArrayLike<number>,
    cache: DecoderCpuCache,
    lastOnly: boolean,
  ): { logits: Float64Array; values?: Float64Array; lastOnly: boolean } | null {
    const { B, T } = input;
    const first = new Map<string, number>(); // a row's contents -> its index among the distinct rows
    const source = new Int32Array(B);
    const distinct: number[] = [];
    for (let b = 0; b < B; b++) {
      const key = `${start[b]}|${Array.prototype.slice.call(input.tokens, b * T, (b + 1) * T).join(',')}|${Array.prototype.slice.call(positions, b * T, (b + 1) * T).join(',')}`;
      let i = first.get(key);
      if (i === undefined) {
        i = distinct.length;
        first.set(key, i);
        distinct.push(b);
      }
      source[b] = i;
    }
    const D = distinct.length;
    if (D === B) return null;
    const rows = (x: ArrayLike<number>, width: number): number[] =>
      distinct.flatMap((b) => Array.prototype.slice.call(x, b * width, (b + 1) * width) as number[]);
    const sub = this.createKvCache(D, cache.Tmax);
    const r = this.forward(
      { tokens: rows(input.tokens, T), positions: rows(positions, T), start: rows(start, 1), B: D, T },
      { cache: sub, pos: 0 },
      lastOnly,
    );
    const { nKvHead: NKV, headDim: HS, vocabSize: V } = this.arch;
    const per = NKV * cache.Tmax * HS; // one row's keys (or values) in a layer's cache
    cache.layers.forEach((layer, l) => {
      const from = sub.layers[l]!;
      for (let b = 0; b < B; b++) {
        layer.k.set(from.k.subarray(source[b]! * per, (source[b]! + 1) * per), b * per);
        layer.v.set(from.v.subarray(source[b]! * per, (source[b]! + 1) * per), b * per);
      }
    });
    cache.merged = sub.merged;
    const R = r.lastOnly ? 1 : T; // positions per row in the result
    const logits = new Float64Array(B * R * V);
    for (let b = 0; b < B; b++) logits.set(r.logits.subarray(source[b]! * R * V, (source[b]! + 1) * R * V), b * R * V);
    if (!r.values) return { logits, lastOnly: r.lastOnly };
    const values = new Float64Array(B * R);
    for (let b = 0; b < B; b++) values.set(r.values.subarray(source[b]! * R, (source[b]! + 1) * R), b * R);
    return { logits, values, lastOnly: r.lastOnly };
  }

  /**
   * The scoring forward (ForwardInput.readRows, no left padding or custom positions): the rows
   * read and the rows before them as a prefix tree, each distinct prefix computed once, the LM
   * head on the logit rows' nodes and the value head on every read row's; scattered back to (BT)
   * rows, the others 0. Keeps nothing for a backward.
   */
  private forwardTree(input: ForwardInput & { readRows: ArrayLike<number> }): {
    logits: Float64Array;
    values?: Float64Array;
    lastOnly: false;
  } {
    const a = this.arch;
    const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, vocabSize: V } = a;
    const { B, T } = input;
    const BT = B * T;
    const tree = prefixTree(input.tokens, B, T, input.readRows);
    const N = tree.size;
    const merged = this.merged();
    const lw = (name: string) => merged.weights.get(name) ?? this.w(name);
    let x = this.embed(tree.tokens, tree.positions, N);
    for (let l = 0; l < L; l++)
      x = this.layer(l, x, N, tree.positions, lw, 0, (s) => attentionGqaTreeRef(s.atty, s.qkv, tree, { N, NH, NKV, HS })).out;
    const hf = new Float64Array(N * C);
    this.norm(hf, new Float64Array(N), new Float64Array(N), x, 'normf', N);
    // the distinct nodes of the rows whose logits are read (and of those whose values are)
    const nodesOf = (flags: ArrayLike<number> | undefined): number[] => {
      const seen = new Set<number>();
      for (let n = 0; n < BT; n++) if ((flags ? flags[n] : 1) && input.readRows[n] && tree.rowNode[n]! >= 0) seen.add(tree.rowNode[n]!);
      return [...seen];
    };
    const logits = new Float64Array(BT * V);
    const logitNodes = nodesOf(input.logitRows);
    if (logitNodes.length) {
      const out = new Float64Array(logitNodes.length * V);
      matmulForwardRef(out, gatherRows(hf, logitNodes, C), lw(headTensor(a)), null, logitNodes.length, C, V);
      const at = new Map(logitNodes.map((u, i) => [u, i]));
      for (let n = 0; n < BT; n++) {
        const i = (!input.logitRows || input.logitRows[n]) && input.readRows[n] ? at.get(tree.rowNode[n]!) : undefined;
        if (i !== undefined) logits.set(out.subarray(i * V, (i + 1) * V), n * V);
      }
    }
    if (!this.valueHead) return { logits, lastOnly: false };
    const valueNodes = nodesOf(undefined);
    const nodeValues = new Float64Array(valueNodes.length);
    matmulForwardRef(nodeValues, gatherRows(hf, valueNodes, C), this.valueHead.w, this.valueHead.b, valueNodes.length, C, 1);
    const at = new Map(valueNodes.map((u, i) => [u, i]));
    const values = new Float64Array(BT);
    for (let n = 0; n < BT; n++) {
      const i = input.readRows[n] ? at.get(tree.rowNode[n]!) : undefined;
      if (i !== undefined) values[n] = nodeValues[i]!;
    }
    return { logits, values, lastOnly: false };
  }

  /** x (N, C) of N rows: each token's embedding, plus its learned position's row (GPT-2). */
  private embed(tokens: ArrayLike<number>, positions: ArrayLike<number>, N: number): Float64Array<ArrayBuffer> {
    const C = this.arch.dModel;
    const x = new Float64Array(N * C);
    const embed = this.w('embed');
    for (let n = 0; n < N; n++) x.set(embed.subarray(tokens[n]! * C, (tokens[n]! + 1) * C), n * C);
    if (this.arch.positions.kind === 'learned') {
      const pos = this.w('pos');
      for (let n = 0; n < N; n++) for (let c = 0; c < C; c++) x[n * C + c]! += pos[positions[n]! * C + c]!;
    }
    return x;
  }

  /** out, and the statistics its backward reads, of the norm named `name` over N rows. */
  private norm(out: Float64Array, mean: Float64Array, rstd: Float64Array, inp: Float64Array, name: string, N: number): void {
    const { dModel: C, norm } = this.arch;
    if (norm.kind === 'rmsnorm') rmsnormForwardRef(out, rstd, inp, this.w(`${name}.w`), N, C, norm.eps);
    else layernormForwardRef(out, mean, rstd, inp, this.w(`${name}.w`), this.w(`${name}.b`), N, C);
  }

  /** dinp += the norm's backward; its weight (and bias) gradients accumulate in `grads`. */
  private normBackward(
    dinp: Float64Array,
    dout: Float64Array,
    inp: Float64Array,
    mean: Float64Array,
    rstd: Float64Array,
    name: string,
    N: number,
  ): void {
    const { dModel: C, norm } = this.arch;
    if (norm.kind === 'rmsnorm') rmsnormBackwardRef(dinp, this.frozenOr(`${name}.w`), dout, inp, this.w(`${name}.w`), rstd, N, C);
    else
      layernormBackwardRef(dinp, this.frozenOr(`${name}.w`), this.frozenOr(`${name}.b`), dout, inp, this.w(`${name}.w`), mean, rstd, N, C);
  }

  /** The gradient buffer of a tensor (created at zero on first use). */
  g(name: string): Float64Array {
    let t = this.grads.get(name);
    if (!t) {
      t = new Float64Array(this.w(name).length);
      this.grads.set(name, t);
    }
    return t;
  }

  /** The gradient buffer of a base tensor, or (with LoRA: the base is frozen) a scratch buffer that is dropped. */
  private frozenOr(name: string): Float64Array {
    return this.lora ? new Float64Array(this.w(name).length) : this.g(name);
  }

  /**
   * Adds a value head (1, C) + (1) initialised normal(0, std) from `seed` (or given), as PPO
   * trains a critic on top of a pretrained trunk; forward() then returns values too.
   */
  addValueHead(seed: number, std = 0.02, init?: { w: ArrayLike<number>; b: number }): void {
    const C = this.arch.dModel;
    const w = new Float64Array(C);
    if (init) {
      if (init.w.length !== C) throw new Error(`DecoderCpu.addValueHead: ${init.w.length} weights for d_model ${C}`);
      w.set(Array.from(init.w));
    } else {
      const rng = new Rng(seed);
      for (let c = 0; c < C; c++) w[c] = gaussian(rng) * std;
    }
    this.valueHead = { w, b: Float64Array.of(init?.b ?? 0), dw: new Float64Array(C), db: new Float64Array(1) };
  }

  /**
   * What an optimizer updates, each with its gradient, whether weight decay applies (matrices
   * yes; norms, biases, the value head's bias no) and whether it is in LoRA+'s fast group (lora_B
   * and, with LoRA, 1-D parameters: OptimConfig.loraPlusRatio): the adapters with LoRA, else every
   * tensor; and the value head when there is one.
   */
  trainables(): DecoderCpuTrainable[] {
    const out: DecoderCpuTrainable[] = [];
    if (this.lora) {
      const l = this.lora;
      l.modules.forEach((m, i) => {
        const k = peftKeys(m);
        out.push(
          { name: k.A, w: l.A[i]!, g: l.dA[i]!, decay: true, plus: false },
          { name: k.B, w: l.B[i]!, g: l.dB[i]!, decay: true, plus: true },
        );
      });
    } else {
      for (const t of decoderTensors(this.arch))
        out.push({ name: t.name, w: this.w(t.name), g: this.g(t.name), decay: t.shape.length === 2, plus: false });
    }
    if (this.valueHead) {
      const v = this.valueHead;
      out.push(
        { name: 'value.w', w: v.w, g: v.dw, decay: true, plus: false },
        { name: 'value.b', w: v.b, g: v.db, decay: false, plus: this.lora !== null },
      );
    }
    return out;
  }

  zeroGrad(): void {
    for (const t of this.grads.values()) t.fill(0);
    if (this.valueHead) {
      this.valueHead.dw.fill(0);
      this.valueHead.db.fill(0);
    }
    if (this.lora) for (const g of [...this.lora.dA, ...this.lora.dB]) g.fill(0);
  }

  /**
   * Adapters on the modules `modules` (lora.ts loraModules), A (r, in) and B (out, r) per module in
   * that order, scaled by `scaling`; null removes them. From then on backward() trains only them.
   */
  setLora(l: { modules: LoraModule[]; A: ArrayLike<number>[]; B: ArrayLike<number>[]; rank: number; scaling: number } | null): void {
    if (!l) {
      this.lora = null;
      return;
    }
    const { modules, rank: r } = l;
    modules.forEach((m, i) => {
      if (l.A[i]?.length !== r * m.inFeatures)
        throw new Error(
          `DecoderCpu.setLora: ${m.path} A has ${l.A[i]?.length} values, (r, in) = (${r}, ${m.inFeatures}) needs ${r * m.inFeatures}`,
        );
      if (l.B[i]?.length !== m.outFeatures * r)
        throw new Error(
          `DecoderCpu.setLora: ${m.path} B has ${l.B[i]?.length} values, (out, r) = (${m.outFeatures}, ${r}) needs ${m.outFeatures * r}`,
        );
    });
    this.lora = {
      modules,
      rank: r,
      scaling: l.scaling,
      A: l.A.map((x) => Float64Array.from(x)),
      B: l.B.map((x) => Float64Array.from(x)),
      dA: modules.map((m) => new Float64Array(r * m.inFeatures)),
      dB: modules.map((m) => new Float64Array(m.outFeatures * r)),
    };
  }

  /**
   * What sits on top of the base weights: the adapters (with their gradients) and the value head.
   * Several policies share one base (policy/hf-train.ts: the trained policy, the KL reference, the
   * reward model, with no second copy of the weights), each installing its own state before it runs.
   */
  get headState(): DecoderCpuState {
    return { lora: this.lora, valueHead: this.valueHead };
  }

  set headState(s: DecoderCpuState) {
    this.lora = s.lora as CpuLora | null;
    this.valueHead = s.valueHead as DecoderCpu['valueHead'];
  }

  /** The adapters' gradients (dA, dB per module, in setLora's order). */
  get loraGrads(): { dA: Float64Array[]; dB: Float64Array[] } | null {
    return this.lora && { dA: this.lora.dA, dB: this.lora.dB };
  }

  /**
   * The adapted weights of this forward: each weight with adapters on it as W + scaling * B A over
   * each module's rows [r0, r1) (out (Ntot, K) += scaling * B (out, r) . A (r, K)), scratch copies
   * (the base is not changed), none without enabled adapters. out . W'^T is then the base layer's
   * output plus scaling * (inp A^T) B^T, PEFT's Linear.forward, in one matmul. A KV cache keeps the
   * prefill's for its decode steps, while the adapters are the same object.
   */
  private merged(cache?: DecoderCpuCache): Merged {
    const l = this.loraEnabled ? this.lora : null;
    if (cache?.merged && cache.merged.lora === l) return cache.merged;
    const memo = this.mergeMemo;
    if (l && memo && memo.merged.lora === l && memo.scaling === l.scaling && sameArrays(memo.A, l.A) && sameArrays(memo.B, l.B)) {
      if (cache) cache.merged = memo.merged;
      return memo.merged;
    }
    const weights = new Map<string, Float64Array>();
    if (l) {
      const r = l.rank;
      l.modules.forEach((m, i) => {
        let w = weights.get(m.engine);
        if (!w) weights.set(m.engine, (w = Float64Array.from(this.w(m.engine))));
        const K = m.inFeatures;
        const A = l.A[i]!;
        const B = l.B[i]!;
        const [r0, r1] = m.rows;
        for (let o = r0; o < r1; o++)
          for (let j = 0; j < r; j++) {
            const b = l.scaling * B[(o - r0) * r + j]!;
            if (b === 0) continue;
            for (let k = 0; k < K; k++) w[o * K + k]! += b * A[j * K + k]!;
          }
      });
    }
    const out = { lora: l, weights };
    if (cache) cache.merged = out;
    if (l) this.mergeMemo = { merged: out, scaling: l.scaling, A: l.A.map((x) => x.slice()), B: l.B.map((x) => x.slice()) };
    return out;
  }

  /**
   * The backward of out = inp . W'^T + b, W' = W + scaling * B A (the forward's merged weight;
   * W itself without adapters): dinp (N, K) += dout . W', and the gradients of W and b (full
   * fine-tuning) or of the adapters (LoRA), from dout (N, Ntot). `merged`: the forward's.
   */
  private linearBackward(
    dinp: Float64Array,
    dout: ArrayLike<number>,
    inp: Float64Array,
    N: number,
    K: number,
    Ntot: number,
    weight: string,
    bias: string | null,
    merged: Merged,
  ): void {
    // with LoRA the base weight and bias are frozen: their gradients are not computed at all
    matmulBackwardRef(
      dinp,
      this.lora ? null : this.g(weight),
      bias && !this.lora ? this.g(bias) : null,
      dout,
      inp,
      merged.weights.get(weight) ?? this.w(weight),
      N,
      K,
      Ntot,
    );
    const l = merged.lora;
    if (!l) return;
    const r = l.rank;
    l.modules.forEach((m, i) => {
      if (m.engine !== weight) return;
      const [r0, r1] = m.rows;
      const A = l.A[i]!;
      const B = l.B[i]!;
      const dA = l.dA[i]!;
      const dB = l.dB[i]!;
      const xa = new Float64Array(N * r); // (N, r) = inp . A^T
      matmulForwardRef(xa, inp, A, null, N, K, r);
      const dxa = new Float64Array(N * r); // (N, r) = scaling * dout[:, r0:r1] . B
      loraBackwardB(dxa, dB, dout, xa, B, N, Ntot, r0, r1, r, l.scaling);
      // xa = inp . A^T: dA += dxa^T . inp (dinp's share, dxa . A, is in the merged weight's product above)
      loraBackwardA(dA, dxa, inp, N, K, r);
    });
  }

  /**
   * Accumulates into `grads` (engine names, arch.ts decoderTensors) the gradient of a loss whose
   * derivative w.r.t. the last training forward's logits (BT, V) is `dlogits`. Each step quotes
   * the forward line it differentiates.
   */
  backward(dlogits: ArrayLike<number>, dvalues: ArrayLike<number> | null = null): void {
    const sv = this.saved;
    if (!sv) throw new Error('DecoderCpu.backward: call forward without a KV cache (a training forward) first');
    const a = this.arch;
    const { dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, vocabSize: V, dFf: F } = a;
    const { QD, W, up } = archDims(a);
    const { B, T } = sv;
    const BT = B * T;
    if (dlogits.length !== BT * V) throw new Error(`DecoderCpu.backward: dlogits has ${dlogits.length} values, expected BT*V = ${BT * V}`);
    // logits = hf . head^T (lm_head's adapter, when there is one, in the merged weight)
    const dhf = new Float64Array(BT * C);
    this.linearBackward(dhf, dlogits, sv.hf, BT, C, V, headTensor(a), null, sv.merged);
    // values = hf . value.w^T + value.b (the value head trains in every mode)
    if (dvalues) {
      if (!this.valueHead) throw new Error('DecoderCpu.backward: dvalues given but the model has no value head (addValueHead)');
      matmulBackwardRef(dhf, this.valueHead.dw, this.valueHead.db, dvalues, sv.hf, this.valueHead.w, BT, C, 1);
    }
    // hf = normf(x)
    const dx = new Float64Array(BT * C); // the residual stream's gradient, flowing down
    this.normBackward(dx, dhf, sv.final, sv.meanf, sv.rstdf, 'normf', BT);
    for (let l = sv.layers.length - 1; l >= 0; l--) {
      const s = sv.layers[l]!;
      const p = (n: string) => layerTensor(l, n);
      // x_out = x2 + down(act): dx is d(x2) and d(down's output)
      const dact = new Float64Array(BT * F);
      this.linearBackward(dact, dx, s.act, BT, F, C, p('down.w'), a.bias.mlp ? p('down.b') : null, sv.merged);
      // act = swiglu(u) or gelu(u)
      const du = new Float64Array(BT * up);
      if (a.mlp === 'swiglu') swigluBackwardRef(du, dact, s.u, BT, F);
      else geluBackwardRef(du, s.u, dact, BT * F);
      // u = h2 . up^T + b
      const dh2 = new Float64Array(BT * C);
      this.linearBackward(dh2, du, s.h2, BT, C, up, p('up.w'), a.bias.mlp ? p('up.b') : null, sv.merged);
      // h2 = norm2(x2): adds to dx, which already holds x2's gradient through the residual
      this.normBackward(dx, dh2, s.x2, s.mean2, s.rstd2, p('norm2'), BT);
      // x2 = x + o(atty)
      const datty = new Float64Array(BT * QD);
      this.linearBackward(datty, dx, s.atty, BT, QD, C, p('o.w'), a.bias.o ? p('o.b') : null, sv.merged);
      // atty = attention(qkv) (after rope)
      const dqkv = new Float64Array(BT * W);
      attentionGqaBackwardRef(dqkv, datty, s.qkv, s.atty, s.lse, sv.start, { B, T, NH, NKV, HS });
      // qkv = rope(qkv_pre): the rotation is orthogonal, its backward is the inverse rotation
      if (a.positions.kind === 'rope') ropeRef(dqkv, sv.positions, BT, W, NH + NKV, HS, a.positions.theta, true);
      // qkv_pre = h1 . qkv^T + b
      const dh1 = new Float64Array(BT * C);
      this.linearBackward(dh1, dqkv, s.h1, BT, C, W, p('qkv.w'), a.bias.qkv ? p('qkv.b') : null, sv.merged);
      // h1 = norm1(x)
      this.normBackward(dx, dh1, s.x, s.mean1, s.rstd1, p('norm1'), BT);
    }
    if (this.lora) return; // the embedding is frozen
    // x = embed[tokens] (+ pos[positions])
    const de = this.g('embed');
    for (let n = 0; n < BT; n++) for (let c = 0; c < C; c++) de[sv.tokens[n]! * C + c]! += dx[n * C + c]!;
    if (a.positions.kind === 'learned') {
      const dp = this.g('pos');
      for (let n = 0; n < BT; n++) for (let c = 0; c < C; c++) dp[sv.positions[n]! * C + c]! += dx[n * C + c]!;
    }
  }
}

/** The indices of the nonzero entries (a forward's logitRows). */
function nonzeroRows(mask: ArrayLike<number>): number[] {
  const rows: number[] = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) rows.push(i);
  return rows;
}
