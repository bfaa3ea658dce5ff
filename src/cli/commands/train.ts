import { createAnalyzer } from '../../analysis';
import { nodeWasmLoader } from '../../analysis/wasm-node';
import { nodeProvider } from '../../gpu/node';
import { GpuRuntime } from '../../gpu/runtime';
import type { BackendKind } from '../../model/backend';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { mergeConfig, resolveConfig, RlConfigError, RL_PRESETS } from '../../rl/config';
import { readSuiteSource, SuiteSourceError, type SuiteRef } from '../../rl/tasks/from-suite';
import { bytesToText } from '../../tasks/bytes';
import { runPipeline, type PipelineEvent, type PipelineOptions, type Summary } from '../../rl/pipeline';
import { rmSummaryText } from '../../rl/stages/evaluation';
import { onnxReference, referenceRef, type ReferenceRef } from '../../rl/reference';
import { hfReference, loadHfReferenced, type ReferenceEngine } from '../../rl/reference-hf';
import { nodeFolder } from '../../hf/node';
import { adapterOption, asUsage } from '../hf-model';
import { fileRunDir } from '../../rl/run-dir-node';
import { createNodePool, phasedPoolSize } from '../../sandbox/pool.node';
import { intOption, readInput, UsageError, type Command } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';
import { exploreHook } from '../../rl/explore-hook';
import { tokenizerSidecarPath } from '../../onnx/export';
import { loadNodeOrt } from '../../onnx/node';
import { hfPolicyFactory, labGptFactory } from '../../policy';
import type { HfModel } from '../../hf/load';
import { describeMemoryPlan, MemoryPlanError, type MemoryPlan } from '../../model/memory-plan';
import { MEMORY_BUDGET_GIB, pretrainedRunConfig, runLora, runMemoryPlan, runWeightFormat } from '../../rl/pretrained';
import { errorText } from '../../util/errors';
import { commandProgress } from '../progress';
import { estimateKind, estimateRun, taskCounts } from '../../rl/estimate';
import { formatEta } from '../../util/eta';
import { summarizeAdapter } from '../../gpu/adapter';
import type { RlConfig, RunLoraConfig } from '../../rl/config';

/**
 * --reference M.onnx | DIR: the KL penalty's frozen reference instead of the SFT policy. An ONNX
 * causal LM runs in onnxruntime-web's wasm backend; a Hugging Face model folder (rl/reference-hf.ts)
 * runs on the run's own engine (`engine`: the backend, and its GPU runtime once there is one). The
 * files are read and checked up front (a bad folder is refused with the loader's message); the
 * model is loaded when the pipeline asks (rl/reference.ts, rl/reference-hf.ts, shared with the
 * app), and must use the run's tokenizer and cover its context.
 */
async function referenceOption(
  model: string | boolean | undefined,
  tokenizer: string | boolean | undefined,
  engine: ReferenceEngine,
): Promise<{ make: NonNullable<PipelineOptions['reference']>; ref: ReferenceRef } | undefined> {
  if (model === undefined) {
    if (tokenizer !== undefined) throw new UsageError('coderl train: --reference-tokenizer needs --reference M.onnx');
    return undefined;
  }
  if (typeof model !== 'string' || !model)
    throw new UsageError('coderl train: --reference takes an ONNX file or a Hugging Face model folder');
  if ((await stat(model).catch(() => null))?.isDirectory()) {
    if (tokenizer !== undefined)
      throw new UsageError(`coderl train: --reference-tokenizer is for an ONNX file; the folder ${model} has its own tokenizer.json`);
    const folder = await nodeFolder(model);
    const { ref } = await asUsage('train', () => loadHfReferenced(folder));
    return { make: hfReference(() => folder, ref, `${model} (--reference)`, engine), ref };
  }
  const tokPath = typeof tokenizer === 'string' ? tokenizer : tokenizerSidecarPath(model);
  const bytes = await readInput('train', model, '--reference model');
  const tokenizerText = new TextDecoder().decode(await readInput('train', tokPath, '--reference tokenizer'));
  const make = onnxReference(loadNodeOrt, { bytes, tokenizerText, file: model, tokenizerFile: tokPath }, `${model} (--reference)`);
  return { make, ref: await referenceRef(model, bytes) };
}

/**
 * --suite S: a suite file or a built-in suite's name, read and checked as a run's task source
 * (every load issue, too few tasks or no solutions is an error). config.tasks.suite records the
 * file's name, size and SHA-256; a built-in suite is recorded as its file is, so naming it either
 * way resumes the same run, and a changed file is refused on resume.
 */
export async function suiteOption(v: string | boolean | undefined): Promise<{ text: string; ref: SuiteRef } | undefined> {
  if (typeof v !== 'string') return undefined;
  const suite = resolveSuiteArg(v);
  const text = await bytesToText(await readSuiteArg('train', suite));
  const { ref } = await readSuiteSource(text, basename(suite.path));
  return { text, ref };
}

/** --model DIR: the folder loaded and checked (the loader's messages), with its record for config.pretrained. */
async function pretrainedOption(v: string | boolean | undefined): Promise<{ model: HfModel; ref: ReferenceRef } | undefined> {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !v) throw new UsageError('coderl train: --model takes a Hugging Face model folder');
  return asUsage('train', async () => loadHfReferenced(await nodeFolder(v)));
}

/**
 * The memory plan of one RL step on an imported model (rl/pretrained.ts runMemoryPlan, the app's
 * too) against --memory-budget GiB (default 4); a plan that does not fit is refused with its numbers.
 */
function memoryPlanOption(cfg: RlConfig, model: HfModel, v: string | boolean | undefined): MemoryPlan {
  const gib = v === undefined ? MEMORY_BUDGET_GIB : Number(v);
  if (!Number.isFinite(gib) || gib <= 0)
    throw new UsageError(`coderl train: --memory-budget must be a positive number of GiB, got '${String(v)}'`);
  try {
    return runMemoryPlan(cfg, model.arch, gib * 2 ** 30, model.dtypes);
  } catch (e) {
    if (e instanceof MemoryPlanError) throw new UsageError(`coderl train: ${model.folder}: ${e.message} (--memory-budget ${gib} GiB)`);
    throw e;
  }
}

export function backendOption(cmd: string, v: string | boolean | undefined): BackendKind {
  const b = v === undefined ? 'cpu' : v;
  if (b !== 'cpu' && b !== 'webgpu') throw new UsageError(`coderl ${cmd}: --backend must be cpu or webgpu, got '${String(b)}'`);
  return b;
}

async function overridesOption(v: string | boolean | undefined): Promise<unknown> {
  if (typeof v !== 'string') return {};
  const text = v.trim().startsWith('{') ? v : new TextDecoder().decode(await readInput('train', v, '--set file'));
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`coderl train: --set is not valid JSON: ${errorText(e)}`);
  }
}

function summaryLines(s: Summary): string[] {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const fam = (r: Record<string, number>) =>
    Object.entries(r)
      .map(([k, v]) => `${k} ${pct(v)}`)
      .join(', ');
  return [
    `SFT: held-out pass@1 ${pct(s.sft.heldout_pass1)} (${fam(s.sft.heldout_by_family)}), train-task pass@1 ${pct(s.sft.train_pass1)}, RL-task pass@1 ${pct(s.sft.rl_tasks_pass1)}; best step ${s.sft.best_step} of ${s.sft.steps}`,
    ...(s.rm && 'skipped' in s.rm ? [`reward model: skipped (${s.rm.skipped})`] : s.rm ? [`reward model: ${rmSummaryText(s.rm)}`] : []),
    `RL (${s.rl.algo}, ${s.rl.iterations} iterations): held-out pass@1 ${pct(s.rl.heldout_pass1)} (${fam(s.rl.heldout_by_family)}), train-task pass@1 ${pct(s.rl.train_pass1)}, RL-task pass@1 ${pct(s.rl.rl_tasks_pass1)}`,
    `held-out pass@1 change: ${((s.rl.heldout_pass1 - s.sft.heldout_pass1) * 100).toFixed(1)} points; ${s.minutes.toFixed(1)} minutes`,
  ];
}

/** "estimated: at most about 14 min 20 s on the cpu backend (SFT 1 min 54 s, ...)", from rl/estimate.ts's 2-core figures. */
function estimateLine(cfg: RlConfig, seed: number, backend: BackendKind, rt: GpuRuntime | null, workers: number): string {
  const kind = estimateKind(backend, backend === 'webgpu' && summarizeAdapter(rt!.adapter).software);
  const est = estimateRun(cfg, taskCounts(cfg, seed), kind, workers);
  const parts = est.phases.filter((p) => p.seconds >= 1).map((p) => `${p.phase} ${formatEta(p.seconds)}`);
  const basis = kind === 'webgpu' ? 'the cpu figures of a 2-core machine: no figure for a hardware GPU' : 'figures of a 2-core machine';
  return `estimated ${est.upperBound ? 'at most ' : ''}about ${formatEta(est.seconds)} on the ${backend} backend (${parts.join(', ')}; ${basis})`;
}

export const trainCommand: Command = {
  name: 'train',
  summary: 'run the staged pipeline (SFT, reward model, PPO/GRPO) headless',
  usage:
    'coderl train --preset P --seed S --out DIR [--backend cpu|webgpu] [--set JSON|FILE] [--suite FILE|NAME] [--model HF_DIR [--memory-budget GIB]] [--reference M.onnx [--reference-tokenizer T] | --reference HF_DIR]',
  description: [
    'Builds the seeded task families (train / val / rl / heldout splits), trains a tokenizer, then runs',
    'SFT with early stopping, the reward model and PPO (or GRPO), and evaluates held-out pass@1 before',
    'and after RL. DIR receives config.json, tasks/*.jsonl, metrics.jsonl, rollouts/iter-*.jsonl,',
    'checkpoints (sft.ckpt, rm.ckpt, policy.ckpt) and summary.json. Rerunning the same command resumes',
    'from DIR (finished stages are loaded, PPO continues after the last finished iteration).',
    `Presets: ${Object.keys(RL_PRESETS).join(', ')}. --set overrides preset fields, e.g.`,
    `'{"rl":{"algo":"grpo"},"explore":{"repair":true}}'.`,
    '--reference M.onnx makes an ONNX causal LM (our export or any model `coderl onnx eval` takes),',
    'run in onnxruntime-web (wasm), the frozen reference of the KL penalty instead of the SFT policy;',
    "its tokenizer (M.tokenizer.json, or --reference-tokenizer) must be the run's. --reference HF_DIR takes a",
    "Hugging Face model folder instead (run on the --backend engine) whose tokenizer.json is the run's: every",
    "id's bytes and the end-of-sequence id (e.g. this run's sft.ckpt written by coderl export-hf). The config",
    'records the folder as {name: "DIR/", sha256}: the SHA-256 of `sha256sum config.json <its safetensors files>`.',
    '--model HF_DIR trains an imported Hugging Face model (GPT-2, Llama, Qwen2) with its own tokenizer instead',
    'of the lab\'s GPT: full fine-tuning, or LoRA with --set \'{"lora":{"rank":8}}\' (alpha, default 2 x rank;',
    "targets by module name, default the architecture's: c_attn, or q_proj and v_proj; baseDtype: auto keeps a",
    "BF16 / F16 checkpoint's frozen base in that dtype on the GPU, f16 / bf16 round an F32 one, f32 widens); SFT is skipped unless",
    '--set gives sft.maxSteps; every policy gets a fresh value head. The config records the folder as --reference',
    'does (config.pretrained); the memory plan (weights, adapters, gradients, optimizer, KV cache, activations)',
    'is printed first and a step that does not fit --memory-budget is refused.',
    "--suite trains on a suite file's tasks, or a built-in suite's (coderl suites), split by task;",
    "config.tasks.suite records the file's name, size and SHA-256 and DIR keeps its text.",
  ].join('\n'),
  options: {
    preset: { type: 'string', description: `preset (${Object.keys(RL_PRESETS).join(', ')}); default tiny`, value: 'P' },
    seed: { type: 'string', description: 'seed of tasks, initialisation and sampling (default 1)', value: 'S' },
    out: { type: 'string', description: 'run directory (created; an existing run there is resumed)', value: 'DIR' },
    backend: { type: 'string', description: 'cpu (float64 reference) or webgpu (default cpu)', value: 'B' },
    set: { type: 'string', description: 'JSON object (or a file holding one) overriding preset fields', value: 'JSON' },
    suite: {
      type: 'string',
      description: 'train on the tasks of this suite file (JSONL, .gz too) or built-in suite instead of the built-in families',
      value: 'FILE|NAME',
    },
    workers: { type: 'string', description: `sandbox workers (default ${phasedPoolSize()})`, value: 'N' },
    quiet: { type: 'boolean', description: 'print only the summary (no progress)' },
    reference: {
      type: 'string',
      description: 'ONNX model or Hugging Face model folder used as the KL reference instead of the SFT policy',
      value: 'M.onnx|DIR',
    },
    'reference-tokenizer': { type: 'string', description: 'its tokenizer JSON (default: M.tokenizer.json)', value: 'T' },
    model: {
      type: 'string',
      description:
        'train this Hugging Face model folder (GPT-2, Llama, Qwen2) instead of the lab\'s GPT; LoRA with --set \'{"lora":{"rank":8}}\'',
      value: 'DIR',
    },
    adapter: {
      type: 'string',
      description: 'with --model: start the LoRA adapters from this PEFT adapter folder (its rank, alpha and targets)',
      value: 'ADIR',
    },
    'memory-budget': {
      type: 'string',
      description: 'GPU memory (GiB) the step of an imported model may plan for (default 4)',
      value: 'GIB',
    },
  },
  examples: [
    'npx coderl train --preset tiny --seed 1 --out runs/tiny-1',
    'npx coderl train --preset tiny --seed 1 --out runs/grpo-1 --set \'{"rl":{"algo":"grpo"}}\'',
    'npx coderl train --preset tiny --seed 1 --out runs/gpu-1 --backend webgpu',
    'npx coderl train --preset tiny --seed 1 --out runs/mine-1 --suite my-tasks.jsonl',
    'npx coderl train --preset tiny --seed 1 --out runs/hx-1 --suite humaneval-x-js',
    'npx coderl train --preset tiny --seed 1 --out runs/ref-1 --reference sft.onnx',
    'npx coderl train --preset tiny --seed 1 --out runs/ref-2 --reference runs/tiny-1/hf',
    'npx coderl train --preset tiny --seed 1 --out runs/lora-1 --model runs/tiny-1/hf --set \'{"lora":{"rank":8},"rl":{"lr":3e-3}}\'',
  ],
  async run(options, _positionals, io) {
    const out = options.out;
    if (typeof out !== 'string' || !out) throw new UsageError('coderl train: --out DIR is required');
    const preset = typeof options.preset === 'string' ? options.preset : 'tiny';
    const seed = intOption('train', options, 'seed', 0) ?? 1;
    const backend = backendOption('train', options.backend);
    let suiteText: string | undefined;
    let cfg;
    // the reference model is named in the config (file name and SHA-256), so a resumed run must be given the same one;
    // a Hugging Face folder runs on the run's engine (rt, set below for webgpu, before the pipeline asks for it)
    let rt: GpuRuntime | null = null;
    const reference = await referenceOption(options.reference, options['reference-tokenizer'], () => ({
      backend,
      runtime: rt ?? undefined,
    }));
    const imported = await pretrainedOption(options.model);
    if (options.adapter !== undefined && !imported) throw new UsageError('coderl train: --adapter needs --model DIR (the base it adapts)');
    const adapter = imported ? await adapterOption('train', options.adapter, imported.model) : null;
    try {
      let over = await overridesOption(options.set);
      if (reference) over = mergeConfig(over, { rl: { reference: reference.ref } });
      // a pretrained model skips SFT unless the user asks for it
      if (imported) over = mergeConfig(mergeConfig({ sft: { maxSteps: 0 } }, over), { pretrained: imported.ref });
      if (adapter) {
        // the adapter's settings are the run's; a --set lora that says otherwise is refused
        const a = adapter.adapter.config;
        const given = (over as { lora?: Partial<RunLoraConfig> }).lora;
        for (const k of ['rank', 'alpha'] as const)
          if (given?.[k] !== undefined && given[k] !== a[k])
            throw new UsageError(`coderl train: --set lora.${k} is ${given[k]}, the adapter ${String(options.adapter)} has ${a[k]}`);
        over = mergeConfig(over, { lora: { rank: a.rank, alpha: a.alpha, targets: [...a.targets], from: adapter.ref } });
      }
      const suite = await suiteOption(options.suite);
      if (suite) {
        suiteText = suite.text;
        cfg = resolveConfig(preset, mergeConfig(over, { tasks: { suite: suite.ref } }));
      } else {
        cfg = resolveConfig(preset, over);
      }
      if (imported) cfg = pretrainedRunConfig(cfg, imported.model.arch, imported.model.folder);
    } catch (e) {
      if (e instanceof RlConfigError || e instanceof SuiteSourceError) throw new UsageError(`coderl train: ${e.message}`);
      throw e;
    }
    const workers = intOption('train', options, 'workers', 1) ?? phasedPoolSize();
    const plan = imported ? memoryPlanOption(cfg, imported.model, options['memory-budget']) : null;
    if (plan && !options.quiet) io.err(`coderl train: memory plan: ${describeMemoryPlan(plan)}`);
    if (backend === 'webgpu') {
      const provider = await nodeProvider();
      rt = await GpuRuntime.create(provider);
      for (const note of provider.notes) io.err(`coderl train: note: ${note}`);
    }
    const [pool, analyzer] = await Promise.all([createNodePool({ size: workers }), createAnalyzer(nodeWasmLoader)]);
    // the estimate's figures are the lab GPT's; an imported model has none yet
    if (!options.quiet && !imported) io.err(`coderl train: ${estimateLine(cfg, seed, backend, rt, workers)}`);
    // a bar per stage on a terminal, a few lines per stage when piped (cli/progress.ts)
    const progress = commandProgress(io, { quiet: options.quiet === true, piped: true });
    const onEvent = (e: PipelineEvent) => progress.update(e);
    try {
      const summary = await runPipeline({
        cfg,
        seed,
        policies: imported
          ? hfPolicyFactory(imported.model, {
              backend,
              runtime: rt ?? undefined,
              lora: runLora(cfg, imported.model.arch),
              weightFormat: runWeightFormat(cfg, imported.model.dtypes),
              contextLength: cfg.model.contextLength,
              microBatch: plan?.microBatch,
              initAdapter: adapter?.adapter,
            })
          : labGptFactory(backend, rt ?? undefined),
        store: fileRunDir(out),
        scorer: { pool, analyzer },
        exploreFor: (tok) => exploreHook(tok, cfg.explore),
        onEvent,
        suiteText,
        reference: reference?.make,
      });
      progress.end();
      for (const l of summaryLines(summary)) io.out(l);
      return 0;
    } catch (e) {
      // a refused --reference model, a run directory of another config, a changed suite file, a
      // non-finite loss, ...: one line naming it (what finished is saved; the run resumes from DIR);
      // programming errors keep their stack
      progress.end();
      if (!(e instanceof Error) || e instanceof TypeError || e instanceof ReferenceError || e instanceof RangeError) throw e;
      io.err(`coderl train: ${e.message}`);
      return 1;
    } finally {
      pool.close();
      rt?.dispose();
    }
  },
};
