/**
 * The run in flight: its status and backend, one bar per pipeline phase with the phase's time
 * left (its own rate once it has moved, else the estimate the run started with, corrected by
 * how the finished phases compared with theirs), and the whole run's time left.
 */
import { useEffect, useState } from 'react';
import { runEta, WORK_PHASES, type WorkPhase } from '../../rl/estimate';
import { referenceLabel, type ReferenceRef } from '../../rl/reference';
import { useLab } from '../../store';
import { formatEta, phaseEta } from '../../util/eta';

export const PHASE_LABEL: Record<WorkPhase, string> = {
  setup: 'Setup',
  sft: 'SFT',
  'sft-eval': 'SFT evaluation',
  'rm-samples': 'Reward-model samples',
  rm: 'Reward model',
  ppo: 'RL (GRPO/PPO)',
  eval: 'Final evaluation',
};

/** Re-renders every `ms` while `on` (time left counts down between events). */
function useTick(on: boolean, ms = 1000): void {
  const [, setT] = useState(0);
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setT((x) => x + 1), ms);
    return () => clearInterval(t);
  }, [on, ms]);
}

export function RunProgress() {
  const r = useLab((s) => s.run);
  const running = r.status === 'running' && r.pause === 'no';
  useTick(running);
  if (r.status === 'idle') return null;
  const active = WORK_PHASES.find((p) => r.phases[p] === 'active') ?? null;
  const activeLeft = active ? phaseEta(r.started[active], r.progress[active], performance.now()) : null;
  const eta = r.estimate && running ? runEta(r.estimate, r, activeLeft) : null;
  const phaseText = (p: WorkPhase): string => {
    const state = r.phases[p];
    if (state === 'off') return 'off';
    if (state === 'done') return 'done';
    const left = eta?.phases[p];
    const pct = state === 'active' ? `${Math.round(r.progress[p] * 100)}%` : '';
    if (left === undefined || !running) return pct;
    return state === 'active' ? `${pct} · ${formatEta(left)} left` : `~${formatEta(left)}`;
  };
  return (
    <div className="exp-run" data-testid="exp-run" data-status={r.status} aria-live="polite">
      <p className="exp-status">
        Run “{r.name}”:{' '}
        <strong data-testid="exp-status" data-pause={r.pause}>
          {r.status === 'running' && r.pause !== 'no' ? r.pause : r.status}
        </strong>
        {r.backend && <> on the {r.backend} backend</>}
        {' · '}
        <ReferenceText reference={r.reference} testId="exp-run-reference" />
      </p>
      {r.note && (
        <p className="exp-info" data-testid="exp-note">
          {r.note}
        </p>
      )}
      <ul className="exp-phases">
        {WORK_PHASES.map((p) => (
          <li key={p} data-phase={p} data-state={r.phases[p]}>
            <span>{PHASE_LABEL[p]}</span>
            <progress max={1} value={r.progress[p]} aria-label={`${PHASE_LABEL[p]} progress`} data-testid={`exp-progress-${p}`} />
            <span className="hint" data-testid={`exp-eta-${p}`}>
              {phaseText(p)}
            </span>
          </li>
        ))}
      </ul>
      {eta && (
        <p className="exp-total" data-testid="exp-eta-total" data-seconds={Math.round(eta.total)}>
          Whole run: about <strong>{formatEta(eta.total)}</strong> left
          {eta.scale !== 1 && (
            <span className="hint"> (the estimate corrected by this run's finished phases: ×{eta.scale.toFixed(2)})</span>
          )}
        </p>
      )}
      {r.message && (
        <p className="hint" data-testid="exp-message">
          {r.message}
        </p>
      )}
      {r.error && (
        <p role="alert" className="alert" data-testid="exp-error">
          {r.error}
        </p>
      )}
    </div>
  );
}

/** "KL reference: SFT policy", or the ONNX model's file name and short SHA-256 (config.rl.reference). */
export function ReferenceText({ reference, testId }: { reference: ReferenceRef | null; testId: string }) {
  return (
    <span data-testid={testId} data-name={reference?.name ?? ''} data-sha256={reference?.sha256 ?? ''}>
      KL reference: {reference ? referenceLabel(reference) : 'SFT policy'}
    </span>
  );
}
