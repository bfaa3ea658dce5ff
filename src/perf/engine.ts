/**
 * The engine's benchmark (`coderl bench engine`, and the app's Benchmarks panel): our WGSL
 * kernels against TensorFlow.js's WebGPU backend on the same adapter, in one run.
 *   1. matmul GFLOP/s, out (n, n) = a (n, n) · b (n, n)^T, for each of our variants (tiled,
 *      naive) and for tf.matMul(a, b, false, true);
 *   2. training tokens/s of one optimizer step of the same GPT config: GpuTrainer vs TfjsGpt;
 *   3. dispatches, submits and readbacks of one non-logging training step (goal: 1 submit);
 *   4. generation tokens/s, B prompts decoded in parallel.
 * Each matmul variant is validated against a float64 reference on a ragged problem before it
 * is timed; both training steps start from the same parameters and batch, and their first
 * losses must agree with each other and with the float64 reference model. GPU work is timed from a warm start to completion (our
 * submit awaited; TF.js's queue submitted and drained), median of the repetitions. Runs in Node
 * and in the browser: it takes a runtime and a loaded TF.js.
 */
import type { GpuRuntime, RuntimeStats } from '../gpu/runtime';
import { matmulForwardRef, recordMatmulForward, type MatmulProblem, type MatmulStrategy } from '../kernels/matmul';
import { crossEntropyRef } from '../kernels/crossentropy';
import { MODEL_PRESETS, type ModelConfig } from '../model/config';
import { CpuModel } from '../model/cpu';
import { generate } from '../model/generate';
import { GpuModel } from '../model/gpu';
import { GpuTrainer } from '../model/gpu-train';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM, type TokenBatch } from '../model/optim';
import { paramTable } from '../model/params';
import { compareArrays } from '../util/compare';
import { Rng } from '../util/random';
import { TfjsGpt, TfjsMatmul, tfjsAdapterInfo, tfjsFinish, type Tf } from './tfjs';

export type PresetName = keyof typeof MODEL_PRESETS;

export interface EngineBenchOptions {
  /** matmul sizes n (square n x n x n) */
  sizes: number[];
  /** timed repetitions of each matmul measurement; the median is reported */
  reps: number;
  /** a measurement stops repeating once its reps took this long (ms), after at least 3 (or reps) */
  budgetMs: number;
  train: {
    /** model size (MODEL_PRESETS) */
    preset: PresetName;
    /** sequences per step */
    B: number;
    /** tokens per sequence */
    T: number;
    /** untimed steps first (pipelines compiled, buffers allocated); at least 1, whose loss is read */
    warmup: number;
    /** timed steps; all but the last without a readback, the last reads the loss */
    steps: number;
  };
  generate: {
    /** prompts decoded in parallel */
    B: number;
    /** tokens per prompt */
    promptLen: number;
    /** new tokens per prompt */
    newTokens: number;
    /** timed runs; the median is reported */
    reps: number;
  };
  seed: number;
}

export const ENGINE_BENCH_DEFAULTS: EngineBenchOptions = {
  sizes: [256, 512, 1024, 2048],
  reps: 5,
  budgetMs: 10_000,
  train: { preset: 'tiny', B: 4, T: 64, warmup: 2, steps: 5 },
  generate: { B: 4, promptLen: 16, newTokens: 48, reps: 3 },
  seed: 1,
};

/** Small enough that the whole bench finishes in under 2 minutes on SwiftShader. */
export const ENGINE_BENCH_QUICK: EngineBenchOptions = {
  sizes: [256, 512],
  reps: 2,
  budgetMs: 3_000,
  train: { preset: 'tiny', B: 2, T: 32, warmup: 1, steps: 2 },
  generate: { B: 2, promptLen: 8, newTokens: 16, reps: 1 },
  seed: 1,
};

/** The app's Benchmarks panel: small sizes, so a software adapter finishes in about a minute. */
export const ENGINE_BENCH_BROWSER: EngineBenchOptions = { ...ENGINE_BENCH_QUICK, sizes: [128, 256] };

export const MATMUL_STRATEGIES: readonly MatmulStrategy[] = ['tiled', 'naive'];

export interface MatmulRow {
  n: number;
  /** the best of our variants */
  ours_gflops: number;
  tfjs_gflops: number;
  variants: Record<MatmulStrategy, number>;
}

export interface EngineBenchResult {
  adapter: string;
  matmul: MatmulRow[];
  train_step: {
    config: ModelConfig & { preset: PresetName };
    B: number;
    T: number;
    ours_tokens_per_s: number;
    tfjs_tokens_per_s: number;
  };
  /** our engine: B prompts of prompt_len tokens decoded in parallel, new_tokens each */
  generate: { ours_tokens_per_s: number; B: number; prompt_len: number; new_tokens: number };
  /** our engine, one optimizer step without a readback */
  per_step: { dispatches: number; submits: number; readbacks: number };
}

export type Progress = (message: string) => void;

/** Runs the whole bench on `rt` and `tf` (TF.js on its webgpu backend, same adapter). */
export async function benchEngine(
  rt: GpuRuntime,
  tf: Tf,
  opts: EngineBenchOptions,
  progress: Progress = () => {},
): Promise<EngineBenchResult> {
  const adapter = checkSameAdapter(rt, tf);
  progress('validating matmul variants against the float64 reference');
  await validateMatmuls(rt, tf, opts.seed);
  const matmul: MatmulRow[] = [];
  for (const n of opts.sizes) {
    progress(`matmul n=${n}`);
    matmul.push(await benchMatmulSize(rt, tf, n, opts));
  }
  const { train_step, per_step } = await benchTrain(rt, tf, opts, progress);
  progress('generation');
  const gen = await benchGenerate(rt, opts);
  return { adapter, matmul, train_step, generate: gen, per_step };
}

/** Our adapter's name; throws if TF.js's device came from a different adapter. */
function checkSameAdapter(rt: GpuRuntime, tf: Tf): string {
  const ours = rt.adapterSummary;
  const theirs = tfjsAdapterInfo(tf);
  const differs = (a: string, b: string): boolean => a !== '' && b !== '' && a !== b;
  if (differs(ours.vendor, theirs.vendor) || differs(ours.architecture, theirs.architecture)) {
    throw new Error(
      `bench engine: TF.js runs on ${theirs.vendor} ${theirs.architecture}, our runtime on ${ours.vendor} ${ours.architecture}; ` +
        'the comparison needs one adapter',
    );
  }
  return `${ours.vendor} ${ours.architecture} ${ours.description}`.trim();
}

// ---------------------------------------------------------------------------------------------
// 1. matmul

/** out (M, N) = a (M, K) · b (N, K)^T with our kernels, one strategy. */
class OursMatmul {
  private readonly a: GPUBuffer; // (M, K)
  private readonly b: GPUBuffer; // (N, K)
  private readonly out: GPUBuffer; // (M, N)

  constructor(
    private readonly rt: GpuRuntime,
    private readonly strategy: MatmulStrategy,
    a: Float32Array,
    b: Float32Array,
    private readonly p: MatmulProblem,
  ) {
    this.a = rt.upload(a, 'bench a');
    this.b = rt.upload(b, 'bench b');
    this.out = rt.storage(p.M * p.N * 4, 'bench out');
  }

  /** One product in one submit, awaited to completion. */
  async run(): Promise<void> {
    const rec = this.rt.record(`bench matmul ${this.strategy}`);
    await recordMatmulForward(this.rt, rec, { out: this.out, inp: this.a, weight: this.b }, this.p, { strategy: this.strategy });
    await rec.submit();
  }

  async result(): Promise<Float32Array> {
    const rec = this.rt.record(`bench matmul ${this.strategy} (validation)`);
    await recordMatmulForward(this.rt, rec, { out: this.out, inp: this.a, weight: this.b }, this.p, { strategy: this.strategy });
    const data = rec.read(this.out);
    await rec.submit();
    return new Float32Array(await data);
  }

  dispose(): void {
    for (const b of [this.a, this.b, this.out]) b.destroy();
  }
}

/** A ragged problem (not a multiple of any tile), every implementation against float64. */
async function validateMatmuls(rt: GpuRuntime, tf: Tf, seed: number): Promise<void> {
  const p: MatmulProblem = { M: 67, K: 45, N: 133 };
  const rng = new Rng(seed);
  const a = rng.float32(p.M * p.K);
  const b = rng.float32(p.N * p.K);
  const ref = new Float64Array(p.M * p.N);
  matmulForwardRef(ref, a, b, null, p.M, p.K, p.N);
  const tol = { atol: 1e-4, rtol: 1e-4 };
  const check = (got: Float32Array, who: string): void => {
    const c = compareArrays(got, ref, tol);
    if (!c.ok) {
      const i = c.worstIndex;
      throw new Error(
        `bench engine: ${who} matmul ${p.M}x${p.K}x${p.N} is wrong: ${c.failures} of ${c.n} values outside tolerance; worst [${i}] ${got[i]} vs ${ref[i]}`,
      );
    }
  };
  for (const s of MATMUL_STRATEGIES) {
    const m = new OursMatmul(rt, s, a, b, p);
    try {
      check(await m.result(), `our ${s}`);
    } finally {
      m.dispose();
    }
  }
  const t = new TfjsMatmul(tf, a, b, p.M, p.K, p.N);
  try {
    check(await t.result(), 'TF.js');
  } finally {
    t.dispose();
  }
}

async function benchMatmulSize(rt: GpuRuntime, tf: Tf, n: number, opts: EngineBenchOptions): Promise<MatmulRow> {
  const rng = new Rng(opts.seed + n);
  const a = rng.float32(n * n);
  const b = rng.float32(n * n);
  const gflops = (ms: number): number => (2 * n ** 3) / (ms * 1e6);
  const variants = {} as Record<MatmulStrategy, number>;
  for (const s of MATMUL_STRATEGIES) {
    const m = new OursMatmul(rt, s, a, b, { M: n, K: n, N: n });
    try {
      variants[s] = round3(gflops(await medianMs(() => m.run(), opts)));
    } finally {
      m.dispose();
    }
  }
  const t = new TfjsMatmul(tf, a, b, n, n, n);
  let tfjs: number;
  try {
    tfjs = round3(gflops(await medianMs(() => t.run(), opts)));
  } finally {
    t.dispose();
  }
  return { n, ours_gflops: Math.max(...Object.values(variants)), tfjs_gflops: tfjs, variants };
}

/** One warm-up run, then up to opts.reps timed runs (at least 3, or reps if fewer, within budgetMs); the median. */
async function medianMs(run: () => Promise<void>, opts: EngineBenchOptions): Promise<number> {
  await run();
  const times: number[] = [];
  let spent = 0;
  while (times.length < opts.reps) {
    const t0 = performance.now();
    await run();
    const dt = performance.now() - t0;
    times.push(dt);
    spent += dt;
    if (times.length >= Math.min(3, opts.reps) && spent > opts.budgetMs) break;
  }
  return median(times);
}

// ---------------------------------------------------------------------------------------------
// 2, 3. training step

/** Random next-token data (B, T) with every position in the loss. */
export function tokenBatch(V: number, B: number, T: number, seed: number): TokenBatch {
  const rng = new Rng(seed);
  const seq = Uint32Array.from({ length: B * (T + 1) }, () => Math.floor(rng.next() * V));
  const tokens = new Uint32Array(B * T);
  const targets = new Uint32Array(B * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      tokens[b * T + t] = seq[b * (T + 1) + t]!;
      targets[b * T + t] = seq[b * (T + 1) + t + 1]!;
    }
  }
  return { B, T, tokens, targets, mask: new Float32Array(B * T).fill(1) };
}

/**
 * The first step's loss against the float64 reference model on the same parameters and batch
 * (a broken kernel shows here, whatever the preset), and a later step's loss is finite and not
 * above the first (the steps train on that one batch).
 */
function referenceLoss(cfg: ModelConfig, params: Float32Array, batch: TokenBatch): number {
  const { B, T } = batch;
  const { logits } = new CpuModel(cfg, params).forward({ tokens: batch.tokens, B, T });
  const losses = new Float64Array(B * T);
  crossEntropyRef(losses, null, logits, batch.targets, batch.mask, B * T, cfg.vocabSize, 1);
  return losses.reduce((a, b) => a + b, 0) / (B * T);
}

function checkFirstLoss(loss: number | null | undefined, ref: number, who: string): void {
  if (loss === null || loss === undefined || !Number.isFinite(loss) || Math.abs(loss - ref) > 2e-3 * Math.max(1, ref)) {
    throw new Error(
      `bench engine: ${who} first training step gave loss ${loss}; the float64 reference model gives ${ref.toFixed(5)} on the same parameters and batch`,
    );
  }
}

function checkLaterLoss(loss: number | null | undefined, first: number, who: string): void {
  if (loss === null || loss === undefined || !Number.isFinite(loss) || loss > first + 1e-3) {
    throw new Error(
      `bench engine: ${who} last training step gave loss ${loss}, above the first step's ${first.toFixed(5)} on the same batch`,
    );
  }
}

async function benchTrain(
  rt: GpuRuntime,
  tf: Tf,
  opts: EngineBenchOptions,
  progress: Progress,
): Promise<Pick<EngineBenchResult, 'train_step' | 'per_step'>> {
  const { preset, B, T, steps } = opts.train;
  const warmup = Math.max(1, opts.train.warmup);
  const cfg: ModelConfig = MODEL_PRESETS[preset];
  const V = cfg.vocabSize;
  const table = paramTable(cfg);
  const params = initParams(table, opts.seed);
  const batch = tokenBatch(V, B, T, opts.seed);
  const tokensPerS = (ms: number): number => round3((steps * B * T) / (ms / 1000));
  const refLoss = referenceLoss(cfg, params, batch);

  // Both engines start from `params` on `batch`; the first warm-up step reads the loss, and the
  // two first losses must agree (the TF.js model is the same model), then steps are timed.
  progress(`training step (ours), ${preset} B=${B} T=${T}`);
  const model = new GpuModel(rt, cfg, params);
  const trainer = new GpuTrainer(model, DEFAULT_OPTIM);
  let oursMs: number;
  let oursFirstLoss: number | undefined;
  let perStep: EngineBenchResult['per_step'] | null = null;
  const nonLoggingStep = async (): Promise<void> => {
    const before = { ...rt.stats };
    await trainer.trainStep([batch], false);
    perStep = statsDelta(before, rt.stats);
  };
  try {
    oursFirstLoss = (await trainer.trainStep([batch], true)).loss;
    checkFirstLoss(oursFirstLoss, refLoss, 'our');
    for (let i = 1; i < warmup; i++) await nonLoggingStep();
    const t0 = performance.now();
    for (let s = 0; s < steps - 1; s++) await nonLoggingStep();
    const last = await trainer.trainStep([batch], true);
    oursMs = performance.now() - t0;
    checkLaterLoss(last.loss, oursFirstLoss!, 'our');
    if (!perStep) await nonLoggingStep(); // no untimed or timed step without a readback yet
  } finally {
    trainer.dispose();
    model.dispose();
  }

  progress(`training step (TF.js), ${preset} B=${B} T=${T}`);
  const gpt = new TfjsGpt(tf, cfg, DEFAULT_OPTIM.lr);
  const tokens = Int32Array.from(batch.tokens);
  const targets = Int32Array.from(batch.targets);
  let tfjsMs: number;
  try {
    gpt.setParams(table, params);
    const firstLoss = await gpt.step(tokens, targets, B, T, true);
    checkFirstLoss(firstLoss, refLoss, 'TF.js');
    if (Math.abs(firstLoss! - oursFirstLoss!) > 2e-3) {
      throw new Error(
        `bench engine: the first training losses differ: ours ${oursFirstLoss}, TF.js ${firstLoss} (same parameters and batch)`,
      );
    }
    for (let i = 1; i < warmup; i++) await gpt.step(tokens, targets, B, T, false);
    await tfjsFinish(tf);
    const t0 = performance.now();
    for (let s = 0; s < steps - 1; s++) await gpt.step(tokens, targets, B, T, false);
    const loss = await gpt.step(tokens, targets, B, T, true);
    tfjsMs = performance.now() - t0;
    checkLaterLoss(loss, firstLoss!, 'TF.js');
  } finally {
    gpt.dispose();
  }

  return {
    train_step: { config: { preset, ...cfg }, B, T, ours_tokens_per_s: tokensPerS(oursMs), tfjs_tokens_per_s: tokensPerS(tfjsMs) },
    per_step: perStep!,
  };
}

function statsDelta(before: RuntimeStats, after: RuntimeStats): EngineBenchResult['per_step'] {
  return {
    dispatches: after.dispatches - before.dispatches,
    submits: after.submits - before.submits,
    readbacks: after.readbacks - before.readbacks,
  };
}

// ---------------------------------------------------------------------------------------------
// 4. generation

async function benchGenerate(rt: GpuRuntime, opts: EngineBenchOptions): Promise<EngineBenchResult['generate']> {
  const { B, promptLen, newTokens, reps } = opts.generate;
  const cfg: ModelConfig = MODEL_PRESETS[opts.train.preset];
  const rng = new Rng(opts.seed + 7);
  const prompts = Array.from({ length: B }, () => Uint32Array.from({ length: promptLen }, () => Math.floor(rng.next() * cfg.vocabSize)));
  const model = new GpuModel(rt, cfg, initParams(paramTable(cfg), opts.seed));
  try {
    await generate(model, prompts, { maxNewTokens: Math.min(4, newTokens), temperature: 1, seed: opts.seed });
    const rates: number[] = [];
    for (let r = 0; r < Math.max(1, reps); r++) {
      const t0 = performance.now();
      const res = await generate(model, prompts, { maxNewTokens: newTokens, temperature: 1, seed: opts.seed + r });
      const produced = res.tokens.reduce((n, t) => n + t.length, 0);
      rates.push(produced / ((performance.now() - t0) / 1000));
    }
    return { ours_tokens_per_s: round3(median(rates)), B, prompt_len: promptLen, new_tokens: newTokens };
  } finally {
    model.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// output

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Three significant digits. */
function round3(x: number): number {
  return Number(x.toPrecision(3));
}

/** ours / TF.js, as printed: "1.23x". */
export function ratio(ours: number, theirs: number): string {
  return theirs > 0 ? `${(ours / theirs).toFixed(2)}x` : '—';
}

/** The human-readable report: one table per measurement, with ours / TF.js ratios. */
export function formatEngineBench(r: EngineBenchResult): string {
  const pad = (s: string | number, w: number): string => String(s).padStart(w);
  const { config: c, B, T } = r.train_step;
  const g = r.generate;
  return [
    `adapter: ${r.adapter}`,
    '',
    'matmul out (n, n) = a (n, n) · b (n, n)^T, GFLOP/s (median, each run to completion)',
    `${pad('n', 6)}${pad('ours', 10)}${pad('tiled', 10)}${pad('naive', 10)}${pad('TF.js', 10)}${pad('ours/TF.js', 12)}`,
    ...r.matmul.map(
      (m) =>
        `${pad(m.n, 6)}${pad(m.ours_gflops, 10)}${pad(m.variants.tiled, 10)}${pad(m.variants.naive, 10)}${pad(m.tfjs_gflops, 10)}${pad(ratio(m.ours_gflops, m.tfjs_gflops), 12)}`,
    ),
    '',
    `training step, ${c.preset} (L=${c.nLayer} C=${c.dModel} NH=${c.nHead} V=${c.vocabSize}), B=${B} T=${T}, tokens/s`,
    `${pad('ours', 10)}${pad('TF.js', 10)}${pad('ours/TF.js', 12)}`,
    `${pad(r.train_step.ours_tokens_per_s, 10)}${pad(r.train_step.tfjs_tokens_per_s, 10)}${pad(ratio(r.train_step.ours_tokens_per_s, r.train_step.tfjs_tokens_per_s), 12)}`,
    '',
    `per training step (ours, no readback): ${r.per_step.dispatches} dispatches, ${r.per_step.submits} submit(s), ${r.per_step.readbacks} readbacks`,
    `generation (ours), B=${g.B} prompts of ${g.prompt_len} tokens, ${g.new_tokens} new tokens each: ${g.ours_tokens_per_s} tokens/s`,
  ].join('\n');
}
