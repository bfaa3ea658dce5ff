/**
 * Hugging Face model folders: the three fixture folders load (the real layouts: GPT-2 without a
 * prefix and with its mask buffers, BF16 Llama, F16 Qwen2 in two shards with a padded
 * vocabulary); every kind of bad folder is refused before any GPU work, naming the file and the
 * field or tensor; and a lab checkpoint exported as a GPT2LMHeadModel folder loads again with
 * the same logits and a tokenizer that encodes the same ids.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { CpuModel } from '../model/cpu';
import type { ModelConfig } from '../model/config';
import { DecoderCpu } from '../model/decoder-cpu';
import { initParams } from '../model/init';
import { paramTable } from '../model/params';
import { readSafetensors, writeSafetensors } from '../model/safetensors';
import { maxRelDiff } from '../onnx/parity';
import { trainTokenizer } from '../tokenizer';
import { labTokenizerToHf } from '../tokenizer/export-hf';
import { HfTokenizer } from '../tokenizer/hf';
import { hfFolderFiles, labArch, labWeights } from './export';
import { memoryFolder } from './folder';
import { describeHfModel, loadHfFolder } from './load';
import { nodeFolder } from './node';

const FIXTURES = join(__dirname, '../../data/hf-fixtures');

function fixtureFiles(name: string): Map<string, Uint8Array> {
  const dir = join(FIXTURES, name);
  return new Map(readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]));
}

const json = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const parse = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b)) as Record<string, unknown>;

/** The fixture's files with some replaced (or removed: null). */
function altered(name: string, change: Record<string, Uint8Array | null>) {
  const files = fixtureFiles(name);
  for (const [f, b] of Object.entries(change)) {
    if (b === null) files.delete(f);
    else files.set(f, b);
  }
  return memoryFolder(`fixtures/${name}`, files);
}

function configWith(name: string, patch: Record<string, unknown>): Uint8Array {
  return json({ ...parse(fixtureFiles(name).get('config.json')!), ...patch });
}

/** The fixture's safetensors with tensors changed (null removes). */
function weightsWith(
  name: string,
  file: string,
  change: (tensors: { name: string; shape: number[]; data: Float32Array }[]) => void,
): Uint8Array {
  const t = readSafetensors(fixtureFiles(name).get(file)!, file);
  const list = [...t.tensors].map(([n, x]) => ({ name: n, shape: x.shape, data: x.data }));
  change(list);
  return writeSafetensors(list);
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  throw new Error('expected a refusal');
}

describe('the fixture folders load', () => {
  test.each([
    ['gpt2', 'GPT2LMHeadModel', ['F32']],
    ['llama', 'LlamaForCausalLM', ['BF16']],
    ['qwen2', 'Qwen2ForCausalLM', ['F16']],
  ])('%s', async (name, arch, dtypes) => {
    const m = await loadHfFolder(await nodeFolder(join(FIXTURES, name)));
    expect(m.arch.hfArchitecture).toBe(arch);
    expect(m.dtypes).toEqual(dtypes);
    expect(m.tokenizer.vocabSize).toBeLessThanOrEqual(m.arch.vocabSize);
    expect(describeHfModel(m)).toContain(arch);
    if (name === 'qwen2') {
      expect(m.arch.vocabSize).toBe(512); // padded past the tokenizer's 459, as Qwen2.5 pads 151,665 to 151,936
      expect(m.tokenizer.vocabSize).toBe(459);
      expect(m.eosIds).toEqual([458, 456]);
      expect(m.files.map((f) => f.name)).toContain('model-00002-of-00002.safetensors');
    }
    expect(m.chatTemplate === null).toBe(name === 'gpt2');
  });
});

describe('bad folders are refused, naming the file and what is wrong', () => {
  test.each<[string, string, Record<string, Uint8Array | null>, RegExp]>([
    ['no config', 'gpt2', { 'config.json': null }, /fixtures\/gpt2: no config\.json/],
    ['config not JSON', 'gpt2', { 'config.json': new TextEncoder().encode('{oops') }, /config\.json: not JSON/],
    [
      'another architecture',
      'llama',
      { 'config.json': configWith('llama', { architectures: ['MistralForCausalLM'] }) },
      /config\.json: architectures: "MistralForCausalLM" is not supported/,
    ],
    [
      'rope scaling',
      'llama',
      { 'config.json': configWith('llama', { rope_scaling: { rope_type: 'llama3', factor: 8 } }) },
      /config\.json: rope_scaling: .*llama3.* is not supported/,
    ],
    [
      'sliding window',
      'qwen2',
      { 'config.json': configWith('qwen2', { use_sliding_window: true }) },
      /config\.json: use_sliding_window: true is not supported/,
    ],
    [
      'another activation',
      'gpt2',
      { 'config.json': configWith('gpt2', { activation_function: 'relu' }) },
      /config\.json: activation_function: "relu" is not supported/,
    ],
    [
      'kv heads not dividing',
      'llama',
      { 'config.json': configWith('llama', { num_key_value_heads: 4 }) },
      /config\.json: num_key_value_heads: 4 does not divide num_attention_heads 6/,
    ],
    ['a missing field', 'qwen2', { 'config.json': configWith('qwen2', { hidden_size: undefined }) }, /config\.json: hidden_size: missing/],
    ['no weights', 'gpt2', { 'model.safetensors': null }, /no model\.safetensors or model\.safetensors\.index\.json/],
    [
      'truncated weights',
      'gpt2',
      { 'model.safetensors': fixtureFiles('gpt2').get('model.safetensors')!.subarray(0, 5000) },
      /model\.safetensors: .*truncated/,
    ],
    [
      'a missing tensor',
      'llama',
      {
        'model.safetensors': weightsWith('llama', 'model.safetensors', (l) =>
          l.splice(
            l.findIndex((t) => t.name === 'model.layers.1.mlp.up_proj.weight'),
            1,
          ),
        ),
      },
      /missing tensor model\.layers\.1\.mlp\.up_proj\.weight \(\[88, 48\] = \(intermediate_size, hidden_size\)/,
    ],
    [
      'a shape that does not fit the config',
      'gpt2',
      {
        'model.safetensors': weightsWith('gpt2', 'model.safetensors', (l) => {
          const t = l.find((x) => x.name === 'h.0.mlp.c_fc.weight')!;
          t.shape = [32, 64];
          t.data = t.data.subarray(0, 32 * 64);
        }),
      },
      /model\.safetensors: tensor h\.0\.mlp\.c_fc\.weight has shape \[32, 64\], but config\.json gives \[32, 128\]/,
    ],
    [
      'a tensor the architecture does not have',
      'gpt2',
      {
        'model.safetensors': weightsWith('gpt2', 'model.safetensors', (l) =>
          l.push({ name: 'h.2.ln_1.weight', shape: [32], data: new Float32Array(32) }),
        ),
      },
      /tensor h\.2\.ln_1\.weight is not part of GPT2LMHeadModel/,
    ],
    [
      'a shard the index names but the folder lacks',
      'qwen2',
      { 'model-00002-of-00002.safetensors': null },
      /model\.safetensors\.index\.json: names shard model-00002-of-00002\.safetensors, which is not in the folder/,
    ],
    [
      'a tokenizer bigger than the model',
      'gpt2',
      { 'config.json': configWith('gpt2', { vocab_size: 300 }) },
      /tokenizer\.json: the tokenizer has ids up to 456, but config\.json vocab_size is 300/,
    ],
    ['no tokenizer', 'qwen2', { 'tokenizer.json': null }, /no tokenizer\.json/],
  ])('%s', async (_what, name, change, message) => {
    expect(await refusal(loadHfFolder(altered(name, change)))).toMatch(message);
  });
});

describe('a lab checkpoint as a GPT2LMHeadModel folder', () => {
  const corpus = [
    'function add(a, b) {\n  return a + b;\n}\n',
    'const square = (x) => x * x;\n',
    'function isEven(n) {\n  return n % 2 === 0;\n}\n',
  ];
  const tok = trainTokenizer(corpus, { vocabSize: 300 });
  const cfg: ModelConfig = { nLayer: 2, dModel: 32, nHead: 4, contextLength: 24, vocabSize: tok.vocabSize };
  const params = initParams(paramTable(cfg), 7).map((x) => x * 6);

  test('exports, imports again and gives the same logits and token ids', async () => {
    const hfTok = labTokenizerToHf(tok);
    const files = hfFolderFiles({
      arch: labArch(cfg),
      weights: labWeights(cfg, params),
      tokenizerJson: hfTok.tokenizerJson,
      tokenizerConfig: hfTok.tokenizerConfig,
      bosId: tok.eosId,
      eosIds: [tok.eosId],
    });
    expect(parse(files.get('config.json')!)).toMatchObject({
      architectures: ['GPT2LMHeadModel'],
      n_layer: 2,
      n_embd: 32,
      n_positions: 24,
      vocab_size: tok.vocabSize,
    });
    const m = await loadHfFolder(memoryFolder('exported', files));
    const text = 'function add(a, b) {\n  return a + b;\n}';
    const ids = Array.from(tok.encode(text));
    expect(Array.from(m.tokenizer.encode(text))).toEqual(ids);
    expect(m.eosIds).toEqual([tok.eosId]);
    const B = 1;
    const T = ids.length;
    const lab = new CpuModel(cfg, params).forward({ tokens: ids, B, T }).logits;
    const again = new DecoderCpu(m.arch, m.weights).forward({ tokens: ids, B, T }).logits;
    expect(maxRelDiff(again, lab)).toBeLessThan(1e-9);
  });

  test('the exported tokenizer.json loads in @huggingface/tokenizers through HfTokenizer', () => {
    const hfTok = labTokenizerToHf(tok);
    const t = HfTokenizer.fromFiles({ tokenizerJson: hfTok.tokenizerJson, tokenizerConfig: hfTok.tokenizerConfig });
    expect(t.vocabSize).toBe(tok.vocabSize);
    expect(t.eosId).toBe(tok.eosId);
  });
});
