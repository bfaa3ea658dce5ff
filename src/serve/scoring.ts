/**
 * Scoring for the service, built from what `coderl score` uses so a completion gets the same
 * record: the job scoreCompletions submits (sandbox/score.ts), toRecord, then annotateRecords
 * (reward/annotate.ts: the cached Analyzer's AST, lint and metrics, and computeReward). Jobs go
 * through the Scheduler (bounded queue) instead of straight to the pool. Each item carries its
 * own task, so two inline tasks with one id (OpenRLHF labels) never mix.
 */
import type { Analyzer } from '../analysis';
import { annotateRecords, rewardSummary } from '../reward/annotate';
import type { RewardConfig } from '../reward/reward';
import type { RunJob } from '../sandbox/protocol';
import type { RunLimits } from '../sandbox/result';
import { summarize, toRecord, type ScoreRecord, type ScoreSummary } from '../sandbox/score';
import type { Task } from '../tasks/types';
import type { Scheduler } from './scheduler';

export interface ScoreItem {
  task: Task;
  completion: string;
}

export interface Scorer {
  scheduler: Scheduler;
  analyzer: Analyzer;
  limits: RunLimits;
}

/** The job scoreCompletions submits for one completion. */
export function scoreJob(task: Task, completion: string, limits: RunLimits): RunJob {
  const { task_id, language, prompt, entry_point, tests } = task;
  return { task: { task_id, language, prompt, entry_point, tests }, completion, limits };
}

/** Records in item order (index = position in `items`), annotated as `coderl score` annotates them. */
export async function scoreItems(
  s: Scorer,
  items: readonly ScoreItem[],
  reward: RewardConfig,
  signal?: AbortSignal,
): Promise<ScoreRecord[]> {
  const results = await Promise.all(
    s.scheduler.enqueue(
      items.map((it) => scoreJob(it.task, it.completion, s.limits)),
      signal,
    ),
  );
  const completions = items.map((it) => ({ task_id: it.task.task_id, completion: it.completion }));
  return results.map((r, index) => {
    const rec = toRecord(index, r);
    annotateRecords([rec], [items[index]!.task], completions, s.analyzer, reward);
    return rec;
  });
}

export interface ScoreResponseSummary extends ScoreSummary {
  reward: { mean: number; components: Record<string, number> };
}

export function scoreSummary(records: readonly ScoreRecord[], wallMs: number): ScoreResponseSummary {
  return { ...summarize(records, wallMs), reward: rewardSummary(records) };
}
