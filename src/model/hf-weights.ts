/**
 * Hugging Face tensor names and layouts <-> the engine's tensors (arch.ts decoderTensors).
 *
 * Each engine tensor is one or more checkpoint tensors stacked along rows: q_proj, k_proj and
 * v_proj make `qkv`; gate_proj and up_proj make `up`. GPT-2's Conv1D weights are stored
 * (in, out) and are transposed to (out, in). The mapping is one table (`hfLayout`) read both
 * ways: loading (`weightsFromHf`) and export (`weightsToHf`).
 */
import { archDims, decoderTensors, layerTensor, type DecoderArch } from './arch';

/** One checkpoint tensor and where it goes in its engine tensor. */
export interface HfPart {
  /** the checkpoint's name, e.g. model.layers.0.self_attn.q_proj.weight */
  name: string;
  /** its shape in the checkpoint */
  shape: number[];
  /** stored (in, out): transposed to the engine's (out, in) */
  transpose: boolean;
  /** what the shape comes from, for errors: "(num_attention_heads x head_dim, hidden_size)" */
  explain: string;
}

export interface HfTensorLayout {
  /** the engine tensor's name (arch.ts decoderTensors) */
  engine: string;
  shape: number[];
  /** its parts, stacked along rows in this order */
  parts: HfPart[];
}

/** Checkpoint tensors the engine does not need and that transformers itself ignores or rebuilds. */
function ignorable(name: string, a: DecoderArch): boolean {
  if (/(^|\.)attn\.(masked_)?bias$/.test(name)) return a.family === 'gpt2'; // GPT-2's causal-mask buffers
  if (/\.rotary_emb\.inv_freq$/.test(name)) return true; // older Llama checkpoints saved the rope buffer
  if (name === 'lm_head.weight') return a.tiedEmbeddings; // tied: transformers uses the embedding
  return false;
}

export class HfWeightsError extends Error {
  override readonly name = 'HfWeightsError';
}

/**
 * The checkpoint layout of an architecture. `prefix` is GPT-2's optional `transformer.` (the
 * real gpt2 file has none, distilgpt2 and files saved from GPT2LMHeadModel have it).
 */
export function hfLayout(a: DecoderArch, prefix = ''): HfTensorLayout[] {
  const { dModel: C, vocabSize: V, dFf: F, maxPositions: maxT } = a;
  const { QD, KVD } = archDims(a);
  const gpt2 = a.family === 'gpt2';
  const w = gpt2 ? 'n_embd' : 'hidden_size';
  const rows = new Map<string, HfPart[]>();
  const part = (engine: string, name: string, shape: number[], explain: string, transpose = false) => {
    const list = rows.get(engine) ?? [];
    list.push({ name, shape, transpose, explain });
    rows.set(engine, list);
  };
  const tt = (shape: number[]) => [shape[1]!, shape[0]!]; // Conv1D stores (in, out)
  if (gpt2) {
    const p = prefix;
    part('embed', `${p}wte.weight`, [V, C], '(vocab_size, n_embd)');
    part('pos', `${p}wpe.weight`, [maxT, C], '(n_positions, n_embd)');
    for (let l = 0; l < a.nLayer; l++) {
      const h = `${p}h.${l}.`;
      const e = (n: string) => layerTensor(l, n);
      part(e('norm1.w'), `${h}ln_1.weight`, [C], '(n_embd)');
      part(e('norm1.b'), `${h}ln_1.bias`, [C], '(n_embd)');
      part(e('qkv.w'), `${h}attn.c_attn.weight`, tt([3 * C, C]), '(n_embd, 3 x n_embd)', true);
      part(e('qkv.b'), `${h}attn.c_attn.bias`, [3 * C], '(3 x n_embd)');
      part(e('o.w'), `${h}attn.c_proj.weight`, tt([C, C]), '(n_embd, n_embd)', true);
      part(e('o.b'), `${h}attn.c_proj.bias`, [C], '(n_embd)');
      part(e('norm2.w'), `${h}ln_2.weight`, [C], '(n_embd)');
      part(e('norm2.b'), `${h}ln_2.bias`, [C], '(n_embd)');
      part(e('up.w'), `${h}mlp.c_fc.weight`, tt([F, C]), '(n_embd, n_inner)', true);
      part(e('up.b'), `${h}mlp.c_fc.bias`, [F], '(n_inner)');
      part(e('down.w'), `${h}mlp.c_proj.weight`, tt([C, F]), '(n_inner, n_embd)', true);
      part(e('down.b'), `${h}mlp.c_proj.bias`, [C], '(n_embd)');
    }
    part('normf.w', `${p}ln_f.weight`, [C], '(n_embd)');
    part('normf.b', `${p}ln_f.bias`, [C], '(n_embd)');
  } else {
    part('embed', 'model.embed_tokens.weight', [V, C], `(vocab_size, ${w})`);
    for (let l = 0; l < a.nLayer; l++) {
      const h = `model.layers.${l}.`;
      const e = (n: string) => layerTensor(l, n);
      const qd = '(num_attention_heads x head_dim';
      const kvd = '(num_key_value_heads x head_dim';
      part(e('norm1.w'), `${h}input_layernorm.weight`, [C], `(${w})`);
      part(e('qkv.w'), `${h}self_attn.q_proj.weight`, [QD, C], `${qd}, ${w})`);
      part(e('qkv.w'), `${h}self_attn.k_proj.weight`, [KVD, C], `${kvd}, ${w})`);
      part(e('qkv.w'), `${h}self_attn.v_proj.weight`, [KVD, C], `${kvd}, ${w})`);
      part(e('qkv.b'), `${h}self_attn.q_proj.bias`, [QD], `${qd})`);
      part(e('qkv.b'), `${h}self_attn.k_proj.bias`, [KVD], `${kvd})`);
      part(e('qkv.b'), `${h}self_attn.v_proj.bias`, [KVD], `${kvd})`);
      part(e('o.w'), `${h}self_attn.o_proj.weight`, [C, QD], `(${w}, num_attention_heads x head_dim)`);
      part(e('o.b'), `${h}self_attn.o_proj.bias`, [C], `(${w})`);
      part(e('norm2.w'), `${h}post_attention_layernorm.weight`, [C], `(${w})`);
      part(e('up.w'), `${h}mlp.gate_proj.weight`, [F, C], `(intermediate_size, ${w})`);
      part(e('up.w'), `${h}mlp.up_proj.weight`, [F, C], `(intermediate_size, ${w})`);
      part(e('up.b'), `${h}mlp.gate_proj.bias`, [F], '(intermediate_size)');
      part(e('up.b'), `${h}mlp.up_proj.bias`, [F], '(intermediate_size)');
      part(e('down.w'), `${h}mlp.down_proj.weight`, [C, F], `(${w}, intermediate_size)`);
      part(e('down.b'), `${h}mlp.down_proj.bias`, [C], `(${w})`);
    }
    part('normf.w', 'model.norm.weight', [C], `(${w})`);
  }
  part('head', 'lm_head.weight', [V, C], `(vocab_size, ${w})`);
  // Keep only what this architecture has (biases, the learned positions, an untied head).
  return decoderTensors(a).map((t) => {
    const parts = rows.get(t.name);
    if (!parts) throw new Error(`hfLayout: no checkpoint name for engine tensor ${t.name}`);
    return { engine: t.name, shape: t.shape, parts };
  });
}

/** A checkpoint tensor as the reader gives it (safetensors.ts), with the file it came from. */
export interface HfTensor {
  shape: number[];
  data: Float32Array;
  file: string;
}

/**
 * The engine's tensors from a checkpoint's, checked against the architecture before any GPU
 * work: a missing tensor, a shape that does not fit the config and a tensor the architecture does
 * not have are refused, naming the tensor, its file and the config fields the shape comes from.
 */
export function weightsFromHf(
  a: DecoderArch,
  tensors: ReadonlyMap<string, HfTensor>,
  configFile = 'config.json',
): Map<string, Float32Array> {
  const prefix = a.family === 'gpt2' && !tensors.has('wte.weight') && tensors.has('transformer.wte.weight') ? 'transformer.' : '';
  const layout = hfLayout(a, prefix);
  const files = [...new Set([...tensors.values()].map((t) => t.file))].join(', ') || 'the checkpoint';
  const used = new Set<string>();
  const out = new Map<string, Float32Array>();
  for (const t of layout) {
    const only = t.parts.length === 1 && !t.parts[0]!.transpose ? tensors.get(t.parts[0]!.name) : undefined;
    // one untransposed part of the right shape is used as it is (no copy of a big embedding)
    const data = only && sameShape(only.shape, t.shape) ? only.data : new Float32Array(t.shape.reduce((x, y) => x * y, 1));
    let row = 0;
    const cols = t.shape.length === 2 ? t.shape[1]! : 1;
    for (const p of t.parts) {
      const got = tensors.get(p.name);
      if (!got) {
        const near = [...tensors.keys()].find((k) => k.endsWith(p.name.split('.').slice(-3).join('.')));
        throw new HfWeightsError(
          `${files}: missing tensor ${p.name} (${shapeText(p.shape)} = ${p.explain} from ${configFile})` +
            (near ? `; found ${near} instead` : ''),
        );
      }
      used.add(p.name);
      if (!sameShape(got.shape, p.shape)) {
        throw new HfWeightsError(
          `${got.file}: tensor ${p.name} has shape ${shapeText(got.shape)}, but ${configFile} gives ${shapeText(p.shape)} = ${p.explain}`,
        );
      }
      const prows = p.transpose ? p.shape[1]! : p.shape[0]!;
      if (p.transpose) {
        const [inp, o] = p.shape as [number, number];
        for (let i = 0; i < inp; i++) for (let j = 0; j < o; j++) data[(row + j) * cols + i] = got.data[i * o + j]!;
      } else if (data !== got.data) {
        data.set(got.data, row * cols);
      }
      row += t.shape.length === 2 ? prows : got.data.length;
    }
    out.set(t.engine, data);
  }
  const extra = [...tensors.keys()].filter(
    (k) => !used.has(k) && !ignorable(k.startsWith(prefix) ? k.slice(prefix.length) : k, a) && !ignorable(k, a),
  );
  if (extra.length) {
    const t = tensors.get(extra[0]!)!;
    throw new HfWeightsError(
      `${t.file}: tensor ${extra[0]} is not part of ${a.hfArchitecture} as ${configFile} describes it` +
        (extra.length > 1 ? ` (and ${extra.length - 1} more: ${extra.slice(1, 4).join(', ')}${extra.length > 4 ? ', ...' : ''})` : '') +
        (extra[0]!.startsWith('lm_head') ? '; is tie_word_embeddings right?' : ''),
    );
  }
  return out;
}

/** The checkpoint tensors (names, shapes, values) of engine tensors: the inverse of weightsFromHf. */
export function weightsToHf(
  a: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
): { name: string; shape: number[]; data: Float32Array }[] {
  const out: { name: string; shape: number[]; data: Float32Array }[] = [];
  for (const t of hfLayout(a)) {
    const data = weights.get(t.engine);
    if (!data) throw new Error(`weightsToHf: no engine tensor ${t.engine}`);
    const cols = t.shape.length === 2 ? t.shape[1]! : 1;
    let row = 0;
    for (const p of t.parts) {
      const size = p.shape.reduce((x, y) => x * y, 1);
      const part = new Float32Array(size);
      if (p.transpose) {
        const [inp, o] = p.shape as [number, number];
        for (let i = 0; i < inp; i++) for (let j = 0; j < o; j++) part[i * o + j] = data[(row + j) * cols + i]!;
        row += o;
      } else {
        part.set(data.subarray(row * cols, row * cols + size));
        row += t.shape.length === 2 ? p.shape[0]! : size;
      }
      out.push({ name: p.name, shape: p.shape, data: part });
    }
  }
  return out;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function shapeText(s: readonly number[]): string {
  return `[${s.join(', ')}]`;
}
