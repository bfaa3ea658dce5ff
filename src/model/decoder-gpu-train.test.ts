/**
 * The decoder's GPU training path against the float64 reference (DecoderCpu, itself checked
 * against torch autograd in decoder-grad.test.ts) on the three HF fixtures and their batch
 * (data/hf-fixtures/<name>/grads.json: masked next-token loss on a left-padded batch): the loss,
 * the gradient norm and every engine tensor's gradient (full fine-tuning, the embedding and LM
 * head in three row chunks), every adapter's gradient (LoRA, PEFT's adapters of
 * data/hf-fixtures/lora/<name>), one AdamW step against the float64 step, a few LoRA steps that
 * lower the loss while the base stays bit for bit what it was, several SFT and PPO / GRPO steps
 * against DecoderCpuTrainer, and the memory the trainer holds against decoderTrainMemory.
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
import { logprobEntropyRef } from '../kernels/logprob';
import { RL_STAT_FIELDS, type RlLossConfig } from '../kernels/ppo_loss_ref';
import { maxRelDiff } from '../onnx/parity';
import { testRuntime } from '../testing/gpu';
import { HF_FIXTURE_NAMES, HF_FIXTURES, loadHfFixture } from '../testing/hf-fixtures';
import { archDims, decoderTensors, type DecoderArch } from './arch';
import { cpuGenerateOn } from './cpu-generate';
import { DecoderCpu } from './decoder-cpu';
import { hfWeightFormat } from '../hf/load';
import { DecoderGpu, roundedWeights } from './decoder-gpu';
import { decoderTrainMemory, DecoderGpuTrainer, type DecoderBatch, type DecoderLoraInit, type DecoderRlBatch } from './decoder-gpu-train';
import { DecoderCpuTrainer } from './decoder-train-cpu';
import { generateOn } from './generate';
import { loraModules, loraScaling, peftKeys } from './lora';
import { DEFAULT_OPTIM, type OptimConfig } from './optim';
import { readSafetensors } from './safetensors';
import { gaussian, Rng } from '../util/random';

const GRAD_TOL = 1e-4;

interface Batch {
  input_ids: number[][];
  attention_mask: number[][];
  position_ids: number[][];
  targets: number[][];
}

/** The fixture: weights, the batch of grads.json as one DecoderBatch, PEFT's adapters. */
function fixture(name: string) {
  const { arch, weights, expected, dtypes } = loadHfFixture(name);
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
  return { arch, weights, batch, lora, expected, dtypes };
}

/** The batch's rows as micro-batches of one sequence each. */
function rows(b: DecoderBatch): DecoderBatch[] {
  const T = b.T;
  return Array.from({ length: b.B }, (_, i) => ({
    B: 1,
    T,
    tokens: b.tokens.slice(i * T, (i + 1) * T),
    positions: b.positions?.slice(i * T, (i + 1) * T),
    start: b.start?.slice(i, i + 1),
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
  const { arch, weights, batch, lora, expected } = fixture(name);

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

  test('LoRA: every A and B; no base gradient buffer; sampling runs the adapters, and the base with them off', async () => {
    const want = cpuGrads(arch, weights, batch, lora);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, OPT, lora);
    expect(t.trainables.map((x) => x.name)).toEqual(lora.modules.flatMap((m) => [peftKeys(m).A, peftKeys(m).B]));
    const r = await t.computeGradients([batch], true);
    expect(Math.abs(r.loss! - want.loss) / want.loss, `loss ${r.loss} vs ${want.loss}`).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm).toBeLessThan(GRAD_TOL);
    const got = await t.readGrads();
    for (const [n, g] of want.grads) expect(maxRelDiff(got.get(n)!, g), `gradient of ${n}`).toBeLessThan(GRAD_TOL);
    // the adapted logits: the training forward and the inference forward (DecoderGpu.linearHook)
    const input = { tokens: batch.tokens, positions: batch.positions, start: batch.start, B: batch.B, T: batch.T };
    const cpuLora = want.model.forward(input).logits;
    expect(maxRelDiff(await t.forwardLogits(input), cpuLora), 'training forward').toBeLessThan(1e-4);
    expect(maxRelDiff(await gpu.forward(input), cpuLora), 'inference forward').toBeLessThan(1e-4);
    // greedy decoding with a KV cache, prefill then one token at a time: the CPU's ids
    const prompts = expected.greedy.prompts.map((q) => q.input_ids);
    const opts = { maxNewTokens: expected.greedy.max_new_tokens, temperature: 0, seed: 1 };
    const adaptedIds = cpuGenerateOn(want.model, prompts, opts).tokens;
    const baseIds = expected.greedy.prompts.map((q) => q.generated_ids);
    expect(adaptedIds).not.toEqual(baseIds); // the adapters change what greedy decoding picks
    expect((await generateOn(gpu, prompts, opts)).tokens).toEqual(adaptedIds);
    // adapters off: the base model from the same weights (the KL reference)
    t.loraEnabled = false;
    const cpuBase = new DecoderCpu(arch, weights).forward(input).logits;
    expect(maxRelDiff(cpuLora, cpuBase)).toBeGreaterThan(1e-2); // the adapters do change the logits
    expect(maxRelDiff(await t.forwardLogits(input), cpuBase), 'training forward, adapters off').toBeLessThan(1e-4);
    expect(maxRelDiff(await gpu.forward(input), cpuBase), 'inference forward, adapters off').toBeLessThan(1e-4);
    expect((await generateOn(gpu, prompts, opts)).tokens).toEqual(baseIds);
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
  opt: OptimConfig = OPT,
) {
  const gradScale = clipScaleRef(gradNorm, opt.gradClip);
  const out = new Map<string, Float64Array>();
  for (const [n, g] of grads) {
    const p = Float64Array.from(params.get(n)!);
    // LoRA+ as PEFT's create_loraplus_optimizer groups it: lora_B at lr x loraplus_lr_ratio
    const lr = n.includes('.lora_B.') ? opt.lr * opt.loraPlusRatio : opt.lr;
    const opts = { ...opt, lr, weightDecay: decay(n) ? opt.weightDecay : 0, step: 1, gradScale };
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

/**
 * Parameters after `steps` Adam steps against the float64 ones, within `tol` lr, except the key
 * bias (the k rows of qkv.b): its exact gradient is 0 (a bias on every key adds q . b_k to all of a
 * query's scores, which the softmax ignores), so float64 gives ~1e-17 and f32 ~1e-9 of noise,
 * which Adam, normalizing by sqrt(v) + eps with eps = 1e-8, turns into steps of up to lr. Those
 * elements are only held to Adam's bound, steps * lr * (1 + weight decay).
 */
function expectParams(arch: DecoderArch, got: Map<string, Float32Array>, want: Map<string, ArrayLike<number>>, steps: number, tol: number) {
  const { QD, KVD } = archDims(arch);
  const lr = OPT.lr;
  for (const [n, w] of want) {
    const g = got.get(n)!;
    if (!/^layers\.\d+\.qkv\.b$/.test(n)) {
      expect(maxAbsDiff(g, w) / lr, `${n} after ${steps} steps, in lr`).toBeLessThan(tol);
      continue;
    }
    const outside = (a: ArrayLike<number>) => [...Array.prototype.slice.call(a, 0, QD), ...Array.prototype.slice.call(a, QD + KVD)];
    expect(maxAbsDiff(outside(g), outside(w)) / lr, `${n} (q, v rows) after ${steps} steps, in lr`).toBeLessThan(tol);
    const k = (a: ArrayLike<number>) => Array.prototype.slice.call(a, QD, QD + KVD) as number[];
    expect(maxAbsDiff(k(g), k(w)) / lr, `${n} (k rows) after ${steps} steps, in lr`).toBeLessThan(steps * 1.2);
  }
}

describe('qwen2: the optimizer step', () => {
  const { arch, weights, batch, lora } = fixture('qwen2');
  const shapes = new Map(decoderTensors(arch).map((t) => [t.name, t.shape]));

  // A first Adam step moves every parameter by lr (g / (|g| + eps) + wd p), about lr whatever |g|,
  // so the parameters are compared against lr. Where the clipped gradient is within a few eps of
  // 0 the step is steep in g and the gradient's f32 error shows: measured on SwiftShader 1.9e-3 lr
  // (full: up.w elements whose clipped g is 5.6e-8, 1e-5 of the tensor's rms), 1.5e-5 lr (LoRA).
  // A wrong clip scale, bias correction or decay rule is off by ~lr. Clipping is on (norm > 1).
  test.each(['full', 'lora', 'lora+'] as const)('%s: one AdamW step equals the float64 step', async (mode) => {
    const l = mode === 'full' ? null : lora;
    // LoRA+: lora_B at 8 x lr (a full model ignores the ratio: 'full' runs with it too)
    const opt = mode === 'lora' ? OPT : { ...OPT, loraPlusRatio: 8 };
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
    const ref = referenceStep(params, want.grads, want.gradNorm, (n) => (l ? true : shapes.get(n)!.length === 2), l ? opt : OPT);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, opt, l);
    const r = await t.trainStep(rows(batch), true);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm).toBeLessThan(GRAD_TOL);
    expectParams(arch, await t.readParams(), ref, 1, 1e-2);
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

/**
 * A LoRA base stored 16-bit (DecoderGpu's weightFormat): Llama's BF16 and Qwen2's F16 in their own
 * dtype, GPT-2's F32 forced to F16. The adapters' gradients and the loss equal the float64
 * reference on the weights the base holds (roundedWeights), the adapted and the base forward too,
 * and the trainer holds what decoderTrainMemory predicts for that format, with the base at about
 * half its f32 bytes. Full fine-tuning of such a model is refused.
 */
describe.each(HF_FIXTURE_NAMES)('%s: LoRA on a 16-bit base', (name) => {
  const { arch, weights, batch, lora, dtypes } = fixture(name);
  const own = hfWeightFormat(dtypes);
  const format = own === 'f32' ? 'f16' : own;

  test(`gradients, logits and memory`, async () => {
    const rounded = roundedWeights(arch, weights, format);
    const want = cpuGrads(arch, rounded, batch, lora);
    const gpu = new DecoderGpu(await testRuntime(), arch, weights, { weightFormat: format });
    expect(() => new DecoderGpuTrainer(gpu, OPT)).toThrow(new RegExp(`frozen ${format}.*LoRA`));
    const t = new DecoderGpuTrainer(gpu, OPT, lora);
    const r = await t.computeGradients(rows(batch), true);
    expect(Math.abs(r.loss! - want.loss) / want.loss, `loss ${r.loss} vs ${want.loss}`).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm! - want.gradNorm) / want.gradNorm).toBeLessThan(GRAD_TOL);
    const got = await t.readGrads();
    for (const [n, g] of want.grads) expect(maxRelDiff(got.get(n)!, g), `gradient of ${n}`).toBeLessThan(GRAD_TOL);
    if (own === 'f32') {
      const f32 = cpuGrads(arch, weights, batch, lora); // the rounding is visible in the gradients, and the test sees it
      expect(Math.max(...[...f32.grads].map(([n, g]) => maxRelDiff(g, want.grads.get(n)!)))).toBeGreaterThan(GRAD_TOL);
    }
    const input = { tokens: batch.tokens, positions: batch.positions, start: batch.start, B: batch.B, T: batch.T };
    expect(maxRelDiff(await t.forwardLogits(input), want.model.forward(input).logits), 'adapted').toBeLessThan(1e-4);
    t.loraEnabled = false;
    expect(maxRelDiff(await gpu.forward(input), new DecoderCpu(arch, rounded).forward(input).logits), 'base').toBeLessThan(1e-4);
    t.acts(batch.B, batch.T);
    const mem = t.memory();
    expect(mem).toEqual(decoderTrainMemory(arch, batch.B, batch.T, lora, false, format));
    expect(mem.weights / decoderTrainMemory(arch, 1, 1, null).weights).toBeLessThan(0.6);
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

/** The batch without positions and padding, as DecoderCpuTrainer feeds its model (default positions, start 0). */
const plain = (b: DecoderBatch): DecoderBatch => ({ B: b.B, T: b.T, tokens: b.tokens, targets: b.targets, mask: b.mask });

/** ±[lo, hi): a perturbation at least `lo` from 0, so float32 differences cannot cross a clip boundary. */
const offset = (rng: Rng, lo: number, hi: number) => (rng.next() < 0.5 ? -1 : 1) * rng.uniform(lo, hi);

/**
 * Rollout data relative to the policy `m` (as rl-step.test.ts builds it): old log-probs off by
 * 0.05..0.12 (inside the ratio clip 0.2) or 0.3..0.5 (outside), old values likewise for the value
 * clip, random advantages, returns and reference log-probs.
 */
function rlBatch(m: DecoderCpu, b: DecoderBatch, cfg: RlLossConfig, seed: number): DecoderRlBatch {
  const rng = new Rng(seed);
  const BT = b.B * b.T;
  const { logits, values } = m.forward({ tokens: b.tokens, B: b.B, T: b.T });
  const logp = new Float64Array(BT);
  logprobEntropyRef(logp, new Float64Array(BT), logits, b.targets, BT, m.arch.vocabSize, cfg.invTemp);
  const v = values ?? new Float64Array(BT);
  const far = () => rng.next() < 0.4;
  return {
    ...b,
    oldLogp: Float32Array.from(logp, (x) => x + (far() ? offset(rng, 0.3, 0.5) : offset(rng, 0.05, 0.12))),
    oldValues: Float32Array.from(v, (x) => x + (far() ? offset(rng, 0.25, 0.4) : offset(rng, 0.05, 0.15))),
    advantages: Float32Array.from({ length: BT }, () => gaussian(rng)),
    returns: Float32Array.from(v, (x) => x + 0.5 * gaussian(rng)),
    refLogp: Float32Array.from(logp, (x) => x + rng.uniform(-0.3, 0.3)),
  };
}

/** The CPU trainer's parameters by name (the adapters by PEFT key, or every engine tensor; the value head). */
function cpuParams(m: DecoderCpu): Map<string, Float64Array> {
  return new Map(m.trainables().map((t) => [t.name, t.w]));
}

/**
 * Several steps of the GPU trainer against DecoderCpuTrainer (moments and bias corrections past
 * step 1): losses within 1e-4 relative and norms within 1e-3 (float32 parameters drift from the
 * float64 ones by ~1e-3 lr a step), parameters within 1e-2 lr, as rl-step.test.ts compares the
 * lab GPT's backends. RL: PPO with a value head on Qwen2 with LoRA; GRPO (no critic, KL in the
 * loss) on GPT-2 with full fine-tuning.
 */
describe('the GPU trainer follows DecoderCpuTrainer', () => {
  const opt = OPT;

  test.each(['full', 'lora'] as const)('llama SFT, %s: three steps', async (mode) => {
    const { arch, weights, batch, lora } = fixture('llama');
    const l = mode === 'lora' ? lora : null;
    const cm = new DecoderCpu(arch, weights);
    if (l) cm.setLora(l);
    const cpu = new DecoderCpuTrainer(cm, opt);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, opt, l);
    for (let step = 1; step <= 3; step++) {
      const c = cpu.trainStep([plain(batch)]);
      const g = await t.trainStep(rows(plain(batch)), true);
      expect(Math.abs(g.loss! - c.loss) / c.loss, `step ${step} loss: gpu ${g.loss} cpu ${c.loss}`).toBeLessThan(1e-4);
      expect(Math.abs(g.gradNorm! - c.gradNorm) / c.gradNorm, `step ${step} grad norm`).toBeLessThan(1e-3);
    }
    expectParams(arch, await t.readParams(), cpuParams(cm), 3, 1e-2);
    t.dispose();
    gpu.dispose();
  });

  test.each([
    ['qwen2', 'lora', { clip: 0.2, vclip: 0.2, vfCoef: 0.5, entCoef: 0.01, klCoef: 0.05, invTemp: 1 / 0.8 }],
    ['gpt2', 'full', { clip: 0.2, vclip: 0, vfCoef: 0, entCoef: 0, klCoef: 0.04, invTemp: 1 }],
  ] as const)('%s RL, %s: two steps of two micro-batches', async (name, mode, cfg) => {
    const { arch, weights, batch, lora } = fixture(name);
    const l = mode === 'lora' ? lora : null;
    const ppo = cfg.vfCoef > 0;
    const cm = new DecoderCpu(arch, weights);
    if (l) cm.setLora(l);
    const head = { w: Float32Array.from({ length: arch.dModel }, (_, i) => 0.05 * Math.sin(i + 1)), b: 0.1 };
    if (ppo) cm.addValueHead(0, 0.02, head);
    const batches = [rlBatch(cm, plain(batch), cfg, 1), rlBatch(cm, plain(batch), cfg, 2)];
    // LoRA with LoRA+ (lora_B and the value head's bias at 4 x lr): both trainers group it alike
    const o = l ? { ...opt, loraPlusRatio: 4 } : opt;
    const cpu = new DecoderCpuTrainer(cm, o);
    const gpu = await gpuModel(arch, weights);
    const t = new DecoderGpuTrainer(gpu, o, l);
    if (ppo) t.addValueHead(head);
    for (let step = 1; step <= 2; step++) {
      const c = cpu.rlStep(batches, cfg);
      const g = await t.rlStep(batches, cfg, true);
      expect(c.sums.clipped).toBeGreaterThan(0); // both sides of the ratio clip are exercised
      expect(c.sums.clipped).toBeLessThan(c.sums.tokens);
      for (const k of RL_STAT_FIELDS) {
        const [gv, cv] = [g.sums![k], c.sums[k]];
        expect(Math.abs(gv - cv), `step ${step} ${k}: gpu ${gv} cpu ${cv}`).toBeLessThan(1e-3 * Math.abs(cv) + 1e-5 * c.sums.tokens);
      }
      expect(Math.abs(g.gradNorm! - c.gradNorm) / c.gradNorm, `step ${step} grad norm`).toBeLessThan(1e-3);
    }
    expectParams(arch, await t.readParams(), cpuParams(cm), 2, 1e-2);
    t.dispose();
    gpu.dispose();
  });
});
