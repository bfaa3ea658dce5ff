/**
 * The run's settings as OpenRLHF's train_ppo_ray flags, checked against OpenRLHF/OpenRLHF at
 * 3c3be62 (2026-08-13, 0.11.0, whose flags are namespaced: --actor.adam.lr, --rollout.batch_size,
 * ...): openrlhf/cli/train_ppo_ray.py, with the advantage estimators of
 * openrlhf/trainer/ppo_utils/experience_maker.py.
 */
import {
  commonNotes,
  grpoUnusedNotes,
  ppoUnusedNotes,
  LAB_RL_OPTIM,
  sameAsTrainingNote,
  type ExportRun,
  type Mapped,
  type Note,
  type TrainerMapping,
} from './mapping';

const CLI = 'OpenRLHF/OpenRLHF openrlhf/cli/train_ppo_ray.py';
const ADV = 'OpenRLHF/OpenRLHF openrlhf/trainer/ppo_utils/experience_maker.py';
const STEPS = 'OpenRLHF/OpenRLHF openrlhf/trainer/ppo_trainer.py';

/** The AdamW, scheduler and clipping flags of the actor or the critic, from the lab's RL optimizer. */
function optimFlags(who: 'actor' | 'critic', lr: number, gradClip: number): Mapped[] {
  return [
    { key: `${who}.adam.lr`, value: lr, from: ['rl.lr'], source: CLI },
    { key: `${who}.adam.betas`, value: [LAB_RL_OPTIM.beta1, LAB_RL_OPTIM.beta2], from: ['code:rl optimizer betas'], source: CLI },
    { key: `${who}.adam.eps`, value: LAB_RL_OPTIM.eps, from: ['code:rl optimizer eps'], source: CLI },
    { key: `${who}.adam.weight_decay`, value: LAB_RL_OPTIM.weightDecay, from: ['code:rl optimizer weight decay'], source: CLI },
    { key: `${who}.lr_scheduler`, value: 'constant', from: ['code:rl constant learning rate'], source: CLI },
    { key: `${who}.lr_warmup_ratio`, value: 0, from: ['code:rl constant learning rate'], source: CLI },
    { key: `${who}.max_norm`, value: gradClip, from: ['rl.gradClip'], source: CLI },
  ];
}

/** The advantage estimator: PPO's GAE, GRPO's group_norm, or Dr. GRPO's centred-only dr_grpo. */
function estimator(run: ExportRun): string {
  const rl = run.cfg.rl;
  return rl.algo === 'ppo' ? 'gae' : rl.groupStd ? 'group_norm' : 'dr_grpo';
}

export function openrlhfMapping(run: ExportRun): TrainerMapping {
  const { cfg, seed } = run;
  const rl = cfg.rl;
  const grpo = rl.algo === 'grpo';
  const episodes = Math.max(1, Math.ceil((rl.iterations * rl.promptsPerIteration) / run.rl.length));
  const m: Mapped[] = [
    ...optimFlags('actor', rl.lr, rl.gradClip),
    { key: 'rollout.batch_size', value: rl.promptsPerIteration, from: ['rl.promptsPerIteration'], source: CLI, how: 'prompts per rollout' },
    { key: 'rollout.n_samples_per_prompt', value: rl.samplesPerPrompt, from: ['rl.samplesPerPrompt'], source: CLI },
    { key: 'rollout.temperature', value: rl.temperature, from: ['rl.temperature'], source: CLI },
    { key: 'rollout.max_new_tokens', value: rl.maxNewTokens, from: ['rl.maxNewTokens'], source: CLI },
    {
      key: 'data.max_len',
      value: cfg.model.contextLength,
      from: ['model.contextLength'],
      source: CLI,
      how: 'prompt and completion together',
    },
    { key: 'train.batch_size', value: rl.minibatch, from: ['rl.minibatch'], source: CLI, how: 'sequences per optimizer step' },
    { key: 'train.max_epochs', value: rl.epochs, from: ['rl.epochs'], source: CLI },
    {
      key: 'train.num_episodes',
      value: episodes,
      from: ['rl.iterations', 'rl.promptsPerIteration'],
      source: STEPS,
      how: `whole passes over the ${run.rl.length} RL prompts covering rl.iterations x rl.promptsPerIteration prompts (OpenRLHF has no step limit)`,
    },
    { key: 'train.seed', value: seed, from: ['seed'], source: CLI },
    { key: 'actor.eps_clip', value: rl.clip, from: ['rl.clip'], source: CLI },
    { key: 'actor.entropy_coef', value: rl.entCoef, from: ['rl.entCoef'], source: CLI },
    {
      key: 'algo.advantage.estimator',
      value: estimator(run),
      from: grpo ? ['rl.algo', 'rl.groupStd'] : ['rl.algo'],
      source: ADV,
      how: 'PPO: gae; GRPO: group_norm (divided by the group std) or dr_grpo (centred only, rl.groupStd false)',
    },
    { key: 'algo.kl.init_coef', value: rl.kl.coef, from: ['rl.kl.coef'], source: CLI },
    {
      key: 'algo.kl.estimator',
      value: grpo ? 'k3' : 'k1',
      from: [grpo ? 'code:grpo kl k3' : 'code:ppo kl k1'],
      source: CLI,
      how: grpo ? "the lab's GRPO KL in the loss is k3" : "the lab's PPO KL penalty in the reward is k1 (logp - ref)",
    },
    {
      key: 'algo.kl.use_loss',
      value: grpo && rl.kl.coef > 0,
      from: ['rl.algo', 'rl.kl.coef'],
      source: CLI,
      how: 'GRPO: the KL in the loss; PPO: in the reward',
    },
    { key: 'eval.steps', value: rl.evalEvery, from: ['rl.evalEvery'], source: STEPS, how: 'a step is one rollout batch and its update' },
    { key: 'eval.temperature', value: cfg.eval.temperature, from: ['eval.temperature'], source: CLI },
    { key: 'eval.n_samples_per_prompt', value: cfg.eval.samples, from: ['eval.samples'], source: CLI },
  ];
  if (!grpo) {
    m.push(
      ...optimFlags('critic', rl.lr, rl.gradClip),
      { key: 'critic.value_clip', value: rl.vclip, from: ['rl.vclip'], source: CLI },
      { key: 'algo.advantage.gamma', value: rl.gamma, from: ['rl.gamma'], source: CLI },
      { key: 'algo.advantage.lambd', value: rl.lambda, from: ['rl.lambda'], source: CLI },
    );
    if (rl.kl.adaptive)
      m.push(
        {
          key: 'algo.kl.target',
          value: rl.kl.target,
          from: ['rl.kl.adaptive', 'rl.kl.target'],
          source: CLI,
          how: 'a target makes the coefficient adaptive',
        },
        { key: 'algo.kl.horizon', value: rl.kl.horizon, from: ['rl.kl.horizon'], source: CLI },
      );
  }
  if (cfg.lora) {
    m.push(
      { key: 'ds.lora.rank', value: cfg.lora.rank, from: ['lora.rank'], source: CLI },
      { key: 'ds.lora.alpha', value: cfg.lora.alpha, from: ['lora.alpha'], source: CLI },
      { key: 'ds.lora.target_modules', value: [...(cfg.lora.targets ?? [])], from: ['lora.targets'], source: CLI },
    );
  }
  const notes: Note[] = [...commonNotes(run), sameAsTrainingNote(run, 'eval.maxNewTokens', 'OpenRLHF')];
  if (grpo) {
    notes.push(...grpoUnusedNotes(cfg));
    const why = rl.kl.adaptive
      ? "OpenRLHF's adaptive KL controller drives the reward penalty, not GRPO's in-loss KL"
      : 'a fixed coefficient';
    for (const k of ['adaptive', 'target', 'horizon'] as const)
      notes.push({ lab: `rl.kl.${k}`, value: rl.kl[k], kind: rl.kl.adaptive ? 'unmapped' : 'unused', why });
  } else {
    notes.push(...ppoUnusedNotes(cfg));
    notes.push({
      lab: 'rl.vfCoef',
      value: rl.vfCoef,
      kind: 'unmapped',
      why: "OpenRLHF's critic is a separate model with its own optimizer (from the exported policy's weights, a fresh value head): the value loss has no weight",
    });
    notes.push({
      lab: 'rl.whiten',
      value: rl.whiten,
      kind: rl.whiten ? 'carried' : 'unmapped',
      why: rl.whiten
        ? "OpenRLHF whitens GAE advantages over the batch, as the lab's did"
        : 'OpenRLHF centres GAE advantages always (--algo.advantage.no_std_norm keeps only the centring); the lab did neither',
    });
    if (!rl.kl.adaptive)
      for (const k of ['adaptive', 'target', 'horizon'] as const)
        notes.push({
          lab: `rl.kl.${k}`,
          value: rl.kl[k],
          kind: k === 'adaptive' ? 'carried' : 'unused',
          why: 'a fixed coefficient: no --algo.kl.target',
        });
  }
  if ((rl.iterations * rl.promptsPerIteration) % run.rl.length !== 0)
    notes.push({
      lab: 'rl.iterations',
      value: rl.iterations,
      kind: 'unmapped',
      why: `OpenRLHF trains whole passes over the prompts: ${episodes} pass(es) of ${run.rl.length} prompts are about ${Math.floor((episodes * run.rl.length) / rl.promptsPerIteration)} steps, the run had ${rl.iterations}`,
    });
  return { trainer: 'openrlhf', mapped: m, notes };
}
