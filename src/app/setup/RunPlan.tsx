/**
 * Before Start: where the run's model runs (BackendPicker: automatic picks cpu on a software
 * GPU), what model it trains, and how long the whole run should take on that backend, phase by
 * phase (RunPlan; rl/estimate.ts's cost model, calibrated by the last finished run here).
 */
import { useId, useMemo } from 'react';
import type { RlConfig } from '../../rl/config';
import type { RunBackend } from '../../rl/run-protocol';
import { useLab } from '../../store';
import { formatEta } from '../../util/eta';
import { estimateFor } from '../../store/estimate';
import { autoBackend, chosenBackend, type BackendChoice } from '../../store/worker-client';
import { PHASE_LABEL } from '../panels/RunProgress';

/** The backend a choice gives on this page's GPU now, and the note when automatic picks cpu. */
export function useChosenBackend(): { choice: BackendChoice; backend: RunBackend; note: string | null } {
  const choice = useLab((s) => s.setup.backend);
  const gpu = useLab((s) => s.gpu);
  return { choice, ...chosenBackend(choice, gpu, 'run') };
}

/** The Backend row of the Experiment form (its label and control; the form is a two-column grid). */
export function BackendPicker({ disabled }: { disabled: boolean }) {
  const id = useId();
  const patchSetup = useLab((s) => s.patchSetup);
  const gpu = useLab((s) => s.gpu);
  const { choice, backend, note } = useChosenBackend();
  const auto = autoBackend(gpu, 'run').backend;
  return (
    <>
      <label htmlFor={id}>Backend</label>
      <div>
        <select
          id={id}
          value={choice}
          disabled={disabled}
          onChange={(e) => patchSetup({ backend: e.target.value as BackendChoice })}
          data-testid="exp-backend"
          data-backend={backend}
        >
          <option value="auto">auto: {auto} here</option>
          <option value="webgpu">webgpu (WGSL kernels)</option>
          <option value="cpu">cpu (float64, in a worker)</option>
        </select>
        {note && (
          <p className="hint" data-testid="exp-backend-note">
            {note}
          </p>
        )}
      </div>
    </>
  );
}

/** What the run trains and how long it should take, for the form's config (null: invalid settings). */
export function RunPlan({ cfg, seed }: { cfg: RlConfig | null; seed: number }) {
  const gpu = useLab((s) => s.gpu);
  const { backend } = useChosenBackend();
  // the cost model is the lab GPT's: an imported model has no estimate yet (as in coderl train --model)
  const est = useMemo(() => (cfg && !cfg.pretrained ? estimateFor(cfg, seed, backend, gpu) : null), [cfg, seed, backend, gpu]);
  if (!cfg) return null;
  const m = cfg.model;
  const rl = cfg.rl.algo === 'grpo' ? (cfg.rl.groupStd ? 'GRPO' : 'Dr. GRPO') : 'PPO';
  const pre = cfg.pretrained;
  const stages = [pre && cfg.sft.maxSteps === 0 ? null : 'SFT', cfg.rm.enabled ? 'reward model' : null, rl];
  const how = cfg.lora
    ? `LoRA r${cfg.lora.rank} alpha ${cfg.lora.alpha} on ${cfg.lora.targets?.join(', ') ?? "the architecture's default modules"}${cfg.lora.lrRatio !== undefined && cfg.lora.lrRatio !== 1 ? ` (LoRA+: lora_B at ${cfg.lora.lrRatio} × the learning rate)` : ''}`
    : 'full fine-tuning';
  return (
    <div className="exp-plan" data-testid="exp-plan">
      {pre ? (
        <p data-testid="exp-plan-model" data-pretrained={pre.name}>
          <strong>Trains the Hugging Face model {pre.name}</strong>: {m.nLayer} layers, width {m.dModel}, {m.nHead} heads, context{' '}
          {m.contextLength}, its own tokenizer; {how}, a fresh value head; {cfg.sft.maxSteps === 0 ? 'SFT skipped, ' : ''}then{' '}
          {stages.filter(Boolean).join(' → ')}. No time estimate yet: the estimates are measured on the lab's GPT.
        </p>
      ) : (
        <p data-testid="exp-plan-model">
          <strong>Trains its own model from scratch</strong>: {m.nLayer} layers, width {m.dModel}, {m.nHead} heads, context{' '}
          {m.contextLength}, a tokenizer of up to {m.vocabSize} tokens learnt from the run's tasks; then{' '}
          {stages.filter(Boolean).join(' → ')}. Checkpoints made under <em>Checkpoints → New model</em> are not used by a run (evaluate them
          under <em>Evaluate</em>).
        </p>
      )}
      {est && (
        <details className="exp-estimate" data-testid="exp-estimate" data-seconds={Math.round(est.seconds)}>
          <summary>
            Estimated time: {est.upperBound ? 'at most ' : ''}
            <strong>about {formatEta(est.seconds)}</strong> on the {backend} backend
            {est.uncalibrated ? ' (a figure for a 2-core CPU: no run on this GPU has measured it yet)' : ''}
          </summary>
          <table>
            <tbody>
              {est.phases
                .filter((p) => p.seconds > 0)
                .map((p) => (
                  <tr key={p.phase}>
                    <td>{PHASE_LABEL[p.phase]}</td>
                    <td className="num">{formatEta(p.seconds)}</td>
                    <td className="hint">{p.work}</td>
                  </tr>
                ))}
            </tbody>
          </table>
          {est.upperBound && <p className="hint">SFT stops early when validation loss stops improving, so it often takes less.</p>}
        </details>
      )}
    </div>
  );
}
