/**
 * Evaluation, the same for every stage's policy: pass@k on the held-out split, pass@1 on fixed
 * subsets of the train and rl splits (seeds derived from the run's seed, so SFT and RL are
 * measured on the same samples' seeds), and the run's summary (summary.json), written last.
 */
import type { BackendKind, Policy } from '../../policy';
import type { RlConfig } from '../config';
import { evaluate, SAMPLING_SHARE, type EvalResult } from '../evaluate';
import { writeJson } from '../run-dir';
import type { GeneratedTask } from '../tasks';
import type { RunContext } from './context';
import type { RmJson } from './reward-model';

export interface StageEval {
  heldout_pass1: number;
  /** on a fixed subset of the train split (SFT's data) */
  train_pass1: number;
  /** on a fixed subset of the rl split (PPO's tasks) */
  rl_tasks_pass1: number;
  heldout_passk: Record<string, number>;
  heldout_by_family: Record<string, number>;
}

/** sft.json: SFT's evaluation, its steps and where it stopped early. */
export type SftSummary = StageEval & { steps: number; best_step: number; best_val_loss: number };

export interface Summary {
  preset: string;
  seed: number;
  backend: BackendKind;
  sft: SftSummary;
  /** null when disabled; `skipped` says why when it could not be trained */
  rm:
    | {
        heldout_pairwise_accuracy: number;
        train_pairwise_accuracy: number;
        heldout_pairs: number;
        /** with early stopping (rm.valShare): the step kept (0: the untrained model), its validation pairwise accuracy, and the untrained model's (absent in runs before it was measured) */
        best_step?: number;
        val_pairwise_accuracy?: number;
        val_start_pairwise_accuracy?: number;
        /** the held-out pairs ranked without training (RmResult.baselines); absent for a reward model trained before they were measured */
        heldout_baselines?: { policy_mean_logp: number; longer: number; shorter: number };
      }
    | { skipped: string }
    | null;
  rl: StageEval & { iterations: number; algo: string };
  minutes: number;
  explore: RlConfig['explore'];
  /** how the task prompts reached the policy in every stage (cfg.promptFormat resolved: auto picks chat when the tokenizer has a template) */
  prompt_format: 'chat' | 'completion';
}

/** Tasks of the train and rl splits their pass@1 is measured on (a fixed subset keeps evaluation cheap). */
export const TRAIN_EVAL_TASKS = 48;

/** A strided subset (the splits are sorted by task id, so a prefix would be one family). */
export function evalSubset(tasks: readonly GeneratedTask[]): GeneratedTask[] {
  const step = Math.max(1, Math.floor(tasks.length / TRAIN_EVAL_TASKS));
  return tasks.filter((_, i) => i % step === 0).slice(0, TRAIN_EVAL_TASKS);
}

/** pass@k on the held-out split (also PPO's periodic evaluation, with the same seed). */
export function evalHeldout(ctx: RunContext, policy: Policy, onProgress?: (fraction: number) => void): Promise<EvalResult> {
  const { cfg, seed } = ctx;
  return evaluate(
    policy,
    ctx.tok,
    ctx.set.heldout,
    cfg.eval,
    ctx.scorer,
    cfg.reward,
    (seed * 17 + 1) >>> 0,
    undefined,
    onProgress,
    ctx.format,
  );
}

/** Held-out pass@k, then pass@1 on the train and rl subsets, in that order; progress weighs each by its tasks. */
export async function evalBoth(
  ctx: RunContext,
  policy: Policy,
  onProgress?: (fraction: number) => void,
): Promise<{ held: EvalResult; train: EvalResult; rl: EvalResult }> {
  const { cfg, seed } = ctx;
  const sizes = [ctx.set.heldout.length, ctx.trainEval.length, ctx.rlEval.length];
  const total = sizes.reduce((a, b) => a + b, 0);
  const part = (i: number) =>
    onProgress && ((f: number) => onProgress((sizes.slice(0, i).reduce((a, b) => a + b, 0) + f * sizes[i]!) / total));
  const held = await evalHeldout(ctx, policy, part(0));
  const one = { ...cfg.eval, k: [1] };
  const train = await evaluate(
    policy,
    ctx.tok,
    ctx.trainEval,
    one,
    ctx.scorer,
    cfg.reward,
    (seed * 17 + 2) >>> 0,
    undefined,
    part(1),
    ctx.format,
  );
  const rl = await evaluate(
    policy,
    ctx.tok,
    ctx.rlEval,
    one,
    ctx.scorer,
    cfg.reward,
    (seed * 17 + 3) >>> 0,
    undefined,
    part(2),
    ctx.format,
  );
  return { held, train, rl };
}

export function stageEval(r: { held: EvalResult; train: EvalResult; rl: EvalResult }): StageEval {
  return {
    heldout_pass1: r.held.passAtK['pass@1']!,
    train_pass1: r.train.passAtK['pass@1']!,
    rl_tasks_pass1: r.rl.passAtK['pass@1']!,
    heldout_passk: r.held.passAtK,
    heldout_by_family: r.held.byFamily,
  };
}

/**
 * Progress of a phase that is not done until its stage says so: `emit(f)` at most once a percent,
 * with the share held below 1.
 */
export function perPercent(emit: (fraction: number) => void): (fraction: number) => void {
  let last = -1;
  return (f) => {
    if (Math.floor(f * 100) === last) return;
    last = Math.floor(f * 100);
    emit(Math.min(f, 0.999));
  };
}

/** A stage's evaluation of its policy (evalBoth, summarised), its progress emitted as `phase`. */
export async function evaluateStage(ctx: RunContext, policy: Policy, phase: 'sft-eval' | 'eval', what: string): Promise<StageEval> {
  const r = await evalBoth(
    ctx,
    policy,
    perPercent((f) => ctx.emit(phase, f, f < SAMPLING_SHARE / 3 ? `${what}: sampling` : `${what}: sampling and scoring`)),
  );
  return stageEval(r);
}

/** A trained reward model's line in a summary: held-out pairwise accuracy, the step kept, and what it ranks against untrained. */
export function rmSummaryText(rm: Exclude<Summary['rm'], { skipped: string } | null>): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const start =
    rm.val_start_pairwise_accuracy === undefined || rm.best_step === 0 ? '' : `, ${pct(rm.val_start_pairwise_accuracy)} before training`;
  const kept =
    rm.best_step === undefined
      ? ''
      : ` (${rm.best_step === 0 ? 'the untrained model' : `step ${rm.best_step}`} kept: validation ${pct(rm.val_pairwise_accuracy!)}${start})`;
  const b = rm.heldout_baselines;
  const untrained = b
    ? `; untrained: the policy's own likelihood ${pct(b.policy_mean_logp)}, the longer first ${pct(b.longer)}, the shorter first ${pct(b.shorter)}`
    : '';
  return `held-out pairwise accuracy ${pct(rm.heldout_pairwise_accuracy)} over ${rm.heldout_pairs} pairs${kept}${untrained}`;
}

/** The last stage: summary.json (a rerun of the finished run returns it), state.json, the closing event. */
export async function writeSummary(ctx: RunContext, sft: SftSummary, rm: RmJson | null, rl: StageEval): Promise<Summary> {
  const { cfg, seed, store } = ctx;
  const summary: Summary = {
    preset: cfg.preset,
    seed,
    backend: ctx.backend,
    sft,
    rm: !rm
      ? null
      : 'skipped' in rm
        ? { skipped: rm.skipped }
        : {
            heldout_pairwise_accuracy: rm.heldoutAccuracy,
            train_pairwise_accuracy: rm.trainAccuracy,
            heldout_pairs: rm.heldoutPairs,
            ...(rm.bestStep === undefined ? {} : { best_step: rm.bestStep, val_pairwise_accuracy: rm.valAccuracy! }),
            ...(rm.valStartAccuracy === undefined ? {} : { val_start_pairwise_accuracy: rm.valStartAccuracy }),
            ...(rm.baselines
              ? {
                  heldout_baselines: {
                    policy_mean_logp: rm.baselines.policyMeanLogp,
                    longer: rm.baselines.longer,
                    shorter: rm.baselines.shorter,
                  },
                }
              : {}),
          },
    rl: { ...rl, iterations: cfg.rl.iterations, algo: cfg.rl.algo },
    minutes: ctx.elapsed() / 60000,
    explore: cfg.explore,
    prompt_format: ctx.format.kind,
  };
  await writeJson(store, 'summary.json', summary);
  await ctx.saveState();
  ctx.emit('done', 1, `held-out pass@1: SFT ${summary.sft.heldout_pass1.toFixed(3)} -> RL ${summary.rl.heldout_pass1.toFixed(3)}`);
  return summary;
}
