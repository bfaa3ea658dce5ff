import { writeFile } from 'node:fs/promises';
import { createAnalyzer } from '../../analysis';
import { nodeWasmLoader } from '../../analysis/wasm-node';
import { nodeProvider } from '../../gpu/node';
import { GpuRuntime } from '../../gpu/runtime';
import { createBackend } from '../../model/backend';
import { loadModel } from '../../model/model-file';
import { DEFAULT_OPTIM } from '../../model/optim';
import { EVAL_DEFAULTS, evalSuite, planEval, unfitMessage } from '../../rl/eval-suite';
import { createNodePool, phasedPoolSize } from '../../sandbox/pool.node';
import { loadSuite } from '../../tasks/suite';
import { formatIssue } from '../../tasks/types';
import { Tokenizer } from '../../tokenizer';
import type { TextTokenizer } from '../../tokenizer/types';
import type { PolicyBackend } from '../../model/backend';
import { promptFormatFor } from '../../rl/prompt-format';
import { asUsage, formatOption, openHfPolicy } from '../hf-model';
import { intOption, readInput, UsageError, type Command } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';
import { backendOption } from './train';
import { commandProgress } from '../progress';

export const evalCommand: Command = {
  name: 'eval',
  summary: 'HumanEval-style pass@k of a checkpoint or an imported Hugging Face model on a suite',
  usage:
    'coderl eval --suite S (--checkpoint C | --model DIR [--adapter ADIR]) [--k 1,5,10] [--samples N] [--temperature T] [--format auto|chat|completion] [--backend cpu|webgpu] [--out R]',
  description: [
    "Samples N completions per task (default: the largest k) from the checkpoint's policy, runs them in",
    'the sandbox pool and prints the unbiased pass@k estimate (Chen et al. 2021) averaged over tasks,',
    'per task family when the suite has them. The checkpoint must carry its tokenizer (coderl train',
    'writes sft.ckpt and policy.ckpt that way). --model DIR evaluates a Hugging Face model folder instead',
    '(GPT-2, Llama/SmolLM2, Qwen2); --format chat sends each prompt through its chat template (the',
    "assistant's turn opened with the prompt's code, EvalPlus-style), completion as plain text, auto (the",
    'default) chat when the tokenizer has a chat template. --out writes one scored record per sample, with',
    "its completion text and why generation stopped. --suite takes a file or a built-in suite's name (coderl suites).",
  ].join('\n'),
  options: {
    suite: { type: 'string', description: "suite JSONL (plain or .gz), or a built-in suite's name", value: 'S' },
    checkpoint: { type: 'string', description: 'model checkpoint with its tokenizer', value: 'C' },
    model: { type: 'string', description: 'a Hugging Face model folder instead of a checkpoint', value: 'DIR' },
    adapter: { type: 'string', description: "--model: a LoRA adapter in PEFT's format, merged into the model", value: 'ADIR' },
    format: { type: 'string', description: 'prompt format for --model: auto, chat or completion (default auto)', value: 'F' },
    context: {
      type: 'string',
      description: "--model: the longest sequence served (default: the model's positions, at most 4096)",
      value: 'N',
    },
    k: { type: 'string', description: 'comma-separated k values (default 1,5,10)', value: 'K' },
    samples: { type: 'string', description: 'samples per task (default: the largest k)', value: 'N' },
    temperature: { type: 'string', description: 'sampling temperature (default 1)', value: 'T' },
    'max-new-tokens': { type: 'string', description: 'completion length limit in tokens (default 48, capped by the context)', value: 'N' },
    seed: { type: 'string', description: 'sampling seed (default 1)', value: 'S' },
    backend: { type: 'string', description: 'cpu or webgpu (default cpu)', value: 'B' },
    workers: { type: 'string', description: `sandbox workers (default ${phasedPoolSize()})`, value: 'N' },
    limit: { type: 'string', description: "evaluate only the suite's first N tasks", value: 'N' },
    out: { type: 'string', description: 'write the scored samples as JSONL here', value: 'R' },
    quiet: { type: 'boolean', description: 'print only the summary (no progress)' },
  },
  examples: [
    'npx coderl eval --suite runs/tiny-1/tasks/heldout.jsonl --checkpoint runs/tiny-1/policy.ckpt --k 1,5,10',
    'npx coderl eval --suite humaneval-x-js --checkpoint runs/tiny-1/policy.ckpt --k 1 --samples 1 --temperature 0',
    'npx coderl eval --suite humaneval-python --model ~/models/Qwen2.5-Coder-0.5B-Instruct --k 1,10 --backend webgpu',
  ],
  async run(options, _positionals, io) {
    const suitePath = options.suite;
    const ckptPath = options.checkpoint;
    if (typeof suitePath !== 'string') throw new UsageError('coderl eval: --suite S is required');
    if ((typeof ckptPath === 'string') === (typeof options.model === 'string'))
      throw new UsageError('coderl eval: give exactly one of --checkpoint C and --model DIR');
    const format = formatOption('eval', options.format);
    if (options.format !== undefined && typeof options.model !== 'string') throw new UsageError('coderl eval: --format is for --model');
    if (options.adapter !== undefined && typeof options.model !== 'string') throw new UsageError('coderl eval: --adapter is for --model');
    const kText = typeof options.k === 'string' ? options.k : '1,5,10';
    const ks = kText.split(',').map((x) => Number(x.trim()));
    if (ks.some((k) => !Number.isInteger(k) || k < 1))
      throw new UsageError(`coderl eval: --k must be comma-separated positive integers, got '${kText}'`);
    const samples = intOption('eval', options, 'samples', 1) ?? Math.max(...ks);
    if (Math.max(...ks) > samples)
      throw new UsageError(`coderl eval: k = ${Math.max(...ks)} needs at least that many --samples (got ${samples})`);
    const temperature = options.temperature === undefined ? 1 : Number(options.temperature);
    if (!(temperature >= 0 && temperature <= 10))
      throw new UsageError(`coderl eval: --temperature must be a number in [0, 10], got '${String(options.temperature)}'`);
    if (temperature === 0 && samples > 1)
      throw new UsageError('coderl eval: --temperature 0 (greedy) gives the same sample every time; use --samples 1');
    const seed = intOption('eval', options, 'seed', 0) ?? EVAL_DEFAULTS.seed;
    const backend = backendOption('eval', options.backend);
    const workers = intOption('eval', options, 'workers', 1) ?? phasedPoolSize();
    const limit = intOption('eval', options, 'limit', 1) ?? null;
    // the suite first: a wrong --suite (a name that is no file) is told before the checkpoint is read
    const suiteArg = resolveSuiteArg(suitePath);
    const suite = await loadSuite(await readSuiteArg('eval', suiteArg), suiteArg.path);
    for (const i of suite.issues) io.err(`coderl eval: ${formatIssue(i)}`);
    if (!suite.items.length) throw new UsageError(`coderl eval: ${suiteArg.label} holds no valid task`);

    let policy: PolicyBackend;
    let tok: TextTokenizer;
    let contextLength: number;
    /** frees the policy and its runtime */
    let close: () => void;
    if (typeof options.model === 'string') {
      const open = await openHfPolicy('eval', options, backend, io, options.quiet === true);
      policy = open.policy;
      tok = open.model.tokenizer;
      contextLength = open.policy.config.contextLength;
      close = open.close;
    } else {
      const bytes = await readInput('eval', ckptPath as string);
      const snap = await asUsage('eval', () => loadModel(bytes));
      if (!snap.tokenizer) throw new UsageError(`coderl eval: ${ckptPath} carries no tokenizer; it cannot be sampled from text prompts`);
      tok = Tokenizer.fromJSON(snap.tokenizer);
      contextLength = snap.config.contextLength;
      const rt = backend === 'webgpu' ? await GpuRuntime.create(await nodeProvider()) : null;
      const p = createBackend(backend, { config: snap.config, params: snap.params, optim: DEFAULT_OPTIM, runtime: rt ?? undefined });
      policy = p;
      close = () => {
        p.dispose();
        rt?.dispose();
      };
    }
    const maxNew = intOption('eval', options, 'max-new-tokens', 1) ?? EVAL_DEFAULTS.maxNewTokens;
    const items = limit ? suite.items.slice(0, limit) : suite.items;
    const plan = await asUsage('eval', () => planEval(tok, contextLength, items, maxNew, promptFormatFor(format, tok)));
    for (const u of plan.unfit) io.err(`coderl eval: task ${u.task.task_id}: ${unfitMessage(u, contextLength)}; it is left out of pass@k`);
    if (!plan.fit.length) {
      close();
      throw new UsageError(`coderl eval: no prompt of ${suiteArg.label} fits the model's context of ${contextLength} tokens`);
    }
    const [pool, analyzer] = await Promise.all([createNodePool({ size: workers }), createAnalyzer(nodeWasmLoader)]);
    // sampling, then scoring: a bar each on a terminal, nothing when piped (cli/progress.ts)
    const progress = commandProgress(io, { quiet: options.quiet === true, piped: false });
    try {
      const t0 = performance.now();
      const r = await evalSuite(
        policy,
        tok,
        suite.items,
        { samples, k: ks, temperature, maxNewTokens: maxNew, seed, format, limit },
        { pool, analyzer },
        { onProgress: (p) => progress.update({ phase: p.stage, done: p.done, total: p.total, unit: 'tasks' }) },
      );
      progress.end();
      if (typeof options.out === 'string') {
        // records and rollouts are in the same order: each record gets the completion it scored
        const lines = r.records.map((x, i) =>
          JSON.stringify({ ...x, completion: r.rollouts[i]!.completion, finish: r.rollouts[i]!.finish }),
        );
        await writeFile(options.out, lines.join('\n') + '\n');
      }
      io.out(
        `suite: ${suiteArg.label} (${r.tasks} tasks), ${samples} samples per task at temperature ${temperature}, ${r.format} prompts, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      for (const [fam, v] of Object.entries(r.byFamily)) io.out(`  ${fam}: pass@1 ${v.toFixed(4)}`);
      for (const [k, v] of Object.entries(r.passAtK)) io.out(`${k}: ${v.toFixed(4)}`);
      return 0;
    } finally {
      progress.end();
      close();
      pool.close();
    }
  },
};
