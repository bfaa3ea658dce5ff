/**
 * The run's settings as veRL's Hydra config (verl.trainer.main_ppo), checked against volcengine/verl
 * at b178a3c (2026-01-29): the keys of verl/trainer/config/ppo_trainer.yaml and the component
 * files it composes (data/legacy_data.yaml, actor/actor.yaml, actor/dp_actor.yaml, optim/fsdp.yaml,
 * rollout/rollout.yaml, critic/critic.yaml, critic/dp_critic.yaml, model/hf_model.yaml).
 */
import {
  commonNotes,
  grpoUnusedNotes,
  ppoUnusedNotes,
  LAB_RL_OPTIM,
  maxPromptTokens,
  sameAsTrainingNote,
  type ExportRun,
  type Mapped,
  type Note,
  type TrainerMapping,
} from './mapping';

const SRC = {
  data: 'volcengine/verl verl/trainer/config/data/legacy_data.yaml',
  actor: 'volcengine/verl verl/trainer/config/actor/actor.yaml',
  dpActor: 'volcengine/verl verl/trainer/config/actor/dp_actor.yaml',
  optim: 'volcengine/verl verl/trainer/config/optim/fsdp.yaml',
  rollout: 'volcengine/verl verl/trainer/config/rollout/rollout.yaml',
  critic: 'volcengine/verl verl/trainer/config/critic/critic.yaml',
  dpCritic: 'volcengine/verl verl/trainer/config/critic/dp_critic.yaml',
  model: 'volcengine/verl verl/trainer/config/model/hf_model.yaml',
  main: 'volcengine/verl verl/trainer/config/ppo_trainer.yaml',
  trainer: 'volcengine/verl verl/trainer/ppo/ray_trainer.py',
} as const;

const ACTOR = 'actor_rollout_ref.actor';
const ROLLOUT = 'actor_rollout_ref.rollout';

/** The optimizer keys of one model (the actor, or the critic), from the lab's RL optimizer. */
function optimKeys(prefix: string, grad: string, lr: number, gradClip: number): Mapped[] {
  return [
    { key: `${prefix}.optim.lr`, value: lr, from: ['rl.lr'], source: SRC.optim },
    {
      key: `${prefix}.optim.betas`,
      value: [LAB_RL_OPTIM.beta1, LAB_RL_OPTIM.beta2],
      from: ['code:rl optimizer betas'],
      source: SRC.optim,
      how: "the lab's RL optimizer (src/rl/stages/rl.ts rlOptim: AdamW betas 0.9, 0.95)",
    },
    { key: `${prefix}.optim.weight_decay`, value: LAB_RL_OPTIM.weightDecay, from: ['code:rl optimizer weight decay'], source: SRC.optim },
    { key: `${prefix}.optim.lr_scheduler_type`, value: 'constant', from: ['code:rl constant learning rate'], source: SRC.optim },
    { key: `${prefix}.optim.lr_warmup_steps_ratio`, value: 0, from: ['code:rl constant learning rate'], source: SRC.optim },
    {
      key: `${prefix}.optim.clip_grad`,
      value: gradClip,
      from: ['rl.gradClip'],
      source: SRC.optim,
      how: 'the new engine workers read this one',
    },
    { key: `${prefix}.grad_clip`, value: gradClip, from: ['rl.gradClip'], source: grad, how: 'the legacy workers read this one' },
  ];
}

export function verlMapping(run: ExportRun): TrainerMapping {
  const { cfg, seed } = run;
  const rl = cfg.rl;
  const grpo = rl.algo === 'grpo';
  const kl = rl.kl.coef > 0;
  const miniPrompts = Math.max(1, Math.floor(rl.minibatch / rl.samplesPerPrompt));
  const batchesPerEpoch = Math.floor(run.rl.length / rl.promptsPerIteration);
  const m: Mapped[] = [
    { key: 'data.train_batch_size', value: rl.promptsPerIteration, from: ['rl.promptsPerIteration'], source: SRC.data },
    {
      key: 'data.max_prompt_length',
      value: maxPromptTokens(cfg),
      from: ['model.contextLength', 'rl.maxNewTokens', 'eval.maxNewTokens'],
      source: SRC.data,
      how: 'the context less the larger of rl.maxNewTokens and eval.maxNewTokens, as the lab fitted its prompts',
    },
    { key: 'data.max_response_length', value: rl.maxNewTokens, from: ['rl.maxNewTokens'], source: SRC.data },
    { key: 'data.seed', value: seed, from: ['seed'], source: SRC.data },
    { key: `${ROLLOUT}.n`, value: rl.samplesPerPrompt, from: ['rl.samplesPerPrompt'], source: SRC.rollout },
    { key: `${ROLLOUT}.temperature`, value: rl.temperature, from: ['rl.temperature'], source: SRC.rollout },
    { key: `${ROLLOUT}.val_kwargs.n`, value: cfg.eval.samples, from: ['eval.samples'], source: SRC.rollout },
    { key: `${ROLLOUT}.val_kwargs.temperature`, value: cfg.eval.temperature, from: ['eval.temperature'], source: SRC.rollout },
    {
      key: `${ROLLOUT}.val_kwargs.do_sample`,
      value: cfg.eval.temperature > 0,
      from: ['eval.temperature'],
      source: SRC.rollout,
      how: 'sampling unless eval.temperature is 0 (greedy)',
    },
    ...optimKeys(ACTOR, SRC.dpActor, rl.lr, rl.gradClip),
    {
      key: `${ACTOR}.ppo_mini_batch_size`,
      value: miniPrompts,
      from: ['rl.minibatch', 'rl.samplesPerPrompt'],
      source: SRC.actor,
      how: 'veRL counts its mini-batch in prompts and multiplies it by rollout.n (verl/workers/fsdp_workers.py): rl.minibatch / rl.samplesPerPrompt',
    },
    { key: `${ACTOR}.ppo_epochs`, value: rl.epochs, from: ['rl.epochs'], source: SRC.actor },
    {
      key: `${ACTOR}.shuffle`,
      value: true,
      from: ['code:rl epochs shuffled'],
      source: SRC.actor,
      how: 'the lab shuffles the rollouts every epoch (src/rl/ppo-loop.ts)',
    },
    ...(['clip_ratio', 'clip_ratio_low', 'clip_ratio_high'] as const).map((k): Mapped => ({
      key: `${ACTOR}.${k}`,
      value: rl.clip,
      from: ['rl.clip'],
      source: SRC.actor,
      how: 'symmetric: the low and high bounds default to 0.2 on their own',
    })),
    { key: `${ACTOR}.entropy_coeff`, value: rl.entCoef, from: ['rl.entCoef'], source: SRC.actor },
    {
      key: `${ACTOR}.loss_agg_mode`,
      value: 'token-mean',
      from: ['code:loss token mean'],
      source: SRC.actor,
      how: "the lab's loss is a mean over the minibatch's tokens (src/kernels/ppo_loss_ref.ts)",
    },
    {
      key: 'trainer.total_training_steps',
      value: rl.iterations,
      from: ['rl.iterations'],
      source: SRC.main,
      how: 'one step per iteration (rollouts, then the update)',
    },
    {
      key: 'trainer.total_epochs',
      value: Math.max(1, Math.ceil(rl.iterations / Math.max(1, batchesPerEpoch))),
      from: ['rl.iterations', 'rl.promptsPerIteration'],
      source: SRC.trainer,
      how: `passes over the ${run.rl.length} RL prompts enough for rl.iterations steps (total_training_steps stops it)`,
    },
    { key: 'trainer.test_freq', value: rl.evalEvery, from: ['rl.evalEvery'], source: SRC.main },
    {
      key: 'trainer.val_before_train',
      value: true,
      from: ['code:evaluation before RL'],
      source: SRC.main,
      how: 'the lab evaluates the policy before RL too',
    },
  ];
  if (grpo) {
    m.push(
      { key: 'algorithm.adv_estimator', value: 'grpo', from: ['rl.algo'], source: SRC.main, how: 'GRPO: group-relative advantages' },
      {
        key: 'algorithm.norm_adv_by_std_in_grpo',
        value: rl.groupStd,
        from: ['rl.groupStd'],
        source: SRC.main,
        how: rl.groupStd ? 'GRPO: centred and divided by the group std' : 'Dr. GRPO: centred only',
      },
      {
        key: 'algorithm.use_kl_in_reward',
        value: false,
        from: ['rl.algo'],
        source: SRC.main,
        how: "the lab's GRPO puts the KL in the loss",
      },
      { key: `${ACTOR}.use_kl_loss`, value: kl, from: ['rl.kl.coef'], source: SRC.actor, how: 'on when rl.kl.coef > 0' },
      { key: `${ACTOR}.kl_loss_coef`, value: rl.kl.coef, from: ['rl.kl.coef'], source: SRC.actor },
      {
        key: `${ACTOR}.kl_loss_type`,
        value: 'low_var_kl',
        from: ['code:grpo kl k3'],
        source: SRC.actor,
        how: "the k3 estimator, as the lab's in-loss KL (veRL clamps it to [-10, 10])",
      },
    );
  } else {
    m.push(
      { key: 'algorithm.adv_estimator', value: 'gae', from: ['rl.algo'], source: SRC.main, how: 'PPO with a critic' },
      { key: 'algorithm.gamma', value: rl.gamma, from: ['rl.gamma'], source: SRC.main },
      { key: 'algorithm.lam', value: rl.lambda, from: ['rl.lambda'], source: SRC.main },
      {
        key: 'algorithm.use_kl_in_reward',
        value: kl,
        from: ['rl.kl.coef'],
        source: SRC.main,
        how: "the lab's PPO subtracts the KL from the per-token reward",
      },
      {
        key: 'algorithm.kl_penalty',
        value: 'kl',
        from: ['code:ppo kl k1'],
        source: SRC.main,
        how: "the k1 estimate logp - ref, as the lab's",
      },
      { key: 'algorithm.kl_ctrl.kl_coef', value: rl.kl.coef, from: ['rl.kl.coef'], source: SRC.main },
      {
        key: 'algorithm.kl_ctrl.type',
        value: rl.kl.adaptive ? 'adaptive' : 'fixed',
        from: ['rl.kl.adaptive'],
        source: SRC.main,
        how: 'adaptive when rl.kl.adaptive',
      },
      { key: 'algorithm.kl_ctrl.target_kl', value: rl.kl.target, from: ['rl.kl.target'], source: SRC.main },
      { key: 'algorithm.kl_ctrl.horizon', value: rl.kl.horizon, from: ['rl.kl.horizon'], source: SRC.main },
      { key: `${ACTOR}.use_kl_loss`, value: false, from: ['rl.algo'], source: SRC.actor, how: 'PPO: the KL is in the reward' },
      ...optimKeys('critic', SRC.dpCritic, rl.lr, rl.gradClip),
      { key: 'critic.cliprange_value', value: rl.vclip, from: ['rl.vclip'], source: SRC.critic },
    );
  }
  if (cfg.lora) {
    m.push(
      { key: 'actor_rollout_ref.model.lora_rank', value: cfg.lora.rank, from: ['lora.rank'], source: SRC.model },
      { key: 'actor_rollout_ref.model.lora_alpha', value: cfg.lora.alpha, from: ['lora.alpha'], source: SRC.model },
      { key: 'actor_rollout_ref.model.target_modules', value: [...(cfg.lora.targets ?? [])], from: ['lora.targets'], source: SRC.model },
    );
  }
  const notes: Note[] = [...commonNotes(run), sameAsTrainingNote(run, 'eval.maxNewTokens', 'veRL')];
  if (grpo) {
    notes.push(...grpoUnusedNotes(cfg));
    if (rl.kl.adaptive)
      notes.push({
        lab: 'rl.kl.adaptive',
        value: true,
        kind: 'unmapped',
        why: "veRL's adaptive KL controller drives the reward penalty (PPO), not the in-loss KL of GRPO",
      });
    else notes.push({ lab: 'rl.kl.adaptive', value: false, kind: 'unused', why: 'a fixed coefficient' });
    notes.push(
      { lab: 'rl.kl.target', value: rl.kl.target, kind: 'unused', why: "the adaptive controller's target (GRPO: see rl.kl.adaptive)" },
      { lab: 'rl.kl.horizon', value: rl.kl.horizon, kind: 'unused', why: "the adaptive controller's horizon (GRPO: see rl.kl.adaptive)" },
    );
  } else {
    notes.push(...ppoUnusedNotes(cfg));
    notes.push({
      lab: 'rl.vfCoef',
      value: rl.vfCoef,
      kind: 'unmapped',
      why: "the lab's value head shares the policy's trunk and its loss is weighted by rl.vfCoef; veRL's critic is a separate model (from the exported policy's weights, a fresh value head) with its own optimizer, so there is no weight",
    });
    notes.push({
      lab: 'rl.whiten',
      value: rl.whiten,
      kind: rl.whiten ? 'carried' : 'unmapped',
      why: rl.whiten
        ? "veRL's GAE whitens the advantages, as the lab's did"
        : "veRL's GAE always whitens the advantages; the lab's run did not",
    });
  }
  if (miniPrompts * rl.samplesPerPrompt !== rl.minibatch)
    notes.push({
      lab: 'rl.minibatch',
      value: rl.minibatch,
      kind: 'unmapped',
      why: `veRL's mini-batch is whole prompts: ${miniPrompts} x ${rl.samplesPerPrompt} = ${miniPrompts * rl.samplesPerPrompt} sequences, not ${rl.minibatch}`,
    });
  if (batchesPerEpoch < 1)
    notes.push({
      lab: 'rl.promptsPerIteration',
      value: rl.promptsPerIteration,
      kind: 'unmapped',
      why: `the RL split has ${run.rl.length} prompts, fewer than one step's ${rl.promptsPerIteration}: veRL drops an incomplete batch, so lower data.train_batch_size`,
    });
  return { trainer: 'verl', mapped: m, notes };
}
