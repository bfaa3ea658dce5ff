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
import { intOption, readInput, UsageError, type Command } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';
import { backendOption } from './train';
import { commandProgress } from '../progress';

export const evalCommand: Command = {
  name: 'eval',
  summary: 'HumanEval-style pass@k of a checkpoint on a suite',
  usage: 'coderl eval --suite S --checkpoint C [--k 1,5,10] [--samples N] [--temperature T] [--backend cpu|webgpu] [--out R]',
  description: [
    "Samples N completions per task (default: the largest k) from the checkpoint's policy, runs them in",
    'the sandbox pool and prints the unbiased pass@k estimate (Chen et al. 2021) averaged over tasks,',
    'per task family when the suite has them. The checkpoint must carry its tokenizer (coderl train',
    "writes sft.ckpt and policy.ckpt that way). --out writes one scored record per sample, with its\ncompletion text and why generation stopped. --suite takes a file or a built-in suite's name (coderl suites).",
  ].join('\n'),
  options: {
    suite: { type: 'string', description: "suite JSONL (plain or .gz), or a built-in suite's name", value: 'S' },
    checkpoint: { type: 'string', description: 'model checkpoint with its tokenizer', value: 'C' },
    k: { type: 'string', description: 'comma-separated k values (default 1,5,10)', value: 'K' },
    samples: { type: 'string', description: 'samples per task (default: the largest k)', value: 'N' },
    temperature: { type: 'string', description: 'sampling temperature (default 1)', value: 'T' },
    'max-new-tokens': { type: 'string', description: 'completion length limit in tokens (default 48, capped by the context)', value: 'N' },
    seed: { type: 'string', description: 'sampling seed (default 1)', value: 'S' },
    backend: { type: 'string', description: 'cpu or webgpu (default cpu)', value: 'B' },
    workers: { type: 'string', description: `sandbox workers (default ${phasedPoolSize()})`, value: 'N' },
    out: { type: 'string', description: 'write the scored samples as JSONL here', value: 'R' },
    quiet: { type: 'boolean', description: 'print only the summary (no progress)' },
  },
  examples: [
    'npx coderl eval --suite runs/tiny-1/tasks/heldout.jsonl --checkpoint runs/tiny-1/policy.ckpt --k 1,5,10',
    'npx coderl eval --suite humaneval-x-js --checkpoint runs/tiny-1/policy.ckpt --k 1 --samples 1 --temperature 0',
  ],
  async run(options, _positionals, io) {
    const suitePath = options.suite;
    const ckptPath = options.checkpoint;
    if (typeof suitePath !== 'string') throw new UsageError('coderl eval: --suite S is required');
    if (typeof ckptPath !== 'string') throw new UsageError('coderl eval: --checkpoint C is required');
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
    // the suite first: a wrong --suite (a name that is no file) is told before the checkpoint is read
    const suiteArg = resolveSuiteArg(suitePath);
    const suite = await loadSuite(await readSuiteArg('eval', suiteArg), suiteArg.path);
    for (const i of suite.issues) io.err(`coderl eval: ${formatIssue(i)}`);
    if (!suite.items.length) throw new UsageError(`coderl eval: ${suiteArg.label} holds no valid task`);

    const bytes = await readInput('eval', ckptPath);
    const snap = loadModel(bytes);
    if (!snap.tokenizer) throw new UsageError(`coderl eval: ${ckptPath} carries no tokenizer; it cannot be sampled from text prompts`);
    const tok = Tokenizer.fromJSON(snap.tokenizer);
    const maxNew = intOption('eval', options, 'max-new-tokens', 1) ?? EVAL_DEFAULTS.maxNewTokens;
    const plan = planEval(tok, snap.config.contextLength, suite.items, maxNew);
    for (const u of plan.unfit)
      io.err(`coderl eval: task ${u.task.task_id}: ${unfitMessage(u, snap.config.contextLength)}; it is left out of pass@k`);
    if (!plan.fit.length)
      throw new UsageError(`coderl eval: no prompt of ${suiteArg.label} fits the model's context of ${snap.config.contextLength} tokens`);

    let rt: GpuRuntime | null = null;
    if (backend === 'webgpu') rt = await GpuRuntime.create(await nodeProvider());
    const [pool, analyzer] = await Promise.all([createNodePool({ size: workers }), createAnalyzer(nodeWasmLoader)]);
    const policy = createBackend(backend, { config: snap.config, params: snap.params, optim: DEFAULT_OPTIM, runtime: rt ?? undefined });
    // sampling, then scoring: a bar each on a terminal, nothing when piped (cli/progress.ts)
    const progress = commandProgress(io, { quiet: options.quiet === true, piped: false });
    try {
      const t0 = performance.now();
      const r = await evalSuite(
        policy,
        tok,
        suite.items,
        { samples, k: ks, temperature, maxNewTokens: maxNew, seed },
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
        `suite: ${suiteArg.label} (${r.tasks} tasks), ${samples} samples per task at temperature ${temperature}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      for (const [fam, v] of Object.entries(r.byFamily)) io.out(`  ${fam}: pass@1 ${v.toFixed(4)}`);
      for (const [k, v] of Object.entries(r.passAtK)) io.out(`${k}: ${v.toFixed(4)}`);
      return 0;
    } finally {
      progress.end();
      policy.dispose();
      pool.close();
      rt?.dispose();
    }
  },
};
