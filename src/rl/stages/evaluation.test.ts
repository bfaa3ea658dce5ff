/** The reward model's line in the CLI's and the app's run summary. */
import { describe, expect, test } from 'vitest';
import { rmSummaryText } from './evaluation';

describe('rmSummaryText', () => {
  const rm = { heldout_pairwise_accuracy: 0.5861, train_pairwise_accuracy: 0.7, heldout_pairs: 1032 };
  test('the held-out accuracy and its pairs; the step kept and the untrained rankings when the run measured them', () => {
    expect(rmSummaryText(rm)).toBe('held-out pairwise accuracy 58.6% over 1032 pairs');
    expect(
      rmSummaryText({
        ...rm,
        best_step: 180,
        val_pairwise_accuracy: 0.71,
        heldout_baselines: { policy_mean_logp: 0.684, longer: 0.5, shorter: 0.25 },
      }),
    ).toBe(
      "held-out pairwise accuracy 58.6% over 1032 pairs (step 180 kept: validation 71.0%); untrained: the policy's own likelihood 68.4%, the longer first 50.0%, the shorter first 25.0%",
    );
  });
  test('early stopping that kept the untrained model, with the validation accuracy before training', () => {
    expect(rmSummaryText({ ...rm, best_step: 0, val_pairwise_accuracy: 0.7, val_start_pairwise_accuracy: 0.7 })).toBe(
      'held-out pairwise accuracy 58.6% over 1032 pairs (the untrained model kept: validation 70.0%)',
    );
    expect(rmSummaryText({ ...rm, best_step: 50, val_pairwise_accuracy: 0.8, val_start_pairwise_accuracy: 0.7 })).toBe(
      'held-out pairwise accuracy 58.6% over 1032 pairs (step 50 kept: validation 80.0%, 70.0% before training)',
    );
  });
});
