/**
 * Stage 2, the reward model (rl/reward-model.ts trainRewardModel), when cfg.rm.enabled: the SFT
 * policy samples the rl tasks and the train subset, the sandbox labels the samples, and a copy of
 * the SFT policy learns to rank them. Its files: rm.json (its accuracies, or why it was skipped:
 * no pairs to rank, and PPO then runs without it) and rm.ckpt; a rerun loads them.
 */
import { DEFAULT_OPTIM } from '../../policy';
import type { Task } from '../../tasks/types';
import { toSequence } from '../ppo-loop';
import { NoPairsError, trainRewardModel, type LabelledSample, type RmBaselines, type RmResult } from '../reward-model';
import { readJson, writeJson } from '../run-dir';
import { sampleTasks } from '../sample';
import { sampleScoreProgress } from '../evaluate';
import { perPercent } from './evaluation';
import { scoreRollouts } from '../scorer';
import type { RunContext } from './context';
import type { SftStageResult } from './sft';

/** rm.json: the trained model's result without its parameters (baselines absent in files written before they were measured), or why it was skipped. */
export type RmJson = (Omit<RmResult, 'params' | 'baselines'> & { baselines?: RmBaselines }) | { skipped: string };

/** What the reward model hands on to RL: rm.json (null when disabled) and its parameters (null without a trained model). */
export interface RmStageResult {
  json: RmJson | null;
  params: Float32Array | null;
}

export async function rewardModelStage(ctx: RunContext, sft: SftStageResult): Promise<RmStageResult> {
  const { cfg, store, spec, policies } = ctx;
  if (!cfg.rm.enabled) return { json: null, params: null };
  let json = await readJson<RmJson>(store, 'rm.json');
  let params: Float32Array | null = null;
  const ckpt = json && !('skipped' in json) ? await store.read('rm.ckpt') : null;
  if (json && 'skipped' in json) {
    // trained before and found nothing to rank: PPO runs without the reward model
  } else if (json && ckpt) {
    params = policies.readCheckpoint(spec, ckpt).params;
  } else {
    const samples = await labelledSamples(ctx, sft);
    const optim = { ...DEFAULT_OPTIM, lr: cfg.rm.lr, weightDecay: 0, loraPlusRatio: cfg.lora?.lrRatio ?? 1 };
    const rm = policies.fromParams(spec, sft.params, optim);
    const reloaded: (typeof rm)[] = []; // early stopping's best step, when it is not the last (disposed with rm)
    try {
      const r = await trainRewardModel(rm, samples, cfg.rm, ctx.seed, ctx.tok.padId, {
        onPoint: async (p) => {
          const val = p.valAccuracy === undefined ? '' : `, validation pairwise accuracy ${(100 * p.valAccuracy).toFixed(1)}%`;
          ctx.emit('rm', p.step / cfg.rm.steps, `step ${p.step} loss ${p.loss.toFixed(3)}${val}`);
          await ctx.metric('rm', {
            step: p.step,
            'loss/rm': p.loss,
            ...(p.valAccuracy === undefined ? {} : { 'rm/val_pairwise_accuracy': p.valAccuracy }),
          });
        },
        reload: (p) => {
          const best = policies.fromParams(spec, p, optim);
          reloaded.push(best);
          return best;
        },
      });
      params = r.params;
      const { params: _p, model, ...rest } = r;
      json = rest;
      await store.write('rm.ckpt', await model.save({ optimizer: false, meta: { stage: 'rm', step: r.bestStep ?? cfg.rm.steps } }));
      await writeJson(store, 'rm.json', json);
      await ctx.metric('rm-eval', {
        'rm/heldout_pairwise_accuracy': r.heldoutAccuracy,
        'rm/train_pairwise_accuracy': r.trainAccuracy,
        'rm/heldout_pairs': r.heldoutPairs,
        'rm/baseline_policy_logp_accuracy': r.baselines.policyMeanLogp,
        'rm/baseline_longer_accuracy': r.baselines.longer,
        'rm/baseline_shorter_accuracy': r.baselines.shorter,
        ...(r.bestStep === undefined
          ? {}
          : {
              'rm/best_step': r.bestStep,
              'rm/val_pairwise_accuracy': r.valAccuracy!,
              'rm/val_start_pairwise_accuracy': r.valStartAccuracy!,
            }),
      });
    } catch (e) {
      if (!(e instanceof NoPairsError)) throw e;
      json = { skipped: e.message };
      await writeJson(store, 'rm.json', json);
      ctx.emit('rm', 1, `${e.message}; PPO runs without the reward model`);
    } finally {
      for (const p of [rm, ...reloaded]) p.dispose();
    }
  }
  await ctx.saveState();
  return { json, params };
}

/** The SFT policy's samples of the rl tasks and the train subset, labelled by the sandbox (tests passed, all passed). */
async function labelledSamples(ctx: RunContext, sft: SftStageResult): Promise<LabelledSample[]> {
  const { cfg, seed } = ctx;
  ctx.emit('rm-samples', 0, 'sampling the SFT policy for the reward model');
  const policy = ctx.policies.fromParams(ctx.spec, sft.params, DEFAULT_OPTIM);
  let message = '';
  const progress = sampleScoreProgress(perPercent((f) => ctx.emit('rm-samples', f, message)));
  try {
    const tasks: Task[] = [...ctx.set.rl, ...ctx.trainEval];
    const s = await sampleTasks(policy, ctx.tok, tasks, {
      samplesPerTask: cfg.rm.samplesPerTask,
      temperature: cfg.rl.temperature,
      maxNewTokens: cfg.rl.maxNewTokens,
      seed: (seed * 23 + 5) >>> 0,
      format: ctx.format,
      onProgress: (done, total) => {
        message = `sampled ${done} of ${total}`;
        progress.sampled(done, total);
      },
    });
    const usable = s.filter((x) => x.tokens.length > 0);
    const recs = await scoreRollouts(ctx.scorer, usable, cfg.reward, (done, total) => {
      message = `scored ${done} of ${total}`;
      progress.scored(done, total);
    });
    return usable.map((x, i) => ({
      task_id: x.task.task_id,
      seq: toSequence(x),
      label: recs[i]!.tests_passed / Math.max(1, recs[i]!.tests_total) + (recs[i]!.passed ? 1 : 0),
    }));
  } finally {
    policy.dispose();
  }
}
