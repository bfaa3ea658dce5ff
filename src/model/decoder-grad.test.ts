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
import { maxRelDiff } from '../onnx/parity';
import { HF_FIXTURE_NAMES, HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { DecoderCpu } from './decoder-cpu';
import { weightsToHf } from './hf-weights';
import { readSafetensors } from './safetensors';

interface Grads {
  batch: { input_ids: number[][]; attention_mask: number[][]; position_ids: number[][]; targets: number[][]; n_targets: number };
  loss: number;
  grads: { names: string[] };
}

/** Mean cross-entropy over the counted targets (-100 = not counted) and its gradient w.r.t. the logits. */
export function maskedCrossEntropy(logits: Float64Array, targets: readonly number[], V: number): { loss: number; dlogits: Float64Array } {
  const counted = targets.filter((t) => t >= 0).length;
  const dlogits = new Float64Array(logits.length);
  let loss = 0;
  targets.forEach((t, n) => {
    if (t < 0) return;
    const row = logits.subarray(n * V, (n + 1) * V);
    const m = Math.max(...row);
    let z = 0;
    for (let i = 0; i < V; i++) z += Math.exp(row[i]! - m);
    loss += (Math.log(z) + m - row[t]!) / counted;
    for (let i = 0; i < V; i++) dlogits[n * V + i] = Math.exp(row[i]! - m) / z / counted - (i === t ? 1 / counted : 0);
  });
  return { loss, dlogits };
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
