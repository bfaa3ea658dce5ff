/**
 * The run's settings as TRL's GRPOConfig, checked against huggingface/trl at f2cd577 (2026-07-24,
 * 1.1.0.dev0): trl/trainer/grpo_config.py, and transformers' TrainingArguments, which GRPOConfig
 * extends (trl/trainer/base_config.py). TRL's GRPOTrainer has no critic, so a PPO run's critic
 * settings are notes.
 */
import {
  commonNotes,
  grpoUnusedNotes,
  LAB_RL_OPTIM,
  sameAsTrainingNote,
  stepSequences,
  type ExportRun,
  type Mapped,
  type Note,
  type TrainerMapping,
} from './mapping';

const GRPO = 'huggingface/trl trl/trainer/grpo_config.py';
const ARGS = 'huggingface/transformers src/transformers/training_args.py (TrainingArguments, via trl/trainer/base_config.py)';
const PEFT = 'huggingface/peft src/peft/tuners/lora/config.py (LoraConfig)';

/** Optimizer steps per iteration: rl.epochs passes over the iteration's rollouts in steps of `step` sequences. */
export function trlStepsPerIteration(run: ExportRun): number {
  const { rl } = run.cfg;
  const samples = Math.max(2, rl.samplesPerPrompt);
  return (rl.epochs * rl.promptsPerIteration * samples) / stepSequences(run.cfg, samples);
}

export function trlMapping(run: ExportRun): TrainerMapping {
  const { cfg, seed } = run;
  const rl = cfg.rl;
  const samples = Math.max(2, rl.samplesPerPrompt);
  const step = stepSequences(cfg, samples);
  const perIteration = trlStepsPerIteration(run);
  const m: Mapped[] = [
    { key: 'learning_rate', value: rl.lr, from: ['rl.lr'], source: GRPO },
    { key: 'num_generations', value: samples, from: ['rl.samplesPerPrompt'], source: GRPO, how: 'the group size (TRL needs at least 2)' },
    {
      key: 'generation_batch_size',
      value: rl.promptsPerIteration * samples,
      from: ['rl.promptsPerIteration', 'rl.samplesPerPrompt'],
      source: GRPO,
      how: 'completions per generation: rl.promptsPerIteration x rl.samplesPerPrompt',
    },
    {
      key: 'per_device_train_batch_size',
      value: step,
      from: ['rl.minibatch'],
      source: ARGS,
      how: 'sequences per optimizer step; train.py divides it by the number of processes (WORLD_SIZE), gradient_accumulation_steps 1',
    },
    {
      key: 'gradient_accumulation_steps',
      value: 1,
      from: ['rl.minibatch'],
      source: ARGS,
      how: 'one micro-batch per process per optimizer step',
    },
    { key: 'num_iterations', value: rl.epochs, from: ['rl.epochs'], source: GRPO, how: 'updates per generation batch (μ)' },
    {
      key: 'max_steps',
      value: rl.iterations * perIteration,
      from: ['rl.iterations', 'rl.epochs', 'rl.minibatch'],
      source: ARGS,
      how: `rl.iterations x ${perIteration} optimizer steps per generation (rl.epochs x rollouts / minibatch)`,
    },
    { key: 'temperature', value: rl.temperature, from: ['rl.temperature'], source: GRPO },
    { key: 'max_completion_length', value: rl.maxNewTokens, from: ['rl.maxNewTokens'], source: GRPO },
    { key: 'epsilon', value: rl.clip, from: ['rl.clip'], source: GRPO, how: 'epsilon_high defaults to it: symmetric' },
    {
      key: 'beta',
      value: rl.kl.coef,
      from: ['rl.kl.coef'],
      source: GRPO,
      how:
        rl.algo === 'grpo'
          ? "the in-loss KL (k3), as the lab's GRPO"
          : "the in-loss KL (k3); the lab's PPO subtracted a k1 KL from the reward instead",
    },
    {
      key: 'scale_rewards',
      value: rl.groupStd ? 'group' : 'none',
      from: ['rl.groupStd'],
      source: GRPO,
      how: rl.groupStd ? 'GRPO: divided by the group std' : 'Dr. GRPO: centred only',
    },
    {
      key: 'loss_type',
      value: 'dapo',
      from: ['code:loss token mean'],
      source: GRPO,
      how: "the lab's loss is a mean over the optimizer step's tokens (src/kernels/ppo_loss_ref.ts), which is TRL's 'dapo'; 'dr_grpo' would divide by a constant instead",
    },
    { key: 'entropy_coef', value: rl.entCoef, from: ['rl.entCoef'], source: GRPO },
    { key: 'max_grad_norm', value: rl.gradClip, from: ['rl.gradClip'], source: ARGS },
    { key: 'weight_decay', value: LAB_RL_OPTIM.weightDecay, from: ['code:rl optimizer weight decay'], source: ARGS },
    { key: 'adam_beta1', value: LAB_RL_OPTIM.beta1, from: ['code:rl optimizer betas'], source: ARGS },
    { key: 'adam_beta2', value: LAB_RL_OPTIM.beta2, from: ['code:rl optimizer betas'], source: ARGS },
    { key: 'adam_epsilon', value: LAB_RL_OPTIM.eps, from: ['code:rl optimizer eps'], source: ARGS },
    { key: 'lr_scheduler_type', value: 'constant', from: ['code:rl constant learning rate'], source: ARGS },
    { key: 'warmup_steps', value: 0, from: ['code:rl constant learning rate'], source: ARGS },
    { key: 'seed', value: seed, from: ['seed'], source: ARGS },
    { key: 'eval_strategy', value: 'steps', from: ['rl.evalEvery'], source: ARGS, how: 'evaluate every eval_steps' },
    {
      key: 'eval_steps',
      value: rl.evalEvery * perIteration,
      from: ['rl.evalEvery'],
      source: ARGS,
      how: `rl.evalEvery iterations x ${perIteration} steps`,
    },
    { key: 'num_generations_eval', value: cfg.eval.samples, from: ['eval.samples'], source: GRPO },
    {
      key: 'per_device_eval_batch_size',
      value: cfg.eval.samples,
      from: ['eval.samples'],
      source: ARGS,
      how: 'one prompt group per process (the global eval batch must divide by num_generations_eval)',
    },
  ];
  if (cfg.lora) {
    m.push(
      { key: 'peft.r', value: cfg.lora.rank, from: ['lora.rank'], source: PEFT },
      { key: 'peft.lora_alpha', value: cfg.lora.alpha, from: ['lora.alpha'], source: PEFT },
      { key: 'peft.target_modules', value: [...(cfg.lora.targets ?? [])], from: ['lora.targets'], source: PEFT },
    );
  }
  const notes: Note[] = [
    ...commonNotes(run),
    sameAsTrainingNote(run, 'eval.temperature', 'TRL'),
    sameAsTrainingNote(run, 'eval.maxNewTokens', 'TRL'),
    {
      lab: 'rl.kl.adaptive',
      value: rl.kl.adaptive,
      kind: rl.kl.adaptive ? 'unmapped' : 'unused',
      why: rl.kl.adaptive ? 'GRPOConfig has a fixed beta, no adaptive KL controller' : 'a fixed coefficient',
    },
    {
      lab: 'rl.kl.target',
      value: rl.kl.target,
      kind: rl.kl.adaptive ? 'unmapped' : 'unused',
      why: "the adaptive controller's target (see rl.kl.adaptive)",
    },
    {
      lab: 'rl.kl.horizon',
      value: rl.kl.horizon,
      kind: rl.kl.adaptive ? 'unmapped' : 'unused',
      why: "the adaptive controller's horizon (see rl.kl.adaptive)",
    },
  ];
  if (rl.algo === 'grpo')
    notes.push({ lab: 'rl.algo', value: 'grpo', kind: 'carried', why: 'train.py trains with GRPOTrainer' }, ...grpoUnusedNotes(cfg));
  else {
    notes.push({
      lab: 'rl.algo',
      value: 'ppo',
      kind: 'unmapped',
      why: "TRL's GRPOTrainer has no critic: the run's PPO (GAE advantages from a value head) becomes GRPO's group-relative advantages; export --to verl or openrlhf keeps PPO",
    });
    const why = "the critic's setting (GRPOTrainer has none; see rl.algo)";
    for (const k of ['vclip', 'vfCoef', 'gamma', 'lambda', 'whiten'] as const)
      notes.push({ lab: `rl.${k}`, value: rl[k], kind: 'unmapped', why });
  }
  if (samples !== rl.samplesPerPrompt)
    notes.push({
      lab: 'rl.samplesPerPrompt',
      value: rl.samplesPerPrompt,
      kind: 'unmapped',
      why: `GRPO needs groups of at least 2: num_generations is ${samples}`,
    });
  if (step !== rl.minibatch)
    notes.push({
      lab: 'rl.minibatch',
      value: rl.minibatch,
      kind: 'unmapped',
      why: `TRL's optimizer steps must divide the ${rl.promptsPerIteration * samples} completions of a generation: ${step} sequences a step, not ${rl.minibatch}`,
    });
  return { trainer: 'trl', mapped: m, notes };
}
