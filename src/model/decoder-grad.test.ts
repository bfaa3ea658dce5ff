/**
 * The float64 decoder's backward (decoder-cpu.ts) against PyTorch autograd on the three HF
 * fixtures (data/hf-fixtures/<name>/grads.safetensors, scripts/hf-fixtures.py): transformers'
 * masked next-token loss on a left-padded batch, and the gradient of every checkpoint tensor in
 * the checkpoint's own names and layouts (q/k/v and gate/up split back, GPT-2's Conv1D
 * transposed) within 1e-4 relative.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { crossEntropyRef } from '../kernels/crossentropy';
import { maxRelDiff } from '../onnx/parity';
import { HF_FIXTURE_NAMES, HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { DecoderCpu } from './decoder-cpu';
import { weightsToHf } from './hf-weights';
import { loraModules, loraScaling, peftKeys } from './lora';
import { readSafetensors } from './safetensors';

interface Grads {
  batch: { input_ids: number[][]; attention_mask: number[][]; position_ids: number[][]; targets: number[][]; n_targets: number };
  loss: number;
  grads: { names: string[] };
}

/** Mean cross-entropy over the counted targets (-100 = not counted, transformers' convention) and its gradient w.r.t. the logits. */
function maskedCrossEntropy(logits: Float64Array, targets: readonly number[], V: number): { loss: number; dlogits: Float64Array } {
  const mask = targets.map((t): number => (t >= 0 ? 1 : 0));
  const counted = mask.reduce((a, b) => a + b, 0);
  const losses = new Float64Array(targets.length);
  const dlogits = new Float64Array(logits.length);
  crossEntropyRef(
    losses,
    dlogits,
    logits,
    targets.map((t) => Math.max(t, 0)),
    mask,
    targets.length,
    V,
    1 / counted,
  );
  return { loss: losses.reduce((a, b) => a + b, 0) / counted, dlogits };
}

describe.each(HF_FIXTURE_NAMES)('%s: gradients against torch autograd', (name) => {
  const dir = join(HF_FIXTURES, name);
  const g = JSON.parse(readFileSync(join(dir, 'grads.json'), 'utf8')) as Grads;
  const want = readSafetensors(new Uint8Array(readFileSync(join(dir, 'grads.safetensors'))), 'grads.safetensors').tensors;
  const { arch, weights } = loadHfFixture(name);

  test('the loss and every tensor gradient', () => {
    const m = new DecoderCpu(arch, weights);
    const { input_ids, attention_mask, position_ids, targets } = g.batch;
    const [B, T] = [input_ids.length, input_ids[0]!.length];
    const start = attention_mask.map((r) => r.indexOf(1));
    const { logits } = m.forward({ tokens: input_ids.flat(), positions: position_ids.flat(), start, B, T });
    const { loss, dlogits } = maskedCrossEntropy(logits, targets.flat(), arch.vocabSize);
    expect(Math.abs(loss - g.loss) / g.loss).toBeLessThan(1e-5);
    m.backward(dlogits);
    const engine = new Map(
      [...m.weights.keys()].map((k) => [k, Float32Array.from(m.grads.get(k) ?? new Float64Array(m.weights.get(k)!.length))]),
    );
    const got = new Map(weightsToHf(arch, engine).map((t) => [t.name, t.data]));
    expect([...got.keys()].sort()).toEqual([...g.grads.names].sort());
    for (const n of g.grads.names) {
      const ref = want.get(`grad.${n}`);
      expect(ref, n).toBeDefined();
      expect(maxRelDiff(got.get(n)!, ref!.data), `gradient of ${n}`).toBeLessThan(1e-4);
    }
  });
});

interface LoraFixture {
  r: number;
  lora_alpha: number;
  target_modules: string[];
  loss: number;
}

describe.each(HF_FIXTURE_NAMES)('%s: LoRA against PEFT and torch autograd', (name) => {
  const dir = join(HF_FIXTURES, name);
  const g = JSON.parse(readFileSync(join(dir, 'grads.json'), 'utf8')) as Grads & { lora: LoraFixture };
  const want = readSafetensors(new Uint8Array(readFileSync(join(dir, 'grads.safetensors'))), 'grads.safetensors').tensors;
  const adapterDir = join(HF_FIXTURES, 'lora', name);
  const adapter = readSafetensors(
    new Uint8Array(readFileSync(join(adapterDir, 'adapter_model.safetensors'))),
    'adapter_model.safetensors',
  ).tensors;
  const config = JSON.parse(readFileSync(join(adapterDir, 'adapter_config.json'), 'utf8')) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };
  const { arch, weights } = loadHfFixture(name);

  test("the adapted logits, the loss and every adapter's gradient; the base gets none", () => {
    const cfg = { rank: config.r, alpha: config.lora_alpha, targets: config.target_modules };
    const modules = loraModules(arch, cfg);
    expect(modules.length * 2).toBe(adapter.size); // every saved tensor is one of ours, and the other way round
    const m = new DecoderCpu(arch, weights);
    m.setLora({
      modules,
      rank: cfg.rank,
      scaling: loraScaling(cfg),
      A: modules.map((x) => adapter.get(peftKeys(x).A)!.data),
      B: modules.map((x) => adapter.get(peftKeys(x).B)!.data),
    });
    const { input_ids, attention_mask, position_ids, targets } = g.batch;
    const [B, T] = [input_ids.length, input_ids[0]!.length];
    const V = arch.vocabSize;
    const start = attention_mask.map((r) => r.indexOf(1));
    const { logits } = m.forward({ tokens: input_ids.flat(), positions: position_ids.flat(), start, B, T });
    const ref = want.get('lora_logits')!.data;
    for (let b = 0; b < B; b++) {
      const from = (b * T + start[b]!) * V;
      expect(maxRelDiff(logits.subarray(from, (b + 1) * T * V), ref.subarray(from, (b + 1) * T * V)), `lora logits, row ${b}`).toBeLessThan(
        1e-4,
      );
    }
    const { loss, dlogits } = maskedCrossEntropy(logits, targets.flat(), V);
    expect(Math.abs(loss - g.lora.loss) / g.lora.loss).toBeLessThan(1e-5);
    m.backward(dlogits);
    const grads = m.loraGrads!;
    modules.forEach((x, i) => {
      const k = peftKeys(x);
      expect(maxRelDiff(grads.dA[i]!, want.get(`lora_grad.${k.A}`)!.data), `gradient of ${k.A}`).toBeLessThan(1e-4);
      expect(maxRelDiff(grads.dB[i]!, want.get(`lora_grad.${k.B}`)!.data), `gradient of ${k.B}`).toBeLessThan(1e-4);
    });
    expect(m.grads.size).toBe(0); // the base is frozen
    // adapters off: the base model's logits again (the KL reference, without a second copy of the weights)
    m.loraEnabled = false;
    const base = new DecoderCpu(arch, weights).forward({ tokens: input_ids.flat(), positions: position_ids.flat(), start, B, T }).logits;
    expect(Array.from(m.forward({ tokens: input_ids.flat(), positions: position_ids.flat(), start, B, T }).logits)).toEqual(
      Array.from(base),
    );
  });
});
