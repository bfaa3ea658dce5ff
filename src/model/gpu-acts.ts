/**
 * GPU buffers for one batch shape (B, T): the activations the forward saves for backward,
 * the backward's scratch, and the per-batch inputs. Shape legend: see config.ts.
 */
import type { GpuRuntime } from '../gpu/runtime';
import type { ModelConfig } from './config';

export interface LayerBuffers {
  ln1: GPUBuffer; // (BT, C)
  ln1Mean: GPUBuffer; // (BT)
  ln1Rstd: GPUBuffer; // (BT)
  qkv: GPUBuffer; // (BT, 3C)
  atty: GPUBuffer; // (BT, C)
  att: GPUBuffer; // (B, NH, T, T)
  residual2: GPUBuffer; // (BT, C)
  ln2: GPUBuffer; // (BT, C)
  ln2Mean: GPUBuffer; // (BT)
  ln2Rstd: GPUBuffer; // (BT)
  fch: GPUBuffer; // (BT, 4C) pre-activation
  fchGelu: GPUBuffer; // (BT, 4C)
}

export interface ActBuffers {
  B: number;
  T: number;
  /** the residual stream: resid[0] is the embedding, resid[l + 1] the output of block l */
  resid: GPUBuffer[]; // (L + 1) x (BT, C)
  layers: LayerBuffers[];
  lnf: GPUBuffer; // (BT, C)
  lnfMean: GPUBuffer; // (BT)
  lnfRstd: GPUBuffer; // (BT)
  logits: GPUBuffer; // (BT, V)
  values: GPUBuffer; // (BT)
  proj: GPUBuffer; // (BT, C) output of attproj / fcproj before the residual add
  // backward scratch
  dresid: GPUBuffer; // (BT, C)
  dln: GPUBuffer; // (BT, C) dlnf, dln2, dln1 in turn
  datty: GPUBuffer; // (BT, C)
  dfchGelu: GPUBuffer; // (BT, 4C)
  dfch: GPUBuffer; // (BT, 4C)
  dqkv: GPUBuffer; // (BT, 3C)
  dpre: GPUBuffer; // (B, NH, T, T)
  dlogits: GPUBuffer; // (BT, V)
  dvalues: GPUBuffer; // (BT)
  losses: GPUBuffer; // (BT)
  // inputs
  tokens: GPUBuffer; // (BT) u32
  positions: GPUBuffer; // (BT) u32
  start: GPUBuffer; // (B) u32
  targets: GPUBuffer; // (BT) u32
  mask: GPUBuffer; // (BT) f32
}

export function allocActs(rt: GpuRuntime, cfg: ModelConfig, B: number, T: number): ActBuffers {
  const { nLayer: L, dModel: C, nHead: NH, vocabSize: V } = cfg;
  const BT = B * T;
  const f = (n: number, label: string) => rt.storage(n * 4, label);
  const layers: LayerBuffers[] = [];
  for (let l = 0; l < L; l++) {
    const p = (s: string) => `h${l}.${s}`;
    layers.push({
      ln1: f(BT * C, p('ln1')),
      ln1Mean: f(BT, p('ln1Mean')),
      ln1Rstd: f(BT, p('ln1Rstd')),
      qkv: f(BT * 3 * C, p('qkv')),
      atty: f(BT * C, p('atty')),
      att: f(B * NH * T * T, p('att')),
      residual2: f(BT * C, p('residual2')),
      ln2: f(BT * C, p('ln2')),
      ln2Mean: f(BT, p('ln2Mean')),
      ln2Rstd: f(BT, p('ln2Rstd')),
      fch: f(BT * 4 * C, p('fch')),
      fchGelu: f(BT * 4 * C, p('fchGelu')),
    });
  }
  return {
    B,
    T,
    layers,
    resid: Array.from({ length: L + 1 }, (_, l) => f(BT * C, `resid${l}`)),
    lnf: f(BT * C, 'lnf'),
    lnfMean: f(BT, 'lnfMean'),
    lnfRstd: f(BT, 'lnfRstd'),
    logits: f(BT * V, 'logits'),
    values: f(BT, 'values'),
    proj: f(BT * C, 'proj'),
    dresid: f(BT * C, 'dresid'),
    dln: f(BT * C, 'dln'),
    datty: f(BT * C, 'datty'),
    dfchGelu: f(BT * 4 * C, 'dfchGelu'),
    dfch: f(BT * 4 * C, 'dfch'),
    dqkv: f(BT * 3 * C, 'dqkv'),
    dpre: f(B * NH * T * T, 'dpre'),
    dlogits: f(BT * V, 'dlogits'),
    dvalues: f(BT, 'dvalues'),
    losses: f(BT, 'losses'),
    tokens: f(BT, 'tokens'),
    positions: f(BT, 'positions'),
    start: f(B, 'start'),
    targets: f(BT, 'targets'),
    mask: f(BT, 'mask'),
  };
}

export function destroyActs(a: ActBuffers): void {
  const all: GPUBuffer[] = [];
  for (const v of Object.values(a)) {
    if (v instanceof GPUBuffer) all.push(v);
    else if (Array.isArray(v)) for (const x of v) all.push(...(x instanceof GPUBuffer ? [x] : Object.values(x as LayerBuffers)));
  }
  for (const b of all) b.destroy();
}
