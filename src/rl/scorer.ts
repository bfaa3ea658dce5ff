/**
 * Scores rollouts the way `coderl score` does: the sandbox pool runs the tests, the cached
 * analyzer lints and parses, and the reward config turns both into a breakdown.
 */
import type { Analyzer } from '../analysis';
import { annotateRecords } from '../reward/annotate';
import type { RewardConfig } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import { scoreCompletions, type ScoreRecord } from '../sandbox/score';
import type { Task } from '../tasks/types';

export interface Scorer {
  pool: SandboxPool;
  analyzer: Analyzer;
}

/**
 * One record per item, in order, with `reward` set. Each item is scored with its own task (a
 * repair turn's task differs from the original only in its prompt, under the same id), so the
 * items get private ids for the run and their task ids back afterwards.
 */
export async function scoreRollouts(
  s: Scorer,
  items: readonly { task: Task; completion: string }[],
  reward: RewardConfig,
  /** after each program's verdict: how many of the items are scored */
  onScored?: (done: number, total: number) => void,
): Promise<ScoreRecord[]> {
  const tasks = items.map((i, k) => ({ ...i.task, task_id: `${k}` }));
  const completions = items.map((i, k) => ({ task_id: `${k}`, completion: i.completion }));
  let done = 0;
  const onRecord = onScored ? () => onScored(++done, items.length) : undefined;
  const records = await scoreCompletions(s.pool, tasks, completions, { onRecord });
  annotateRecords(records, tasks, completions, s.analyzer, reward);
  records.forEach((r, k) => (r.task_id = items[k]!.task.task_id));
  return records;
}
