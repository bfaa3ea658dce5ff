/**
 * Panels whose content arrives with the training pipeline. Each states plainly what it will
 * show, so the layout is the lab's final one from the start.
 */
export function TrainingCurves() {
  return (
    <p className="empty" data-testid="curves-empty">
      No runs yet. Reward per component, pass rate, KL, entropy and losses are plotted here live.
    </p>
  );
}

export function RolloutBrowser() {
  return (
    <p className="empty" data-testid="rollouts-empty">
      No rollouts yet. Each PPO iteration's samples are listed here, grouped by prompt and sortable by reward.
    </p>
  );
}
