import { describe, expect, test } from 'vitest';
import { MemoryRunDir } from './run-dir';
import { readMetrics } from './run-files';
import { canonicalMetricKey, canonicalMetrics, LEGACY_METRIC_KEYS, rewardComponentKey, rewardComponentOf } from './metric-names';

describe('metric names', () => {
  test('old keys map to the keys logged now; new and unknown keys stay', () => {
    expect(canonicalMetricKey('env/reward_mean')).toBe('reward');
    expect(canonicalMetricKey('policy/approxkl')).toBe('losses/approx_kl');
    expect(canonicalMetricKey('reward/test_pass_mean')).toBe('rewards/test_pass/mean');
    expect(canonicalMetricKey('reward/all_pass_std')).toBe('rewards/all_pass/std');
    expect(canonicalMetricKey('reward')).toBe('reward');
    expect(canonicalMetricKey('objective/kl')).toBe('objective/kl');
    expect(canonicalMetricKey('time/update_s')).toBe('time/update_s');
    for (const now of Object.values(LEGACY_METRIC_KEYS)) expect(canonicalMetricKey(now)).toBe(now);
  });
  test('a whole line is renamed, values and order kept; a current line is returned as it is', () => {
    const old = { iteration: 3, 'env/reward_mean': 0.5, 'reward/lint_mean': -0.1, alarms: [] };
    expect(Object.entries(canonicalMetrics(old))).toEqual([
      ['iteration', 3],
      ['reward', 0.5],
      ['rewards/lint/mean', -0.1],
      ['alarms', []],
    ]);
    const now = { iteration: 3, reward: 0.5 };
    expect(canonicalMetrics(now)).toBe(now);
  });
  test('component keys round-trip', () => {
    expect(rewardComponentOf(rewardComponentKey('ast_valid', 'mean'))).toBe('ast_valid');
    expect(rewardComponentOf('rewards/ast_valid/std')).toBeNull();
    expect(rewardComponentOf('reward')).toBeNull();
  });
});

test('a run logged with the old keys reads back with the new ones', async () => {
  const dir = new MemoryRunDir();
  await dir.write(
    'metrics.jsonl',
    [
      JSON.stringify({ stage: 'sft', step: 1, 'loss/train': 5.1 }),
      JSON.stringify({ stage: 'ppo', iteration: 0, 'env/reward_mean': 0.4, 'reward/test_pass_mean': 0.3, 'policy/clipfrac': 0.1 }),
      JSON.stringify({ stage: 'ppo', iteration: 1, reward: 0.5, 'rewards/test_pass/mean': 0.35, 'losses/clipfrac': 0.2 }),
    ].join('\n') + '\n',
  );
  const lines = await readMetrics(dir);
  expect(lines[0]).toEqual({ stage: 'sft', step: 1, 'loss/train': 5.1 });
  expect(lines[1]).toEqual({ stage: 'ppo', iteration: 0, reward: 0.4, 'rewards/test_pass/mean': 0.3, 'losses/clipfrac': 0.1 });
  expect(lines[2]).toEqual({ stage: 'ppo', iteration: 1, reward: 0.5, 'rewards/test_pass/mean': 0.35, 'losses/clipfrac': 0.2 });
});
