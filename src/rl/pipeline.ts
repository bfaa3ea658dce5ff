/**
 * The staged pipeline, the same code headless (`coderl train`) and in the app:
 *   tasks + tokenizer -> SFT (early-stopped) -> reward model -> PPO / GRPO -> evaluation.
 * Everything a run makes goes to a RunDir: config.json, tasks/*.jsonl, tokenizer.json,
 * metrics.jsonl (one JSON object per line, `stage` first), rollouts/iter-NNNN.jsonl,
 * checkpoints (sft.ckpt, rm.ckpt, policy.ckpt with its optimizer state), and summary.json.
 * Each stage is a module of stages/ that owns its files; the models are Policies made by the
 * caller's PolicyFactory (src/policy), so the stages do not know which model they train.
 *
 * Exploration switches shape the PPO rollouts only: the reward model's samples and every
 * evaluation sample the policy as it is, so the switches' effects are measured on equal terms.
 *
 * Resumable: each finished stage leaves its checkpoint and result, which a rerun loads instead
 * of redoing the stage; SFT resumes from its last validation (sft-progress.json), PPO after the
 * last finished iteration (at most the iteration in flight is lost). Seeds are derived from
 * (seed, stage, iteration), so a resumed run samples what the uninterrupted run would have.
 */
import { openRun, type PipelineOptions } from './stages/context';
import { writeSummary, type Summary } from './stages/evaluation';
import { rewardModelStage } from './stages/reward-model';
import { rlStage } from './stages/rl';
import { checkRunDir, setup } from './stages/setup';
import { sftStage } from './stages/sft';

export { StoppedError, type Phase, type PipelineEvent, type PipelineOptions } from './stages/context';
export { TRAIN_EVAL_TASKS, type StageEval, type Summary } from './stages/evaluation';
export { configDiff } from './stages/setup';

export async function runPipeline(o: PipelineOptions): Promise<Summary> {
  const run = await openRun(o);
  const finished = await checkRunDir(run);
  if (finished) return finished;
  const ctx = await setup(run);
  const sft = await sftStage(ctx);
  await ctx.pauseOrStop();
  const rm = await rewardModelStage(ctx, sft);
  await ctx.pauseOrStop();
  const rl = await rlStage(ctx, sft, rm);
  return writeSummary(ctx, sft.summary, rm.json, rl);
}
