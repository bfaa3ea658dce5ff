/**
 * Stage 3, PPO / GRPO (rl/ppo-loop.ts ppoIteration): the policy starts from SFT, the KL penalty
 * is against a frozen reference (the SFT policy, or the caller's, e.g. an imported ONNX model),
 * the reward model's score, when there is one, is a term of the reward. After the last iteration
 * the policy is evaluated as SFT's was. Its files, after each finished iteration:
 *   rollouts/iter-NNNN.jsonl   the iteration's rollouts
 *   policy.ckpt                the policy with its optimizer state
 *   ppo-state.json             the iteration, the KL coefficient, the metrics so far
 * from which a rerun continues after the last finished iteration (at most the one in flight is lost).
 */
import { DEFAULT_OPTIM, type ModelConfig, type OptimConfig, type Policy, type PolicySpec } from '../../policy';
import type { TextTokenizer } from '../../tokenizer/types';
import { KlController } from '../advantages';
import { checkAlarms } from '../alarms';
import { ppoIteration, type Metrics, type PpoContext } from '../ppo-loop';
import { canonicalMetrics } from '../metric-names';
import { readJson, writeJson } from '../run-dir';
import { readMetrics, rolloutFile } from '../run-files';
import { StoppedError, type RunContext } from './context';
import { evalHeldout, evaluateStage, type StageEval } from './evaluation';
import type { RmStageResult } from './reward-model';
import type { SftStageResult } from './sft';

/**
 * ppo-state.json is an iteration's commit point; its metrics line is appended after it. A run
 * stopped between the two (a worker killed mid-append) would resume after the iteration without
 * its line: the lines the history has and metrics.jsonl lacks are appended again, in order.
 */
async function restoreMetricLines(ctx: RunContext, history: readonly Metrics[]): Promise<void> {
  const logged = new Set((await readMetrics(ctx.store)).filter((l) => l.stage === 'ppo').map((l) => l['iteration']));
  for (const m of history) if (!logged.has(m['iteration'])) await ctx.metric('ppo', m);
}

/** ppo-state.json */
interface PpoState {
  /** iterations finished */
  iteration: number;
  klCoef: number;
  history: Metrics[];
}

/** Runs the iterations left, then evaluates the RL policy; returns its evaluation. */
export async function rlStage(ctx: RunContext, sft: SftStageResult, rm: RmStageResult): Promise<StageEval> {
  const { cfg, seed, store, spec, policies } = ctx;
  const rlOptim: OptimConfig = {
    ...DEFAULT_OPTIM,
    lr: cfg.rl.lr,
    gradClip: cfg.rl.gradClip,
    weightDecay: 0,
    loraPlusRatio: cfg.lora?.lrRatio ?? 1,
  };
  let state = await readJson<PpoState>(store, 'ppo-state.json');
  // a run started before the TRL metric names resumes with its history's keys renamed (the alarms read them)
  if (state) state = { ...state, history: state.history.map(canonicalMetrics) };
  const policyCkpt = state ? await store.read('policy.ckpt') : null;
  let policy: Policy;
  if (state && policyCkpt) {
    policy = policies.load(spec, policyCkpt, rlOptim, true);
    await restoreMetricLines(ctx, state.history);
  } else {
    state = { iteration: 0, klCoef: cfg.rl.kl.coef, history: [] };
    policy = policies.fromParams(spec, sft.params, rlOptim);
  }
  let ref: Policy;
  try {
    const given = ctx.options.reference;
    ref = given ? await loadReference(given, spec) : policies.fromParams(spec, sft.params, DEFAULT_OPTIM);
  } catch (e) {
    policy.dispose();
    throw e;
  }
  const rmPolicy = rm.params ? policies.fromParams(spec, rm.params, DEFAULT_OPTIM) : null;
  try {
    const kl = new KlController(state.klCoef, cfg.rl.kl.adaptive, cfg.rl.kl.target, cfg.rl.kl.horizon);
    const ppo: PpoContext = {
      policy,
      ref,
      tok: ctx.tok,
      scorer: ctx.scorer,
      cfg,
      seed,
      tasks: ctx.set.rl,
      explore: ctx.explore,
      format: ctx.format,
      rm:
        rmPolicy && rm.json && !('skipped' in rm.json)
          ? { backend: rmPolicy, mean: rm.json.scoreMean, std: rm.json.scoreStd, weight: cfg.rm.weight }
          : null,
    };
    for (let it = state.iteration; it < cfg.rl.iterations; it++) {
      await ctx.options.gate?.();
      if (ctx.options.shouldStop?.()) break;
      ctx.emit('ppo', it / cfg.rl.iterations, `iteration ${it + 1}/${cfg.rl.iterations}`);
      const { metrics, rollouts } = await ppoIteration(ppo, it, kl);
      ctx.emit(
        'ppo',
        (it + 1) / cfg.rl.iterations,
        `iteration ${it + 1}/${cfg.rl.iterations}: reward ${(metrics['reward'] as number).toFixed(3)}, pass rate ${(metrics['env/pass_rate'] as number).toFixed(3)}`,
      );
      if ((it + 1) % cfg.rl.evalEvery === 0 && it + 1 < cfg.rl.iterations) {
        ctx.emit('ppo', (it + 1) / cfg.rl.iterations, `iteration ${it + 1}/${cfg.rl.iterations}: held-out evaluation`);
        metrics['eval/heldout_pass@1'] = (await evalHeldout(ctx, policy)).passAtK['pass@1']!;
      }
      const history: Metrics[] = [...state.history, metrics];
      metrics.alarms = checkAlarms(history);
      await store.write(rolloutFile(it + 1), rollouts.map((r) => JSON.stringify(r)).join('\n') + '\n');
      await store.write('policy.ckpt', await policy.save({ optimizer: true, meta: { stage: 'ppo', iteration: it + 1 } }));
      state = { iteration: it + 1, klCoef: kl.coef, history };
      await writeJson(store, 'ppo-state.json', state);
      await ctx.metric('ppo', metrics);
      await ctx.saveState();
    }
    if (state.iteration < cfg.rl.iterations) throw new StoppedError();
    ctx.emit('eval', 0, 'evaluating the RL policy');
    const final = await evaluateStage(ctx, policy, 'eval', 'evaluating the RL policy');
    await ctx.metric('rl-eval', { 'eval/heldout_pass@1': final.heldout_pass1, 'eval/train_pass@1': final.train_pass1 });
    ctx.emit('eval', 1, `RL held-out pass@1 ${final.heldout_pass1.toFixed(3)}`);
    return final;
  } finally {
    policy.dispose();
    ref.dispose();
    rmPolicy?.dispose();
  }
}

/** The caller's KL reference, checked to score this run's sequences: same vocabulary, context long enough. */
export async function loadReference(make: (tok: TextTokenizer, model: ModelConfig) => Promise<Policy>, spec: PolicySpec): Promise<Policy> {
  const { config: model, tokenizer: tok } = spec;
  const ref = await make(tok, model);
  const d = ref.describe();
  if (d.vocabSize !== model.vocabSize || d.contextLength < model.contextLength) {
    ref.dispose();
    throw new Error(
      `the KL reference model has vocabulary ${d.vocabSize} and context ${d.contextLength}; the run needs vocabulary ${model.vocabSize} and context >= ${model.contextLength}`,
    );
  }
  return ref;
}
