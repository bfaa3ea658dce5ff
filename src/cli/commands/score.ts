import { writeFile } from 'node:fs/promises';
import { createAnalyzer } from '../../analysis';
import { nodeWasmLoader } from '../../analysis/wasm-node';
import { annotateRecords, cacheLine, rewardSummary } from '../../reward/annotate';
import { DEFAULT_REWARD, RewardConfigError, validateRewardConfig, type RewardConfig } from '../../reward/reward';
import { createNodePool, defaultPoolSize } from '../../sandbox/pool.node';
import { DEFAULT_LIMITS } from '../../sandbox/result';
import { scoreCompletions, summarize, type ScoreRecord, type ScoreSummary } from '../../sandbox/score';
import { loadCompletions } from '../../tasks/completions';
import { canonicalCompletions, loadSuite } from '../../tasks/suite';
import { formatIssue, type Completion, type LoadIssue } from '../../tasks/types';
import { intOption, readInput, UsageError, type Command, type Io } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';
import { errorText } from '../../util/errors';
import { commandProgress } from '../progress';

function summaryLines(s: ScoreSummary, records: ScoreRecord[], workers: number): string[] {
  const verdicts = Object.entries(s.verdicts)
    .map(([v, n]) => `${v} ${n}`)
    .join(', ');
  const notPassed = records.filter((r) => !r.passed);
  const list = notPassed
    .slice(0, 20)
    .map((r) => `${r.task_id} (${r.verdict})`)
    .join(', ');
  return [
    `workers: ${workers}, wall ${(s.wall_ms / 1000).toFixed(1)} s, ${s.programs_per_s} programs/s`,
    `verdicts: ${verdicts || 'none'}`,
    `pass@1: ${s.pass_at_1.toFixed(4)} over ${s.tasks} tasks (${s.passed}/${s.completions} completions passed)`,
    ...(notPassed.length ? [`not passed: ${list}${notPassed.length > 20 ? `, ... (${notPassed.length - 20} more)` : ''}`] : []),
    `${s.passed} passed, ${s.failed} failed`,
  ];
}

export const scoreCommand: Command = {
  name: 'score',
  summary: "run completions (or a suite's canonical solutions) against a task suite in the sandbox",
  usage: 'coderl score --suite S (--completions C | --canonical) [--workers N] [--out R] [--timeout MS]',
  description: [
    'Runs each completion (human-eval JSONL {task_id, completion}; program = prompt + completion) with the',
    "suite's tests in the sandbox: JavaScript in QuickJS, Python in Pyodide, on a pool of worker threads.",
    'Suites are JSONL or .jsonl.gz: the native format, HumanEval-X JavaScript or HumanEval Python as they are;',
    "--suite also takes a built-in suite's name (humaneval-x-js, humaneval-python: see coderl suites).",
    'Writes one JSON object per completion {task_id, index, passed, verdict, tests, duration_ms, ast, lint,',
    'metrics, reward: {total, components: [{name, raw, weight, sign, contribution, detail}]}} to R',
    '(stdout with --out -, the default), then prints a summary with pass@1 (to stderr when the records go to',
    'stdout) whose last line is "N passed, M failed". Bad input lines are reported as file:line and skipped.',
    'Exit 0 when scoring ran, 1 when nothing could be scored, 2 on bad usage.',
  ].join('\n'),
  options: {
    suite: { type: 'string', description: "task suite (.jsonl or .jsonl.gz), or a built-in suite's name", value: 'FILE|NAME' },
    completions: { type: 'string', description: 'completions to score (.jsonl or .jsonl.gz)', value: 'FILE' },
    canonical: { type: 'boolean', description: "score the suite's canonical solutions instead" },
    workers: { type: 'string', description: `sandbox workers (default: cores - 1 = ${defaultPoolSize()})`, value: 'N' },
    out: { type: 'string', description: 'where the per-completion JSON lines go; - for stdout (default)', value: 'FILE' },
    timeout: { type: 'string', description: `wall-clock limit per program (default ${DEFAULT_LIMITS.timeoutMs})`, value: 'MS' },
    reward: {
      type: 'string',
      description: 'reward weights as JSON (a file, or inline {...}); unset fields keep their defaults',
      value: 'JSON',
    },
    quiet: { type: 'boolean', description: 'print only the summary (no progress)' },
  },
  examples: [
    'npx coderl score --suite humaneval-x-js --canonical --out /tmp/r.jsonl',
    'npx coderl score --suite tasks.jsonl --completions samples.jsonl --workers 4 --out - | jq .verdict',
  ],
  async run(options, _positionals, io) {
    if (typeof options.suite !== 'string') throw new UsageError('coderl score: --suite is required');
    const completionsPath = options.completions;
    if ((typeof completionsPath === 'string') === (options.canonical === true))
      throw new UsageError('coderl score: give exactly one of --completions and --canonical');
    const workers = intOption('score', options, 'workers', 1) ?? defaultPoolSize();
    const timeoutMs = intOption('score', options, 'timeout', 1) ?? DEFAULT_LIMITS.timeoutMs;
    const out = typeof options.out === 'string' ? options.out : '-';
    const reward = await rewardOption(options.reward);
    const info: (t: string) => void = out === '-' ? (t) => io.err(t) : (t) => io.out(t);

    const suiteArg = resolveSuiteArg(options.suite);
    const suite = await loadSuite(await readSuiteArg('score', suiteArg), suiteArg.path);
    const issues: LoadIssue[] = [...suite.issues];
    let completions: Completion[];
    if (typeof completionsPath === 'string') {
      const loaded = await loadCompletions(await readInput('score', completionsPath), completionsPath, suite.items);
      issues.push(...loaded.issues);
      completions = loaded.items;
    } else {
      completions = canonicalCompletions(suite.items);
    }
    for (const i of issues) io.err(`coderl score: ${formatIssue(i)}`);
    if (!completions.length) {
      io.err(`coderl score: nothing to score (${suite.items.length} tasks, 0 completions)`);
      return 1;
    }
    const languages = [...new Set(suite.items.map((t) => t.language))].join(', ');
    info(
      `suite: ${suiteArg.label} (${suite.items.length} tasks, ${languages}); completions: ${completionsPath ?? 'canonical solutions'} (${completions.length})`,
    );
    return scoreAndReport(io, { suite: suite.items, completions, workers, timeoutMs, out, info, reward, quiet: options.quiet === true });
  },
};

async function scoreAndReport(
  io: Io,
  a: {
    suite: Parameters<typeof scoreCompletions>[1];
    completions: Completion[];
    workers: number;
    timeoutMs: number;
    out: string;
    info: (t: string) => void;
    reward: RewardConfig;
    quiet: boolean;
  },
): Promise<number> {
  const [pool, analyzer] = await Promise.all([createNodePool({ size: a.workers }), createAnalyzer(nodeWasmLoader)]);
  const t0 = performance.now();
  // a bar on stderr when it is a terminal, nothing when piped (cli/progress.ts)
  const progress = commandProgress(io, { quiet: a.quiet, piped: false });
  try {
    const limits = { ...DEFAULT_LIMITS, timeoutMs: a.timeoutMs };
    const total = a.completions.length;
    let done = 0;
    let passed = 0;
    const onRecord = (r: ScoreRecord) => {
      done++;
      if (r.passed) passed++;
      progress.update({ phase: 'scoring', done, total, unit: 'programs', message: `${passed} passed` });
    };
    progress.update({ phase: 'scoring', done: 0, total, unit: 'programs' });
    const records = await scoreCompletions(pool, a.suite, a.completions, { limits, onRecord });
    progress.end();
    annotateRecords(records, a.suite, a.completions, analyzer, a.reward);
    const lines = records.map((r) => JSON.stringify(r)).join('\n');
    if (a.out === '-') io.out(lines);
    else await writeFile(a.out, `${lines}\n`);
    const rs = rewardSummary(records);
    const parts = Object.entries(rs.components)
      .map(([k, v]) => `${k} ${v >= 0 ? '+' : ''}${v.toFixed(3)}`)
      .join(', ');
    a.info(`reward: mean ${rs.mean.toFixed(3)} (${parts}); ${cacheLine(analyzer.stats())}`);
    for (const line of summaryLines(summarize(records, performance.now() - t0), records, pool.size)) a.info(line);
    return 0;
  } finally {
    progress.end();
    pool.close();
  }
}

/** --reward: a JSON file or inline JSON object, validated (errors name the field). */
async function rewardOption(value: string | boolean | undefined): Promise<RewardConfig> {
  if (typeof value !== 'string') return DEFAULT_REWARD;
  const text = value.trim().startsWith('{') ? value : new TextDecoder().decode(await readInput('score', value));
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`coderl score: --reward is not valid JSON: ${errorText(e)}`);
  }
  try {
    return validateRewardConfig(parsed, '--reward');
  } catch (e) {
    if (e instanceof RewardConfigError) throw new UsageError(`coderl score: ${e.message}`);
    throw e;
  }
}
