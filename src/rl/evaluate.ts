/**
 * HumanEval-style evaluation: n samples per task at the eval temperature, run in the sandbox,
 * unbiased pass@k averaged over tasks, plus pass@1 per task family.
 */
import type { PolicyBackend } from '../model/backend';
import type { RewardConfig } from '../reward/reward';
import type { TextTokenizer } from '../tokenizer/types';
import type { Task } from '../tasks/types';
import type { EvalConfig } from './config';
import { sampleTasks, type Sample, type SampleOptions } from './sample';
import type { PromptFormat } from './prompt-format';
import { passAtKs, type ScoreRecord } from '../sandbox/score';
import { scoreRollouts, type Scorer } from './scorer';

export interface EvalResult {
  /** `pass@k` -> value */
  passAtK: Record<string, number>;
  /** pass@1 per task family (meta.family), when tasks carry one */
  byFamily: Record<string, number>;
  tasks: number;
  samples: number;
  records: ScoreRecord[];
  rollouts: Sample[];
}

/** The share of an evaluation's time its sampling takes, for progress (scoring is the rest). */
export const SAMPLING_SHARE = 0.6;

/** A sample-then-score pass's two counts (sampleTasks' onProgress, scoreRollouts' onScored) as one share done, 0..1. */
export function sampleScoreProgress(onProgress: (fraction: number) => void): {
  sampled: (done: number, total: number) => void;
  scored: (done: number, total: number) => void;
} {
  return {
    sampled: (done, total) => onProgress((SAMPLING_SHARE * done) / total),
    scored: (done, total) => onProgress(SAMPLING_SHARE + ((1 - SAMPLING_SHARE) * done) / total),
  };
}

/** pass@k of `tasks`, sampled and scored; `onProgress` gets the share done. */
export async function evaluate(
  backend: PolicyBackend,
  tok: TextTokenizer,
  tasks: readonly Task[],
  cfg: EvalConfig,
  scorer: Scorer,
  reward: RewardConfig,
  seed: number,
  constrain?: SampleOptions['constrain'],
  /** the share done (0..1): sampling is counted as the first SAMPLING_SHARE, scoring the rest */
  onProgress?: (fraction: number) => void,
  /** how prompts reach the model (prompt-format.ts); default plain completion */
  format?: PromptFormat,
): Promise<EvalResult> {
  const progress = onProgress && sampleScoreProgress(onProgress);
  const rollouts = await sampleTasks(backend, tok, tasks, {
    samplesPerTask: cfg.samples,
    temperature: cfg.temperature,
    maxNewTokens: cfg.maxNewTokens,
    seed,
    constrain,
    onProgress: progress?.sampled,
    format,
  });
  const records = await scoreRollouts(scorer, rollouts, reward, progress?.scored);
  const byFamily: Record<string, number> = {};
  const families = new Set(tasks.map((t) => String(t.meta?.family ?? '')));
  for (const f of families) {
    if (!f) continue;
    const ids = new Set(tasks.filter((t) => t.meta?.family === f).map((t) => t.task_id));
    byFamily[f] = passAtKs(
      records.filter((r) => ids.has(r.task_id)),
      [1],
    )['pass@1']!;
  }
  return { passAtK: passAtKs(records, cfg.k), byFamily, tasks: tasks.length, samples: records.length, records, rollouts };
}
