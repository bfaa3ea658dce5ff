/**
 * The float64 CPU model: the reference every GPU path is tested against, and the fallback
 * where WebGPU is missing. It is composed only of the kernels' float64 reference functions,
 * in the same order as the GPU model, so a disagreement points at one kernel.
 * Shape legend: see config.ts.
 */
import { attentionBackwardRef, attentionDecodeRef, attentionForwardRef, kvWriteRef } from '../kernels/attention';
import { embeddingBackwardRef, embeddingForwardRef } from '../kernels/embedding';
import { geluBackwardRef, geluForwardRef } from '../kernels/gelu';
import { layernormBackwardRef, layernormForwardRef } from '../kernels/layernorm';
import { matmulBackwardRef, matmulForwardRef } from '../kernels/matmul';
import { residualForwardRef } from '../kernels/residual';
import type { ModelConfig } from './config';
import { layerParam, paramTable, view, type ParamTable } from './params';

/** What the forward pass keeps for backward, per layer. */
interface LayerActs {
  residual: Float64Array; // (BT, C) block input
  ln1: Float64Array; // (BT, C)
  ln1Mean: Float64Array; // (BT)
  ln1Rstd: Float64Array; // (BT)
  qkv: Float64Array; // (BT, 3C)
  atty: Float64Array; // (BT, C)
  att: Float64Array; // (B, NH, T, T)
  residual2: Float64Array; // (BT, C)
  ln2: Float64Array; // (BT, C)
  ln2Mean: Float64Array; // (BT)
  ln2Rstd: Float64Array; // (BT)
  fch: Float64Array; // (BT, 4C) pre-activation
  fchGelu: Float64Array; // (BT, 4C)
}

export interface ForwardInput {
  /** (B, T) token ids */
  tokens: ArrayLike<number>;
  /** (B, T) position ids; default t */
  positions?: ArrayLike<number>;
  /** (B) left padding: keys before start[b] are masked */
  start?: ArrayLike<number> | null;
  B: number;
  T: number;
  /**
   * (B, T) optional: nonzero at the rows whose logits the caller reads (a training forward's loss
   * rows). The float64 decoder then runs the LM head on those rows only and leaves the others' logits
   * 0, the same numbers where it computes them; a backend that computes every row is also right.
   */
  logitRows?: ArrayLike<number>;
  /**
   * (B, T) optional: nonzero at every row whose outputs (logits where logitRows is, values) the
   * caller reads, when no backward follows (scoring sequences: old and reference log-probs, a
   * reward model's values). The float64 decoder then computes only those rows and the rows before
   * them, each prefix that several sequences share once (model/prefix-tree.ts), and leaves every
   * other row's logits and values 0: the same numbers where it computes them. A backend that
   * computes every row is also right.
   */
  readRows?: ArrayLike<number>;
}

export interface ForwardResult {
  /** (BT, V) */
  logits: Float64Array;
  /** (BT) value head */
  values: Float64Array;
}

/** Per-layer key and value caches, (B, Tmax, C) each. */
export interface CpuKvCache {
  B: number;
  Tmax: number;
  layers: { k: Float64Array; v: Float64Array }[];
}

export class CpuModel {
  readonly table: ParamTable;
  /** parameters laid out by `table` */
  params: Float64Array;
  /** gradients, same layout; backward() accumulates into them */
  grads: Float64Array;
  private acts: {
    input: Required<Omit<ForwardInput, 'start' | 'logitRows' | 'readRows'>> & { start: ArrayLike<number> | null };
    layers: LayerActs[];
    final: Float64Array;
    lnf: Float64Array;
    lnfMean: Float64Array;
    lnfRstd: Float64Array;
  } | null = null;

  constructor(
    readonly config: ModelConfig,
    params: ArrayLike<number>,
  ) {
    this.table = paramTable(config);
    if (params.length !== this.table.total) {
      throw new Error(`CpuModel: parameter slab has ${params.length} floats, the table needs ${this.table.total}`);
    }
    this.params = Float64Array.from(params);
    this.grads = new Float64Array(this.table.total);
  }

  private p(name: string): Float64Array {
    return view(this.table, this.params, name);
  }

  private g(name: string): Float64Array {
    return view(this.table, this.grads, name);
  }

  /**
   * Logits and values for (B, T). With `kv` the rows are T new positions starting at kv.pos:
   * their keys and values are appended to the cache and attention reads it (generation; no
   * backward afterwards).
   */
  forward(input: ForwardInput, kv?: { cache: CpuKvCache; pos: number }): ForwardResult {
    const { nLayer: L, dModel: C, nHead: NH, vocabSize: V, contextLength: maxT } = this.config;
    const { B, T } = input;
    const BT = B * T;
    checkInput(input, V, maxT);
    const positions = input.positions ?? defaultPositions(B, T);
    const start = input.start ?? null;

    let residual = new Float64Array(BT * C);
    embeddingForwardRef(residual, input.tokens, positions, this.p('wte'), this.p('wpe'), BT, C);
    const layers: LayerActs[] = [];
    for (let l = 0; l < L; l++) {
      const w = (n: string) => this.p(layerParam(l, n));
      const a: LayerActs = {
        residual,
        ln1: new Float64Array(BT * C),
        ln1Mean: new Float64Array(BT),
        ln1Rstd: new Float64Array(BT),
        qkv: new Float64Array(BT * 3 * C),
        atty: new Float64Array(BT * C),
        att: new Float64Array(kv ? 0 : B * NH * T * T),
        residual2: new Float64Array(BT * C),
        ln2: new Float64Array(BT * C),
        ln2Mean: new Float64Array(BT),
        ln2Rstd: new Float64Array(BT),
        fch: new Float64Array(BT * 4 * C),
        fchGelu: new Float64Array(BT * 4 * C),
      };
      const attproj = new Float64Array(BT * C);
      const fcproj = new Float64Array(BT * C);
      layernormForwardRef(a.ln1, a.ln1Mean, a.ln1Rstd, residual, w('ln1w'), w('ln1b'), BT, C);
      matmulForwardRef(a.qkv, a.ln1, w('qkvw'), w('qkvb'), BT, C, 3 * C);
      if (kv) {
        const { k, v } = kv.cache.layers[l]!;
        kvWriteRef(k, v, a.qkv, B, T, C, kv.cache.Tmax, kv.pos);
        attentionDecodeRef(a.atty, a.qkv, k, v, B, T, C, NH, kv.cache.Tmax, kv.pos, start);
      } else {
        attentionForwardRef(a.atty, a.att, a.qkv, B, T, C, NH, start);
      }
      matmulForwardRef(attproj, a.atty, w('attprojw'), w('attprojb'), BT, C, C);
      residualForwardRef(a.residual2, residual, attproj, BT * C);
      layernormForwardRef(a.ln2, a.ln2Mean, a.ln2Rstd, a.residual2, w('ln2w'), w('ln2b'), BT, C);
      matmulForwardRef(a.fch, a.ln2, w('fcw'), w('fcb'), BT, C, 4 * C);
      geluForwardRef(a.fchGelu, a.fch, BT * 4 * C);
      matmulForwardRef(fcproj, a.fchGelu, w('fcprojw'), w('fcprojb'), BT, 4 * C, C);
      const residual3 = new Float64Array(BT * C);
      residualForwardRef(residual3, a.residual2, fcproj, BT * C);
      layers.push(a);
      residual = residual3;
    }
    const lnf = new Float64Array(BT * C);
    const lnfMean = new Float64Array(BT);
    const lnfRstd = new Float64Array(BT);
    layernormForwardRef(lnf, lnfMean, lnfRstd, residual, this.p('lnfw'), this.p('lnfb'), BT, C);
    const logits = new Float64Array(BT * V);
    matmulForwardRef(logits, lnf, this.p('wte'), null, BT, C, V);
    const values = new Float64Array(BT);
    matmulForwardRef(values, lnf, this.p('valuew'), this.p('valueb'), BT, C, 1);
    this.acts = kv ? null : { input: { tokens: input.tokens, positions, start, B, T }, layers, final: residual, lnf, lnfMean, lnfRstd };
    return { logits, values };
  }

  /** Accumulates into `grads` the gradient of a loss whose derivatives w.r.t. logits (BT, V) and values (BT) are given. */
  backward(dlogits: ArrayLike<number>, dvalues: ArrayLike<number> | null): void {
    if (!this.acts) throw new Error('CpuModel.backward: call forward first');
    const { nLayer: L, dModel: C, nHead: NH, vocabSize: V } = this.config;
    const { input, layers, final, lnf, lnfMean, lnfRstd } = this.acts;
    const { B, T } = input;
    const BT = B * T;

    const dlnf = new Float64Array(BT * C);
    matmulBackwardRef(dlnf, this.g('wte'), null, dlogits, lnf, this.p('wte'), BT, C, V);
    if (dvalues) matmulBackwardRef(dlnf, this.g('valuew'), this.g('valueb'), dvalues, lnf, this.p('valuew'), BT, C, 1);
    const dresidual = new Float64Array(BT * C); // flows down the residual stream
    layernormBackwardRef(dresidual, this.g('lnfw'), this.g('lnfb'), dlnf, final, this.p('lnfw'), lnfMean, lnfRstd, BT, C);
    for (let l = L - 1; l >= 0; l--) {
      const a = layers[l]!;
      const w = (n: string) => this.p(layerParam(l, n));
      const dw = (n: string) => this.g(layerParam(l, n));
      // residual3 = residual2 + fcproj: dresidual is both d(residual2) and d(fcproj)
      const dfchGelu = new Float64Array(BT * 4 * C);
      matmulBackwardRef(dfchGelu, dw('fcprojw'), dw('fcprojb'), dresidual, a.fchGelu, w('fcprojw'), BT, 4 * C, C);
      const dfch = new Float64Array(BT * 4 * C);
      geluBackwardRef(dfch, a.fch, dfchGelu, BT * 4 * C);
      const dln2 = new Float64Array(BT * C);
      matmulBackwardRef(dln2, dw('fcw'), dw('fcb'), dfch, a.ln2, w('fcw'), BT, C, 4 * C);
      layernormBackwardRef(dresidual, dw('ln2w'), dw('ln2b'), dln2, a.residual2, w('ln2w'), a.ln2Mean, a.ln2Rstd, BT, C);
      // residual2 = residual + attproj
      const datty = new Float64Array(BT * C);
      matmulBackwardRef(datty, dw('attprojw'), dw('attprojb'), dresidual, a.atty, w('attprojw'), BT, C, C);
      const dqkv = new Float64Array(BT * 3 * C);
      attentionBackwardRef(dqkv, datty, a.qkv, a.att, B, T, C, NH, input.start);
      const dln1 = new Float64Array(BT * C);
      matmulBackwardRef(dln1, dw('qkvw'), dw('qkvb'), dqkv, a.ln1, w('qkvw'), BT, C, 3 * C);
      layernormBackwardRef(dresidual, dw('ln1w'), dw('ln1b'), dln1, a.residual, w('ln1w'), a.ln1Mean, a.ln1Rstd, BT, C);
    }
    embeddingBackwardRef(this.g('wte'), this.g('wpe'), dresidual, input.tokens, input.positions, BT, C);
  }

  createKvCache(B: number, Tmax: number): CpuKvCache {
    const { nLayer: L, dModel: C, contextLength } = this.config;
    if (Tmax > contextLength) throw new Error(`KV cache: ${Tmax} positions exceed contextLength ${contextLength}`);
    return { B, Tmax, layers: Array.from({ length: L }, () => ({ k: new Float64Array(B * Tmax * C), v: new Float64Array(B * Tmax * C) })) };
  }

  zeroGrad(): void {
    this.grads.fill(0);
  }
}

export function defaultPositions(B: number, T: number): Uint32Array<ArrayBuffer> {
  const pos = new Uint32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) pos[b * T + t] = t;
  return pos;
}

/** Token ids < V, positions < maxT, shapes consistent: checked before any math. */
export function checkInput(input: ForwardInput, V: number, maxT: number): void {
  const { B, T, tokens, positions } = input;
  if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1)
    throw new Error(`forward: B and T must be positive integers, got B=${B} T=${T}`);
  if (T > maxT) throw new Error(`forward: T=${T} exceeds contextLength ${maxT}`);
  if (tokens.length !== B * T) throw new Error(`forward: tokens has ${tokens.length} ids, expected B*T = ${B * T}`);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!(t >= 0 && t < V && Number.isInteger(t)))
      throw new Error(`forward: token ${t} at index ${i} is outside the vocabulary 0..${V - 1}`);
  }
  if (input.logitRows && input.logitRows.length !== B * T)
    throw new Error(`forward: logitRows has ${input.logitRows.length} entries, expected B*T = ${B * T}`);
  if (input.readRows && input.readRows.length !== B * T)
    throw new Error(`forward: readRows has ${input.readRows.length} entries, expected B*T = ${B * T}`);
  if (positions) {
    if (positions.length !== B * T) throw new Error(`forward: positions has ${positions.length} entries, expected ${B * T}`);
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i]!;
      if (!(p >= 0 && p < maxT)) throw new Error(`forward: position ${p} at index ${i} is outside 0..${maxT - 1}`);
    }
  }
}
