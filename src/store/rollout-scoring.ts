/**
 * What the rollout view (app/panels/RolloutView.tsx) computes without the editor, for the rollout
 * slice's view actions (rolloutSlice.ts): a stored run's tasks and reward config (cached per run),
 * the static analysis and tree-sitter outline of a completion, and the rescoring of an edited
 * completion exactly as the run scored it: the task's tests from the run's tasks/rl.jsonl (a
 * repair turn with the record's own prompt), the run's reward config from config.json, the page's
 * one sandbox pool and analyzer (scorerSlice.ts). Components the page cannot measure (the reward
 * model's score) keep their recorded value.
 */
import type { AnalysisResult, OutlineNode } from '../analysis';
import { computeReward, DEFAULT_REWARD, validateRewardConfig, type RewardComponent, type RewardConfig } from '../reward/reward';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { TestResult } from '../sandbox/result';
import type { Task } from '../tasks/types';
import { errorText } from '../util/errors';
import { getAnalyzer, runInSandbox } from './scorerSlice';

/** Nodes shown at most in the syntax tree. */
export const OUTLINE_NODES = 1500;

/** tree-sitter's tree of a program, cut at OUTLINE_NODES. */
export interface Outline {
  root: OutlineNode;
  complete: boolean;
  /** the program the offsets index */
  text: string;
}

/** An edited completion, scored. */
export interface Scored {
  completion: string;
  analysis: AnalysisResult | null;
  outline: Outline | null;
  tests: TestResult[];
  verdict: string;
  tests_passed: number;
  tests_total: number;
  components: RewardComponent[];
}

/** A stored run's tasks and reward config. */
export interface RunContext {
  tasks: Map<string, Task>;
  reward: RewardConfig;
  /** why the default reward config is used, if it is */
  rewardNote: string | null;
}

const runContexts = new Map<string, Promise<RunContext>>();

/** tasks/rl.jsonl and config.json's reward of a stored run, cached per run name (a failure is not cached). */
export function runContext(run: string): Promise<RunContext> {
  let p = runContexts.get(run);
  if (!p) {
    p = (async () => {
      const [{ runStorage }, { readJson }, { loadSuite }] = await Promise.all([
        import('../rl/run-dir-browser'),
        import('../rl/run-dir'),
        import('../tasks/suite'),
      ]);
      const store = (await runStorage()).open(run);
      const bytes = await store.read('tasks/rl.jsonl');
      if (!bytes) throw new Error(`run "${run}" has no tasks/rl.jsonl, so its tasks' tests are unknown`);
      const { items } = await loadSuite(bytes, 'tasks/rl.jsonl');
      const config = await readJson<{ cfg?: { reward?: unknown } }>(store, 'config.json');
      let reward = DEFAULT_REWARD;
      let rewardNote: string | null = 'config.json has no reward config: the default reward config is used';
      if (config?.cfg?.reward !== undefined) {
        try {
          reward = validateRewardConfig(config.cfg.reward, 'config.reward');
          rewardNote = null;
        } catch (e) {
          rewardNote = `${errorText(e)}: the default reward config is used`;
        }
      }
      return { tasks: new Map(items.map((t) => [t.task_id, t])), reward, rewardNote };
    })();
    p.catch(() => runContexts.delete(run));
    runContexts.set(run, p);
  }
  return p;
}

/** The analysis of `completion` after `prompt` and the outline of the program; null for a language other than JavaScript. */
export async function analyse(
  language: string,
  prompt: string,
  completion: string,
): Promise<{ analysis: AnalysisResult; outline: Outline } | null> {
  if (language !== 'javascript') return null;
  const a = await getAnalyzer();
  const text = prompt + completion;
  const { root, complete } = a.syntax.outline(text, { maxNodes: OUTLINE_NODES });
  return { analysis: a.analyze(completion, { prompt }), outline: { root, complete, text } };
}

/** Scores `completion` (after `prompt`) as run `run` scored record `r`; throws when it cannot. */
export async function scoreEdit(r: RolloutRecord, run: string | null, prompt: string, completion: string): Promise<Scored> {
  if (!run) throw new Error('no run is open, so the task is unknown');
  const ctx = await runContext(run);
  const task = ctx.tasks.get(r.task_id);
  if (!task) throw new Error(`task ${r.task_id} is not in the run's tasks/rl.jsonl`);
  const [ran, analysed] = await Promise.allSettled([
    runInSandbox({ ...task, prompt }, completion),
    analyse(task.language, prompt, completion),
  ]);
  if (ran.status === 'rejected') throw ran.reason;
  if (analysed.status === 'rejected') throw new Error(`Static analysis could not be loaded: ${errorText(analysed.reason)}`);
  const { tests, verdict } = ran.value;
  const exec = { verdict, tests_passed: tests.filter((t) => t.status === 'passed').length, tests_total: tests.length };
  const analysis = analysed.value?.analysis ?? null;
  const measured = computeReward(completion, exec, analysis, ctx.reward).components;
  const kept = r.reward.components
    .filter((c) => !measured.some((m) => m.name === c.name))
    .map((c) => ({ ...c, detail: `as recorded, not re-measured in the page (${c.detail})` }));
  return { completion, analysis, outline: analysed.value?.outline ?? null, tests, ...exec, components: [...measured, ...kept] };
}
