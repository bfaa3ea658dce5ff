/**
 * Stage 1, SFT (rl/sft.ts runSft): supervised fine-tuning on the train split, early-stopped on
 * the validation loss, then the best checkpoint evaluated. Its files:
 *   sft.json, sft.ckpt           the finished stage (its evaluation, the early-stopped parameters);
 *                                a rerun loads them instead of training again
 *   sft-progress.json            after each validation: where SFT is, with the checkpoints of
 *   sft-resume.ckpt, sft-best.ckpt   that step (the policy with its optimizer state; the best so
 *                                far), from which an interrupted SFT continues (a set that does
 *                                not match is ignored and SFT starts over)
 */
import { DEFAULT_OPTIM, type OptimizerState } from '../../policy';
import { readJson, writeJson } from '../run-dir';
import { runSft, type SftProgress } from '../sft';
import { StoppedError, type RunContext } from './context';
import { evaluateStage, type SftSummary } from './evaluation';

/** What SFT hands on: its summary (sft.json) and the early-stopped parameters (sft.ckpt). */
export interface SftStageResult {
  summary: SftSummary;
  /** (P) the SFT policy's parameters: the reward model, the RL policy and the KL reference start from them */
  params: Float32Array;
}

/** Where an interrupted SFT continues: its progress, the policy's state at that step and the best parameters. */
interface SftResume {
  progress: SftProgress;
  params: Float32Array;
  optimizer: OptimizerState;
  best: Float32Array;
}

export async function sftStage(ctx: RunContext): Promise<SftStageResult> {
  const { cfg, seed, store, spec, policies } = ctx;
  const done = await readJson<SftSummary>(store, 'sft.json');
  const doneCkpt = done ? await store.read('sft.ckpt') : null;
  if (done && doneCkpt) {
    const params = policies.readCheckpoint(spec, doneCkpt).params;
    ctx.emit('sft', 1, 'SFT loaded from the run directory');
    return { summary: done, params };
  }
  const optim = { ...DEFAULT_OPTIM, lr: cfg.sft.lr, weightDecay: cfg.sft.weightDecay };
  const resume = await sftResume(ctx);
  const policy = resume ? policies.fromParams(spec, resume.params, optim, resume.optimizer) : policies.init(spec, seed, optim);
  if (resume) ctx.emit('sft', resume.progress.step / cfg.sft.maxSteps, `SFT resumes at step ${resume.progress.step}`);
  let result: SftStageResult;
  try {
    const r = await runSft(policy, ctx.tok, ctx.set.train, ctx.set.val, cfg.sft, seed, {
      onPoint: async (p) => {
        ctx.emit(
          'sft',
          p.step / cfg.sft.maxSteps,
          `step ${p.step} loss ${p.loss.toFixed(3)}${p.val_loss !== undefined ? ` val ${p.val_loss.toFixed(3)}` : ''}`,
        );
        await ctx.metric('sft', { step: p.step, 'loss/train': p.loss, ...(p.val_loss !== undefined ? { 'loss/val': p.val_loss } : {}) });
      },
      onCheckpoint: async (p, best) => {
        await store.write('sft-resume.ckpt', await policy.save({ optimizer: true, meta: { stage: 'sft-resume', step: p.step } }));
        await store.write(
          'sft-best.ckpt',
          policies.writeCheckpoint(spec, {
            params: best,
            optimizer: null,
            meta: { stage: 'sft-best', step: p.step, best_step: p.bestStep },
          }),
        );
        await writeJson(store, 'sft-progress.json', p);
      },
      resume: resume ? { progress: resume.progress, best: resume.best } : undefined,
      shouldStop: ctx.options.shouldStop,
      gate: ctx.options.gate,
    });
    // stopped mid-stage: a rerun continues from the last validation (metrics.jsonl then holds
    // the SFT steps after it twice, at most evalEvery of them)
    if (r.steps < cfg.sft.maxSteps && !r.stoppedEarly) throw new StoppedError();
    const best = policies.fromParams(spec, r.best, optim);
    try {
      const what = r.stoppedEarly
        ? `evaluating the SFT checkpoint of step ${r.bestStep} (early-stopped)`
        : `evaluating the SFT checkpoint of step ${r.bestStep}`;
      ctx.emit('sft-eval', 0, what);
      const ev = await evaluateStage(ctx, best, 'sft-eval', what);
      const summary: SftSummary = { ...ev, steps: r.steps, best_step: r.bestStep, best_val_loss: r.bestValLoss };
      await store.write(
        'sft.ckpt',
        policies.writeCheckpoint(spec, { params: r.best, optimizer: null, meta: { stage: 'sft', step: r.bestStep } }),
      );
      await writeJson(store, 'sft.json', summary);
      await ctx.metric('sft-eval', { 'eval/heldout_pass@1': ev.heldout_pass1, 'eval/train_pass@1': ev.train_pass1 });
      ctx.emit('sft-eval', 1, `SFT held-out pass@1 ${ev.heldout_pass1.toFixed(3)}`);
      result = { summary, params: r.best };
    } finally {
      best.dispose();
    }
  } finally {
    policy.dispose();
  }
  await ctx.saveState();
  return result;
}

/** sft-progress.json with its two checkpoints of the same step, or null (none, or a set that does not match). */
async function sftResume(ctx: RunContext): Promise<SftResume | null> {
  const { store, spec, policies } = ctx;
  const progress = await readJson<SftProgress>(store, 'sft-progress.json');
  const [resumeBytes, bestBytes] = progress ? [await store.read('sft-resume.ckpt'), await store.read('sft-best.ckpt')] : [null, null];
  const resumeCkpt = resumeBytes ? policies.readCheckpoint(spec, resumeBytes) : null;
  const bestCkpt = bestBytes ? policies.readCheckpoint(spec, bestBytes) : null;
  if (!progress || !resumeCkpt?.optimizer || resumeCkpt.meta.step !== progress.step || bestCkpt?.meta.step !== progress.step) return null;
  return { progress, params: resumeCkpt.params, optimizer: resumeCkpt.optimizer, best: bestCkpt.params };
}
