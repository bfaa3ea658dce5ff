import { benchRuntime } from '../../../bench/runtime';
import { createAnalyzer } from '../../analysis';
import { nodeWasmLoader } from '../../analysis/wasm-node';
import { benchScore, formatScoreBench } from '../../../bench/score';
import { installTfjsNodeResolver, providerGpu } from '../../../bench/tfjs-node';
import { nodeProvider } from '../../gpu/node';
import type { GpuProvider } from '../../gpu/provider';
import { GpuRuntime } from '../../gpu/runtime';
import { MODEL_PRESETS } from '../../model/config';
import { loadNodeOrt } from '../../onnx/node';
import { benchEngine, ENGINE_BENCH_DEFAULTS, ENGINE_BENCH_QUICK, formatEngineBench, type EngineBenchOptions } from '../../perf/engine';
import { benchOnnxRace, formatOnnxRace, ONNX_RACE_DEFAULTS, ONNX_RACE_QUICK, type OnnxRaceOptions, type RacePreset } from '../../perf/onnx';
import {
  benchModels,
  formatModelsBench,
  MODEL_NAMES,
  MODELS_BENCH_DEFAULTS,
  MODELS_BENCH_QUICK,
  MODELS_BENCH_TINY,
  validateModelsOptions,
  type ModelName,
  type ModelsBenchOptions,
} from '../../perf/models';
import {
  benchTrain,
  formatTrainBench,
  TRAIN_BENCH_DEFAULTS,
  TRAIN_BENCH_QUICK,
  TRAIN_BENCH_TINY,
  TRAIN_MODELS,
  TRAIN_MODES,
  validateTrainOptions,
  type RolloutScorer,
  type TrainBenchOptions,
  type TrainMode,
  type TrainModel,
} from '../../perf/decoder-train';
import { benchServe, formatServeBench, serveBenchDefaults, type ServeBenchOptions } from '../../../bench/serve-load';
import { loadTfjs } from '../../perf/tfjs';
import { DEFAULT_REWARD } from '../../reward/reward';
import { scoreRollouts } from '../../rl/scorer';
import { createNodePool, phasedPoolSize } from '../../sandbox/pool.node';
import { loadSuite } from '../../tasks/suite';
import { UsageError, type Command, type Io, type Options } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';

const SUITES = ['runtime', 'engine', 'score', 'onnx', 'models', 'train', 'serve'] as const;
type Suite = (typeof SUITES)[number];

/** The suites each suite-specific option applies to (any other suite refuses it). */
const APPLIES: Record<string, Suite[]> = {
  sizes: ['engine'],
  steps: ['engine'],
  reps: ['engine', 'onnx', 'models', 'train'],
  preset: ['engine', 'onnx'],
  browser: ['onnx'],
  ort: ['models'],
  models: ['models'],
  batches: ['models'],
  prompt: ['models'],
  'new-tokens': ['models'],
  tiny: ['models', 'train'],
  bandwidth: ['models'],
  shapes: ['train'],
  modes: ['train'],
  suite: ['train'],
  'update-only': ['train'],
  workers: ['serve'],
  soak: ['serve'],
};

/** 'engine', 'engine and onnx', 'engine, onnx and models' */
const listSuites = (xs: string[]): string => (xs.length < 2 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`);

const ORT_CHOICES = ['webgpu', 'wasm', 'none'] as const;

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark and print its figures (runtime, engine, score, onnx, models, train, serve)',
  usage:
    'coderl bench <suite> [--json] [--quick] [--sizes N,N] [--reps N] [--steps N] [--preset P] [--swiftshader] [--ort webgpu|wasm|none] [--shapes S,S] [--modes lora,full] [--workers N] [--soak S]',
  description: [
    'Suites:',
    '  runtime   K small dispatches recorded into one submit vs one submit each (dispatches/s and',
    '            the ratio), and the round trip of a 4-byte readback. Results are validated first.',
    '  engine    our kernels against TensorFlow.js (WebGPU backend) on the same adapter: matmul',
    '            GFLOP/s at n = 256, 512, 1024, 2048 (our tiled and naive variants, each validated',
    '            against float64 first), training tokens/s of the tiny GPT (GpuTrainer vs the same',
    '            model in TF.js), dispatches/submits/readbacks of one training step, and',
    '            generation tokens/s. Medians of warm runs, each run to completion on the GPU.',
    '            --quick: n = 256 and 512, fewer repetitions, smaller batches (under 2 minutes',
    '            on SwiftShader). Progress goes to stderr; --json prints one JSON object.',
    '  score     sandbox programs/s with 1 worker, cores - 1 and cores (HumanEval-X JS, HumanEval Python),',
    '            validated against the known canonical results; static analysis + reward, cold and cached.',
    '  onnx      the ONNX race: a fresh model of --preset exported to ONNX, a forward pass (B, T) and',
    '            greedy generation tokens/s in our WGSL engine and in onnxruntime-web on the same inputs',
    '            (warm-up excluded, medians), with ours/theirs ratios (goal 1.5x). In Node ORT runs on',
    '            its wasm backend only (its webgpu provider needs a browser): ours (WebGPU) vs ORT wasm.',
    '            --browser races in the app instead (Benchmarks panel, "ONNX race": ours, ORT webgpu and',
    "            ORT wasm in one page): it serves dist/ (npm run build first) and drives Debian's",
    '            Chromium headless with WebGPU (playwright-core; CHROMIUM_PATH to override).',
    '  models    imported Hugging Face architectures at real dimensions with random weights:',
    `            ${MODEL_NAMES.join(', ')} (SmolLM2-135M, Qwen2.5-0.5B and GPT-2 small shapes), B = 1, 8, 32,`,
    '            prompt 64 tokens, 32 new (greedy): prefill and decode tokens/s on our engine (DecoderGpu +',
    '            generateOn) and the same model exported to ONNX (KV-cache graph, last-position prefill',
    '            logits) in onnxruntime-web, with ours/ORT ratios, dispatches and submits per decode step,',
    '            GPU memory held (ours: weights + KV cache + activations) and the load time (upload +',
    '            first-run compile). --ort webgpu (default): ours and ORT webgpu in one headless Chromium',
    "            page on its adapter (Debian's Chromium; esbuild bundles bench/models-page.ts); --ort wasm:",
    '            ours in Node (Dawn) vs ORT wasm (CPU); --ort none: ours in Node only (a GPU machine without',
    '            a browser). --quick: 1 layer, a 4096 vocabulary, B = 1, 4, prompt 16, 6 new, 2 runs (a few',
    '            minutes on SwiftShader: compare the ratios there, never the absolute numbers); --tiny: toy widths',
    '            (seconds). --bandwidth GB/s adds the decode bound of each of our rows (weights read once a',
    '            step over that bandwidth) and achieved / bound.',
    '  train     training imported architectures at real dimensions with random weights: SmolLM2-135M and',
    '            Qwen2.5-0.5B shapes (--shapes), LoRA (r 8 on q_proj, v_proj) and full fine-tuning (--modes).',
    '            The update step (B=4 x T=128 random next-token data, masked cross-entropy, clipping, AdamW):',
    '            our DecoderGpuTrainer against the same step written in TensorFlow.js (WebGPU backend, same',
    '            adapter, tf.variableGrads), interleaved, medians of --reps (default 5) after a warm-up; update',
    '            tokens/s of both and ours/TF.js (goal 3x); the first losses must agree (and with the float64',
    '            model where it is small). Then one GRPO iteration of ours split into rollout (4 prompts x 4',
    '            samples x 64 new tokens, generateOn), scoring (the completions decoded and scored against',
    '            --suite, default humaneval-x-js: sandbox pool, static analysis, reward; random weights fail',
    '            every test, the time is what counts) and update (one rlStep over the rollouts), in seconds,',
    '            after an untimed iteration; --update-only skips it. --quick: 1 layer at the real widths, a',
    '            4096 vocabulary, B=2 x T=32, 3 reps, 2 x 2 rollouts of 8 tokens (minutes on SwiftShader:',
    '            compare the ratios there, never the absolute numbers); --tiny: toy widths (seconds).',
    '  serve     coderl serve under load (autocannon on loopback): a real server (a child process, bearer token)',
    '            with 1 and with N sandbox workers (--workers, default cores - 1, at least 2), concurrent clients',
    '            posting /v1/score (single programs and batches) and /get_reward with a mix of honest, failing and',
    '            hostile programs (endless loops, huge output, tampering, process.exit, require, os.system) in',
    '            JavaScript and Python, each a fresh text (no analysis cache hit). Every answer is checked against',
    "            the program's verdict: lost, wrong and hostile passes are counted (any makes exit 1); requests/s,",
    '            programs/s, p50/p99 latency, the scaling ratio against the goal 0.8 x N, server RSS and heap, and',
    "            SIGTERM's drain. --soak S keeps the N-worker server under load for S seconds and reports the RSS",
    '            slope and first-vs-last tenth. --quick: one timed round per server (seconds).',
  ].join('\n'),
  options: {
    json: { type: 'boolean', description: 'print one JSON object instead of a table' },
    quick: { type: 'boolean', description: 'fewer repeats (engine: also fewer sizes, smaller batches)' },
    sizes: { type: 'string', value: 'N,N', description: 'engine: matmul sizes n, comma-separated (default 256,512,1024,2048)' },
    reps: { type: 'string', value: 'N', description: 'engine: timed repetitions per matmul; train: timed update steps (medians reported)' },
    steps: { type: 'string', value: 'N', description: 'engine: timed training steps' },
    preset: {
      type: 'string',
      value: 'P',
      description: `engine: model of the training-step figure; onnx: the raced model (${Object.keys(MODEL_PRESETS).join(', ')}; default tiny)`,
    },
    swiftshader: { type: 'boolean', description: 'use SwiftShader even if a hardware adapter exists' },
    browser: { type: 'boolean', description: 'onnx: race in headless Chromium (ORT webgpu and wasm) on the built app' },
    ort: { type: 'string', value: 'EP', description: 'models: webgpu (headless Chromium, default), wasm (Node) or none (ours only)' },
    models: { type: 'string', value: 'M,M', description: `models: which (${MODEL_NAMES.join(', ')}; default all)` },
    batches: { type: 'string', value: 'B,B', description: 'models: batch sizes (default 1,8,32; --quick 1,4)' },
    prompt: { type: 'string', value: 'N', description: 'models: prompt tokens per row (default 64; --quick 16)' },
    'new-tokens': { type: 'string', value: 'N', description: 'models: new tokens per row, at least 2 (default 32; --quick 6)' },
    tiny: { type: 'boolean', description: 'models, train: toy widths (smoke tests)' },
    bandwidth: { type: 'string', value: 'GB/s', description: "models: the GPU's memory bandwidth, for the decode bound (H200: 4800)" },
    shapes: { type: 'string', value: 'S,S', description: `train: which shapes (${TRAIN_MODELS.join(', ')}; default both)` },
    modes: { type: 'string', value: 'M,M', description: `train: ${TRAIN_MODES.join(', ')} (default lora, full)` },
    suite: {
      type: 'string',
      value: 'S',
      description: "train: the GRPO iteration's tasks (a built-in suite or a file; default humaneval-x-js)",
    },
    'update-only': { type: 'boolean', description: 'train: the update-step comparison only, no GRPO iteration' },
    workers: {
      type: 'string',
      value: 'N',
      description: "serve: the second server's sandbox workers, at least 2 (default: cores - 1, at least 2)",
    },
    soak: { type: 'string', value: 'S', description: 'serve: then keep the N-worker server under load for S seconds (memory slope)' },
  },
  examples: [
    'npx coderl bench runtime',
    'npx coderl bench runtime --json',
    'npx coderl bench engine --quick',
    'npx coderl bench engine --sizes 256,512 --json',
    'npx coderl bench engine --preset small --steps 10',
    'npx coderl bench onnx --preset small --json',
    'npm run build && npx coderl bench onnx --browser',
    'npx coderl bench models --quick',
    'npx coderl bench models --ort none --models smollm2-135m --batches 32 --bandwidth 4800 --json',
    'npx coderl bench train --quick',
    'npx coderl bench train --shapes smollm2-135m --modes lora --json',
    'npx coderl bench serve',
    'npx coderl bench serve --workers 4 --soak 300 --json',
  ],
  async run(options, positionals, io) {
    const suite = positionals[0];
    if (!suite || !(SUITES as readonly string[]).includes(suite)) {
      throw new UsageError(`coderl bench: ${suite ? `unknown suite '${suite}'` : 'name a suite'}; suites: ${SUITES.join(', ')}`);
    }
    for (const [k, suites] of Object.entries(APPLIES)) {
      if (options[k] !== undefined && !suites.includes(suite as Suite))
        throw new UsageError(`coderl bench: --${k} applies to the ${listSuites(suites)} suite${suites.length > 1 ? 's' : ''} only`);
    }
    if (suite === 'models') return runModels(options, io);
    if (suite === 'train') return runTrain(options, io);
    if (suite === 'onnx' && options.browser === true) {
      if (options.reps !== undefined || options.quick !== undefined || options.swiftshader !== undefined)
        throw new UsageError('coderl bench onnx --browser: the page runs its own settings; --preset and --json only');
      const t0 = performance.now();
      const say = (m: string): void => io.err(`coderl bench onnx: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
      const preset = raceOptions(options).preset;
      const { browserOnnxRace } = await import('../../../bench/onnx-browser');
      const { adapter, result } = await browserOnnxRace({ preset, root: process.cwd(), say });
      io.out(options.json ? JSON.stringify({ adapter, ...result }) : formatOnnxRace(result, adapter));
      return 0;
    }
    if (suite === 'serve') {
      const o = serveOptions(options);
      const t0 = performance.now();
      const say = (m: string): void => io.err(`coderl bench serve: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
      const r = await benchServe(o, say);
      say('done');
      io.out(options.json ? JSON.stringify(r) : formatServeBench(r));
      return r.correct ? 0 : 1;
    }
    if (suite === 'score') {
      const r = await benchScore({ quick: options.quick === true });
      io.out(options.json ? JSON.stringify(r) : formatScoreBench(r));
      return 0;
    }
    const engineOpts = suite === 'engine' ? engineOptions(options) : null;
    const raceOpts = suite === 'onnx' ? raceOptions(options) : null;
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    const rt = await GpuRuntime.create(provider);
    try {
      if (raceOpts) return await runRace(rt, provider, raceOpts, options.json === true, io);
      if (engineOpts) return await runEngine(rt, provider, engineOpts, options.json === true, io);
      const r = await benchRuntime(rt, options.quick ? { dispatches: 100, repeats: 1 } : {});
      if (options.json) {
        io.out(JSON.stringify(r));
      } else {
        io.out(
          [
            `adapter: ${r.adapter}`,
            `${r.dispatches} dispatches, one submit:        ${r.one_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `${r.dispatches} dispatches, one submit each:   ${r.per_dispatch_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `ratio (one submit / one each):      ${r.ratio}x`,
            `4-byte readback round trip (median): ${r.readback_ms} ms`,
          ].join('\n'),
        );
      }
      return 0;
    } finally {
      rt.dispose();
    }
  },
};

async function runEngine(rt: GpuRuntime, provider: GpuProvider, opts: EngineBenchOptions, json: boolean, io: Io): Promise<number> {
  const t0 = performance.now();
  const say = (m: string): void => io.err(`coderl bench engine: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  for (const note of provider.notes) io.err(`coderl bench engine: note: ${note}`);
  say('loading TF.js (webgpu backend)');
  installTfjsNodeResolver();
  const tf = await loadTfjs(providerGpu(provider));
  const r = await benchEngine(rt, tf, opts, say);
  say('done');
  io.out(json ? JSON.stringify(r) : formatEngineBench(r));
  return 0;
}

async function runRace(rt: GpuRuntime, provider: GpuProvider, opts: OnnxRaceOptions, json: boolean, io: Io): Promise<number> {
  const t0 = performance.now();
  const say = (m: string): void => io.err(`coderl bench onnx: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  for (const note of provider.notes) io.err(`coderl bench onnx: note: ${note}`);
  say("ORT webgpu runs in a browser only: this is ours (WebGPU) vs ORT wasm; the app's Benchmarks panel races ORT webgpu too");
  const r = await benchOnnxRace(rt, [{ name: 'ORT wasm', ort: await loadNodeOrt() }], opts, say);
  say('done');
  const a = rt.adapterSummary;
  const adapter = `${a.vendor} ${a.architecture} ${a.description}`.trim();
  io.out(json ? JSON.stringify({ adapter, ...r }) : formatOnnxRace(r, adapter));
  return 0;
}

/** `coderl bench models`: ours and ORT (webgpu in Chromium, wasm in Node) or ours alone. */
async function runModels(options: Options, io: Io): Promise<number> {
  const o = modelsOptions(options);
  const ort = options.ort === undefined ? 'webgpu' : options.ort;
  if (typeof ort !== 'string' || !(ORT_CHOICES as readonly string[]).includes(ort))
    throw new UsageError(`coderl bench models: --ort must be ${ORT_CHOICES.join(', ')}, got '${String(ort)}'`);
  const t0 = performance.now();
  const say = (m: string): void => io.err(`coderl bench models: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  let r;
  if (ort === 'webgpu') {
    if (options.swiftshader !== undefined)
      throw new UsageError(
        "coderl bench models --ort webgpu: the page uses Chromium's adapter; --swiftshader applies to --ort wasm / none",
      );
    say('ours and ORT webgpu in one headless Chromium page, on its adapter');
    const { browserModelsBench } = await import('../../../bench/models-browser');
    r = await browserModelsBench({ options: o, root: process.cwd(), say });
  } else {
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    for (const note of provider.notes) say(`note: ${note}`);
    const rt = await GpuRuntime.create(provider);
    try {
      if (ort === 'wasm') say("ORT's webgpu provider needs a browser (--ort webgpu): this is ours (WebGPU, Node) vs ORT wasm (CPU)");
      else say('ours only (--ort none)');
      const engines = ort === 'wasm' ? [{ name: 'ORT wasm', ort: await loadNodeOrt(), gpuKv: false, counters: null }] : [];
      r = await benchModels(rt, engines, o, say);
    } finally {
      rt.dispose();
    }
  }
  say('done');
  io.out(options.json ? JSON.stringify(r) : formatModelsBench(r));
  return r.models.some((m) => m.engines.some((e) => e.error)) ? 1 : 0;
}

/** `coderl bench train`: ours and TF.js on one adapter; the GRPO iteration's scoring in the sandbox pool. */
async function runTrain(options: Options, io: Io): Promise<number> {
  const o = trainOptions(options);
  const t0 = performance.now();
  const say = (m: string): void => io.err(`coderl bench train: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  const scorer = o.grpo ? await sandboxScorer(typeof options.suite === 'string' ? options.suite : 'humaneval-x-js', o.grpo.prompts) : null;
  try {
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    for (const note of provider.notes) say(`note: ${note}`);
    const rt = await GpuRuntime.create(provider);
    try {
      say('loading TF.js (webgpu backend)');
      installTfjsNodeResolver();
      const tf = await loadTfjs(providerGpu(provider));
      const r = await benchTrain(rt, tf, scorer, o, say);
      say('done');
      io.out(options.json ? JSON.stringify(r) : formatTrainBench(r));
      return r.rows.some((x) => x.error) ? 1 : 0;
    } finally {
      rt.dispose();
    }
  } finally {
    scorer?.close();
  }
}

/** The GRPO iteration's scorer: the first `prompts` tasks of the suite, scored as a training run scores them (rl/scorer.ts). */
async function sandboxScorer(suiteArg: string, prompts: number): Promise<RolloutScorer & { close(): void }> {
  const s = resolveSuiteArg(suiteArg);
  const tasks = (await loadSuite(await readSuiteArg('bench train', s), s.path)).items;
  if (tasks.length < prompts) throw new UsageError(`coderl bench train: --suite ${s.label} has ${tasks.length} tasks, ${prompts} needed`);
  const workers = phasedPoolSize();
  const [pool, analyzer] = await Promise.all([createNodePool({ size: workers }), createAnalyzer(nodeWasmLoader)]);
  return {
    name: `${s.label}: sandbox (${workers} worker${workers > 1 ? 's' : ''}), static analysis, reward`,
    tasks: tasks.slice(0, prompts),
    score: async (items) =>
      (await scoreRollouts({ pool, analyzer }, items, DEFAULT_REWARD)).map((r) => ({ reward: r.reward?.total ?? 0, passed: r.passed })),
    close: () => pool.close(),
  };
}

/** --quick picks one timed round per server; --workers and --soak override. */
function serveOptions(options: Options): ServeBenchOptions {
  const workers = typeof options.workers === 'string' ? positiveInt(options.workers, '--workers', 256) : undefined;
  if (workers === 1) throw new UsageError('coderl bench serve: --workers is the N compared with 1 worker: at least 2');
  const o = serveBenchDefaults(options.quick === true, workers);
  if (typeof options.soak === 'string') o.soakS = positiveInt(options.soak, '--soak', 86_400);
  return o;
}

/** --quick / --tiny pick the sizes; --shapes, --modes, --reps and --update-only override. */
function trainOptions(options: Options): TrainBenchOptions {
  if (options.quick && options.tiny) throw new UsageError('coderl bench train: --quick or --tiny, not both');
  const base = options.tiny ? TRAIN_BENCH_TINY : options.quick ? TRAIN_BENCH_QUICK : TRAIN_BENCH_DEFAULTS;
  const o: TrainBenchOptions = { ...base, update: { ...base.update } };
  const list = (k: string) => (typeof options[k] === 'string' ? (options[k] as string).split(',').map((x) => x.trim()) : null);
  const shapes = list('shapes');
  if (shapes) {
    for (const m of shapes)
      if (!(TRAIN_MODELS as readonly string[]).includes(m))
        throw new UsageError(`coderl bench train: --shapes takes ${TRAIN_MODELS.join(', ')}, got '${m}'`);
    o.models = shapes as TrainModel[];
  }
  const modes = list('modes');
  if (modes) {
    for (const m of modes)
      if (!(TRAIN_MODES as readonly string[]).includes(m))
        throw new UsageError(`coderl bench train: --modes takes ${TRAIN_MODES.join(', ')}, got '${m}'`);
    o.modes = modes as TrainMode[];
  }
  if (typeof options.reps === 'string') o.update.reps = positiveInt(options.reps, '--reps', 1000);
  if (options['update-only'] === true) {
    if (options.suite !== undefined)
      throw new UsageError('coderl bench train: --suite is for the GRPO iteration, which --update-only skips');
    o.grpo = null;
  }
  try {
    validateTrainOptions(o);
  } catch (e) {
    throw new UsageError(`coderl ${e instanceof Error ? e.message : String(e)}`);
  }
  return o;
}

/** --quick / --tiny pick the sizes; --models, --batches, --prompt, --new-tokens, --reps and --bandwidth override. */
function modelsOptions(options: Options): ModelsBenchOptions {
  if (options.quick && options.tiny) throw new UsageError('coderl bench models: --quick or --tiny, not both');
  const base = options.tiny ? MODELS_BENCH_TINY : options.quick ? MODELS_BENCH_QUICK : MODELS_BENCH_DEFAULTS;
  const o: ModelsBenchOptions = { ...base };
  const list = (k: string) => (typeof options[k] === 'string' ? (options[k] as string).split(',').map((x) => x.trim()) : null);
  const models = list('models');
  if (models) {
    for (const m of models)
      if (!(MODEL_NAMES as string[]).includes(m))
        throw new UsageError(`coderl bench models: --models takes ${MODEL_NAMES.join(', ')}, got '${m}'`);
    o.models = models as ModelName[];
  }
  const batches = list('batches');
  if (batches) o.batches = batches.map((b) => positiveInt(b, '--batches', 4096));
  if (typeof options.prompt === 'string') o.promptLen = positiveInt(options.prompt, '--prompt', 4096);
  if (typeof options['new-tokens'] === 'string') o.newTokens = positiveInt(options['new-tokens'], '--new-tokens', 4096);
  if (typeof options.reps === 'string') o.reps = positiveInt(options.reps, '--reps', 1000);
  if (typeof options.bandwidth === 'string') {
    const bw = Number(options.bandwidth);
    if (!(bw > 0) || !Number.isFinite(bw))
      throw new UsageError(`coderl bench models: --bandwidth takes GB/s, a positive number, got '${options.bandwidth}'`);
    o.bandwidthGBs = bw;
  }
  try {
    validateModelsOptions(o);
  } catch (e) {
    throw new UsageError(`coderl ${e instanceof Error ? e.message : String(e)}`);
  }
  return o;
}

/** --quick: small shapes and 3 reps; --preset and --reps override. */
function raceOptions(options: Options): OnnxRaceOptions {
  const o: OnnxRaceOptions = { ...(options.quick ? ONNX_RACE_QUICK : ONNX_RACE_DEFAULTS) };
  if (typeof options.preset === 'string') {
    if (!Object.hasOwn(MODEL_PRESETS, options.preset))
      throw new UsageError(`coderl bench: --preset must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got '${options.preset}'`);
    o.preset = options.preset as RacePreset;
  }
  if (typeof options.reps === 'string') o.reps = positiveInt(options.reps, '--reps', 1000);
  return o;
}

/** --quick picks the small preset; --sizes, --reps and --steps override it. */
function engineOptions(options: Options): EngineBenchOptions {
  const base = options.quick ? ENGINE_BENCH_QUICK : ENGINE_BENCH_DEFAULTS;
  const o: EngineBenchOptions = { ...base, train: { ...base.train }, generate: { ...base.generate } };
  if (typeof options.sizes === 'string') o.sizes = options.sizes.split(',').map((s) => positiveInt(s.trim(), '--sizes', 8192));
  if (typeof options.reps === 'string') o.reps = positiveInt(options.reps, '--reps', 1000);
  if (typeof options.steps === 'string') o.train.steps = positiveInt(options.steps, '--steps', 1000);
  if (typeof options.preset === 'string') {
    if (!Object.hasOwn(MODEL_PRESETS, options.preset))
      throw new UsageError(`coderl bench: --preset must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got '${options.preset}'`);
    o.train.preset = options.preset as keyof typeof MODEL_PRESETS;
  }
  return o;
}

function positiveInt(s: string, flag: string, max: number): number {
  const n = Number(s);
  if (!/^\d+$/.test(s) || !Number.isInteger(n) || n < 1 || n > max) {
    throw new UsageError(`coderl bench: ${flag} takes positive integers up to ${max}, got '${s}'`);
  }
  return n;
}
