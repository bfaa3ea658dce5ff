/**
 * Exports an imported decoder (model/arch.ts: GPT-2, Llama, Qwen2 as data) with its engine
 * tensors as a standard ONNX causal LM (opset 17, standard domain only), the same math as
 * decoder-cpu.ts, weights as initializers named after the engine's tensors (`embed`,
 * `layers.0.qkv.w`, ...; (out, in) as stored, transposed by Transpose nodes that onnxruntime
 * folds at load; the LM head a Gemm with transB, so a tied embedding is stored and held once).
 *
 * Graph interface (the lab GPT's export, export.ts, without the value head; NKV = key/value heads):
 *   inputs   input_ids                 int64 [batch, sequence]
 *            attention_mask            int64 [batch, total_sequence]   1 = real token, 0 = padding, over past
 *                                                                      and new keys (plain graph: [batch, sequence])
 *            position_ids              int64 [batch, sequence]
 *            past_key_values.{i}.key   float [batch, NKV, past_sequence, HS]   (KV variant)
 *            past_key_values.{i}.value float [batch, NKV, past_sequence, HS]   (KV variant)
 *   outputs  logits                    float [batch, sequence, V]      ([batch, 1, V] with lastLogitsOnly)
 *            present.{i}.key / .value  float [batch, NKV, total_sequence, HS] (KV variant: past ++ new)
 * Keys and values are stored per kv head (after RoPE, as transformers' cache holds them); query
 * head h reads kv head floor(h / (NH / NKV)). The grouped heads are never copied: q is reshaped
 * (B, NH, T, HS) -> (B, NKV, G*T, HS) (G = NH / NKV, heads of a group adjacent), so one MatMul per
 * layer scores a group's queries against its shared keys, and the scores are reshaped back to
 * (B, NH, T, S) for the mask and the softmax. Masking as export.ts (kernels/attention_ref.ts
 * attends): query q sees key j iff j == q, or j <= q and attention_mask[b, j] = 1.
 *
 * Pieces by architecture: LayerNorm (LayerNormalization) or RMSNorm written out as
 * x / Sqrt(ReduceMean(Pow(x, 2)) + eps) * w (the pattern onnxruntime fuses); learned positions
 * (a second Gather, added) or RoPE in the rotate-half layout (x cos + rotate_half(x) sin, the
 * (positions, HS) cos and sin tables float64-built as kernels/rope.ts ropeTables, Gathered by
 * position_ids); GPT-2's tanh GELU or SwiGLU (the fused gate|up matrix, Split, silu(gate) * up);
 * biases where the architecture has them.
 */
import { archDims, decoderTensors, layerTensor, type DecoderArch } from '../model/arch';
import { ropeTables } from '../kernels/rope';
import { kvNames, META } from './export';
import { attr, GraphBuilder } from './graph';
import { causalFrame, gelu, layerNorm } from './lm-graph';
import { DataType, encodeModel, type ModelProto } from './proto';

/** Our exports of imported decoders say so in metadata_props (coderl.format). */
export const DECODER_FORMAT = 'coderl-onnx-decoder';
export const DECODER_FORMAT_VERSION = '1';
export const DECODER_META = {
  ...META,
  /** the DecoderArch, JSON */
  arch: 'coderl.arch',
  /** positions the graph serves (the RoPE tables' rows; the learned table's for GPT-2) */
  contextLength: 'coderl.context_length',
  /** 'all' (every position's logits) or 'last' */
  logits: 'coderl.logits',
} as const;
export const DECODER_KV_LAYOUT = '[batch, kv_heads, past_sequence, head_size]';

/** protobuf messages (an .onnx file without external data) cannot exceed 2 GiB. */
export const ONNX_MAX_BYTES = 2 ** 31 - 1;

export interface DecoderExportOptions {
  /** past_key_values.{i}.* inputs and present.{i}.* outputs (default false) */
  kvCache?: boolean;
  /**
   * positions the graph serves: the RoPE tables' rows (default the architecture's maxPositions);
   * a learned position table always keeps its maxPositions rows
   */
  contextLength?: number;
  /**
   * logits of the last position only, [batch, 1, V] (default false: every position). The prefill
   * of a generation needs only those; the LM head over every prompt position is most of a big
   * vocabulary's prefill work (and B*T*V floats to hold).
   */
  lastLogitsOnly?: boolean;
  /** file name of the tokenizer next to the model, recorded in the metadata */
  tokenizerFile?: string;
}

export class DecoderExportError extends Error {
  override readonly name = 'DecoderExportError';
}

export function exportDecoderOnnx(
  arch: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
  opts: DecoderExportOptions = {},
): Uint8Array {
  return encodeModel(buildDecoderOnnxModel(arch, weights, opts));
}

/** Bytes of the weights an export holds (the file is a little larger: graph and tables). */
export function decoderExportWeightBytes(arch: DecoderArch): number {
  return decoderTensors(arch).reduce((s, t) => s + 4 * t.shape.reduce((a, b) => a * b, 1), 0);
}

export function buildDecoderOnnxModel(
  arch: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
  opts: DecoderExportOptions = {},
): ModelProto {
  const a = arch;
  const { nLayer: L, dModel: C, nHead: NH, nKvHead: NKV, headDim: HS, vocabSize: V, dFf: F } = a;
  const { QD, KVD } = archDims(a);
  const G = NH / NKV;
  const kv = opts.kvCache === true;
  const ctx = opts.contextLength ?? a.maxPositions;
  if (!Number.isInteger(ctx) || ctx < 1 || ctx > a.maxPositions)
    throw new DecoderExportError(`exportDecoderOnnx: contextLength must be an integer in 1..${a.maxPositions}, got ${ctx}`);
  const specs = decoderTensors(a);
  let bytes = 0;
  for (const t of specs) {
    const w = weights.get(t.name);
    const size = t.shape.reduce((x, y) => x * y, 1);
    if (!w) throw new DecoderExportError(`exportDecoderOnnx: no tensor ${t.name}`);
    if (w.length !== size)
      throw new DecoderExportError(`exportDecoderOnnx: tensor ${t.name} has ${w.length} values, its shape [${t.shape}] needs ${size}`);
    bytes += size * 4;
  }
  if (a.positions.kind === 'rope') bytes += 2 * ctx * HS * 4;
  if (bytes > ONNX_MAX_BYTES)
    throw new DecoderExportError(
      `exportDecoderOnnx: ${(bytes / 2 ** 30).toFixed(2)} GiB of float32 weights exceed the 2 GiB an ONNX protobuf file can hold`,
    );

  const g = new GraphBuilder();
  const shapes = new Map(specs.map((t) => [t.name, t.shape]));
  const added = new Set<string>();
  const w = (name: string) => (added.has(name) ? name : (added.add(name), g.weight(name, shapes.get(name)!, weights.get(name)!)));
  const wOpt = (name: string) => (shapes.has(name) ? w(name) : null);
  /** x (.., in) @ W^T + b: W stored (out, in), transposed by a node onnxruntime folds */
  const linear = (x: string, name: string, pre: string) => {
    const y = g.op('MatMul', [x, g.op('Transpose', [w(`${name}.w`)], { attrs: [attr.ints('perm', [1, 0])], prefix: name })], {
      prefix: pre,
    });
    const b = wOpt(`${name}.b`);
    return b ? g.op('Add', [y, b], { prefix: pre }) : y;
  };
  const norm = (x: string, name: string, pre: string) => {
    if (a.norm.kind === 'layernorm') return layerNorm(g, x, w(`${name}.w`), w(`${name}.b`), pre, a.norm.eps);
    const o = { prefix: `${pre}/rmsnorm` };
    const ms = g.op('ReduceMean', [g.op('Pow', [x, g.f32(2)], o)], { ...o, attrs: [attr.ints('axes', [-1]), attr.int('keepdims', 1)] });
    const r = g.op('Sqrt', [g.op('Add', [ms, g.f32(a.norm.eps)], o)], o);
    return g.op('Mul', [g.op('Div', [x, r], o), w(`${name}.w`)], o);
  };

  const ids = g.input('input_ids', DataType.INT64, ['batch', 'sequence']);
  const mask = g.input('attention_mask', DataType.INT64, ['batch', kv ? 'total_sequence' : 'sequence']);
  const posIds = g.input('position_ids', DataType.INT64, ['batch', 'sequence']);
  const past = kv
    ? Array.from({ length: L }, (_, i) => {
        const n = kvNames(i);
        return {
          k: g.input(n.pastKey, DataType.FLOAT, ['batch', NKV, 'past_sequence', HS]),
          v: g.input(n.pastValue, DataType.FLOAT, ['batch', NKV, 'past_sequence', HS]),
        };
      })
    : null;
  const { allowed } = causalFrame(g, ids, past ? past[0]!.k : null, mask); // (B, 1, T, S)

  // x (B, T, C): the token's row (+ the position's row)
  let x = g.op('Gather', [w('embed'), ids], { prefix: 'embed' });
  if (a.positions.kind === 'learned') x = g.op('Add', [x, g.op('Gather', [w('pos'), posIds], { prefix: 'embed' })], { prefix: 'embed' });

  // RoPE: cos, sin (B, 1, T, HS) for the rows' positions, each table's halves equal (HF's layout)
  let rope: ((t: string, pre: string) => string) | null = null;
  if (a.positions.kind === 'rope') {
    const H = HS / 2;
    const { cos, sin } = ropeTables(ctx, HS, a.positions.theta);
    const full = (t: Float32Array) => {
      const out = new Float32Array(ctx * HS);
      for (let p = 0; p < ctx; p++) for (let i = 0; i < H; i++) out[p * HS + i] = out[p * HS + H + i] = t[p * H + i]!;
      return out;
    };
    const table = (name: string, t: Float32Array) =>
      g.op('Unsqueeze', [g.op('Gather', [g.weight(name, [ctx, HS], full(t)), posIds], { prefix: 'rope' }), g.i64([1])], { prefix: 'rope' });
    const c = table('rope.cos', cos);
    const s = table('rope.sin', sin);
    rope = (t, pre) => {
      const o = { prefix: `${pre}/rope` };
      const [x1, x2] = g.opN('Split', [t, g.i64([H, H])], { attrs: [attr.int('axis', -1)], outputs: 2, prefix: o.prefix });
      const rot = g.op('Concat', [g.op('Neg', [x2!], o), x1!], { ...o, attrs: [attr.int('axis', -1)] }); // rotate_half
      return g.op('Add', [g.op('Mul', [t, c], o), g.op('Mul', [rot, s], o)], o);
    };
  }

  const scale = g.f32(1 / Math.sqrt(HS));
  const negBig = g.f32(-1e9);
  const perm0213 = [attr.ints('perm', [0, 2, 1, 3])];
  const present: string[] = [];
  for (let l = 0; l < L; l++) {
    const pre = `layers.${l}`;
    const p = (n: string) => layerTensor(l, n);
    const qkv = linear(norm(x, p('norm1'), pre), p('qkv'), pre); // (B, T, QD + 2 KVD)
    const [q, k, v] = g.opN('Split', [qkv, g.i64([QD, KVD, KVD])], { attrs: [attr.int('axis', 2)], outputs: 3, prefix: pre });
    const heads = (t: string, n: number) =>
      g.op('Transpose', [g.op('Reshape', [t, g.i64([0, 0, n, HS])], { prefix: pre })], { attrs: perm0213, prefix: pre }); // (B, n, T, HS)
    let qh = heads(q!, NH);
    let kh = heads(k!, NKV);
    let vh = heads(v!, NKV);
    if (rope) {
      qh = rope(qh, pre);
      kh = rope(kh, pre);
    }
    if (past) {
      const n = kvNames(l);
      kh = g.op('Concat', [past[l]!.k, kh], { attrs: [attr.int('axis', 2)], out: n.presentKey }); // (B, NKV, S, HS)
      vh = g.op('Concat', [past[l]!.v, vh], { attrs: [attr.int('axis', 2)], out: n.presentValue });
      present.push(n.presentKey, n.presentValue);
    }
    // a group's G query heads as G*T rows against its kv head: (B, NKV, G*T, HS) x (B, NKV, HS, S)
    const grouped = (t: string, last: number) => (G === 1 ? t : g.op('Reshape', [t, g.i64([0, NKV, -1, last])], { prefix: pre }));
    const perHead = (t: string, last: number) => (G === 1 ? t : g.op('Reshape', [t, g.i64([0, NH, -1, last])], { prefix: pre }));
    const kt = g.op('Transpose', [kh], { attrs: [attr.ints('perm', [0, 1, 3, 2])], prefix: pre }); // (B, NKV, HS, S)
    const scores = perHead(g.op('Mul', [g.op('MatMul', [grouped(qh, HS), kt], { prefix: pre }), scale], { prefix: pre }), 0); // (B, NH, T, S)
    const att = g.op('Softmax', [g.op('Where', [allowed, scores, negBig], { prefix: pre })], {
      attrs: [attr.int('axis', -1)],
      prefix: pre,
    });
    const y = perHead(g.op('MatMul', [grouped(att, 0), vh], { prefix: pre }), HS); // (B, NH, T, HS)
    const yc = g.op('Reshape', [g.op('Transpose', [y], { attrs: perm0213, prefix: pre }), g.i64([0, 0, QD])], { prefix: pre }); // (B, T, QD)
    const x2 = g.op('Add', [x, linear(yc, p('o'), pre)], { prefix: pre });
    const h2 = norm(x2, p('norm2'), pre);
    let act: string;
    if (a.mlp === 'swiglu') {
      const [gate, up] = g.opN('Split', [linear(h2, p('up'), pre), g.i64([F, F])], {
        attrs: [attr.int('axis', -1)],
        outputs: 2,
        prefix: pre,
      });
      act = g.op('Mul', [g.op('Mul', [gate!, g.op('Sigmoid', [gate!], { prefix: pre })], { prefix: pre }), up!], { prefix: pre }); // silu(gate) * up
    } else {
      act = gelu(g, linear(h2, p('up'), pre), pre);
    }
    x = g.op('Add', [x2, linear(act, p('down'), pre)], { prefix: pre });
  }
  let hf = norm(x, 'normf', 'normf'); // (B, T, C)
  if (opts.lastLogitsOnly) hf = g.op('Slice', [hf, g.i64([-1]), g.i64([Number.MAX_SAFE_INTEGER]), g.i64([1])], { prefix: 'last' }); // (B, 1, C)
  // LM head: Gemm over (B*T, C) rows with the (V, C) matrix as stored (transB): the tied embedding is not copied
  const rows = g.op('Reshape', [hf, g.i64([-1, C])], { prefix: 'head' });
  const head = g.op('Gemm', [rows, w(a.tiedEmbeddings ? 'embed' : 'head')], { attrs: [attr.int('transB', 1)], prefix: 'head' }); // (B*T, V)
  const outShape = g.op('Concat', [g.op('Shape', [hf], { attrs: [attr.int('end', 2)], prefix: 'head' }), g.i64([V])], {
    attrs: [attr.int('axis', 0)],
    prefix: 'head',
  });
  g.op('Reshape', [head, outShape], { out: 'logits' }); // (B, T, V)

  g.output('logits', DataType.FLOAT, ['batch', opts.lastLogitsOnly ? 1 : 'sequence', V]);
  for (const n of present) g.output(n, DataType.FLOAT, ['batch', NKV, 'total_sequence', HS]);

  const M = DECODER_META;
  const metadata: Record<string, string> = {
    [M.format]: DECODER_FORMAT,
    [M.formatVersion]: DECODER_FORMAT_VERSION,
    [M.arch]: JSON.stringify(a),
    [M.contextLength]: String(a.positions.kind === 'rope' ? ctx : a.maxPositions),
    [M.logits]: opts.lastLogitsOnly ? 'last' : 'all',
    [M.kvCache]: String(kv),
  };
  if (kv) metadata[M.kvLayout] = DECODER_KV_LAYOUT;
  if (opts.tokenizerFile) metadata[M.tokenizer] = opts.tokenizerFile;
  return g.model({
    graphName: `coderl_${a.family}${kv ? '_kv' : ''}`,
    docString: `${a.hfArchitecture} exported by Code RL Lab (src/onnx/decoder-export.ts): a causal LM, logits only.`,
    metadata,
  });
}
