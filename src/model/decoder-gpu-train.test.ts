/**
 * The decoder's GPU training path against the float64 reference (DecoderCpu, itself checked
 * against torch autograd in decoder-grad.test.ts) on the three HF fixtures and their batch
 * (data/hf-fixtures/<name>/grads.json: masked next-token loss on a left-padded batch): the loss,
 * the gradient norm and every engine tensor's gradient (full fine-tuning, the embedding and LM
 * head in three row chunks), every adapter's gradient (LoRA, PEFT's adapters of
 * data/hf-fixtures/lora/<name>), one AdamW step against the float64 step, and a few LoRA steps
 * that lower the loss while the base stays bit for bit what it was.
 *
 * Tolerance of the gradients: maxRelDiff (|a - b| / max(|b|, rms(b)), as decoder-grad.test.ts
 * measures) below 1e-4. The GPU runs in f32: each value goes through two layers of sums of at most
 * V = 512 products (the LM head) and the softmax, rounding at ~6e-8 relative per operation; the
 * fixtures' own record of torch's f32 autograd against its f64 autograd is 6e-6 to 1e-5
 * (grads.json fd_check). Measured here on SwiftShader: at most 2.4e-5 (full), 5.6e-6 (LoRA). A
 * missing term (rope's inverse, a bias, a chunk, an adapter's scale) is off by O(1).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { adamwRef, clipScaleRef } from '../kernels/adamw';
import { crossEntropyRef } from '../kernels/crossentropy';
import { maxRelDiff } from '../onnx/parity';
import { testRuntime } from '../testing/gpu';
import { HF_FIXTURE_NAMES, HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { decoderTensors, type DecoderArch } from './arch';
import { DecoderCpu } from './decoder-cpu';
import { DecoderGpu } from './decoder-gpu';
import { decoderTrainMemory, DecoderGpuTrainer, type DecoderBatch, type DecoderLoraInit } from './decoder-gpu-train';
import { loraModules, loraScaling, peftKeys } from './lora';
import { DEFAULT_OPTIM, type OptimConfig } from './optim';
import { readSafetensors } from './safetensors';

const GRAD_TOL = 1e-4;

interface Batch {
  input_ids: number[][];
  attention_mask: number[][];
  position_ids: number[][];
  targets: number[][];
}

/** The fixture: weights, the batch of grads.json as one DecoderBatch, PEFT's adapters. */
function fixture(name: string) {
  const { arch, weights } = loadHfFixture(name);
  const dir = join(HF_FIXTURES, name);
  const b = (JSON.parse(readFileSync(join(dir, 'grads.json'), 'utf8')) as { batch: Batch }).batch;
  const [B, T] = [b.input_ids.length, b.input_ids[0]!.length];
  const targets = b.targets.flat();
  const batch: DecoderBatch = {
    B,
    T,
    tokens: Uint32Array.from(b.input_ids.flat()),
    positions: Uint32Array.from(b.position_ids.flat()),
    start: Uint32Array.from(b.attention_mask.map((r) => r.indexOf(1))),
    targets: Uint32Array.from(targets, (t) => Math.max(0, t)),
    mask: Float32Array.from(targets, (t) => (t >= 0 ? 1 : 0)),
  };
  const adir = join(HF_FIXTURES, 'lora', name);
  const adapter = readSafetensors(new Uint8Array(readFileSync(join(adir, 'adapter_model.safetensors'))), 'adapter').tensors;
  const cfg = JSON.parse(readFileSync(join(adir, 'adapter_config.json'), 'utf8')) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };
  const lcfg = { rank: cfg.r, alpha: cfg.lora_alpha, targets: cfg.target_modules };
  const modules = loraModules(arch, lcfg);
  const lora: DecoderLoraInit = {
    modules,
    rank: lcfg.rank,
    scaling: loraScaling(lcfg),
    A: modules.map((m) => adapter.get(peftKeys(m).A)!.data),
    B: modules.map((m) => adapter.get(peftKeys(m).B)!.data),
  };
  return { arch, weights, batch, lora };
}

/** The batch's rows as micro-batches of one sequence each. */
function rows(b: DecoderBatch): DecoderBatch[] {
  const T = b.T;
  return Array.from({ length: b.B }, (_, i) => ({
    B: 1,
    T,
    tokens: b.tokens.slice(i * T, (i + 1) * T),
    positions: b.positions!.slice(i * T, (i + 1) * T),
    start: b.start!.slice(i, i + 1),
    targets: b.targets.slice(i * T, (i + 1) * T),
    mask: b.mask.slice(i * T, (i + 1) * T),
  }));
}

/** The float64 reference's loss and gradients (full, or the adapters') on the batch. */
function cpuGrads(arch: DecoderArch, weights: Map<string, Float32Array>, b: DecoderBatch, lora: DecoderLoraInit | null) {
  const m = new DecoderCpu(arch, weights);
  if (lora) m.setLora(lora);
  const BT = b.B * b.T;
  const V = arch.vocabSize;
  const { logits } = m.forward({ tokens: b.tokens, positions: b.positions, start: b.start, B: b.B, T: b.T });
  const losses = new Float64Array(BT);
  const dlogits = new Float64Array(BT * V);
  const count = b.mask.reduce((s, x) => s + x, 0);
  crossEntropyRef(losses, dlogits, logits, b.targets, b.mask, BT, V, 1 / count);
  m.backward(dlogits);
  const loss = losses.reduce((s, x) => s + x, 0) / count;
  const grads = new Map<string, Float64Array>();
  if (lora)
    lora.modules.forEach((mod, i) => {
      grads.set(peftKeys(mod).A, m.loraGrads!.dA[i]!);
      grads.set(peftKeys(mod).B, m.loraGrads!.dB[i]!);
    });
  else for (const t of decoderTensors(arch)) grads.set(t.name, m.grads.get(t.name) ?? new Float64Array(m.weights.get(t.name)!.length));
  let ss = 0;
  for (const g of grads.values()) for (const x of g) ss += x * x;
  return { loss, grads, gradNorm: Math.sqrt(ss), model: m };
}

/** A GPU model with the embedding (and an untied head) in three row chunks. */
async function gpuModel(arch: DecoderArch, weights: Map<string, Float32Array>): Promise<DecoderGpu> {
  const m = new DecoderGpu(await testRuntime(), arch, weights, { embedChunkBytes: Math.ceil(arch.vocabSize / 3) * arch.dModel * 4 });
  expect(m.embedChunks).toBe(3);
  return m;
}

const OPT: OptimConfig = { ...DEFAULT_OPTIM, lr: 1e-3, weightDecay: 0.1, gradClip: 1 };

describe.each(HF_FIXTURE_NAMES)('%s: GPU gradients equal the float64 reference', (name) => {
  const { arch, weights, batch, lora } = fixture(name);

  test('full fine-tuning: the loss, the norm and every engine tensor, over two micro-batches', async () => {
    const want = cpuGrads(arch, weights, batch, null);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, OPT);
    const r = await t.computeGradients(rows(batch), true);
    expect(Math.abs(r.loss! - want.loss) / want.loss, `loss ${r.loss} vs ${want.loss}`).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm, `norm ${r.gradNorm} vs ${want.gradNorm}`).toBeLessThan(GRAD_TOL);
    const got = await t.readGrads();
    expect([...got.keys()].sort()).toEqual(
      decoderTensors(arch)
        .map((x) => x.name)
        .sort(),
    );
    for (const [n, g] of want.grads) expect(maxRelDiff(got.get(n)!, g), `gradient of ${n}`).toBeLessThan(GRAD_TOL);
    t.dispose();
    gpu.dispose();
  });

  test('LoRA: every A and B; the base has no gradient buffer; adapters off give the base logits', async () => {
    const want = cpuGrads(arch, weights, batch, lora);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, OPT, lora);
    expect(t.trainables.map((x) => x.name)).toEqual(lora.modules.flatMap((m) => [peftKeys(m).A, peftKeys(m).B]));
    const r = await t.computeGradients([batch], true);
    expect(Math.abs(r.loss! - want.loss) / want.loss, `loss ${r.loss} vs ${want.loss}`).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm).toBeLessThan(GRAD_TOL);
    const got = await t.readGrads();
    for (const [n, g] of want.grads) expect(maxRelDiff(got.get(n)!, g), `gradient of ${n}`).toBeLessThan(GRAD_TOL);
    const input = { tokens: batch.tokens, positions: batch.positions, start: batch.start, B: batch.B, T: batch.T };
    const adapted = await t.forwardLogits(input);
    t.loraEnabled = false;
    const base = await t.forwardLogits(input);
    const inference = await gpu.forward(input);
    const cpuBase = new DecoderCpu(arch, weights).forward(input).logits;
    expect(maxRelDiff(base, cpuBase)).toBeLessThan(1e-4);
    expect(maxRelDiff(inference, cpuBase)).toBeLessThan(1e-4);
    expect(maxRelDiff(adapted, cpuBase)).toBeGreaterThan(1e-2); // the adapters do change the logits
    t.dispose();
    gpu.dispose();
  });
});

/** params after one float64 AdamW step (from zero moments) on the float64 gradients, clipped by their global norm. */
function referenceStep(
  params: Map<string, ArrayLike<number>>,
  grads: Map<string, Float64Array>,
  gradNorm: number,
  decay: (n: string) => boolean,
) {
  const gradScale = clipScaleRef(gradNorm, OPT.gradClip);
  const out = new Map<string, Float64Array>();
  for (const [n, g] of grads) {
    const p = Float64Array.from(params.get(n)!);
    const opts = { ...OPT, weightDecay: decay(n) ? OPT.weightDecay : 0, step: 1, gradScale };
    adamwRef(p, g, new Float64Array(g.length), new Float64Array(g.length), 0, g.length, opts);
    out.set(n, p);
  }
  return out;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('qwen2: the optimizer step', () => {
  const { arch, weights, batch, lora } = fixture('qwen2');
  const shapes = new Map(decoderTensors(arch).map((t) => [t.name, t.shape]));

  // A first Adam step moves every parameter by lr (g / (|g| + eps) + wd p), about lr whatever |g|,
  // so the parameters are compared against lr. Where the clipped gradient is within a few eps of
  // 0 the step is steep in g and the gradient's f32 error shows: measured on SwiftShader 1.9e-3 lr
  // (full: up.w elements whose clipped g is 5.6e-8, 1e-5 of the tensor's rms), 1.5e-5 lr (LoRA).
  // A wrong clip scale, bias correction or decay rule is off by ~lr. Clipping is on (norm > 1).
  test.each(['full', 'lora'] as const)('%s: one AdamW step equals the float64 step', async (mode) => {
    const l = mode === 'lora' ? lora : null;
    const want = cpuGrads(arch, weights, batch, l);
    expect(want.gradNorm).toBeGreaterThan(OPT.gradClip);
    const params = l
      ? new Map(
          l.modules.flatMap(
            (m, i) =>
              [
                [peftKeys(m).A, l.A[i]!],
                [peftKeys(m).B, l.B[i]!],
              ] as const,
          ),
        )
      : weights;
    const ref = referenceStep(params, want.grads, want.gradNorm, (n) => (l ? true : shapes.get(n)!.length === 2));
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, OPT, l);
    const r = await t.trainStep(rows(batch), true);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm).toBeLessThan(GRAD_TOL);
    const got = await t.readParams();
    for (const [n, p] of ref) expect(maxAbsDiff(got.get(n)!, p) / OPT.lr, `${n} after the step, in lr`).toBeLessThan(1e-2);
    t.dispose();
    gpu.dispose();
  });
});

describe('llama: LoRA training', () => {
  const { arch, weights, batch, lora } = fixture('llama');

  test('the loss goes down on a fixed batch; the base weights stay bit-identical; one submit per step', async () => {
    const rt = await testRuntime();
    const gpu = await gpuModel(arch, weights);
    const readBase = async () => {
      const rec = rt.record('read the base');
      const bufs = [
        ...gpu.embedTable.map((c) => c.buffer),
        ...decoderTensors(arch)
          .filter((x) => x.name !== 'embed')
          .map((x) => gpu.tensor(x.name)),
      ];
      const reads = bufs.map((b) => rec.read(b));
      await rec.submit();
      return (await Promise.all(reads)).map((b) => new Uint32Array(b));
    };
    const before = await readBase();
    const t = new DecoderGpuTrainer(gpu, { ...OPT, lr: 1e-2 }, lora);
    const losses: number[] = [];
    losses.push((await t.trainStep([batch], true)).loss!);
    const stats = { ...rt.stats };
    const quiet = await t.trainStep([batch], false);
    expect(quiet).toEqual({ tokens: 12 });
    expect(rt.stats.submits - stats.submits).toBe(1);
    expect(rt.stats.readbacks - stats.readbacks).toBe(0);
    for (let s = 0; s < 3; s++) losses.push((await t.trainStep([batch], true)).loss!);
    // measured: 12.43 9.23 8.45 7.76
    for (let s = 1; s < losses.length; s++) expect(losses[s]!, `step ${s + 1}`).toBeLessThan(losses[s - 1]!);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! - 0.1);
    const after = await readBase();
    after.forEach((b, i) => expect(b, `base buffer ${i}`).toEqual(before[i]));
    t.dispose();
    gpu.dispose();
  });
});

describe('memory', () => {
  test.each(HF_FIXTURE_NAMES)('%s: decoderTrainMemory is what the trainer allocates (full and LoRA)', async (name) => {
    const { arch, weights, batch, lora } = fixture(name);
    const gpu = await gpuModel(arch, weights);
    for (const l of [null, lora]) {
      const t = new DecoderGpuTrainer(gpu, OPT, l);
      t.acts(batch.B, batch.T);
      const want = decoderTrainMemory(arch, batch.B, batch.T, l);
      expect(t.memory()).toEqual(want);
      if (l) expect(t.memory().grads).toBe(want.adapters); // no base gradient at all
      t.dispose();
    }
    gpu.dispose();
  });
});
