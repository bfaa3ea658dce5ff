/**
 * Graph pieces both exporters write (export.ts: the lab's GPT; decoder-export.ts: the imported
 * Hugging Face decoders): the causal frame (how many new and past rows, each query's absolute
 * index, the attention mask over past and new keys), LayerNorm and GPT-2's tanh GELU. Standard
 * ops of opset 17 only.
 */
import { LAYERNORM_EPS } from '../kernels/layernorm';
import { attr, type GraphBuilder } from './graph';
import { DataType } from './proto';

/** The sizes of one call: T new rows, P past rows, S = P + T keys, and the rows' indices. */
export interface CausalFrame {
  /** (T) int64: the absolute index P..S-1 of each new row */
  qIdx: string;
  /** (S) int64: 0..S-1 */
  kIdx: string;
  /**
   * (B or 1, 1, T, S) bool: query q sees key j iff j == q or (j <= q and mask[b, j] != 0), as
   * attends() in kernels/attention_ref.ts (a padding query sees only itself: no row is all-masked)
   */
  allowed: string;
}

/**
 * `ids` (B, T) the new tokens; `pastKey` (B, heads, P, HS) any layer's past keys, or null (P = 0);
 * `mask` (B, S) int64, or null (every key real).
 */
export function causalFrame(g: GraphBuilder, ids: string, pastKey: string | null, mask: string | null): CausalFrame {
  const scalar = (x: string) => g.op('Squeeze', [x]);
  const T = scalar(g.op('Gather', [g.op('Shape', [ids]), g.i64([1])]));
  const P = pastKey ? scalar(g.op('Gather', [g.op('Shape', [pastKey]), g.i64([2])])) : g.i64([0], []);
  const S = g.op('Add', [P, T]);
  const qIdx = g.op('Range', [P, S, g.i64([1], [])]);
  const kIdx = g.op('Range', [g.i64([0], []), S, g.i64([1], [])]);
  return { qIdx, kIdx, allowed: attentionAllowed(g, qIdx, kIdx, mask) };
}

/** See CausalFrame.allowed. */
export function attentionAllowed(g: GraphBuilder, qIdx: string, kIdx: string, mask: string | null): string {
  const qCol = g.op('Unsqueeze', [qIdx, g.i64([1])], { prefix: 'mask' }); // (T, 1)
  const kRow = g.op('Unsqueeze', [kIdx, g.i64([0])], { prefix: 'mask' }); // (1, S)
  const causal = g.op('LessOrEqual', [kRow, qCol], { prefix: 'mask' }); // (T, S)
  if (!mask) return causal;
  const self = g.op('Equal', [kRow, qCol], { prefix: 'mask' }); // (T, S)
  const real = g.op('Unsqueeze', [g.op('Cast', [mask], { attrs: [attr.int('to', DataType.BOOL)], prefix: 'mask' }), g.i64([1, 2])], {
    prefix: 'mask',
  }); // (B, 1, 1, S)
  return g.op('Or', [g.op('And', [causal, real], { prefix: 'mask' }), self], { prefix: 'mask' }); // (B, 1, T, S)
}

/** LayerNormalization over the last axis (GPT-2's eps unless given). */
export function layerNorm(g: GraphBuilder, x: string, scale: string, bias: string, prefix: string, eps = LAYERNORM_EPS): string {
  return g.op('LayerNormalization', [x, scale, bias], { attrs: [attr.int('axis', -1), attr.float('epsilon', eps)], prefix });
}

/** 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), kernels/gelu.ts. */
export function gelu(g: GraphBuilder, x: string, prefix: string): string {
  const o = { prefix: `${prefix}/gelu` };
  const x3 = g.op('Mul', [x, g.op('Mul', [x, x], o)], o);
  const inner = g.op('Mul', [g.f32(Math.sqrt(2 / Math.PI)), g.op('Add', [x, g.op('Mul', [g.f32(0.044715), x3], o)], o)], o);
  const onePlus = g.op('Add', [g.f32(1), g.op('Tanh', [inner], o)], o);
  return g.op('Mul', [g.op('Mul', [g.f32(0.5), x], o), onePlus], o);
}
