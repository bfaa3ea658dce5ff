/**
 * The GPU buffers of one training shape (B, T) of the data-described decoder: what the training
 * forward saves for the backward (DecoderCpu's DecoderLayerActs, per layer), the backward's
 * scratch, LoRA's per-module xa, and the staged inputs. One builder lists them all, generic over
 * what it allocates: GPU buffers for the trainer, float counts for the memory report
 * (decoderTrainActFloats), so the report is the allocation. Shape legend: arch.ts; r the LoRA rank.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { archDims, type DecoderArch } from './arch';

/** What layer l's training forward keeps (DecoderCpu's DecoderLayerActs; its x is resid[l]). */
export interface DecoderLayerBuffers<Buf = GPUBuffer> {
  h1: Buf; // (BT, C) norm1(x)
  mean1: Buf; // (BT) LayerNorm's mean (RMSNorm: 1 unused float)
  rstd1: Buf; // (BT)
  qkv: Buf; // (BT, W) after rope
  atty: Buf; // (BT, QD) attention's output
  lse: Buf; // (B, NH, T) each attention row's logsumexp
  x2: Buf; // (BT, C) x + o(atty)
  h2: Buf; // (BT, C) norm2(x2)
  mean2: Buf; // (BT)
  rstd2: Buf; // (BT)
  u: Buf; // (BT, 2F) gate|up, or (BT, F) GELU's input
  act: Buf; // (BT, F) swiglu(u) or gelu(u)
}

export interface DecoderTrainActs<Buf = GPUBuffer> {
  B: number;
  T: number;
  /** the residual stream: resid[l] is layer l's input x (resid[0] the embedding), resid[L] the final output */
  resid: Buf[]; // (L + 1) x (BT, C)
  layers: DecoderLayerBuffers<Buf>[];
  hf: Buf; // (BT, C) normf(final)
  meanf: Buf; // (BT)
  rstdf: Buf; // (BT)
  logits: Buf; // (BT, V)
  values: Buf; // (BT) the value head's output (zeros without one)
  o: Buf; // (BT, C) o_proj's / down_proj's output before the residual add
  /** per LoRA module (setLora's order): xa = inp A^T, kept for the backward */
  xa: Buf[]; // (BT, r) each
  // the loss
  dlogits: Buf; // (BT, V)
  dvalues: Buf; // (BT)
  losses: Buf; // (BT)
  // backward scratch
  dx: Buf; // (BT, C) the residual stream's gradient, flowing down
  dh: Buf; // (BT, C) dhf, dh2, dh1 in turn
  dact: Buf; // (BT, F)
  du: Buf; // (BT, 2F) or (BT, F)
  datty: Buf; // (BT, QD)
  dqkv: Buf; // (BT, W)
  delta: Buf; // (B, NH, T) attention backward's scratch
  dxa: Buf; // (BT, r) LoRA's scratch (1 float without adapters)
  // inputs
  tokens: Buf; // (BT) u32
  positions: Buf; // (BT) u32
  start: Buf; // (B) u32 left padding
  targets: Buf; // (BT) u32
  mask: Buf; // (BT) f32
}

/** The buffers of (B, T) with `nLora` adapters of rank r, each made by alloc(floats, label). */
export function buildTrainActs<Buf>(
  a: DecoderArch,
  B: number,
  T: number,
  lora: { modules: number; rank: number } | null,
  alloc: (floats: number, label: string) => Buf,
): DecoderTrainActs<Buf> {
  const { nLayer: L, dModel: C, nHead: NH, dFf: F, vocabSize: V } = a;
  const { QD, W, up } = archDims(a);
  const BT = B * T;
  const ln = a.norm.kind === 'layernorm' ? BT : 1;
  const r = lora?.rank ?? 1;
  const f = (n: number, label: string) => alloc(Math.max(1, n), label);
  const layers = Array.from({ length: L }, (_, l): DecoderLayerBuffers<Buf> => {
    const p = (n: string) => `layers.${l}.${n}`;
    return {
      h1: f(BT * C, p('h1')),
      mean1: f(ln, p('mean1')),
      rstd1: f(BT, p('rstd1')),
      qkv: f(BT * W, p('qkv')),
      atty: f(BT * QD, p('atty')),
      lse: f(B * NH * T, p('lse')),
      x2: f(BT * C, p('x2')),
      h2: f(BT * C, p('h2')),
      mean2: f(ln, p('mean2')),
      rstd2: f(BT, p('rstd2')),
      u: f(BT * up, p('u')),
      act: f(BT * F, p('act')),
    };
  });
  return {
    B,
    T,
    resid: Array.from({ length: L + 1 }, (_, l) => f(BT * C, `resid${l}`)),
    layers,
    hf: f(BT * C, 'hf'),
    meanf: f(ln, 'meanf'),
    rstdf: f(BT, 'rstdf'),
    logits: f(BT * V, 'logits'),
    values: f(BT, 'values'),
    o: f(BT * C, 'o'),
    xa: Array.from({ length: lora?.modules ?? 0 }, (_, i) => f(BT * r, `lora ${i} xa`)),
    dlogits: f(BT * V, 'dlogits'),
    dvalues: f(BT, 'dvalues'),
    losses: f(BT, 'losses'),
    dx: f(BT * C, 'dx'),
    dh: f(BT * C, 'dh'),
    dact: f(BT * F, 'dact'),
    du: f(BT * up, 'du'),
    datty: f(BT * QD, 'datty'),
    dqkv: f(BT * W, 'dqkv'),
    delta: f(B * NH * T, 'attention delta'),
    dxa: f(lora ? BT * r : 1, 'lora dxa'),
    tokens: f(BT, 'tokens'),
    positions: f(BT, 'positions'),
    start: f(B, 'start'),
    targets: f(BT, 'targets'),
    mask: f(BT, 'mask'),
  };
}

/** GPU buffers for (B, T). */
export function allocTrainActs(
  rt: GpuRuntime,
  a: DecoderArch,
  B: number,
  T: number,
  lora: { modules: number; rank: number } | null,
): DecoderTrainActs {
  return buildTrainActs(a, B, T, lora, (n, label) => rt.storage(n * 4, label));
}

/** Every buffer of a DecoderTrainActs, once. */
export function trainActBuffers<Buf>(acts: DecoderTrainActs<Buf>): Buf[] {
  const out: Buf[] = [];
  for (const [k, v] of Object.entries(acts) as [string, unknown][]) {
    if (k === 'B' || k === 'T') continue;
    if (k === 'layers') for (const l of v as DecoderLayerBuffers<Buf>[]) out.push(...Object.values(l));
    else if (Array.isArray(v)) out.push(...(v as Buf[]));
    else out.push(v as Buf);
  }
  return out;
}

/** Floats the activation buffers of (B, T) hold (what allocTrainActs allocates). */
export function decoderTrainActFloats(a: DecoderArch, B: number, T: number, lora: { modules: number; rank: number } | null): number {
  return trainActBuffers(buildTrainActs(a, B, T, lora, (n) => n)).reduce((s, n) => s + n, 0);
}

export function destroyTrainActs(acts: DecoderTrainActs): void {
  for (const b of trainActBuffers(acts)) b.destroy();
}
