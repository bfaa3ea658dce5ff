/**
 * The model on WebGPU: parameters, gradients and AdamW moments in four slabs laid out by the
 * parameter table; forward and backward recorded kernel by kernel in the same order as the
 * CPU model (cpu.ts), so the two can be compared layer for layer. Shape legend: config.ts.
 */
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { attentionDecode, attentionForward, kvWrite, recordAttentionBackward } from '../kernels/attention';
import { embeddingForward, recordEmbeddingBackward } from '../kernels/embedding';
import { layernormForward, layernormWorkgroup, recordLayernormBackward } from '../kernels/layernorm';
import { defaultMatmulStrategy, recordMatmulForward, type MatmulStrategy } from '../kernels/matmul';
import { recordMatmulBackward } from '../kernels/matmul_backward';
import { geluBackward } from '../kernels/gelu';
import { residualForward } from '../kernels/residual';
import { checkInput, defaultPositions, type ForwardInput } from './cpu';
import type { ModelConfig } from './config';
import { allocActs, destroyActs, type ActBuffers } from './gpu-acts';
import { layerParam, paramTable, type ParamTable } from './params';

/** Per-layer key and value caches, (B, Tmax, C) each. */
export interface KvCache {
  B: number;
  Tmax: number;
  layers: { k: GPUBuffer; v: GPUBuffer }[];
}

/** A forward over new positions [pos, pos + T) that reads and extends a KV cache. */
export interface KvStep {
  cache: KvCache;
  pos: number;
  /** (B, T) u32 token ids, when they live elsewhere than acts.tokens (e.g. the sampler's output) */
  tokens?: BufferBinding;
  /** (B, T) u32 positions, when they live elsewhere than acts.positions */
  positions?: BufferBinding;
}

export class GpuModel {
  readonly table: ParamTable;
  readonly params: GPUBuffer; // (P) laid out by `table`
  readonly grads: GPUBuffer; // (P) accumulated by backward
  private actsCache: ActBuffers | null = null;
  /** Matmul kernels: the adapter's (defaultMatmulStrategy: tiled on a GPU, subgroup or direct on a software adapter) unless given. */
  readonly matmul: MatmulStrategy;

  constructor(
    readonly rt: GpuRuntime,
    readonly config: ModelConfig,
    params: Float32Array,
    matmul?: MatmulStrategy,
  ) {
    this.matmul = matmul ?? defaultMatmulStrategy(rt);
    this.table = paramTable(config);
    if (params.length !== this.table.total) {
      throw new Error(`GpuModel: parameter slab has ${params.length} floats, the table needs ${this.table.total}`);
    }
    this.params = rt.upload(params, 'params');
    this.grads = rt.storage(this.table.total * 4, 'grads');
  }

  /** A binding of tensor `name` inside a slab. */
  slice(slab: GPUBuffer, name: string): BufferBinding {
    const e = this.table.byName.get(name);
    if (!e) throw new Error(`no parameter named "${name}"`);
    return { buffer: slab, offset: e.offset * 4, size: e.size * 4 };
  }

  /** Activation buffers for (B, T), reused while the shape stays the same. */
  acts(B: number, T: number): ActBuffers {
    const a = this.actsCache;
    if (a && a.B === B && a.T === T) return a;
    if (a) destroyActs(a);
    this.actsCache = allocActs(this.rt, this.config, B, T);
    return this.actsCache;
  }

  /** Validates the input and writes tokens, positions and start into the activation buffers. */
  writeInput(input: ForwardInput): { acts: ActBuffers; positions: ArrayLike<number> } {
    const { B, T } = input;
    checkInput(input, this.config.vocabSize, this.config.contextLength); // the CPU model's checks: same errors
    const positions = input.positions ?? defaultPositions(B, T);
    const acts = this.acts(B, T);
    const q = this.rt.device.queue;
    q.writeBuffer(acts.tokens, 0, Uint32Array.from(input.tokens));
    q.writeBuffer(acts.positions, 0, Uint32Array.from(positions));
    q.writeBuffer(acts.start, 0, input.start ? Uint32Array.from(input.start) : new Uint32Array(B));
    return { acts, positions };
  }

  /**
   * Records the forward pass: logits (BT, V) and values (BT) land in `acts`. With `kv` the
   * rows are T new positions starting at kv.pos: their keys and values are appended to the
   * cache and attention reads the cache (prefill and decode steps of generation).
   */
  async recordForward(rec: Recorder, a: ActBuffers, kv?: KvStep): Promise<void> {
    const { rt } = this;
    const { nLayer: L, dModel: C, nHead: NH, vocabSize: V, contextLength: maxT } = this.config;
    const { B, T } = a;
    const BT = B * T;
    const p = (n: string) => this.slice(this.params, n);
    const [emb, ln, attn, add, write, decode] = await Promise.all([
      rt.compile(embeddingForward),
      rt.compile(layernormForward(layernormWorkgroup(C))),
      rt.compile(attentionForward),
      rt.compile(residualForward),
      rt.compile(kvWrite),
      rt.compile(attentionDecode),
    ]);
    const tokens = kv?.tokens ?? a.tokens;
    const positions = kv?.positions ?? a.positions;
    rec.dispatch(emb, { out: a.resid[0]!, tokens, positions, wte: p('wte'), wpe: p('wpe') }, { BT, C, V, maxT });
    for (let l = 0; l < L; l++) {
      const w = (n: string) => p(layerParam(l, n));
      const x = a.layers[l]!;
      const resid = a.resid[l]!;
      rec.dispatch(ln, { out: x.ln1, mean: x.ln1Mean, rstd: x.ln1Rstd, inp: resid, weight: w('ln1w'), bias: w('ln1b') }, { N: BT, C });
      await recordMatmulForward(
        rt,
        rec,
        { out: x.qkv, inp: x.ln1, weight: w('qkvw'), bias: w('qkvb') },
        { M: BT, K: C, N: 3 * C },
        { strategy: this.matmul },
      );
      if (kv) {
        const { k, v } = kv.cache.layers[l]!;
        const { Tmax } = kv.cache;
        rec.dispatch(write, { qkv: x.qkv, kcache: k, vcache: v }, { B, Tnew: T, C, Tmax, pos: kv.pos });
        rec.dispatch(decode, { qkv: x.qkv, kcache: k, vcache: v, start: a.start, out: x.atty }, { B, Tnew: T, C, NH, Tmax, pos: kv.pos });
      } else {
        rec.dispatch(attn, { qkv: x.qkv, start: a.start, out: x.atty, att: x.att }, { B, T, C, NH });
      }
      await recordMatmulForward(
        rt,
        rec,
        { out: a.proj, inp: x.atty, weight: w('attprojw'), bias: w('attprojb') },
        { M: BT, K: C, N: C },
        { strategy: this.matmul },
      );
      rec.dispatch(add, { out: x.residual2, a: resid, b: a.proj }, { n: BT * C });
      rec.dispatch(
        ln,
        { out: x.ln2, mean: x.ln2Mean, rstd: x.ln2Rstd, inp: x.residual2, weight: w('ln2w'), bias: w('ln2b') },
        { N: BT, C },
      );
      await recordMatmulForward(
        rt,
        rec,
        { out: x.fchGelu, pre: x.fch, inp: x.ln2, weight: w('fcw'), bias: w('fcb') },
        { M: BT, K: C, N: 4 * C },
        { gelu: true, strategy: this.matmul },
      );
      await recordMatmulForward(
        rt,
        rec,
        { out: a.proj, inp: x.fchGelu, weight: w('fcprojw'), bias: w('fcprojb') },
        { M: BT, K: 4 * C, N: C },
        { strategy: this.matmul },
      );
      rec.dispatch(add, { out: a.resid[l + 1]!, a: x.residual2, b: a.proj }, { n: BT * C });
    }
    rec.dispatch(ln, { out: a.lnf, mean: a.lnfMean, rstd: a.lnfRstd, inp: a.resid[L]!, weight: p('lnfw'), bias: p('lnfb') }, { N: BT, C });
    await recordMatmulForward(rt, rec, { out: a.logits, inp: a.lnf, weight: p('wte') }, { M: BT, K: C, N: V }, { strategy: this.matmul });
    await recordMatmulForward(
      rt,
      rec,
      { out: a.values, inp: a.lnf, weight: p('valuew'), bias: p('valueb') },
      { M: BT, K: C, N: 1 },
      { strategy: this.matmul },
    );
  }

  /**
   * Records the backward pass from a.dlogits (BT, V) and, if `withValues`, a.dvalues (BT);
   * gradients accumulate into `grads`. Returns pooled temporaries to release after submit
   * and buffers to destroy.
   */
  async recordBackward(
    rec: Recorder,
    a: ActBuffers,
    tokens: ArrayLike<number>,
    positions: ArrayLike<number>,
    withValues: boolean,
  ): Promise<{ release: GPUBuffer[]; destroy: GPUBuffer[] }> {
    const { rt } = this;
    const { nLayer: L, dModel: C, nHead: NH, vocabSize: V, contextLength: maxT } = this.config;
    const { B, T } = a;
    const BT = B * T;
    const p = (n: string) => this.slice(this.params, n);
    const g = (n: string) => this.slice(this.grads, n);
    const gelu = await rt.compile(geluBackward);
    const release: GPUBuffer[] = [];

    rec.clear(a.dln).clear(a.dresid);
    await recordMatmulBackward(
      rt,
      rec,
      { dinp: a.dln, dweight: g('wte'), dout: a.dlogits, inp: a.lnf, weight: p('wte') },
      { M: BT, K: C, N: V },
      this.matmul,
    );
    if (withValues) {
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: a.dln, dweight: g('valuew'), dbias: g('valueb'), dout: a.dvalues, inp: a.lnf, weight: p('valuew') },
        { M: BT, K: C, N: 1 },
        this.matmul,
      );
    }
    await recordLayernormBackward(
      rt,
      rec,
      {
        dinp: a.dresid,
        dweight: g('lnfw'),
        dbias: g('lnfb'),
        dout: a.dln,
        inp: a.resid[L]!,
        weight: p('lnfw'),
        mean: a.lnfMean,
        rstd: a.lnfRstd,
      },
      { N: BT, C },
    );
    for (let l = L - 1; l >= 0; l--) {
      const x = a.layers[l]!;
      const w = (n: string) => p(layerParam(l, n));
      const dw = (n: string) => g(layerParam(l, n));
      // residual3 = residual2 + fcproj: dresid is both d(residual2) and d(fcproj)
      rec.clear(a.dfchGelu).clear(a.dfch).clear(a.dln).clear(a.datty).clear(a.dqkv);
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: a.dfchGelu, dweight: dw('fcprojw'), dbias: dw('fcprojb'), dout: a.dresid, inp: x.fchGelu, weight: w('fcprojw') },
        { M: BT, K: 4 * C, N: C },
        this.matmul,
      );
      rec.dispatch(gelu, { dinp: a.dfch, inp: x.fch, dout: a.dfchGelu }, { n: BT * 4 * C });
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: a.dln, dweight: dw('fcw'), dbias: dw('fcb'), dout: a.dfch, inp: x.ln2, weight: w('fcw') },
        { M: BT, K: C, N: 4 * C },
        this.matmul,
      );
      await recordLayernormBackward(
        rt,
        rec,
        {
          dinp: a.dresid,
          dweight: dw('ln2w'),
          dbias: dw('ln2b'),
          dout: a.dln,
          inp: x.residual2,
          weight: w('ln2w'),
          mean: x.ln2Mean,
          rstd: x.ln2Rstd,
        },
        { N: BT, C },
      );
      // residual2 = residual + attproj
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: a.datty, dweight: dw('attprojw'), dbias: dw('attprojb'), dout: a.dresid, inp: x.atty, weight: w('attprojw') },
        { M: BT, K: C, N: C },
        this.matmul,
      );
      const { temporaries } = await recordAttentionBackward(
        rt,
        rec,
        { dqkv: a.dqkv, dout: a.datty, qkv: x.qkv, att: x.att, start: a.start, dpre: a.dpre },
        { B, T, C, NH },
      );
      release.push(...temporaries);
      rec.clear(a.dln);
      await recordMatmulBackward(
        rt,
        rec,
        { dinp: a.dln, dweight: dw('qkvw'), dbias: dw('qkvb'), dout: a.dqkv, inp: x.ln1, weight: w('qkvw') },
        { M: BT, K: C, N: 3 * C },
        this.matmul,
      );
      await recordLayernormBackward(
        rt,
        rec,
        {
          dinp: a.dresid,
          dweight: dw('ln1w'),
          dbias: dw('ln1b'),
          dout: a.dln,
          inp: a.resid[l]!,
          weight: w('ln1w'),
          mean: x.ln1Mean,
          rstd: x.ln1Rstd,
        },
        { N: BT, C },
      );
    }
    const destroy = await recordEmbeddingBackward(rt, rec, { dwte: g('wte'), dwpe: g('wpe'), dout: a.dresid }, tokens, positions, {
      BT,
      C,
      V,
      maxT,
    });
    return { release, destroy };
  }

  /** Runs the forward and reads logits (BT, V) and values (BT) back (tests, evaluation). */
  async forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }> {
    const { acts } = this.writeInput(input);
    const rec = this.rt.record('forward');
    await this.recordForward(rec, acts);
    const logits = rec.read(acts.logits);
    const values = rec.read(acts.values);
    await rec.submit();
    return { logits: new Float32Array(await logits), values: new Float32Array(await values) };
  }

  /** A KV cache for B sequences of up to Tmax positions. */
  createKvCache(B: number, Tmax: number): KvCache {
    const { nLayer: L, dModel: C, contextLength } = this.config;
    if (Tmax > contextLength) throw new Error(`KV cache: ${Tmax} positions exceed contextLength ${contextLength}`);
    const bytes = B * Tmax * C * 4;
    const layers = Array.from({ length: L }, (_, l) => ({
      k: this.rt.storage(bytes, `h${l}.kcache`),
      v: this.rt.storage(bytes, `h${l}.vcache`),
    }));
    return { B, Tmax, layers };
  }

  async readParams(): Promise<Float32Array> {
    return new Float32Array(await this.rt.read(this.params));
  }

  async readGrads(): Promise<Float32Array> {
    return new Float32Array(await this.rt.read(this.grads));
  }

  dispose(): void {
    if (this.actsCache) destroyActs(this.actsCache);
    this.actsCache = null;
    this.params.destroy();
    this.grads.destroy();
  }
}
