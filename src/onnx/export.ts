/**
 * Exports the policy (GPT-2-style LM head) and the value head as a standard ONNX graph (opset 17,
 * standard domain only), the same math as cpu.ts / the WGSL kernels, weights as initializers
 * named after the parameter table (`wte`, `h0.qkvw`, ...; [out, in] as stored, transposed by
 * Transpose nodes that onnxruntime folds at load).
 *
 * Graph interface (B = batch, T = sequence, P = past_sequence, S = P + T, V, NH, HS as in config.ts):
 *   inputs   input_ids                int64 [batch, sequence]
 *            attention_mask           int64 [batch, total_sequence]   1 = real token, 0 = padding, over past and new
 *                                                                     keys (optional, default on)
 *            position_ids             int64 [batch, sequence]         (optional, default on; else P..S-1)
 *            past_key_values.{i}.key  float [batch, NH, past_sequence, HS]   (KV variant)
 *            past_key_values.{i}.value float [batch, NH, past_sequence, HS]  (KV variant)
 *   outputs  logits                   float [batch, sequence, V]
 *            values                   float [batch, sequence]          the value head
 *            present.{i}.key / .value float [batch, NH, total_sequence, HS] (KV variant: past ++ new)
 * Masking matches attention_ref.ts: query at absolute index q sees key j iff j == q, or j <= q and
 * attention_mask[b, j] = 1 (a padding query sees only itself, so no row is all-masked). The KV
 * variant with past_sequence = 0 is the prefill. GELU is GPT-2's tanh form, as in kernels/gelu.ts.
 */
import type { ModelSnapshot } from '../model/model-file';
import type { ModelConfig } from '../model/config';
import { layerParam, paramTable, view } from '../model/params';
import { attr, GraphBuilder } from './graph';
import { causalFrame, gelu, layerNorm } from './lm-graph';
import { DataType, encodeModel, type ModelProto } from './proto';

/** metadata_props key -> value written into every export. */
export const META = {
  format: 'coderl.format',
  formatVersion: 'coderl.format_version',
  config: 'coderl.config',
  kvCache: 'coderl.kv_cache',
  kvLayout: 'coderl.kv_layout',
  tokenizer: 'coderl.tokenizer',
} as const;
export const FORMAT = 'coderl-onnx-lm';
export const FORMAT_VERSION = '1';
export const KV_LAYOUT = '[batch, heads, past_sequence, head_size]';

export interface ExportOptions {
  /** past_key_values.{i}.* inputs and present.{i}.* outputs (default false) */
  kvCache?: boolean;
  /** a position_ids input (default true); without it positions are P..S-1 */
  positionIds?: boolean;
  /** an attention_mask input (default true); without it every key is a real token */
  attentionMask?: boolean;
  /** file name of the tokenizer sidecar, recorded in the metadata */
  tokenizerFile?: string;
}

/** Names of the KV inputs and outputs of layer i. */
export const kvNames = (i: number) => ({
  pastKey: `past_key_values.${i}.key`,
  pastValue: `past_key_values.${i}.value`,
  presentKey: `present.${i}.key`,
  presentValue: `present.${i}.value`,
});

/** `dir/M.onnx` -> `dir/M.tokenizer.json`: where the tokenizer sidecar of a model file lives. */
export function tokenizerSidecarPath(modelPath: string): string {
  return modelPath.replace(/(\.onnx)?$/i, '.tokenizer.json');
}

export function exportOnnx(snap: Pick<ModelSnapshot, 'config' | 'params'>, opts: ExportOptions = {}): Uint8Array {
  return encodeModel(buildOnnxModel(snap, opts));
}

export function buildOnnxModel(snap: Pick<ModelSnapshot, 'config' | 'params'>, opts: ExportOptions = {}): ModelProto {
  const cfg = snap.config;
  const { nLayer: L, dModel: C, nHead: NH, vocabSize: V } = cfg;
  const HS = C / NH;
  const kv = opts.kvCache === true;
  const table = paramTable(cfg);
  if (snap.params.length !== table.total)
    throw new Error(`exportOnnx: parameter slab has ${snap.params.length} floats, the table needs ${table.total}`);
  const g = new GraphBuilder();
  const added = new Set<string>();
  const w = (name: string) =>
    added.has(name) ? name : (added.add(name), g.weight(name, table.byName.get(name)!.shape, view(table, snap.params, name)));
  const wT = (name: string) => g.op('Transpose', [w(name)], { attrs: [attr.ints('perm', [1, 0])], prefix: name }); // (in, out)

  const ids = g.input('input_ids', DataType.INT64, ['batch', 'sequence']);
  const mask =
    opts.attentionMask === false ? null : g.input('attention_mask', DataType.INT64, ['batch', kv ? 'total_sequence' : 'sequence']);
  const posIds = opts.positionIds === false ? null : g.input('position_ids', DataType.INT64, ['batch', 'sequence']);
  const past = kv
    ? Array.from({ length: L }, (_, i) => {
        const n = kvNames(i);
        return {
          k: g.input(n.pastKey, DataType.FLOAT, ['batch', NH, 'past_sequence', HS]),
          v: g.input(n.pastValue, DataType.FLOAT, ['batch', NH, 'past_sequence', HS]),
        };
      })
    : null;

  // T new rows, P past rows, S = P + T keys; qIdx (T) each query's absolute index; allowed (B or 1, 1, T, S)
  const { qIdx, allowed } = causalFrame(g, ids, past ? past[0]!.k : null, mask);

  // embeddings: wte[ids] + wpe[positions]
  const positions = posIds ?? g.op('Unsqueeze', [qIdx, g.i64([0])]); // (B or 1, T)
  let x = g.op('Add', [g.op('Gather', [w('wte'), ids]), g.op('Gather', [w('wpe'), positions])], { prefix: 'embed' }); // (B, T, C)

  const scale = g.f32(1 / Math.sqrt(HS));
  const negBig = g.f32(-1e9);
  const headShape = g.i64([0, 0, NH, HS]);
  const present: string[] = [];
  for (let l = 0; l < L; l++) {
    const p = (n: string) => layerParam(l, n);
    const pre = `h${l}`;
    const ln1 = layerNorm(g, x, w(p('ln1w')), w(p('ln1b')), pre);
    const qkv = g.op('Add', [g.op('MatMul', [ln1, wT(p('qkvw'))], { prefix: pre }), w(p('qkvb'))], { prefix: pre }); // (B, T, 3C)
    const [q, k, v] = g.opN('Split', [qkv, g.i64([C, C, C])], { attrs: [attr.int('axis', 2)], outputs: 3, prefix: pre });
    const heads = (t: string) =>
      g.op('Transpose', [g.op('Reshape', [t, headShape], { prefix: pre })], { attrs: [attr.ints('perm', [0, 2, 1, 3])], prefix: pre }); // (B, NH, T, HS)
    let kh = heads(k!);
    let vh = heads(v!);
    if (past) {
      const n = kvNames(l);
      kh = g.op('Concat', [past[l]!.k, kh], { attrs: [attr.int('axis', 2)], out: n.presentKey }); // (B, NH, S, HS)
      vh = g.op('Concat', [past[l]!.v, vh], { attrs: [attr.int('axis', 2)], out: n.presentValue });
      present.push(n.presentKey, n.presentValue);
    }
    const kt = g.op('Transpose', [kh], { attrs: [attr.ints('perm', [0, 1, 3, 2])], prefix: pre }); // (B, NH, HS, S)
    const scores = g.op('Mul', [g.op('MatMul', [heads(q!), kt], { prefix: pre }), scale], { prefix: pre }); // (B, NH, T, S)
    const att = g.op('Softmax', [g.op('Where', [allowed, scores, negBig], { prefix: pre })], {
      attrs: [attr.int('axis', -1)],
      prefix: pre,
    });
    const y = g.op('Transpose', [g.op('MatMul', [att, vh], { prefix: pre })], { attrs: [attr.ints('perm', [0, 2, 1, 3])], prefix: pre }); // (B, T, NH, HS)
    const yc = g.op('Reshape', [y, g.i64([0, 0, C])], { prefix: pre }); // (B, T, C)
    const attproj = g.op('Add', [g.op('MatMul', [yc, wT(p('attprojw'))], { prefix: pre }), w(p('attprojb'))], { prefix: pre });
    const x2 = g.op('Add', [x, attproj], { prefix: pre });
    const ln2 = layerNorm(g, x2, w(p('ln2w')), w(p('ln2b')), pre);
    const fch = g.op('Add', [g.op('MatMul', [ln2, wT(p('fcw'))], { prefix: pre }), w(p('fcb'))], { prefix: pre }); // (B, T, 4C)
    const fcproj = g.op('Add', [g.op('MatMul', [gelu(g, fch, pre), wT(p('fcprojw'))], { prefix: pre }), w(p('fcprojb'))], { prefix: pre });
    x = g.op('Add', [x2, fcproj], { prefix: pre });
  }
  const lnf = layerNorm(g, x, w('lnfw'), w('lnfb'), 'lnf');
  g.op('MatMul', [lnf, wT('wte')], { out: 'logits' }); // tied LM head, (B, T, V)
  const v1 = g.op('Add', [g.op('MatMul', [lnf, wT('valuew')]), w('valueb')], { prefix: 'value' }); // (B, T, 1)
  g.op('Squeeze', [v1, g.i64([2])], { out: 'values' }); // (B, T)

  g.output('logits', DataType.FLOAT, ['batch', 'sequence', V]);
  g.output('values', DataType.FLOAT, ['batch', 'sequence']);
  for (const n of present) g.output(n, DataType.FLOAT, ['batch', NH, 'total_sequence', HS]);

  return g.model({
    graphName: kv ? 'coderl_policy_kv' : 'coderl_policy',
    docString: 'Code RL Lab policy: GPT-2-style causal LM (logits) with a value head (values). See src/onnx/export.ts.',
    metadata: exportMetadata(cfg, kv, opts.tokenizerFile),
  });
}

function exportMetadata(cfg: ModelConfig, kv: boolean, tokenizerFile: string | undefined): Record<string, string> {
  const m: Record<string, string> = {
    [META.format]: FORMAT,
    [META.formatVersion]: FORMAT_VERSION,
    [META.config]: JSON.stringify({
      nLayer: cfg.nLayer,
      dModel: cfg.dModel,
      nHead: cfg.nHead,
      contextLength: cfg.contextLength,
      vocabSize: cfg.vocabSize,
    }),
    [META.kvCache]: String(kv),
  };
  if (kv) m[META.kvLayout] = KV_LAYOUT;
  if (tokenizerFile) m[META.tokenizer] = tokenizerFile;
  return m;
}
