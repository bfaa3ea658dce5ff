/**
 * The tiny Hugging Face checkpoints of data/hf-fixtures (scripts/hf-fixtures.py: GPT-2 F32,
 * Llama BF16, Qwen2 F16 in two shards) loaded as the engine's tensors, with PyTorch's expected
 * outputs, for the tests of everything that runs them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { archFromHfConfig, type DecoderArch } from '../model/arch';
import { weightsFromHf, type HfTensor } from '../model/hf-weights';
import { readSafetensors, readSafetensorsIndex, type SafetensorsDtype } from '../model/safetensors';

export const HF_FIXTURES = join(__dirname, '../../data/hf-fixtures');

export const HF_FIXTURE_NAMES = ['gpt2', 'llama', 'qwen2'] as const;

/** expected.json (data/hf-fixtures/README.md has the whole schema). */
export interface HfExpected {
  input_ids: number[][];
  logits: number[][][];
  kv: { prefill: number; steps: { input_ids: number[][]; position_ids: number[][]; logits: number[][][] }[] };
  padded: { input_ids: number[][]; attention_mask: number[][]; position_ids: number[][]; logits: number[][][] };
  greedy: { max_new_tokens: number; prompts: { text: string; input_ids: number[]; generated_ids: number[] }[] };
}

/** A fixture's architecture, engine weights (float32), PyTorch's expected outputs and the dtypes its files store. */
export function loadHfFixture(name: string): {
  arch: DecoderArch;
  weights: Map<string, Float32Array>;
  expected: HfExpected;
  dtypes: SafetensorsDtype[];
} {
  const dir = join(HF_FIXTURES, name);
  const arch = archFromHfConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
  let shards = ['model.safetensors'];
  try {
    shards = [...new Set(readSafetensorsIndex(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8')).values())];
  } catch {
    // a single file
  }
  const tensors = new Map<string, HfTensor>();
  const dtypes = new Set<SafetensorsDtype>();
  for (const s of shards)
    for (const [n, t] of readSafetensors(new Uint8Array(readFileSync(join(dir, s))), s).tensors) {
      tensors.set(n, { ...t, file: s });
      dtypes.add(t.dtype);
    }
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as HfExpected;
  return { arch, weights: weightsFromHf(arch, tensors), expected, dtypes: [...dtypes] };
}
