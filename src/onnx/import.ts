/**
 * Importing a user's ONNX causal LM: the file is decoded (proto.ts) and its interface checked
 * before onnxruntime sees it, the tokenizer file is checked with the repo's loader, and both
 * must agree on the vocabulary. Every rejection names the file and the problem.
 *
 * Accepted interface (names as Hugging Face / Optimum exports use them):
 *   input_ids                     int64 [batch, sequence]                      required
 *   attention_mask                int64 [batch, total_sequence]                optional (1 = token, 0 = padding)
 *   position_ids                  int64 [batch, sequence]                      optional
 *   past_key_values.{i}.key/value float [batch, heads, past_sequence, head]    optional, i = 0..L-1, heads and head fixed
 *   logits                        float [batch, sequence, V]                   required, V fixed = tokenizer vocab
 *   values                        float [batch, sequence]                      optional (a value head; else values are 0)
 *   present.{i}.key/value         float [batch, heads, total_sequence, head]   required with past_key_values
 * Any other input is an error (the policy could not feed it). The context length comes from
 * our export's metadata or from the caller.
 */
import type { ModelConfig } from '../model/config';
import { validateModelConfig } from '../model/config';
import { Tokenizer } from '../tokenizer';
import { FORMAT, kvNames, META } from './export';
import { OnnxPolicy } from './policy';
import { DataType, DATA_TYPE_NAMES, decodeModel, describeValue, OnnxFormatError, type ModelProto, type ValueInfo } from './proto';
import { createSession, OrtError, type Ort } from './runtime';
import { errorText } from '../util/errors';

export class OnnxImportError extends Error {
  override readonly name = 'OnnxImportError';
}

export interface OnnxModelInfo {
  /** file name used in messages */
  file: string;
  /** V: the logits' last dim */
  vocabSize: number;
  hasAttentionMask: boolean;
  hasPositionIds: boolean;
  hasValues: boolean;
  /** KV cache: layers, heads, head size; null without past_key_values inputs */
  kv: { layers: number; heads: number; headSize: number } | null;
  /** our exporter's config (metadata coderl.config), else null */
  config: ModelConfig | null;
  metadata: Record<string, string>;
  producer: string;
  opset: number;
}

const SUPPORTED_INPUTS = 'input_ids, attention_mask, position_ids, past_key_values.{i}.key / .value';

/** Decodes and checks the model's interface; throws OnnxImportError naming the problem. */
export function inspectOnnxModel(bytes: Uint8Array, file = 'model.onnx'): OnnxModelInfo {
  const fail = (m: string): never => {
    throw new OnnxImportError(`${file}: ${m}`);
  };
  if (bytes.length === 0) fail('empty file');
  let model: ModelProto;
  try {
    model = decodeModel(bytes);
  } catch (e) {
    if (e instanceof OnnxFormatError) fail(`not a valid ONNX file: ${e.message}`);
    throw e;
  }
  const g = model.graph;
  if (!g || !(g.node?.length || g.output?.length)) fail('not an ONNX model: no graph (is it an .onnx file?)');
  const opset = model.opsetImport?.find((o) => !o.domain || o.domain === 'ai.onnx')?.version;
  if (!opset) fail('not an ONNX model: no ai.onnx opset import');
  const inits = new Set((g!.initializer ?? []).map((t) => t.name));
  const inputs = (g!.input ?? []).filter((v) => !inits.has(v.name)); // IR < 4 lists initializers as inputs
  const outputs = g!.output ?? [];
  const list = (vs: ValueInfo[]) => (vs.length ? vs.map(describeValue).join(', ') : 'none');
  const byName = (vs: ValueInfo[], n: string) => vs.find((v) => v.name === n);

  const ids = byName(inputs, 'input_ids') ?? fail(`no input named input_ids (inputs: ${list(inputs)})`);
  expectTensor(ids, DataType.INT64, 2, 'an int64 [batch, sequence] input', fail);
  const mask = byName(inputs, 'attention_mask');
  if (mask) expectTensor(mask, DataType.INT64, 2, 'an int64 [batch, total_sequence] input', fail);
  const pos = byName(inputs, 'position_ids');
  if (pos) expectTensor(pos, DataType.INT64, 2, 'an int64 [batch, sequence] input', fail);

  const logits = byName(outputs, 'logits') ?? fail(`no output named logits (outputs: ${list(outputs)})`);
  expectTensor(logits, DataType.FLOAT, 3, 'a float [batch, sequence, vocab] output', fail);
  const vdim = logits.type!.tensorType!.shape!.dim![2]!;
  if (vdim.dimValue === undefined)
    fail(`logits last dim is symbolic ('${vdim.dimParam ?? '?'}'); the vocabulary size must be fixed (${describeValue(logits)})`);
  const values = byName(outputs, 'values');
  if (values) expectTensor(values, DataType.FLOAT, 2, 'a float [batch, sequence] output (the value head)', fail);

  const kv = inspectKv(inputs, outputs, fail);
  const known = new Set([
    'input_ids',
    'attention_mask',
    'position_ids',
    ...Array.from({ length: kv?.layers ?? 0 }, (_, i) => [kvNames(i).pastKey, kvNames(i).pastValue]).flat(),
  ]);
  const extra = inputs.filter((v) => !known.has(v.name ?? ''));
  if (extra.length) fail(`unsupported input${extra.length > 1 ? 's' : ''} ${list(extra)}; supported inputs: ${SUPPORTED_INPUTS}`);

  const metadata = Object.fromEntries((model.metadataProps ?? []).map((e) => [e.key ?? '', e.value ?? '']));
  let config: ModelConfig | null = null;
  if (metadata[META.format] === FORMAT && metadata[META.config]) {
    try {
      config = validateModelConfig(JSON.parse(metadata[META.config]!), `${file} metadata ${META.config}`);
    } catch (e) {
      fail(`bad metadata: ${errorText(e)}`);
    }
    if (config!.vocabSize !== vdim.dimValue) fail(`metadata says vocabSize ${config!.vocabSize} but logits last dim is ${vdim.dimValue}`);
  }
  return {
    file,
    vocabSize: vdim.dimValue!,
    hasAttentionMask: !!mask,
    hasPositionIds: !!pos,
    hasValues: !!values,
    kv,
    config,
    metadata,
    producer: [model.producerName, model.producerVersion].filter(Boolean).join(' '),
    opset: opset!,
  };
}

function expectTensor(v: ValueInfo, elemType: number, rank: number, what: string, fail: (m: string) => never): void {
  const tt = v.type?.tensorType;
  if (!tt) fail(`${v.name} must be ${what}; it is not a tensor`);
  if (tt!.elemType !== elemType || (tt!.shape?.dim?.length ?? -1) !== rank) {
    fail(
      `${v.name} must be ${what}, got ${describeValue(v)}${tt!.elemType !== elemType ? ` (${DATA_TYPE_NAMES[tt!.elemType ?? 0] ?? tt!.elemType} instead of ${DATA_TYPE_NAMES[elemType]})` : ''}`,
    );
  }
}

/** past_key_values.{i}.key/value inputs with present.{i}.* outputs, i = 0..L-1, fixed heads and head size. */
function inspectKv(inputs: ValueInfo[], outputs: ValueInfo[], fail: (m: string) => never): OnnxModelInfo['kv'] {
  const pastNames = inputs.map((v) => v.name ?? '').filter((n) => n.startsWith('past_key_values.'));
  if (!pastNames.length) return null;
  let layers = 0;
  while (pastNames.includes(kvNames(layers).pastKey) || pastNames.includes(kvNames(layers).pastValue)) layers++;
  if (layers * 2 !== pastNames.length)
    fail(`past_key_values inputs must be past_key_values.{i}.key and .value for i = 0..L-1, got ${pastNames.join(', ')}`);
  let heads = 0;
  let headSize = 0;
  for (let i = 0; i < layers; i++) {
    const n = kvNames(i);
    for (const [inName, outName] of [
      [n.pastKey, n.presentKey],
      [n.pastValue, n.presentValue],
    ] as const) {
      const v =
        inputs.find((x) => x.name === inName) ?? fail(`${inName} is missing (the KV cache needs a key and a value input per layer)`);
      expectTensor(v, DataType.FLOAT, 4, 'a float [batch, heads, past_sequence, head_size] input', fail);
      const dims = v.type!.tensorType!.shape!.dim!;
      const h = dims[1]!.dimValue;
      const hs = dims[3]!.dimValue;
      if (!h || !hs) fail(`${inName}: heads and head_size must be fixed numbers, got ${describeValue(v)}`);
      if (heads && (h !== heads || hs !== headSize))
        fail(`${inName}: ${describeValue(v)} differs from layer 0's [*, ${heads}, *, ${headSize}]`);
      heads = h!;
      headSize = hs!;
      const out =
        outputs.find((x) => x.name === outName) ??
        fail(`no output ${outName} for input ${inName} (a KV-cache model returns present.{i}.key / .value)`);
      expectTensor(out, DataType.FLOAT, 4, 'a float [batch, heads, total_sequence, head_size] output', fail);
    }
  }
  return { layers, heads, headSize };
}

export interface ImportOptions {
  /** model file name for messages (default model.onnx) */
  file?: string;
  /** tokenizer file name for messages (default tokenizer.json) */
  tokenizerFile?: string;
  /** longest sequence; required unless the model carries our export metadata */
  contextLength?: number;
}

export interface ImportedModel {
  policy: OnnxPolicy;
  tokenizer: Tokenizer;
  info: OnnxModelInfo;
}

/**
 * Loads a user's ONNX causal LM with its tokenizer (the JSON text or object of Tokenizer.toJSON)
 * as a frozen policy: checks the interface, the tokenizer, their vocabularies, then creates the
 * onnxruntime session (whose load errors, an unsupported op for one, are reported naming the file).
 */
export async function importOnnxModel(ort: Ort, bytes: Uint8Array, tokenizerJson: unknown, o: ImportOptions = {}): Promise<ImportedModel> {
  const file = o.file ?? 'model.onnx';
  const tokFile = o.tokenizerFile ?? 'tokenizer.json';
  const info = inspectOnnxModel(bytes, file);
  let tokenizer: Tokenizer;
  try {
    tokenizer = Tokenizer.fromJSON(tokenizerJson);
  } catch (e) {
    throw new OnnxImportError(`${tokFile}: ${errorText(e)}`);
  }
  if (tokenizer.vocabSize !== info.vocabSize) {
    throw new OnnxImportError(
      `${tokFile}: tokenizer vocab ${tokenizer.vocabSize} but ${file} logits last dim ${info.vocabSize}; the model and its tokenizer must agree`,
    );
  }
  const contextLength = o.contextLength ?? info.config?.contextLength;
  if (contextLength === undefined)
    throw new OnnxImportError(`${file}: its context length is not recorded in its metadata (${META.config}); give it explicitly`);
  if (!Number.isInteger(contextLength) || contextLength < 2)
    throw new OnnxImportError(`${file}: context length must be an integer >= 2, got ${contextLength}`);
  if (info.config && contextLength > info.config.contextLength) {
    throw new OnnxImportError(`${file}: context length ${contextLength} exceeds the model's ${info.config.contextLength}`);
  }
  let session;
  try {
    session = await createSession(ort, bytes, file);
  } catch (e) {
    if (e instanceof OrtError) throw new OnnxImportError(e.message);
    throw e;
  }
  // nLayer / dModel / nHead of a foreign model: known from a KV cache's shapes, else 0 (unknown);
  // consumers of a policy read only contextLength and vocabSize
  const config: ModelConfig = {
    nLayer: info.config?.nLayer ?? info.kv?.layers ?? 0,
    dModel: info.config?.dModel ?? (info.kv ? info.kv.heads * info.kv.headSize : 0),
    nHead: info.config?.nHead ?? info.kv?.heads ?? 0,
    contextLength,
    vocabSize: info.vocabSize,
  };
  return { policy: new OnnxPolicy(ort, session, info, config), tokenizer, info };
}

/** The KL reference must score the policy's token ids: same tokenizer (merges and specials). */
export function assertSameTokenizer(policy: Tokenizer, reference: Tokenizer, what = 'reference model'): void {
  if (JSON.stringify(policy.toJSON()) !== JSON.stringify(reference.toJSON())) {
    throw new OnnxImportError(
      `${what}: its tokenizer differs from the policy's (vocab ${reference.vocabSize} vs ${policy.vocabSize}); the KL penalty compares log-probs of the same token ids`,
    );
  }
}
