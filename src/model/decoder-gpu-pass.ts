/**
 * The training forward and backward of the data-described decoder on the GPU, recorded kernel by
 * kernel in the order of the float64 reference (DecoderCpu.forward without a KV cache, and
 * DecoderCpu.backward): the forward keeps every activation the backward reads (decoder-gpu-acts.ts)
 * with the training attention saving each row's logsumexp; the backward quotes the forward line
 * each step differentiates, accumulating into the gradient buffers the context hands out (null:
 * a frozen tensor, whose weight gradient is not computed at all) and into the LoRA adapters'.
 * The embedding and LM head are row chunks (DecoderGpu.embedTable / headTable): one gather per
 * chunk forward and one scatter-add per chunk back; the LM head one matmul per chunk writing its
 * column block of the logits, and one backward per chunk reading that block of dlogits in place.
 * Shape legend: arch.ts; r the LoRA rank.
 */
import type { Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { recordAttentionGqaBackward, recordAttentionGqaTrainForward } from '../kernels/attention_gqa_train';
import { gatherRowsFor, recordGatherRowsBackward } from '../kernels/gather_rows';
import { geluBackward, geluForward } from '../kernels/gelu';
import { layernormBackwardRows, layernormForward, layernormWorkgroup, recordLayernormBackward } from '../kernels/layernorm';
import { recordLoraBackward, recordLoraForward, type LoraLinearProblem } from '../kernels/lora_linear';
import { recordMatmulForward } from '../kernels/matmul';
import { recordMatmulBackward } from '../kernels/matmul_backward';
import { residualForward } from '../kernels/residual';
import { recordRmsnormBackward, rmsnormBackwardRows, rmsnormForward, rmsnormWorkgroup } from '../kernels/rmsnorm';
import { rope } from '../kernels/rope';
import { swigluBackward, swigluForward } from '../kernels/swiglu';
import { archDims, layerTensor } from './arch';
import type { DecoderGpu } from './decoder-gpu';
import type { DecoderTrainActs } from './decoder-gpu-acts';
import { headTensor, type LoraModule } from './lora';

/** LoRA adapters on the GPU: A (r, in), B (out, r) per module (lora.ts), their gradients alike. */
export interface GpuAdapters {
  modules: LoraModule[];
  rank: number;
  scaling: number;
  A: GPUBuffer[];
  B: GPUBuffer[];
  dA: GPUBuffer[];
  dB: GPUBuffer[];
}

/** What a pass records against: the model's weights, where gradients go, the adapters. */
export interface TrainPassContext {
  model: DecoderGpu;
  /** the gradient buffer of an engine tensor, or null: frozen (no weight gradient computed) */
  grad(name: string): GPUBuffer | null;
  /** one gradient buffer per chunk of the embedding / LM head (the same with tied embeddings), or null: frozen */
  chunkGrads(which: 'embed' | 'head'): readonly GPUBuffer[] | null;
  /** the adapters, or null (full fine-tuning) */
  lora: GpuAdapters | null;
  /** whether the adapters take part (false: the frozen base, the KL reference) */
  loraOn: boolean;
  /** a scalar value head on hf (PPO's critic, DecoderCpu.addValueHead): w (1, C), b (1) and their gradients; or null */
  valueHead: { w: GPUBuffer; b: GPUBuffer; dw: GPUBuffer; db: GPUBuffer } | null;
  /** (>= 1 float) each, stand-ins for a frozen norm's weight and bias gradients (never written) */
  frozen: readonly [GPUBuffer, GPUBuffer];
}

/** A micro-batch's ids on the CPU, for the embedding's scatter-add (kernels/gather_rows.ts). */
export interface PassIds {
  tokens: ArrayLike<number>; // (BT)
  positions: ArrayLike<number>; // (BT)
}

async function kernels(rt: GpuRuntime, ctx: TrainPassContext) {
  const a = ctx.model.arch;
  const C = a.dModel;
  const rms = a.norm.kind === 'rmsnorm';
  const [gather, rmsF, lnF, add, ropeK, swigluF, swigluB, geluF, geluB] = await Promise.all([
    rt.compile(gatherRowsFor(ctx.model.weightFormat)), // the embedding's and position table's chunks
    rms ? rt.compile(rmsnormForward(rmsnormWorkgroup(C))) : null,
    rms ? null : rt.compile(layernormForward(layernormWorkgroup(C))),
    rt.compile(residualForward),
    rt.compile(rope),
    rt.compile(swigluForward),
    rt.compile(swigluBackward),
    rt.compile(geluForward),
    rt.compile(geluBackward),
  ]);
  return { gather, rmsF, lnF, add, rope: ropeK, swigluF, swigluB, geluF, geluB };
}

/** The adapters of `ctx` on engine weight `weight`, with their index in ctx.lora.modules (none when off). */
function adaptersOn(ctx: TrainPassContext, weight: string): { i: number; m: LoraModule }[] {
  if (!ctx.lora || !ctx.loraOn) return [];
  return ctx.lora.modules.flatMap((m, i) => (m.engine === weight ? [{ i, m }] : []));
}

function loraProblem(ctx: TrainPassContext, m: LoraModule, N: number, K: number, Ntot: number): LoraLinearProblem {
  return { M: N, K, r: ctx.lora!.rank, N: m.outFeatures, ldo: Ntot, col0: m.rows[0], scale: ctx.lora!.scaling };
}

/** out (N, Ntot) = inp (N, K) . weight^T + bias, then each adapter on `weight` adds to its rows. */
async function linear(
  rt: GpuRuntime,
  rec: Recorder,
  ctx: TrainPassContext,
  s: DecoderTrainActs,
  out: GPUBuffer,
  inp: GPUBuffer,
  weight: string,
  bias: string,
  N: number,
  K: number,
  Ntot: number,
): Promise<void> {
  const m = ctx.model;
  const b = { out, inp, weight: m.tensor(weight), weightFormat: m.formatOf(weight), bias: m.tensorOrNull(bias) };
  await recordMatmulForward(rt, rec, b, { M: N, K, N: Ntot });
  for (const { i, m: mod } of adaptersOn(ctx, weight)) {
    const l = ctx.lora!;
    await recordLoraForward(rt, rec, { out, inp, A: l.A[i]!, B: l.B[i]!, xa: s.xa[i]! }, loraProblem(ctx, mod, N, K, Ntot));
  }
}

/**
 * The backward of `linear`: dinp (N, K) += dout . W (+ each adapter's), and the gradients of W
 * and its bias (when not frozen) and of the adapters, from dout (N, Ntot).
 */
async function linearBackward(
  rt: GpuRuntime,
  rec: Recorder,
  ctx: TrainPassContext,
  s: DecoderTrainActs,
  dinp: GPUBuffer,
  dout: GPUBuffer,
  inp: GPUBuffer,
  weight: string,
  bias: string,
  N: number,
  K: number,
  Ntot: number,
): Promise<void> {
  const m = ctx.model;
  const dbias = m.tensorOrNull(bias) ? ctx.grad(bias) : null;
  await recordMatmulBackward(
    rt,
    rec,
    { dinp, dweight: ctx.grad(weight), dbias, dout, inp, weight: m.tensor(weight), weightFormat: m.formatOf(weight) },
    { M: N, K, N: Ntot },
  );
  for (const { i, m: mod } of adaptersOn(ctx, weight)) {
    const l = ctx.lora!;
    await recordLoraBackward(
      rt,
      rec,
      { dinp, dA: l.dA[i]!, dB: l.dB[i]!, dout, inp, A: l.A[i]!, B: l.B[i]!, xa: s.xa[i]!, dxa: s.dxa },
      loraProblem(ctx, mod, N, K, Ntot),
    );
  }
}

type Kernels = Awaited<ReturnType<typeof kernels>>;

/** out, and the statistics its backward reads, of the norm named `name` over N rows. */
function norm(
  rec: Recorder,
  k: Kernels,
  ctx: TrainPassContext,
  out: GPUBuffer,
  mean: GPUBuffer,
  rstd: GPUBuffer,
  inp: GPUBuffer,
  name: string,
  N: number,
): void {
  const { model: m } = ctx;
  const { dModel: C, norm: n } = m.arch;
  const weight = m.tensor(`${name}.w`);
  if (k.rmsF) rec.dispatch(k.rmsF, { out, rstd, inp, weight }, { N, C, eps: n.eps });
  else rec.dispatch(k.lnF!, { out, mean, rstd, inp, weight, bias: m.tensor(`${name}.b`) }, { N, C });
}

/** dinp += the norm's backward; its weight (and bias) gradients accumulate unless frozen (then only the rows kernel runs). */
async function normBackward(
  rt: GpuRuntime,
  rec: Recorder,
  ctx: TrainPassContext,
  dinp: GPUBuffer,
  dout: GPUBuffer,
  inp: GPUBuffer,
  mean: GPUBuffer,
  rstd: GPUBuffer,
  name: string,
  N: number,
): Promise<void> {
  const { model: m, frozen } = ctx;
  const C = m.arch.dModel;
  const weight = m.tensor(`${name}.w`);
  const dweight = ctx.grad(`${name}.w`);
  if (m.arch.norm.kind === 'rmsnorm') {
    const b = { dinp, dout, inp, weight, rstd };
    if (dweight) await recordRmsnormBackward(rt, rec, { ...b, dweight }, { N, C });
    else rec.dispatch(await rt.compile(rmsnormBackwardRows(rmsnormWorkgroup(C))), { ...b, dweight: frozen[0] }, { N, C });
    return;
  }
  const b = { dinp, dout, inp, weight, mean, rstd };
  const dbias = ctx.grad(`${name}.b`);
  if (dweight && dbias) await recordLayernormBackward(rt, rec, { ...b, dweight, dbias }, { N, C });
  else
    rec.dispatch(await rt.compile(layernormBackwardRows(layernormWorkgroup(C))), { ...b, dweight: frozen[0], dbias: frozen[1] }, { N, C });
}

/**
 * Records the training forward of the staged inputs in `s` (tokens, positions, start): every
 * activation kept, logits (BT, V) in s.logits.
 */
export async function recordTrainForward(rt: GpuRuntime, rec: Recorder, ctx: TrainPassContext, s: DecoderTrainActs): Promise<void> {
  const { model: m } = ctx;
  const a = m.arch;
  const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, dFf: F, vocabSize: V } = a;
  const { QD, W, up } = archDims(a);
  const { B, T } = s;
  const BT = B * T;
  const k = await kernels(rt, ctx);
  const p = (l: number, n: string) => layerTensor(l, n);

  // x (BT, C) = embed[tokens] (+ pos[positions])
  const x0 = s.resid[0]!;
  for (const c of m.embedTable)
    rec.dispatch(k.gather, { out: x0, ids: s.tokens, table: c.buffer }, { N: BT, C, v0: c.v0, rows: c.rows, accumulate: 0 });
  if (a.positions.kind === 'learned')
    rec.dispatch(k.gather, { out: x0, ids: s.positions, table: m.tensor('pos') }, { N: BT, C, v0: 0, rows: a.maxPositions, accumulate: 1 });
  for (let l = 0; l < L; l++) {
    const x = s.resid[l]!;
    const y = s.layers[l]!;
    norm(rec, k, ctx, y.h1, y.mean1, y.rstd1, x, p(l, 'norm1'), BT); // h1 = norm1(x)
    await linear(rt, rec, ctx, s, y.qkv, y.h1, p(l, 'qkv.w'), p(l, 'qkv.b'), BT, C, W); // qkv = h1 . qkv^T + b (+ adapters)
    const tables = m.ropeTables;
    if (tables) rec.dispatch(k.rope, { x: y.qkv, positions: s.positions, ...tables }, { N: BT, W, nHeads: NH + NKV, HS, inverse: 0 }); // qkv = rope(qkv)
    await recordAttentionGqaTrainForward(rt, rec, { qkv: y.qkv, start: s.start, out: y.atty, lse: y.lse }, { B, T, NH, NKV, HS });
    await linear(rt, rec, ctx, s, s.o, y.atty, p(l, 'o.w'), p(l, 'o.b'), BT, QD, C); // o = atty . o^T + b
    rec.dispatch(k.add, { out: y.x2, a: x, b: s.o }, { n: BT * C }); // x2 = x + o
    norm(rec, k, ctx, y.h2, y.mean2, y.rstd2, y.x2, p(l, 'norm2'), BT); // h2 = norm2(x2)
    await linear(rt, rec, ctx, s, y.u, y.h2, p(l, 'up.w'), p(l, 'up.b'), BT, C, up); // u = h2 . up^T + b: (BT, 2F) gate|up, or (BT, F)
    if (a.mlp === 'swiglu')
      rec.dispatch(k.swigluF, { out: y.act, gu: y.u }, { N: BT, F }); // act = swiglu(u)
    else rec.dispatch(k.geluF, { out: y.act, inp: y.u }, { n: BT * F }); // act = gelu(u)
    await linear(rt, rec, ctx, s, s.o, y.act, p(l, 'down.w'), p(l, 'down.b'), BT, F, C); // d = act . down^T + b
    rec.dispatch(k.add, { out: s.resid[l + 1]!, a: y.x2, b: s.o }, { n: BT * C }); // x_out = x2 + d
  }
  norm(rec, k, ctx, s.hf, s.meanf, s.rstdf, s.resid[L]!, 'normf', BT); // hf = normf(final)
  // logits (BT, V) = hf . head^T, one column block [v0, v0 + rows) per chunk
  for (const c of m.headTable)
    await recordMatmulForward(
      rt,
      rec,
      { out: s.logits, inp: s.hf, weight: c.buffer, weightFormat: c.format },
      { M: BT, K: C, N: c.rows, ldo: V, col0: c.v0 },
    );
  // lm_head's adapter adds to every column (lora.ts: its engine tensor is the head's, or the tied embedding's)
  for (const { i, m: mod } of adaptersOn(ctx, headTensor(a))) {
    const l = ctx.lora!;
    await recordLoraForward(rt, rec, { out: s.logits, inp: s.hf, A: l.A[i]!, B: l.B[i]!, xa: s.xa[i]! }, loraProblem(ctx, mod, BT, C, V));
  }
  // values (BT) = hf . value.w^T + value.b
  const vh = ctx.valueHead;
  if (vh) await recordMatmulForward(rt, rec, { out: s.values, inp: s.hf, weight: vh.w, bias: vh.b }, { M: BT, K: C, N: 1 });
}

/**
 * Records the backward of the last recordTrainForward on `s` from s.dlogits (BT, V), and from
 * s.dvalues (BT) with `withValues` (the value head's): gradients accumulate into ctx's buffers
 * (zeroed once per optimizer step by the trainer). `ids` are the micro-batch's tokens and
 * positions on the CPU (the embedding's scatter-add groups them there). Returns the
 * temporaries: `release` to the pool and `destroy` after the submit.
 */
export async function recordTrainBackward(
  rt: GpuRuntime,
  rec: Recorder,
  ctx: TrainPassContext,
  s: DecoderTrainActs,
  ids: PassIds,
  withValues = false,
): Promise<{ release: GPUBuffer[]; destroy: GPUBuffer[] }> {
  const { model: m } = ctx;
  const a = m.arch;
  const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, dFf: F, vocabSize: V } = a;
  const { QD, W, up } = archDims(a);
  const { B, T } = s;
  const BT = B * T;
  const k = await kernels(rt, ctx);
  const p = (l: number, n: string) => layerTensor(l, n);
  const release: GPUBuffer[] = [];
  const destroy: GPUBuffer[] = [];

  // logits = hf . head^T, per chunk: dhf += dlogits[:, v0 : v0 + rows] . chunk, dchunk += dlogits[:, block]^T . hf
  rec.clear(s.dh).clear(s.dx);
  const dhead = ctx.chunkGrads('head');
  for (const [i, c] of m.headTable.entries()) {
    const b = { dinp: s.dh, dweight: dhead?.[i] ?? null, dout: s.dlogits, inp: s.hf, weight: c.buffer, weightFormat: c.format };
    await recordMatmulBackward(rt, rec, b, { M: BT, K: C, N: c.rows, ldo: V, col0: c.v0 });
  }
  for (const { i, m: mod } of adaptersOn(ctx, headTensor(a))) {
    const l = ctx.lora!;
    await recordLoraBackward(
      rt,
      rec,
      { dinp: s.dh, dA: l.dA[i]!, dB: l.dB[i]!, dout: s.dlogits, inp: s.hf, A: l.A[i]!, B: l.B[i]!, xa: s.xa[i]!, dxa: s.dxa },
      loraProblem(ctx, mod, BT, C, V),
    );
  }
  // values = hf . value.w^T + value.b (the value head trains in every mode)
  const vh = ctx.valueHead;
  if (withValues) {
    if (!vh) throw new Error('recordTrainBackward: dvalues without a value head');
    const b = { dinp: s.dh, dweight: vh.dw, dbias: vh.db, dout: s.dvalues, inp: s.hf, weight: vh.w };
    await recordMatmulBackward(rt, rec, b, { M: BT, K: C, N: 1 });
  }
  // hf = normf(x): dx, the residual stream's gradient, flows down from here
  await normBackward(rt, rec, ctx, s.dx, s.dh, s.resid[L]!, s.meanf, s.rstdf, 'normf', BT);
  for (let l = L - 1; l >= 0; l--) {
    const y = s.layers[l]!;
    // x_out = x2 + down(act): dx is d(x2) and d(down's output)
    rec.clear(s.dact);
    await linearBackward(rt, rec, ctx, s, s.dact, s.dx, y.act, p(l, 'down.w'), p(l, 'down.b'), BT, F, C);
    // act = swiglu(u) or gelu(u)
    rec.clear(s.du);
    if (a.mlp === 'swiglu') rec.dispatch(k.swigluB, { dgu: s.du, dout: s.dact, gu: y.u }, { N: BT, F });
    else rec.dispatch(k.geluB, { dinp: s.du, inp: y.u, dout: s.dact }, { n: BT * F });
    // u = h2 . up^T + b
    rec.clear(s.dh);
    await linearBackward(rt, rec, ctx, s, s.dh, s.du, y.h2, p(l, 'up.w'), p(l, 'up.b'), BT, C, up);
    // h2 = norm2(x2): adds to dx, which already holds x2's gradient through the residual
    await normBackward(rt, rec, ctx, s.dx, s.dh, y.x2, y.mean2, y.rstd2, p(l, 'norm2'), BT);
    // x2 = x + o(atty)
    rec.clear(s.datty);
    await linearBackward(rt, rec, ctx, s, s.datty, s.dx, y.atty, p(l, 'o.w'), p(l, 'o.b'), BT, QD, C);
    // atty = attention(qkv) (after rope)
    rec.clear(s.dqkv);
    const att = { dqkv: s.dqkv, dout: s.datty, qkv: y.qkv, out: y.atty, lse: y.lse, start: s.start, delta: s.delta };
    release.push(...(await recordAttentionGqaBackward(rt, rec, att, { B, T, NH, NKV, HS })).temporaries);
    // qkv = rope(qkv_pre): the rotation is orthogonal, its backward is the inverse rotation
    const tables = m.ropeTables;
    if (tables) rec.dispatch(k.rope, { x: s.dqkv, positions: s.positions, ...tables }, { N: BT, W, nHeads: NH + NKV, HS, inverse: 1 });
    // qkv_pre = h1 . qkv^T + b
    rec.clear(s.dh);
    await linearBackward(rt, rec, ctx, s, s.dh, s.dqkv, y.h1, p(l, 'qkv.w'), p(l, 'qkv.b'), BT, C, W);
    // h1 = norm1(x)
    await normBackward(rt, rec, ctx, s.dx, s.dh, s.resid[l]!, y.mean1, y.rstd1, p(l, 'norm1'), BT);
  }
  // x = embed[tokens] (+ pos[positions]): a scatter-add into each chunk holding the ids
  const dembed = ctx.chunkGrads('embed');
  if (dembed) {
    const chunks = m.embedTable.map((c) => [c.v0, c.rows] as const);
    destroy.push(...(await recordGatherRowsBackward(rt, rec, { dtables: dembed, dout: s.dx }, ids.tokens, chunks, { N: BT, C })));
  }
  const dpos = a.positions.kind === 'learned' ? ctx.grad('pos') : null;
  if (dpos) {
    const chunks = [[0, a.maxPositions]] as const;
    destroy.push(...(await recordGatherRowsBackward(rt, rec, { dtables: [dpos], dout: s.dx }, ids.positions, chunks, { N: BT, C })));
  }
  return { release, destroy };
}
