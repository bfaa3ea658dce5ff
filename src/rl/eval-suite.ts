/**
 * `coderl eval`'s core, shared by the CLI (cli/commands/eval.ts) and the app's Evaluate panel
 * (eval-worker.ts), so both print the same numbers for the same checkpoint, suite, settings and
 * backend: the suite cut to `limit` tasks, prompts that do not fit the model's context set aside
 * (reported per task), the completion length capped by the longest prompt that fits, then
 * evaluate() (n samples per task, the sandbox, unbiased pass@k) and one row per task.
 *
 * Progress comes from thin wrappers around the policy's generate() and the pool's submit(): they
 * count rows and results without changing a call, so the sampling seeds and the numbers are
 * exactly those of an unwrapped run.
 */
import type { PolicyBackend } from '../model/backend';
import { DEFAULT_REWARD, type RewardConfig } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import type { ScoreRecord } from '../sandbox/score';
import type { Task } from '../tasks/types';
import type { TextTokenizer } from '../tokenizer/types';
import {
  completionFormat,
  promptFormatFor,
  type ChatSource,
  type PromptFormat,
  type PromptFormatKind,
  type PromptFormatSetting,
} from './prompt-format';
import { evaluate, type EvalResult } from './evaluate';
import type { Scorer } from './scorer';

export interface EvalSettings {
  /** samples per task (n) */
  samples: number;
  /** the k of each pass@k reported; each an integer in 1..samples */
  k: number[];
  /** sampling temperature in [0, 10]; 0 is greedy, which needs samples = 1 */
  temperature: number;
  /** completion length limit in tokens, before the cap by the context */
  maxNewTokens: number;
  /** sampling seed */
  seed: number;
  /** evaluate only the suite's first `limit` tasks; null or absent: all of them */
  limit?: number | null;
  /** how prompts reach the model (prompt-format.ts): default auto, chat exactly when the tokenizer has a chat template */
  format?: PromptFormatSetting;
}

/** `coderl eval`'s defaults (samples: the largest k). */
export const EVAL_DEFAULTS = { k: [1, 5, 10], temperature: 1, maxNewTokens: 48, seed: 1 } as const;

/** Why settings are invalid, by field (the rules `coderl eval` applies to its flags); {} when valid. */
export function settingsProblems(s: EvalSettings): Partial<Record<keyof EvalSettings, string>> {
  const out: Partial<Record<keyof EvalSettings, string>> = {};
  const positive = (x: number) => Number.isSafeInteger(x) && x >= 1;
  if (!positive(s.samples)) out.samples = `samples per task must be a positive integer, got ${s.samples}`;
  if (!s.k.length) out.k = 'give at least one k';
  else if (s.k.some((k) => !positive(k))) out.k = `each k must be a positive integer, got ${s.k.join(', ')}`;
  else if (positive(s.samples) && Math.max(...s.k) > s.samples)
    out.k = `k = ${Math.max(...s.k)} needs at least that many samples per task (n = ${s.samples})`;
  if (!(s.temperature >= 0 && s.temperature <= 10)) out.temperature = `temperature must be a number in [0, 10], got ${s.temperature}`;
  else if (s.temperature === 0 && s.samples > 1)
    out.temperature = 'temperature 0 (greedy) gives the same sample every time; use 1 sample per task';
  if (!positive(s.maxNewTokens)) out.maxNewTokens = `max new tokens must be a positive integer, got ${s.maxNewTokens}`;
  if (!Number.isSafeInteger(s.seed) || s.seed < 0) out.seed = `seed must be a non-negative integer, got ${s.seed}`;
  if (s.limit !== undefined && s.limit !== null && !positive(s.limit))
    out.limit = `the task limit must be a positive integer, got ${s.limit}`;
  return out;
}

/** A task set aside: its prompt leaves no room for a single new token in the model's context. */
export interface UnfitTask {
  task: Task;
  promptTokens: number;
}

export interface EvalPlan {
  /** the tasks to sample, in suite order */
  fit: Task[];
  unfit: UnfitTask[];
  /** the completion length used: the asked one, capped by the context minus the longest prompt that fits */
  maxNewTokens: number;
  /** tokens of the longest prompt that fits (0 when none does) */
  longestPrompt: number;
}

/** Which tasks fit a model of context `contextLength`, and the completion length they leave room for. */
export function planEval(
  tok: TextTokenizer,
  contextLength: number,
  tasks: readonly Task[],
  maxNewTokens: number,
  format: PromptFormat = completionFormat(tok),
): EvalPlan {
  const fit: Task[] = [];
  const unfit: UnfitTask[] = [];
  let longestPrompt = 0;
  for (const task of tasks) {
    const promptTokens = format.taskIds(task.prompt, task.language).length;
    if (promptTokens >= contextLength) unfit.push({ task, promptTokens });
    else {
      fit.push(task);
      longestPrompt = Math.max(longestPrompt, promptTokens);
    }
  }
  return { fit, unfit, maxNewTokens: Math.min(maxNewTokens, contextLength - longestPrompt), longestPrompt };
}

/** "prompt of 130 tokens does not fit the model's context of 96" */
export const unfitMessage = (u: UnfitTask, contextLength: number): string =>
  `prompt of ${u.promptTokens} tokens does not fit the model's context of ${contextLength}`;

/** One task's outcome. */
export interface TaskRow {
  task_id: string;
  /** meta.family, null when the task has none */
  family: string | null;
  /** samples that passed every test */
  passed: number;
  /** samples drawn (0 for a task whose prompt does not fit) */
  total: number;
  /** why the first failing sample failed, or why the task was not sampled; null when every sample passed */
  error: string | null;
  /** the task's prompt did not fit the context: it has no samples and no part in pass@k */
  unfit: boolean;
}

export interface EvalProgress {
  stage: 'sampling' | 'scoring';
  /** tasks with every sample generated (sampling) or scored (scoring) */
  done: number;
  total: number;
}

export interface EvalSuiteResult extends EvalResult {
  plan: EvalPlan;
  /** the prompt format used (the setting resolved for the tokenizer) */
  format: PromptFormatKind;
  /** one per task, in suite order (the unfit ones included) */
  rows: TaskRow[];
}

/** Why a sample failed, in one line: the verdict and the run's message (else its first failing test's). */
export function failureMessage(r: Pick<ScoreRecord, 'verdict' | 'message' | 'tests'>): string {
  const test = r.tests.find((t) => t.status !== 'passed');
  const why = r.message ?? (test ? `${test.name}: ${test.message ?? test.status}` : '');
  return why ? `${r.verdict}: ${why}` : r.verdict;
}

/** One row per task, in the order of `tasks`, from records in any order. */
export function taskRows(
  tasks: readonly Task[],
  records: readonly ScoreRecord[],
  unfit: readonly UnfitTask[],
  contextLength: number,
): TaskRow[] {
  const by = new Map<string, ScoreRecord[]>();
  for (const r of records) by.set(r.task_id, [...(by.get(r.task_id) ?? []), r]);
  const unfitBy = new Map(unfit.map((u) => [u.task.task_id, u]));
  return tasks.map((t) => {
    const family = t.meta?.family === undefined || t.meta.family === null || t.meta.family === '' ? null : String(t.meta.family);
    const u = unfitBy.get(t.task_id);
    if (u) return { task_id: t.task_id, family, passed: 0, total: 0, error: unfitMessage(u, contextLength), unfit: true };
    const rs = (by.get(t.task_id) ?? []).slice().sort((a, b) => a.index - b.index);
    const failed = rs.find((r) => !r.passed);
    return {
      task_id: t.task_id,
      family,
      passed: rs.filter((r) => r.passed).length,
      total: rs.length,
      error: failed ? failureMessage(failed) : null,
      unfit: false,
    };
  });
}

/** `b` with generate() counting the rows it has finished (`onRows`); every other member is b's. */
function countingBackend(b: PolicyBackend, onRows: (rows: number) => void): PolicyBackend {
  return {
    kind: b.kind,
    config: b.config,
    forward: (input) => b.forward(input),
    trainStep: (batches, read) => b.trainStep(batches, read),
    rlStep: (batches, cfg) => b.rlStep(batches, cfg),
    async generate(prompts, opts) {
      const r = await b.generate(prompts, opts);
      onRows(prompts.length);
      return r;
    },
    getParams: () => b.getParams(),
    getOptimizerState: () => b.getOptimizerState(),
    setOptim: (opt) => b.setOptim(opt),
    dispose: () => b.dispose(),
  };
}

/** `pool` with submit() telling `on.submit` of each job and `on.result` of its result (with the job's task id). */
function countingPool(pool: SandboxPool, on: { submit(): void; result(taskId: string): void }): SandboxPool {
  const submit = async (job: Parameters<SandboxPool['submit']>[0]): ReturnType<SandboxPool['submit']> => {
    on.submit();
    const { result, worker } = await pool.submit(job);
    return { result: result.then((r) => (on.result(job.task.task_id), r)), worker };
  };
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'submit') return submit;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * Evaluates `policy` on `tasks` (the first `settings.limit` of them): samples, scores and reports
 * pass@k over the tasks whose prompt fits, per family and per task. Throws when no prompt fits.
 */
export async function evalSuite(
  policy: PolicyBackend,
  tok: TextTokenizer & ChatSource,
  tasks: readonly Task[],
  settings: EvalSettings,
  scorer: Scorer,
  hooks: { onProgress?: (p: EvalProgress) => void; reward?: RewardConfig } = {},
): Promise<EvalSuiteResult> {
  const chosen = settings.limit ? tasks.slice(0, settings.limit) : tasks;
  const ctx = policy.config.contextLength;
  const format = promptFormatFor(settings.format ?? 'auto', tok);
  const plan = planEval(tok, ctx, chosen, settings.maxNewTokens, format);
  if (!plan.fit.length) {
    const shortest = Math.min(...plan.unfit.map((u) => u.promptTokens));
    throw new Error(`no task's prompt fits the model's context of ${ctx} tokens (the shortest has ${shortest})`);
  }
  const n = settings.samples;
  const total = plan.fit.length;
  const report = hooks.onProgress ?? (() => undefined);
  report({ stage: 'sampling', done: 0, total });
  let rows = 0;
  const sampled = countingBackend(policy, (r) => {
    rows += r;
    report({ stage: 'sampling', done: Math.min(total, Math.floor(rows / n)), total });
  });
  // scoreRollouts gives the k-th rollout the private id `k`; rollouts are task-major, n per task
  const scoredPerTask = new Array<number>(total).fill(0);
  let submitted = 0;
  let scored = 0;
  const pool = countingPool(scorer.pool, {
    submit: () => {
      if (submitted++ === 0) report({ stage: 'scoring', done: 0, total });
    },
    result: (id) => {
      const t = Math.floor(Number(id) / n);
      if (t >= 0 && t < total && ++scoredPerTask[t]! === n) report({ stage: 'scoring', done: ++scored, total });
    },
  });
  const cfg = { samples: n, temperature: settings.temperature, k: settings.k, maxNewTokens: plan.maxNewTokens };
  const scorerIn = { pool, analyzer: scorer.analyzer };
  const r = await evaluate(
    sampled,
    tok,
    plan.fit,
    cfg,
    scorerIn,
    hooks.reward ?? DEFAULT_REWARD,
    settings.seed,
    undefined,
    undefined,
    format,
  );
  return { ...r, plan, format: format.kind, rows: taskRows(chosen, r.records, plan.unfit, ctx) };
}
