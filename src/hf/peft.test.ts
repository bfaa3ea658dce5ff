/**
 * PEFT adapters: the fixtures' adapters (written in PEFT's format by scripts/hf-fixtures.py)
 * read with every tensor in place, written back and read again unchanged, merged into the base
 * as torch merged them, and bad adapters refused naming the file and field or tensor.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { weightsToHf } from '../model/hf-weights';
import { readSafetensors, writeSafetensors } from '../model/safetensors';
import { maxRelDiff } from '../onnx/parity';
import { HF_FIXTURE_NAMES, HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, loraAdapterFiles, mergeLora, readLoraAdapter } from './peft';

const files = (name: string) => {
  const dir = join(HF_FIXTURES, 'lora', name);
  return {
    config: JSON.parse(readFileSync(join(dir, ADAPTER_CONFIG), 'utf8')) as Record<string, unknown>,
    weights: new Uint8Array(readFileSync(join(dir, ADAPTER_WEIGHTS))),
  };
};

describe.each(HF_FIXTURE_NAMES)('%s adapter', (name) => {
  const { arch, weights } = loadHfFixture(name);
  const f = files(name);

  test("reads PEFT's files, writes them back with PEFT's fields, and reads the same adapter again", () => {
    const a = readLoraAdapter(arch, f.config, f.weights, `lora/${name}`);
    expect(a.config).toEqual({ rank: f.config.r, alpha: f.config.lora_alpha, targets: f.config.target_modules });
    const out = loraAdapterFiles(a, `data/hf-fixtures/${name}`, arch);
    const written = JSON.parse(new TextDecoder().decode(out.get(ADAPTER_CONFIG)!)) as Record<string, unknown>;
    for (const [k, v] of Object.entries(written)) expect(v, k).toEqual(f.config[k]); // every field we write is PEFT's, with PEFT's value
    const again = readLoraAdapter(arch, written, out.get(ADAPTER_WEIGHTS)!);
    expect(again.modules).toEqual(a.modules);
    again.A.forEach((x, i) => expect(Array.from(x)).toEqual(Array.from(a.A[i]!)));
    again.B.forEach((x, i) => expect(Array.from(x)).toEqual(Array.from(a.B[i]!)));
  });

  test('merged into the base as torch merged it', () => {
    const a = readLoraAdapter(arch, f.config, f.weights);
    const m = mergeLora(arch, weights, a);
    const merged = new Map(weightsToHf(m.arch, m.weights).map((t) => [t.name, t.data]));
    const want = readSafetensors(new Uint8Array(readFileSync(join(HF_FIXTURES, name, 'grads.safetensors'))), 'grads.safetensors').tensors;
    const names = [...want.keys()].filter((k) => k.startsWith('merged.'));
    expect(names.length).toBeGreaterThan(0);
    for (const k of names) expect(maxRelDiff(merged.get(k.slice('merged.'.length))!, want.get(k)!.data), k).toBeLessThan(1e-6);
    expect(Array.from(weights.get('layers.0.norm1.w')!)).toEqual(Array.from(m.weights.get('layers.0.norm1.w')!)); // untouched tensors stay
    // an lm_head adapter on a tied head (the gpt2 fixture's) gets a head of its own: the embedding lookup stays the base's
    expect(a.modules.some((x) => x.path === 'lm_head')).toBe(name !== 'llama');
    if (arch.tiedEmbeddings && name === 'gpt2') {
      expect(m.arch.tiedEmbeddings).toBe(false);
      expect(m.weights.get('embed')).toBe(weights.get('embed'));
      expect(merged.has('lm_head.weight')).toBe(true);
    } else expect(m.arch).toBe(arch);
  });
});

describe('bad adapters are refused, naming the file and the field or tensor', () => {
  const { arch } = loadHfFixture('llama');
  const f = files('llama');
  const tensors = [...readSafetensors(f.weights, 'a').tensors].map(([n, t]) => ({ name: n, shape: t.shape, data: t.data }));
  test.each<[string, Record<string, unknown>, Uint8Array, RegExp]>([
    [
      'DoRA',
      { ...f.config, use_dora: true },
      f.weights,
      /adapter_config\.json: use_dora: true asks for DoRA, which the lab does not compute/,
    ],
    ['another PEFT method', { ...f.config, peft_type: 'IA3' }, f.weights, /peft_type: "IA3" is not supported \(LoRA adapters only\)/],
    ['a regex of targets', { ...f.config, target_modules: '.*proj' }, f.weights, /target_modules: a regular expression/],
    [
      'a module the model lacks',
      { ...f.config, target_modules: ['c_attn'] },
      f.weights,
      /"c_attn" names no linear module of LlamaForCausalLM/,
    ],
    [
      'another rank',
      { ...f.config, r: 4 },
      f.weights,
      /tensor base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight has shape \[2, 48\], the base model and r = 4 give \[4, 48\]/,
    ],
    [
      'a missing tensor',
      f.config,
      writeSafetensors(tensors.slice(1)),
      /missing tensor base_model\.model\.model\.layers\.0\.mlp\.down_proj\.lora_A\.weight/,
    ],
    [
      'a tensor no target has',
      { ...f.config, target_modules: ['q_proj', 'v_proj'] },
      f.weights,
      /tensor base_model\.model\.model\.layers\.0\.mlp\.down_proj\.lora_A\.weight is not an adapter of a module the config targets/,
    ],
  ])('%s', (_what, config, weights, message) => {
    expect(() => readLoraAdapter(arch, config, weights)).toThrow(message);
  });
});
