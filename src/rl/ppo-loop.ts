/**
 * Stage 3, one PPO (or GRPO) iteration: sample rollouts for a slice of the RL tasks, score them
 * (sandboxed tests, static analysis, AST validity, reward model), optionally give failing
 * rollouts a second, error-driven repair turn, compute per-token KL penalties, advantages and
 * returns, then several epochs of minibatch policy-gradient steps with early stopping at a
 * target KL. Returns the iteration's metrics (TRL / CleanRL names) and its rollouts.
 */
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import type { PolicyBackend } from '../model/backend';
import type { RewardComponent } from '../reward/reward';
import type { ScoreRecord } from '../sandbox/score';
import type { TextTokenizer } from '../tokenizer/types';
import type { Task } from '../tasks/types';
import { Rng, shuffle } from '../util/random';
import type { RlConfig } from './config';
import { type Sequence } from './data';
import { actionCount, episodeBatches, scoreActions, type Episode } from './episodes';
import { explainedVariance, gae, groupAdvantages, groupStdStats, meanStd, tokenRewards, whiten, type KlController } from './advantages';
import { rewardComponentKey } from './metric-names';
import { rmScores } from './reward-model';
import type { ExploreHook } from './explore-hook';
import { sampleTasks, type Sample } from './sample';
import { commentRepairPrompt, completionFormat, type PromptFormat } from './prompt-format';
import { scoreRollouts, type Scorer } from './scorer';

export interface PpoContext {
  policy: PolicyBackend;
  /** the frozen SFT model */
  ref: PolicyBackend;
  rm: { backend: PolicyBackend; mean: number; std: number; weight: number } | null;
  tok: TextTokenizer;
  scorer: Scorer;
  cfg: RlConfig;
  seed: number;
  tasks: readonly Task[];
  explore?: ExploreHook;
  /** how task prompts and repair turns reach the model (prompt-format.ts); default plain completion */
  format?: PromptFormat;
}

/** One rollout as stored in the run directory and shown in the rollout browser. */
export interface RolloutRecord {
  iteration: number;
  task_id: string;
  /** index of its prompt group in the iteration */
  group: number;
  /** 1: first attempt; 2: error-driven repair of a failed attempt */
  turn: 1 | 2;
  /** the program's start: the program scored is prompt + completion */
  prompt: string;
  /** what the model read, when it is not the prompt itself: the chat template's conversation (prompt-format.ts) */
  model_input?: string;
  completion: string;
  /** per action: the token's text, ids, old log-prob, the policy's entropy there, reference log-prob, value, advantage, return */
  tokens: string[];
  ids: number[];
  logprobs: number[];
  entropies: number[];
  ref_logprobs: number[];
  values: number[];
  advantages: number[];
  returns: number[];
  /** advantages before whitening */
  raw_advantages: number[];
  /** the sequence's score before the KL penalty (reward breakdown total) */
  score: number;
  reward: { total: number; components: RewardComponent[] };
  passed: boolean;
  verdict: string;
  tests_passed: number;
  tests_total: number;
  tests: ScoreRecord['tests'];
  message?: string;
  ast_valid?: boolean;
  finish: string;
}

export type Metrics = Record<string, number | string[]>;

/** The RL tasks for iteration `it`: a seeded pass over the tasks per epoch, `n` at a time. */
export function iterationTasks(tasks: readonly Task[], it: number, n: number, seed: number): Task[] {
  if (!tasks.length) throw new Error('PPO: the RL split is empty');
  const orders = new Map<number, number[]>(); // epoch -> its order of the tasks
  const out: Task[] = [];
  for (let k = 0; k < n; k++) {
    const flat = it * n + k;
    const epoch = Math.floor(flat / tasks.length);
    let order = orders.get(epoch);
    if (!order)
      orders.set(
        epoch,
        (order = shuffle(
          tasks.map((_, i) => i),
          new Rng((seed * 1000003 + epoch) >>> 0),
        )),
      );
    out.push(tasks[order[flat % tasks.length]!]!);
  }
  return out;
}

/** What a repair turn tells the model of a failed attempt: the first failing test, or the verdict and its message. */
export function repairError(record: ScoreRecord): string {
  const failing = record.tests.find((t) => t.status !== 'passed');
  return record.verdict === 'failed' && failing
    ? `failed: ${failing.source}`
    : `${record.verdict}: ${record.message ?? failing?.message ?? ''}`;
}

/** The completion format's second turn of error-driven repair (prompt-format.ts commentRepairPrompt). */
export function repairPrompt(task: Task, completion: string, record: ScoreRecord): string {
  return commentRepairPrompt(task.prompt, completion, repairError(record));
}

interface Scored {
  sample: Sample;
  record: ScoreRecord;
  score: number;
  components: RewardComponent[];
  turn: 1 | 2;
}

async function scoreSamples(ctx: PpoContext, samples: Sample[], turn: 1 | 2): Promise<Scored[]> {
  const records = await scoreRollouts(ctx.scorer, samples, ctx.cfg.reward);
  let rm: number[] | null = null;
  if (ctx.rm) rm = await rmScores(ctx.rm.backend, samples.map(toSequence), ctx.tok.padId, ctx.cfg.rm);
  return samples.map((sample, i) => {
    const record = records[i]!;
    const components = [...record.reward!.components];
    if (ctx.rm && rm) {
      const raw = (rm[i]! - ctx.rm.mean) / (ctx.rm.std || 1);
      components.push({
        name: 'reward_model',
        raw,
        weight: ctx.rm.weight,
        sign: 1,
        contribution: ctx.rm.weight * raw,
        detail: `reward-model score ${rm[i]!.toFixed(3)}, standardised`,
      });
    }
    return { sample, record, score: components.reduce((a, c) => a + c.contribution, 0), components, turn };
  });
}

export function toSequence(s: Pick<Sample, 'prompt' | 'tokens'>): Sequence {
  return { ids: [...s.prompt, ...s.tokens], promptLength: s.prompt.length };
}

export interface IterationOutput {
  metrics: Metrics;
  rollouts: RolloutRecord[];
}

export async function ppoIteration(ctx: PpoContext, it: number, kl: KlController): Promise<IterationOutput> {
  const { cfg, tok, policy } = ctx;
  const format = ctx.format ?? completionFormat(tok);
  const rl = cfg.rl;
  const invTemp = 1 / rl.temperature;
  const t0 = performance.now();

  // 1. rollouts
  const tasks = iterationTasks(ctx.tasks, it, rl.promptsPerIteration, ctx.seed);
  const sampleOpts = {
    samplesPerTask: rl.samplesPerPrompt,
    temperature: rl.temperature,
    maxNewTokens: rl.maxNewTokens,
    seed: (ctx.seed * 65537 + it) >>> 0,
    constrain: ctx.explore?.constrain,
    syntax: cfg.explore.syntax ? ctx.scorer.analyzer.syntax : null,
    format,
  };
  const first = (await sampleTasks(policy, tok, tasks, sampleOpts)).filter((s) => s.tokens.length > 0);
  const t1 = performance.now();

  // 2. scoring (and the repair turn)
  const scored = await scoreSamples(ctx, first, 1);
  let repairTime = 0;
  if (cfg.explore.repair) {
    const r0 = performance.now();
    const failed = scored.filter((s) => !s.record.passed);
    if (failed.length) {
      // the repaired program is turn.prompt + completion; the model reads turn.ids (the format's repair turn)
      const turns = failed.map((f) =>
        format.repair(f.sample.task.prompt, f.sample.task.language, f.sample.completion, repairError(f.record)),
      );
      const fits = turns.map((t, i) => ({ t, i })).filter(({ t }) => t.ids.length + rl.maxNewTokens <= policy.config.contextLength);
      const second = await sampleTasks(
        policy,
        tok,
        fits.map(({ t, i }) => ({ ...failed[i]!.sample.task, prompt: t.prompt })),
        { ...sampleOpts, samplesPerTask: 1, seed: sampleOpts.seed ^ 0x7e9a1, promptIds: (k) => fits[k]!.t.ids },
      );
      second.forEach((s, k) => (s.group = failed[fits[k]!.i]!.sample.group));
      scored.push(
        ...(await scoreSamples(
          ctx,
          second.filter((s) => s.tokens.length > 0),
          2,
        )),
      );
    }
    repairTime = performance.now() - r0;
  }
  const t2 = performance.now();

  // 3. old log-probs and values, reference log-probs, advantages
  const seqs = scored.map((s) => toSequence(s.sample));
  const [old, ref] = [
    await scoreActions(policy, seqs, tok.padId, invTemp, { entropy: true }),
    await scoreActions(ctx.ref, seqs, tok.padId, invTemp),
  ];
  const episodes: Episode[] = [];
  const klPerSeq: number[] = [];
  const grpo = rl.algo === 'grpo';
  const groupAdv = grpo
    ? groupAdvantages(
        scored.map((s) => s.score),
        scored.map((s) => s.sample.group * 2 + s.turn - 1),
        rl.groupStd,
      )
    : null;
  scored.forEach((s, i) => {
    const n = actionCount(seqs[i]!);
    const { rewards, kl: klTok } = tokenRewards(s.score, old.logp[i]!, ref.logp[i]!, grpo ? 0 : kl.coef);
    klPerSeq.push(klTok.reduce((a, b) => a + b, 0));
    let advantages: Float64Array;
    let returns: Float64Array;
    if (groupAdv) {
      advantages = new Float64Array(n).fill(groupAdv[i]!);
      returns = new Float64Array(n).fill(s.score);
    } else {
      ({ advantages, returns } = gae(rewards, old.values[i]!, rl.gamma, rl.lambda));
    }
    episodes.push({ seq: seqs[i]!, oldLogp: old.logp[i]!, values: old.values[i]!, refLogp: ref.logp[i]!, advantages, returns });
  });
  const rawAdvantages = episodes.map((e) => Float64Array.from(e.advantages));
  if (rl.whiten && !grpo) whiten(episodes.map((e) => e.advantages));

  // 4. optimisation: epochs of shuffled minibatches, early stop at the target KL
  const loss: RlLossConfig = {
    clip: rl.clip,
    vclip: rl.vclip,
    vfCoef: grpo ? 0 : rl.vfCoef,
    entCoef: rl.entCoef,
    klCoef: grpo ? kl.coef : 0,
    invTemp,
  };
  const rng = new Rng((ctx.seed * 31337 + it) >>> 0);
  const acc = { tokens: 0, policyLoss: 0, valueLoss: 0, entropy: 0, kl: 0, approxKl: 0, clipped: 0, gradNorm: 0, steps: 0 };
  let epochsRun = 0;
  let stoppedAtKl = false;
  for (let e = 0; e < rl.epochs && !stoppedAtKl; e++) {
    const order = shuffle(
      episodes.map((_, i) => i),
      rng,
    );
    for (let m = 0; m < order.length; m += rl.minibatch) {
      const mb = order.slice(m, m + rl.minibatch).map((i) => episodes[i]!);
      const out = await policy.rlStep(episodeBatches(mb, policy, tok.padId), loss);
      const s = out.sums;
      for (const k of ['tokens', 'policyLoss', 'valueLoss', 'entropy', 'kl', 'approxKl', 'clipped'] as const) acc[k] += s[k];
      acc.gradNorm += out.gradNorm;
      acc.steps++;
      if (rl.targetKl > 0 && s.approxKl / s.tokens > 1.5 * rl.targetKl) {
        stoppedAtKl = true;
        break;
      }
    }
    epochsRun++;
  }
  const t3 = performance.now();

  // 5. metrics
  const meanKl = klPerSeq.reduce((a, b) => a + b, 0) / Math.max(1, klPerSeq.length);
  const coefUsed = kl.coef;
  kl.update(meanKl, scored.length);
  const firstTurn = scored.filter((s) => s.turn === 1);
  const repairs = scored.filter((s) => s.turn === 2);
  const scores = meanStd(firstTurn.map((s) => s.score));
  const groupStats = groupStdStats(firstTurn.map((s) => ({ group: s.sample.group, score: s.score })));
  const lengths = firstTurn.map((s) => s.sample.tokens.length);
  const metrics: Metrics = {
    iteration: it,
    // metric-names.ts: TRL's keys where we compute what TRL computes, CleanRL's or our own otherwise
    reward: scores.mean,
    reward_std: groupStats.meanStd,
    frac_reward_zero_std: groupStats.fracZero,
    'env/reward_std': scores.std,
    'env/pass_rate': firstTurn.filter((s) => s.record.passed).length / Math.max(1, firstTurn.length),
    'env/ast_valid_rate': firstTurn.filter((s) => s.record.ast?.valid).length / Math.max(1, firstTurn.length),
    'completions/min_length': lengths.length ? Math.min(...lengths) : 0,
    'completions/max_length': lengths.length ? Math.max(...lengths) : 0,
    'completions/clipped_ratio': firstTurn.filter((s) => s.sample.finish === 'length').length / Math.max(1, firstTurn.length),
  };
  const names = [...new Set(firstTurn.flatMap((s) => s.components.map((c) => c.name)))];
  for (const name of names) {
    const vals = firstTurn.map((s) => s.components.find((c) => c.name === name)?.contribution ?? 0);
    const ms = meanStd(vals);
    metrics[rewardComponentKey(name, 'mean')] = ms.mean;
    metrics[rewardComponentKey(name, 'std')] = ms.std;
  }
  if (ctx.explore) Object.assign(metrics, ctx.explore.metrics());
  if (cfg.explore.syntax)
    metrics['explore/syntax_rejections_per_rollout'] =
      scored.reduce((a, s) => a + s.sample.syntaxRejections, 0) / Math.max(1, scored.length);
  if (cfg.explore.repair) {
    metrics['repair/attempts'] = repairs.length;
    metrics['repair/success_rate'] = repairs.length ? repairs.filter((s) => s.record.passed).length / repairs.length : 0;
  }
  const allValues = episodes.flatMap((e) => Array.from(e.values));
  const allReturns = episodes.flatMap((e) => Array.from(e.returns));
  const actions = episodes.reduce((a, e) => a + actionCount(e.seq), 0);
  Object.assign(metrics, {
    'objective/kl': meanKl,
    'objective/kl_coef': coefUsed,
    kl: acc.kl / acc.tokens,
    'policy/entropy_avg': acc.entropy / acc.tokens,
    'losses/approx_kl': acc.approxKl / acc.tokens,
    'losses/clipfrac': acc.clipped / acc.tokens,
    'loss/policy_avg': acc.policyLoss / acc.tokens,
    'loss/value_avg': acc.valueLoss / acc.tokens,
    grad_norm: acc.gradNorm / Math.max(1, acc.steps),
    'losses/explained_variance': grpo ? NaN : explainedVariance(allValues, allReturns),
    'completions/mean_length': actions / Math.max(1, episodes.length),
    'ppo/epochs_run': epochsRun,
    'ppo/early_stopped': stoppedAtKl ? 1 : 0,
    'time/rollout_s': (t1 - t0) / 1000,
    'time/scoring_s': (t2 - t1 - repairTime) / 1000,
    'time/repair_s': repairTime / 1000,
    'time/update_s': (t3 - t2) / 1000,
    'time/iteration_s': (t3 - t0) / 1000,
    'tokens/per_s': actions / ((t1 - t0 + repairTime) / 1000),
  });

  const rollouts: RolloutRecord[] = scored.map((s, i) => ({
    iteration: it,
    task_id: s.sample.task.task_id,
    group: s.sample.group,
    turn: s.turn,
    prompt: s.sample.task.prompt,
    ...(format.kind === 'chat' ? { model_input: tok.decode(s.sample.prompt) } : {}),
    completion: s.sample.completion,
    ids: s.sample.tokens,
    tokens: s.sample.tokens.map((id) => tok.decode([id])),
    logprobs: Array.from(episodes[i]!.oldLogp),
    entropies: Array.from(old.entropy[i]!),
    ref_logprobs: Array.from(episodes[i]!.refLogp),
    values: Array.from(episodes[i]!.values),
    advantages: Array.from(episodes[i]!.advantages),
    returns: Array.from(episodes[i]!.returns),
    raw_advantages: Array.from(rawAdvantages[i]!),
    score: s.score,
    reward: { total: s.score, components: s.components },
    passed: s.record.passed,
    verdict: s.record.verdict,
    tests_passed: s.record.tests_passed,
    tests_total: s.record.tests_total,
    tests: s.record.tests,
    ...(s.record.message !== undefined ? { message: s.record.message } : {}),
    ...(s.record.ast ? { ast_valid: s.record.ast.valid } : {}),
    finish: s.sample.finish,
  }));
  return { metrics, rollouts };
}
