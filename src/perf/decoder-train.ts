/**
 * The imported-model training benchmark (`coderl bench train`): for SmolLM2-135M and
 * Qwen2.5-0.5B shapes with random weights (perf/models.ts: the Hub's configs, `quick` 1 layer at
 * the real widths with a 4096 vocabulary), LoRA (r 8 on q_proj, v_proj) and full fine-tuning;
 * mode `lora-bf16` is LoRA with the frozen base stored BF16, as SmolLM2's and Qwen2.5's checkpoints
 * ship (kernels/weight_format.ts): every side then runs the BF16-rounded weights, TF.js (which has
 * no 16-bit storage) widened to f32, so the two compute the same model:
 *
 *   update   one optimizer step on a (B, T) micro-batch of random next-token data (masked
 *            cross-entropy, global-norm clipping, AdamW): ours (DecoderGpuTrainer.trainStep, one
 *            submit, awaited) against the same step in TF.js on the same adapter (TfjsDecoder,
 *            its queue submitted and drained), interleaved one of ours then one of theirs,
 *            medians of `reps` after the warm-up; tokens/s = B * T / median, and ours / TF.js.
 *            The first step's losses must agree with each other (and, where the model is small
 *            enough, with the float64 DecoderCpu on a short batch), and the last step's must be
 *            finite and not above the first on that one batch;
 *   grpo     one GRPO iteration of ours, split into its phases: rollout (generateOn of P task
 *            prompts x G samples, N new tokens at temperature 1, sampling on the GPU), scoring
 *            (the completions decoded and scored by the caller's scorer: in the CLI the sandbox
 *            pool, static analysis and the reward, scoreRollouts; random weights write failing
 *            programs, which is fine: the time is the scoring's), and update (one rlStep over the
 *            P * G rollouts in micro-batches, group-normalised advantages, the sampler's log-probs
 *            as the old ones). One untimed iteration first (pipelines, buffers, sandbox workers).
 *
 * The prompts are the last `promptLen` tokens of each task's prompt in the lab's corpus
 * tokenizer (tokenizer/corpus.ts; the models have random weights, so no tokenizer of theirs
 * means anything); sampling is limited to its ids (vocabLimit). LoRA's B starts small and
 * random instead of PEFT's zeros, so the first-loss check covers the adapters' forward.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { crossEntropyRef } from '../kernels/crossentropy';
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import type { DecoderArch } from '../model/arch';
import { DecoderCpu } from '../model/decoder-cpu';
import { DecoderGpu, roundedWeights } from '../model/decoder-gpu';
import { DecoderGpuTrainer, type DecoderLoraInit, type DecoderRlBatch } from '../model/decoder-gpu-train';
import { generateOn } from '../model/generate';
import { initLoraAdapters, loraModules, loraScaling, type LoraConfig } from '../model/lora';
import { DEFAULT_OPTIM, type OptimConfig, type TokenBatch } from '../model/optim';
import type { Task } from '../tasks/types';
import { corpusTokenizer } from '../tokenizer/corpus';
import type { Tokenizer } from '../tokenizer/tokenizer';
import { errorText } from '../util/errors';
import { Rng } from '../util/random';
import { ratio, tokenBatch } from './engine';
import { benchArch, parameterCount, randomDecoderWeights, type ModelName } from './models';
import { median } from './onnx';
import { tfjsAdapterInfo, tfjsChecked, tfjsFinish, type Tf } from './tfjs';
import { TfjsDecoder } from './tfjs-decoder';

/** The shapes this bench trains (the TF.js side writes Llama and Qwen2, not GPT-2). */
export const TRAIN_MODELS = ['smollm2-135m', 'qwen2.5-0.5b'] as const satisfies readonly ModelName[];
export type TrainModel = (typeof TRAIN_MODELS)[number];
export const TRAIN_MODES = ['lora', 'lora-bf16', 'full'] as const;
export type TrainMode = (typeof TRAIN_MODES)[number];

/** full: the real shapes; quick: 1 layer at the real widths, a 4096 vocabulary; tiny: toy widths (tests). */
export type TrainSize = 'full' | 'quick' | 'tiny';

export interface TrainBenchOptions {
  models: TrainModel[];
  modes: TrainMode[];
  size: TrainSize;
  /** the adapters of the LoRA mode */
  lora: LoraConfig;
  opt: OptimConfig;
  update: {
    /** the micro-batch (B, T) of one step */
    B: number;
    T: number;
    /** untimed steps of each engine first (the first reads and checks the loss); at least 1 */
    warmup: number;
    /** timed steps of each engine, interleaved; the median is reported */
    reps: number;
  };
  /** one GRPO iteration of ours (needs a scorer), or null: the update comparison only */
  grpo: {
    /** P: task prompts */
    prompts: number;
    /** G: samples per prompt (the group) */
    samples: number;
    /** tokens per prompt: the last promptLen of each task's prompt */
    promptLen: number;
    /** N: new tokens per sample */
    newTokens: number;
    /** rows per micro-batch of the rlStep (divides P * G) */
    microBatch: number;
  } | null;
  seed: number;
}

const LORA_R8: LoraConfig = { rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] };

export const TRAIN_BENCH_DEFAULTS: TrainBenchOptions = {
  models: [...TRAIN_MODELS],
  modes: ['lora', 'full'],
  size: 'full',
  lora: LORA_R8,
  opt: DEFAULT_OPTIM,
  update: { B: 4, T: 128, warmup: 2, reps: 5 },
  grpo: { prompts: 4, samples: 4, promptLen: 64, newTokens: 64, microBatch: 4 },
  seed: 1,
};

/** Minutes on SwiftShader: 1 layer, a 4096 vocabulary, (2, 32) micro-batches, 3 reps; 2 prompts x 2 samples x 8 tokens. */
export const TRAIN_BENCH_QUICK: TrainBenchOptions = {
  ...TRAIN_BENCH_DEFAULTS,
  size: 'quick',
  update: { B: 2, T: 32, warmup: 1, reps: 3 },
  grpo: { prompts: 2, samples: 2, promptLen: 16, newTokens: 8, microBatch: 2 },
};

/** Seconds: toy widths (the tests of the command's plumbing). */
export const TRAIN_BENCH_TINY: TrainBenchOptions = {
  ...TRAIN_BENCH_QUICK,
  size: 'tiny',
  lora: { ...LORA_R8, rank: 4, alpha: 8 },
  update: { B: 2, T: 8, warmup: 1, reps: 1 },
  grpo: { prompts: 1, samples: 2, promptLen: 6, newTokens: 4, microBatch: 2 },
};

/** The float64 reference loss is computed where the model has at most this many parameters (the quick and tiny shapes). */
const REFERENCE_MAX_PARAMETERS = 40e6;

/** Scores completions of tasks (the CLI: the sandbox pool, the analyzer and the reward, as a training run scores). */
export interface RolloutScorer {
  /** how it scores, for the report: "humaneval-x-js: sandbox (2 workers), analysis, reward" */
  name: string;
  /** the tasks whose prompts the rollouts continue (at least grpo.prompts) */
  tasks: readonly Task[];
  score(items: { task: Task; completion: string }[]): Promise<{ reward: number; passed: boolean }[]>;
}

export function validateTrainOptions(o: TrainBenchOptions): void {
  const pos = (x: number, what: string) => {
    if (!Number.isInteger(x) || x < 1) throw new Error(`bench train: ${what} must be a positive integer, got ${x}`);
  };
  if (!o.models.length) throw new Error('bench train: no shapes');
  for (const m of o.models)
    if (!(TRAIN_MODELS as readonly string[]).includes(m))
      throw new Error(`bench train: unknown shape '${m}' (shapes: ${TRAIN_MODELS.join(', ')})`);
  if (!o.modes.length) throw new Error('bench train: no modes');
  for (const m of o.modes)
    if (!(TRAIN_MODES as readonly string[]).includes(m))
      throw new Error(`bench train: unknown mode '${m}' (modes: ${TRAIN_MODES.join(', ')})`);
  pos(o.update.B, 'the batch size');
  pos(o.update.T, 'the sequence length');
  pos(o.update.warmup, 'warm-up steps');
  pos(o.update.reps, 'reps');
  const g = o.grpo;
  if (g) {
    pos(g.prompts, 'prompts');
    pos(g.samples, 'samples per prompt');
    pos(g.promptLen, 'the prompt length');
    pos(g.newTokens, 'new tokens');
    pos(g.microBatch, 'the micro-batch');
    if ((g.prompts * g.samples) % g.microBatch !== 0)
      throw new Error(`bench train: the micro-batch ${g.microBatch} does not divide the ${g.prompts * g.samples} rollouts`);
  }
  for (const m of o.models) {
    const a = benchArch(m, o.size);
    const T = Math.max(o.update.T, g ? g.promptLen + g.newTokens : 0);
    if (T > a.maxPositions) throw new Error(`bench train: ${T} positions exceed ${m}'s ${a.maxPositions}`);
  }
}

export interface UpdateRow {
  B: number;
  T: number;
  reps: number;
  ours_ms: number;
  tfjs_ms: number;
  ours_tokens_per_s: number;
  tfjs_tokens_per_s: number;
  /** ours / TF.js tokens/s */
  ratio: number;
  /** the first step's losses; reference: float64 DecoderCpu on the first row's first 8 positions, where run */
  first_loss: { ours: number; tfjs: number };
  reference: { loss: number; ours: number; tfjs: number; T: number } | null;
  /** ours, one step without a readback */
  per_step: { dispatches: number; submits: number };
  /**
   * where ours spends one step's GPU time, by kernel, most first (one extra step with a timestamp
   * around each dispatch, so each is its own pass: the sum exceeds ours_ms); null without timestamp-query
   */
  kernels: KernelTime[] | null;
}

/** One kernel's share of a profiled step: its dispatches' GPU time summed. */
export interface KernelTime {
  kernel: string;
  dispatches: number;
  ms: number;
  /** of the profiled step's GPU time */
  share: number;
}

/** Per-dispatch timings summed by kernel, most time first. */
export function kernelTimes(timings: readonly { kernel: string; ns: number }[]): KernelTime[] {
  const by = new Map<string, { dispatches: number; ns: number }>();
  for (const t of timings) {
    const k = by.get(t.kernel) ?? { dispatches: 0, ns: 0 };
    k.dispatches++;
    k.ns += t.ns;
    by.set(t.kernel, k);
  }
  const total = timings.reduce((s, t) => s + t.ns, 0);
  return [...by]
    .map(([kernel, k]) => ({ kernel, dispatches: k.dispatches, ms: r3(k.ns / 1e6), share: total > 0 ? r3(k.ns / total) : 0 }))
    .sort((a, b) => b.ms - a.ms);
}

export interface GrpoRow {
  prompts: number;
  samples: number;
  prompt_len: number;
  new_tokens: number;
  micro_batch: number;
  rollout_s: number;
  scoring_s: number;
  update_s: number;
  total_s: number;
  /** sampled tokens / rollout_s */
  rollout_tokens_per_s: number;
  /** loss tokens of the rlStep / update_s */
  update_tokens_per_s: number;
  passed: number;
  mean_reward: number;
}

export interface TrainRow {
  model: TrainModel;
  mode: TrainMode;
  /** what the optimizer updates */
  trainable: number;
  update: UpdateRow | null;
  grpo: GrpoRow | null;
  /** what failed, if something did (the other rows still run) */
  error?: string;
}

export interface TrainBenchResult {
  adapter: string;
  size: TrainSize;
  lora: LoraConfig;
  scorer: string | null;
  shapes: { model: TrainModel; arch: DecoderArch; parameters: number }[];
  rows: TrainRow[];
}

export type Progress = (m: string) => void;

const r3 = (x: number) => Number(x.toPrecision(3));

/** Runs the bench on `rt` and `tf` (TF.js on its webgpu backend, same adapter). */
export async function benchTrain(
  rt: GpuRuntime,
  tf: Tf,
  scorer: RolloutScorer | null,
  o: TrainBenchOptions,
  progress: Progress = () => {},
): Promise<TrainBenchResult> {
  validateTrainOptions(o);
  if (o.grpo && !scorer) throw new Error('bench train: the GRPO iteration needs a scorer');
  if (o.grpo && scorer!.tasks.length < o.grpo.prompts)
    throw new Error(`bench train: ${o.grpo.prompts} prompts asked, the scorer has ${scorer!.tasks.length} tasks`);
  const adapter = sameAdapter(rt, tf);
  const shapes: TrainBenchResult['shapes'] = [];
  const rows: TrainRow[] = [];
  let tok: Tokenizer | null = null;
  for (const model of o.models) {
    const arch = benchArch(model, o.size);
    shapes.push({ model, arch, parameters: parameterCount(arch) });
    progress(`${model}: random weights (${(parameterCount(arch) / 1e6).toFixed(1)} M parameters)`);
    const f32 = randomDecoderWeights(arch, o.seed);
    for (const mode of o.modes) {
      const row: TrainRow = { model, mode, trainable: 0, update: null, grpo: null };
      rows.push(row);
      const lora = mode === 'full' ? null : loraInit(arch, o.lora, o.seed);
      const weightFormat = mode === 'lora-bf16' ? 'bf16' : 'f32';
      const weights = roundedWeights(arch, f32, weightFormat);
      const gpu = new DecoderGpu(rt, arch, weights, { weightFormat });
      const ours = new DecoderGpuTrainer(gpu, o.opt, lora);
      row.trainable = ours.trainables.reduce((s, t) => s + t.n, 0);
      try {
        row.update = await benchUpdate(rt, tf, arch, weights, lora, ours, o, (m) => progress(`${model} ${mode}: ${m}`));
        if (o.grpo) {
          tok ??= corpusTokenizer(Math.min(4096, arch.vocabSize));
          row.grpo = await benchGrpo(ours, tok, scorer!, o.grpo, o.seed, (m) => progress(`${model} ${mode}: ${m}`));
        }
      } catch (e) {
        row.error = errorText(e);
        progress(`${model} ${mode}: FAILED: ${row.error}`);
      } finally {
        ours.dispose();
        gpu.dispose();
      }
    }
  }
  return { adapter, size: o.size, lora: o.lora, scorer: o.grpo ? scorer!.name : null, shapes, rows };
}

function sameAdapter(rt: GpuRuntime, tf: Tf): string {
  const ours = rt.adapterSummary;
  const theirs = tfjsAdapterInfo(tf);
  const differs = (a: string, b: string): boolean => a !== '' && b !== '' && a !== b;
  if (differs(ours.vendor, theirs.vendor) || differs(ours.architecture, theirs.architecture))
    throw new Error(`bench train: TF.js runs on ${theirs.vendor} ${theirs.architecture}, ours on ${ours.vendor} ${ours.architecture}`);
  return `${ours.vendor} ${ours.architecture} ${ours.description}`.trim();
}

/** PEFT's A init; B small and random (not zero), so the adapters change the first loss. */
function loraInit(arch: DecoderArch, cfg: LoraConfig, seed: number): DecoderLoraInit {
  const modules = loraModules(arch, cfg);
  const rng = new Rng(seed + 101);
  const { A, B } = initLoraAdapters(modules, cfg.rank, rng);
  for (const b of B) for (let i = 0; i < b.length; i++) b[i] = 0.02 * (2 * rng.next() - 1);
  return { modules, rank: cfg.rank, scaling: loraScaling(cfg), A, B };
}

// ---------------------------------------------------------------------------------------------
// update: ours vs TF.js

async function benchUpdate(
  rt: GpuRuntime,
  tf: Tf,
  arch: DecoderArch,
  weights: Map<string, Float32Array>,
  lora: DecoderLoraInit | null,
  ours: DecoderGpuTrainer,
  o: TrainBenchOptions,
  progress: Progress,
): Promise<UpdateRow> {
  const { B, T, warmup, reps } = o.update;
  const batch = tokenBatch(arch.vocabSize, B, T, o.seed);
  progress(`TF.js model (${lora ? 'frozen base, adapters' : 'every tensor'} as variables)`);
  const theirs = new TfjsDecoder(tf, arch, weights, { opt: o.opt, lora });
  try {
    // the float64 reference on a short batch first (no update), where the model is small enough
    let reference: UpdateRow['reference'] = null;
    if (parameterCount(arch) <= REFERENCE_MAX_PARAMETERS) {
      const Tr = Math.min(8, T);
      const short = tokenBatch(arch.vocabSize, 1, Tr, o.seed + 1);
      progress(`float64 reference loss (1 x ${Tr})`);
      const want = referenceLoss(arch, weights, lora, short);
      const mine = (await ours.computeGradients([short], true)).loss!;
      const tfjs = await tfjsChecked(tf, 'reference loss', () => theirs.lossOf(short));
      reference = { loss: want, ours: mine, tfjs, T: Tr };
      for (const [who, x] of [
        ['ours', mine],
        ['TF.js', tfjs],
      ] as const)
        if (!(Math.abs(x - want) <= 1e-3 * Math.max(1, want)))
          throw new Error(`bench train: ${who} loss ${x} on the short batch; the float64 reference gives ${want}`);
    }

    progress(`warm-up: ${warmup} step(s) each, B=${B} T=${T}`);
    const oursFirst = (await ours.trainStep([batch], true)).loss!;
    const tfjsFirst = (await tfjsChecked(tf, 'first step', () => theirs.step(batch, true)))!;
    if (!Number.isFinite(oursFirst) || !Number.isFinite(tfjsFirst) || Math.abs(oursFirst - tfjsFirst) > 2e-3 * Math.max(1, oursFirst))
      throw new Error(`bench train: the first losses differ: ours ${oursFirst}, TF.js ${tfjsFirst} (same weights and batch)`);
    let perStep = { dispatches: 0, submits: 0 };
    for (let i = 1; i < warmup; i++) {
      const s0 = { ...rt.stats };
      await ours.trainStep([batch], false);
      perStep = { dispatches: rt.stats.dispatches - s0.dispatches, submits: rt.stats.submits - s0.submits };
      await tfjsChecked(tf, 'warm-up step', async () => {
        await theirs.step(batch, false);
        await tfjsFinish(tf);
      });
    }
    await tfjsFinish(tf);

    progress(`timing ${reps} step(s) each, interleaved`);
    const oursMs: number[] = [];
    const tfjsMs: number[] = [];
    for (let r = 0; r < reps; r++) {
      const s0 = { ...rt.stats };
      let t0 = performance.now();
      await ours.trainStep([batch], false);
      oursMs.push(performance.now() - t0);
      perStep = { dispatches: rt.stats.dispatches - s0.dispatches, submits: rt.stats.submits - s0.submits };
      t0 = performance.now();
      await theirs.step(batch, false);
      await tfjsFinish(tf);
      tfjsMs.push(performance.now() - t0);
    }
    await ours.trainStep([batch], false, true);
    const kernels = ours.lastTimings ? kernelTimes(ours.lastTimings) : null;
    const oursLast = (await ours.trainStep([batch], true)).loss!;
    const tfjsLast = (await theirs.step(batch, true))!;
    for (const [who, last, first] of [
      ['ours', oursLast, oursFirst],
      ['TF.js', tfjsLast, tfjsFirst],
    ] as const)
      if (!Number.isFinite(last) || last > first + 1e-3 * Math.max(1, first))
        throw new Error(`bench train: ${who} last step's loss ${last} is above the first step's ${first} on the same batch`);

    const [om, tm] = [median(oursMs), median(tfjsMs)];
    const tps = (ms: number) => r3((B * T) / (ms / 1000));
    return {
      B,
      T,
      reps,
      ours_ms: r3(om),
      tfjs_ms: r3(tm),
      ours_tokens_per_s: tps(om),
      tfjs_tokens_per_s: tps(tm),
      ratio: r3(tm / om),
      first_loss: { ours: oursFirst, tfjs: tfjsFirst },
      reference,
      per_step: perStep,
      kernels,
    };
  } finally {
    theirs.dispose();
  }
}

function referenceLoss(arch: DecoderArch, weights: Map<string, Float32Array>, lora: DecoderLoraInit | null, b: TokenBatch): number {
  const m = new DecoderCpu(arch, weights);
  if (lora) m.setLora(lora);
  const { logits } = m.forward({ tokens: b.tokens, B: b.B, T: b.T });
  const losses = new Float64Array(b.B * b.T);
  crossEntropyRef(losses, null, logits, b.targets, b.mask, b.B * b.T, arch.vocabSize, 1);
  return losses.reduce((s, x) => s + x, 0) / b.mask.reduce((s, x) => s + x, 0);
}

// ---------------------------------------------------------------------------------------------
// one GRPO iteration of ours: rollout, scoring, update

const GRPO_LOSS: RlLossConfig = { clip: 0.2, vclip: 0, vfCoef: 0, entCoef: 0, klCoef: 0, invTemp: 1 };

async function benchGrpo(
  trainer: DecoderGpuTrainer,
  tok: Tokenizer,
  scorer: RolloutScorer,
  g: NonNullable<TrainBenchOptions['grpo']>,
  seed: number,
  progress: Progress,
): Promise<GrpoRow> {
  const { prompts: P, samples: G, promptLen, newTokens: N, microBatch } = g;
  const tasks = scorer.tasks.slice(0, P);
  const prompts = tasks.map((t) => {
    let ids = Array.from(tok.encode(t.prompt));
    while (ids.length < promptLen) ids = [...ids, ...ids];
    return ids.slice(ids.length - promptLen);
  });
  const rows = prompts.flatMap((p) => Array.from({ length: G }, () => p)); // row p * G + s
  const run = async (it: number) => {
    const t0 = performance.now();
    const gen = await generateOn(trainer.model, rows, { maxNewTokens: N, temperature: 1, seed: seed + it, vocabLimit: tok.vocabSize });
    const t1 = performance.now();
    const items = gen.tokens.map((ids, i) => ({ task: tasks[Math.floor(i / G)]!, completion: tok.decode(ids) }));
    const scores = await scorer.score(items);
    const t2 = performance.now();
    const batches = rlBatches(
      rows,
      gen.tokens,
      gen.logprobs,
      groupAdvantages(
        scores.map((s) => s.reward),
        G,
      ),
      scores,
      microBatch,
    );
    const out = await trainer.rlStep(batches, GRPO_LOSS, true);
    const t3 = performance.now();
    return { t: [t1 - t0, t2 - t1, t3 - t2], sampled: gen.tokens.reduce((s, x) => s + x.length, 0), scores, lossTokens: out.tokens };
  };
  progress(`GRPO warm-up iteration (${P} prompts x ${G} samples x ${N} tokens; ${scorer.name})`);
  await run(0);
  progress('GRPO iteration, timed');
  const { t, sampled, scores, lossTokens } = await run(1);
  const [rollout, scoring, update] = t.map((ms) => ms / 1000) as [number, number, number];
  return {
    prompts: P,
    samples: G,
    prompt_len: promptLen,
    new_tokens: N,
    micro_batch: microBatch,
    rollout_s: r3(rollout),
    scoring_s: r3(scoring),
    update_s: r3(update),
    total_s: r3(rollout + scoring + update),
    rollout_tokens_per_s: r3(sampled / rollout),
    update_tokens_per_s: r3(lossTokens / update),
    passed: scores.filter((s) => s.passed).length,
    mean_reward: r3(scores.reduce((s, x) => s + x.reward, 0) / scores.length),
  };
}

/** GRPO's advantages: each reward minus its group's mean, over the group's standard deviation (0 where the group agrees). */
function groupAdvantages(rewards: number[], G: number): number[] {
  return rewards.map((r, i) => {
    const group = rewards.slice(i - (i % G), i - (i % G) + G);
    const mean = group.reduce((s, x) => s + x, 0) / G;
    const std = Math.sqrt(group.reduce((s, x) => s + (x - mean) ** 2, 0) / G);
    return std > 1e-6 ? (r - mean) / std : 0;
  });
}

/**
 * The rollouts as rlStep micro-batches of `mb` rows, T = prompt + new - 1: the loss on the
 * sampled tokens (targets from the prompt's last position on), the sampler's log-probs as the old
 * and the reference ones, the row's advantage on each of its tokens.
 */
function rlBatches(
  prompts: number[][],
  generated: number[][],
  logprobs: number[][],
  advantages: number[],
  scores: { reward: number }[],
  mb: number,
): DecoderRlBatch[] {
  const P = prompts[0]!.length;
  const N = Math.max(...generated.map((x) => x.length));
  const T = P + N - 1;
  const out: DecoderRlBatch[] = [];
  for (let r0 = 0; r0 < prompts.length; r0 += mb) {
    const n = mb * T;
    const b: DecoderRlBatch = {
      B: mb,
      T,
      tokens: new Uint32Array(n),
      targets: new Uint32Array(n),
      mask: new Float32Array(n),
      oldLogp: new Float32Array(n),
      oldValues: new Float32Array(n),
      advantages: new Float32Array(n),
      returns: new Float32Array(n),
      refLogp: new Float32Array(n),
    };
    for (let i = 0; i < mb; i++) {
      const r = r0 + i;
      const gen = generated[r]!;
      const seq = [...prompts[r]!, ...gen];
      for (let t = 0; t < T; t++) {
        const k = i * T + t;
        b.tokens[k] = seq[Math.min(t, seq.length - 1)]!;
        b.targets[k] = seq[Math.min(t + 1, seq.length - 1)]!;
        const a = t - (P - 1); // index of the generated token this position predicts
        if (a >= 0 && a < gen.length) {
          b.mask[k] = 1;
          b.oldLogp[k] = b.refLogp[k] = logprobs[r]![a]!;
          b.advantages[k] = advantages[r]!;
          b.returns[k] = scores[r]!.reward;
        }
      }
    }
    out.push(b);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// output

/** Kernels named per row in the text report (the JSON has them all). */
const KERNELS_SHOWN = 6;

export function formatTrainBench(r: TrainBenchResult): string {
  const pad = (s: string | number, w: number): string => String(s).padStart(w);
  const lines = [`adapter: ${r.adapter}`, `shapes: ${r.size}; LoRA r=${r.lora.rank} alpha=${r.lora.alpha} on ${r.lora.targets.join(', ')}`];
  for (const s of r.shapes) {
    const a = s.arch;
    lines.push(
      `  ${s.model}: ${a.nLayer} layer(s), d_model ${a.dModel}, ${a.nHead} heads (${a.nKvHead} kv) of ${a.headDim}, ffn ${a.dFf}, vocab ${a.vocabSize}; ${(s.parameters / 1e6).toFixed(1)} M parameters`,
    );
  }
  const first = r.rows.find((x) => x.update)?.update;
  lines.push(
    '',
    `update step (masked cross-entropy, clipping, AdamW)${first ? `, B=${first.B} T=${first.T}` : ''}: tokens/s, median of interleaved runs, each to completion`,
    `${'shape'.padEnd(14)}${'mode'.padEnd(11)}${pad('trainable', 12)}${pad('ours', 10)}${pad('TF.js', 10)}${pad('ours/TF.js', 12)}${pad('ours ms', 10)}${pad('TF.js ms', 10)}${pad('submits', 9)}`,
  );
  for (const x of r.rows) {
    const u = x.update;
    const head = `${x.model.padEnd(14)}${x.mode.padEnd(11)}${pad(x.trainable.toLocaleString('en-US'), 12)}`;
    lines.push(
      u
        ? `${head}${pad(u.ours_tokens_per_s, 10)}${pad(u.tfjs_tokens_per_s, 10)}${pad(ratio(u.ours_tokens_per_s, u.tfjs_tokens_per_s), 12)}${pad(u.ours_ms, 10)}${pad(u.tfjs_ms, 10)}${pad(u.per_step.submits, 9)}`
        : `${head}  FAILED: ${x.error ?? 'no result'}`,
    );
  }
  const profiled = r.rows.filter((x) => x.update?.kernels?.length);
  if (profiled.length) {
    lines.push(
      '',
      `where ours spends an update step, by kernel (one step with GPU timestamps; top ${KERNELS_SHOWN}, share of its GPU time)`,
    );
    for (const x of profiled) {
      const k = x.update!.kernels!;
      const ms = k.reduce((s, t) => s + t.ms, 0);
      const top = k.slice(0, KERNELS_SHOWN).map((t) => `${t.kernel} ${(100 * t.share).toFixed(0)}% (${t.dispatches})`);
      lines.push(`${x.model.padEnd(14)}${x.mode.padEnd(11)}${r3(ms)} ms: ${top.join(', ')}`);
    }
  }
  const grpo = r.rows.filter((x) => x.grpo);
  if (grpo.length) {
    const g = grpo[0]!.grpo!;
    lines.push(
      '',
      `one GRPO iteration (ours): ${g.prompts} prompts x ${g.samples} samples, prompt ${g.prompt_len} + ${g.new_tokens} new tokens, rlStep in micro-batches of ${g.micro_batch}; scoring: ${r.scorer}`,
      `${'shape'.padEnd(14)}${'mode'.padEnd(11)}${pad('rollout s', 11)}${pad('scoring s', 11)}${pad('update s', 10)}${pad('total s', 9)}${pad('sample tok/s', 14)}${pad('update tok/s', 14)}${pad('passed', 8)}`,
    );
    for (const x of grpo) {
      const q = x.grpo!;
      lines.push(
        `${x.model.padEnd(14)}${x.mode.padEnd(11)}${pad(q.rollout_s, 11)}${pad(q.scoring_s, 11)}${pad(q.update_s, 10)}${pad(q.total_s, 9)}${pad(q.rollout_tokens_per_s, 14)}${pad(q.update_tokens_per_s, 14)}${pad(`${q.passed}/${q.prompts * q.samples}`, 8)}`,
      );
    }
  }
  for (const x of r.rows) if (x.error && x.update) lines.push(`${x.model} ${x.mode}: FAILED after the update step: ${x.error}`);
  return lines.join('\n');
}
