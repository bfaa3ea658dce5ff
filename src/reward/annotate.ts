/**
 * Adds static analysis and the reward breakdown to score records: the JavaScript completions
 * go through the cached Analyzer (lint, tree-sitter, metrics); every completion gets a reward.
 */
import type { Analyzer, CacheStats, CodeMetrics, Finding, SyntaxCheck } from '../analysis';
import type { ScoreRecord } from '../sandbox/score';
import type { Completion, Task } from '../tasks/types';
import { computeReward, type RewardBreakdown, type RewardConfig } from './reward';

declare module '../sandbox/score' {
  interface ScoreExtensions {
    /** tree-sitter's verdict on prompt + completion, errors in completion offsets (JavaScript) */
    ast?: SyntaxCheck;
    /** ESLint and metric findings in the completion, in completion offsets (JavaScript) */
    lint?: Finding[];
    metrics?: CodeMetrics;
    reward?: RewardBreakdown;
  }
}

export function annotateRecords(
  records: ScoreRecord[],
  tasks: readonly Task[],
  completions: readonly Completion[],
  analyzer: Analyzer,
  cfg: RewardConfig,
): void {
  const byId = new Map(tasks.map((t) => [t.task_id, t]));
  for (const r of records) {
    const task = byId.get(r.task_id)!;
    const completion = completions[r.index]!.completion;
    const analysis = task.language === 'javascript' ? analyzer.analyze(completion, { prompt: task.prompt }) : null;
    if (analysis) {
      r.ast = analysis.ast;
      r.lint = analysis.diagnostics.filter((d) => d.source !== 'ast');
      r.metrics = analysis.metrics;
    }
    r.reward = computeReward(completion, r, analysis, cfg);
  }
}

/** Mean reward and the mean of each component's contribution. */
export function rewardSummary(records: readonly ScoreRecord[]): { mean: number; components: Record<string, number> } {
  const withReward = records.filter((r) => r.reward);
  const components: Record<string, number> = {};
  for (const r of withReward)
    for (const c of r.reward!.components) components[c.name] = (components[c.name] ?? 0) + c.contribution / withReward.length;
  const mean = withReward.reduce((a, r) => a + r.reward!.total, 0) / Math.max(1, withReward.length);
  return { mean, components };
}

export function cacheLine(s: CacheStats): string {
  return `analysis cache: ${s.hits} hits, ${s.misses} misses (hit rate ${(s.hitRate * 100).toFixed(1)}%)`;
}
