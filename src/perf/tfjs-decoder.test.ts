/**
 * The TF.js decoder (`coderl bench train`'s comparison) computes what ours computes, on the
 * Llama (tied head, no biases) and Qwen2 (untied head, q/k/v biases, 4 query heads per kv head)
 * fixtures, full fine-tuning and LoRA with PEFT's adapters of data/hf-fixtures/lora (nonzero B,
 * so the adapters count): the masked loss of a batch equals the float64 DecoderCpu's within 1e-4
 * relative, and after one optimizer step on each side (TF.js: AdamW with global-norm clipping;
 * ours: DecoderGpuTrainer) the loss on the batch is the same again, so the benchmark times one
 * training step on both sides.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { installTfjsNodeResolver, providerGpu } from '../../bench/tfjs-node';
import { nodeProvider } from '../gpu/node';
import { GpuRuntime } from '../gpu/runtime';
import { crossEntropyRef } from '../kernels/crossentropy';
import type { DecoderArch } from '../model/arch';
import { DecoderCpu } from '../model/decoder-cpu';
import { DecoderGpu } from '../model/decoder-gpu';
import { DecoderGpuTrainer, type DecoderBatch, type DecoderLoraInit } from '../model/decoder-gpu-train';
import { loraModules, loraScaling, peftKeys } from '../model/lora';
import { DEFAULT_OPTIM, type OptimConfig } from '../model/optim';
import { readSafetensors } from '../model/safetensors';
import { HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { Rng } from '../util/random';
import { loadTfjs, tfjsChecked, type Tf } from './tfjs';
import { TfjsDecoder } from './tfjs-decoder';

const OPT: OptimConfig = { ...DEFAULT_OPTIM, lr: 1e-3, weightDecay: 0.1, gradClip: 1 };

let tf: Tf;
let rt: GpuRuntime;

beforeAll(async () => {
  const provider = await nodeProvider();
  rt = await GpuRuntime.create(provider);
  installTfjsNodeResolver();
  tf = await loadTfjs(providerGpu(provider));
}, 120_000);

/** PEFT's adapters of the fixture (data/hf-fixtures/lora/<name>). */
function peftAdapters(name: string, arch: DecoderArch): DecoderLoraInit {
  const dir = join(HF_FIXTURES, 'lora', name);
  const tensors = readSafetensors(new Uint8Array(readFileSync(join(dir, 'adapter_model.safetensors'))), 'adapter').tensors;
  const c = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8')) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };
  const cfg = { rank: c.r, alpha: c.lora_alpha, targets: c.target_modules };
  const modules = loraModules(arch, cfg);
  return {
    modules,
    rank: cfg.rank,
    scaling: loraScaling(cfg),
    A: modules.map((m) => tensors.get(peftKeys(m).A)!.data),
    B: modules.map((m) => tensors.get(peftKeys(m).B)!.data),
  };
}

/** (B, T) random next-token data, the first 3 positions of each row out of the loss (a prompt). */
function batch(V: number, B: number, T: number, seed: number): DecoderBatch {
  const rng = new Rng(seed);
  const id = () => Math.floor(rng.next() * V);
  return {
    B,
    T,
    tokens: Uint32Array.from({ length: B * T }, id),
    targets: Uint32Array.from({ length: B * T }, id),
    mask: Float32Array.from({ length: B * T }, (_, i) => (i % T < 3 ? 0 : 1)),
  };
}

function cpuLoss(arch: DecoderArch, weights: Map<string, Float32Array>, lora: DecoderLoraInit | null, b: DecoderBatch): number {
  const m = new DecoderCpu(arch, weights);
  if (lora) m.setLora(lora);
  const { logits } = m.forward({ tokens: b.tokens, B: b.B, T: b.T });
  const losses = new Float64Array(b.B * b.T);
  crossEntropyRef(losses, null, logits, b.targets, b.mask, b.B * b.T, arch.vocabSize, 1);
  return losses.reduce((s, x) => s + x, 0) / b.mask.reduce((s, x) => s + x, 0);
}

const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

describe.each(['llama', 'qwen2'] as const)('%s fixture: the TF.js decoder trains as ours does', (name) => {
  const { arch, weights } = loadHfFixture(name);
  const b = batch(arch.vocabSize, 2, 12, 7);

  test.each(['full', 'lora'] as const)(
    '%s: the masked loss equals float64 DecoderCpu; one step later it equals ours',
    async (mode) => {
      const lora = mode === 'lora' ? peftAdapters(name, arch) : null;
      const want = cpuLoss(arch, weights, lora, b);
      const theirs = new TfjsDecoder(tf, arch, weights, { opt: OPT, lora });
      const gpu = new DecoderGpu(rt, arch, weights);
      const ours = new DecoderGpuTrainer(gpu, OPT, lora);
      try {
        const before = await tfjsChecked(tf, 'loss', () => theirs.lossOf(b));
        expect(rel(before, want), `TF.js ${before} vs float64 ${want}`).toBeLessThan(1e-4);
        expect(await tfjsChecked(tf, 'step', () => theirs.step(b, true))).toBeCloseTo(before, 5);
        const ourFirst = (await ours.trainStep([b], true)).loss!;
        expect(rel(ourFirst, want), `ours ${ourFirst} vs float64 ${want}`).toBeLessThan(1e-4);
        const theirsAfter = await theirs.lossOf(b);
        const oursAfter = (await ours.computeGradients([b], true)).loss!;
        expect(theirsAfter, 'the step lowers the loss').toBeLessThan(before);
        expect(rel(theirsAfter, oursAfter), `after one step: TF.js ${theirsAfter} vs ours ${oursAfter}`).toBeLessThan(1e-4);
        if (lora) expect(theirs.trainableCount).toBe(lora.modules.reduce((s, m) => s + lora.rank * (m.inFeatures + m.outFeatures), 0));
      } finally {
        theirs.dispose();
        ours.dispose();
        gpu.dispose();
      }
    },
    120_000,
  );
});
