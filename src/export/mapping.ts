/**
 * The run's settings in a cluster trainer's terms (coderl export). Each trainer's module
 * (map-verl.ts, map-trl.ts, map-openrlhf.ts) turns an ExportRun into a TrainerMapping: the keys
 * it sets, each with the lab settings it carries and the trainer source where the key was checked,
 * and a note for every lab setting it does not carry. commonNotes are the settings no trainer
 * config carries (the exported files do, or the run did not use them); `accountedFor` lets the
 * tests check that every leaf of the run's config is mapped or noted, for every trainer.
 */
import type { RlConfig } from '../rl/config';
import type { PromptFormatKind } from '../rl/prompt-format';
import type { Task } from '../tasks/types';

export const TRAINERS = ['verl', 'trl', 'openrlhf'] as const;
export type Trainer = (typeof TRAINERS)[number];

export const TRAINER_NAMES: Record<Trainer, string> = { verl: 'veRL', trl: 'TRL', openrlhf: 'OpenRLHF' };

export type Scalar = string | number | boolean | null;

/** One key the export sets in the trainer's config. */
export interface Mapped {
  /** the trainer's name for it: veRL's dotted Hydra key, TRL's GRPOConfig field, OpenRLHF's flag without `--` */
  key: string;
  value: Scalar | Scalar[];
  /**
   * The lab settings it carries: config paths (`rl.lr`), `seed`, or `code:<what>` for a choice the
   * lab's code makes (the RL optimizer's betas, the loss's token mean). Empty never.
   */
  from: string[];
  /** repo and path of the trainer file where the key was checked */
  source: string;
  /** how the value follows from `from` when it is not the one value itself */
  how?: string;
}

/** Why a lab setting has no key in a trainer's config (or needs none). */
export type NoteKind =
  /** the run used it and the trainer has nothing that does the same */
  | 'unmapped'
  /** the exported files carry it (the model folder, the tasks, reward.json), not the trainer's config */
  | 'carried'
  /** this run did not use it (a PPO-only setting of a GRPO run, a feature switched off) */
  | 'unused';

export interface Note {
  /** a config path (`rl.targetKl`) or a section (`sft`: every field under it) */
  lab: string;
  value: unknown;
  kind: NoteKind;
  why: string;
}

export interface TrainerMapping {
  trainer: Trainer;
  mapped: Mapped[];
  notes: Note[];
}

/** What the mappings read of a run. */
export interface ExportRun {
  cfg: RlConfig;
  seed: number;
  /** the RL split (the trainer's training prompts) and the held-out split (its validation prompts) */
  rl: Task[];
  heldout: Task[];
  format: PromptFormatKind;
  /** the checkpoint exported: the RL policy, the SFT policy, or a file given */
  checkpoint: 'rl' | 'sft' | 'file';
}

/** The RL optimizer the lab builds (src/rl/stages/rl.ts rlOptim: DEFAULT_OPTIM's betas and eps, no weight decay, a constant rate). */
export const LAB_RL_OPTIM = { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0 } as const;

/** The longest prompt the run allowed: the context less the larger of the RL and evaluation completion lengths (stages/setup.ts). */
export function maxPromptTokens(cfg: RlConfig): number {
  return cfg.model.contextLength - Math.max(cfg.rl.maxNewTokens, cfg.eval.maxNewTokens);
}

/** Sequences per optimizer step that divide an iteration's rollouts: the run's minibatch, or the largest divisor below it. */
export function stepSequences(cfg: RlConfig, samples = cfg.rl.samplesPerPrompt): number {
  const total = cfg.rl.promptsPerIteration * samples;
  let m = Math.min(cfg.rl.minibatch, total);
  while (total % m !== 0) m--;
  return m;
}

/** The value at a dotted config path (`rl.kl.coef`), `seed` for the run's seed. */
export function labValue(run: Pick<ExportRun, 'cfg' | 'seed'>, path: string): unknown {
  if (path === 'seed') return run.seed;
  let v: unknown = run.cfg;
  for (const k of path.split('.')) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** Every leaf path of the run's config (arrays are leaves), and `seed`. */
export function configLeaves(cfg: RlConfig): string[] {
  const out: string[] = ['seed'];
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
    } else out.push(path);
  };
  walk(cfg, '');
  return out;
}

/** Whether a config path is mapped (in some key's `from`) or noted (itself, or a section above it). */
export function accountedFor(m: TrainerMapping, path: string): boolean {
  return m.mapped.some((k) => k.from.includes(path)) || m.notes.some((n) => path === n.lab || path.startsWith(`${n.lab}.`));
}

const onOff = (on: boolean, kind: NoteKind): NoteKind => (on ? kind : 'unused');

/**
 * The settings no trainer's config carries: what the exported files hold, the lab's own stages
 * and sampling aids, and what the run did not use. `rl.algo` and `lora` are mapped per trainer.
 */
export function commonNotes(run: ExportRun): Note[] {
  const { cfg } = run;
  const rmUsed = cfg.rm.enabled && cfg.rm.weight > 0;
  const notes: Note[] = [
    {
      lab: 'preset',
      value: cfg.preset,
      kind: 'carried',
      why: "the preset's name; every setting below is the run's resolved value (export.json)",
    },
    { lab: 'model', value: cfg.model, kind: 'carried', why: "the policy's shape: model/config.json" },
    {
      lab: 'tasks',
      value: cfg.tasks,
      kind: 'carried',
      why: 'how the lab drew its splits; the RL split is data/train, the held-out split data/test, both in tasks.jsonl for the scorer',
    },
    {
      lab: 'sft',
      value: cfg.sft,
      kind: 'carried',
      why: 'supervised fine-tuning ran in the lab; the exported policy is after it, and these trainers run RL only',
    },
    {
      lab: 'reward',
      value: cfg.reward,
      kind: 'carried',
      why: "the reward's weights are the scorer's, not the trainer's: reward.json, given to coderl serve",
    },
    {
      lab: 'rm',
      value: cfg.rm,
      kind: onOff(rmUsed, 'unmapped'),
      why: rmUsed
        ? `the lab added the learned reward model's score (weight ${cfg.rm.weight}) to the execution reward; the scorer service rewards by execution only and the reward model is not exported`
        : "the learned reward model had no weight in this run's reward (rm.enabled false or rm.weight 0)",
    },
    {
      lab: 'explore.syntax',
      value: cfg.explore.syntax,
      kind: onOff(cfg.explore.syntax, 'unmapped'),
      why: "syntax-constrained sampling masks tokens in the lab's own sampler; vLLM and transformers' generate have no such hook here",
    },
    {
      lab: 'explore.api',
      value: cfg.explore.api,
      kind: onOff(cfg.explore.api !== 'off', 'unmapped'),
      why: "API-guided exploration biases the lab's sampler after `.`; the trainers' samplers have no such hook",
    },
    {
      lab: 'explore.apiStrength',
      value: cfg.explore.apiStrength,
      kind: onOff(cfg.explore.api !== 'off', 'unmapped'),
      why: 'the strength of API-guided exploration (see explore.api)',
    },
    {
      lab: 'explore.repair',
      value: cfg.explore.repair,
      kind: onOff(cfg.explore.repair, 'unmapped'),
      why: "error-driven repair gives failing rollouts a second turn with the error; the exported tasks are single-turn (veRL's multi-turn agent loop could host it, not wired here)",
    },
    {
      lab: 'eval.k',
      value: cfg.eval.k,
      kind: 'unmapped',
      why: "the trainers log the mean reward of their validation samples, not pass@k; coderl eval on the trained checkpoint gives the lab's pass@k",
    },
    {
      lab: 'rl.targetKl',
      value: cfg.rl.targetKl,
      kind: onOff(cfg.rl.targetKl > 0, 'unmapped'),
      why: "the lab stops an iteration's epochs early when the approximate KL passes 1.5 x rl.targetKl; none of the trainers' configs has this early stop",
    },
    {
      lab: 'rl.reference',
      value: cfg.rl.reference ?? null,
      kind: cfg.rl.reference || run.checkpoint !== 'sft' ? 'unmapped' : 'carried',
      why: cfg.rl.reference
        ? `the lab's KL reference was the model "${cfg.rl.reference.name}"; the trainers' reference is the starting policy (model/)`
        : run.checkpoint === 'sft'
          ? "the lab's KL reference was the SFT policy, which is the exported policy: the trainers' reference (their starting policy) is the same model"
          : "the lab's KL reference was the SFT policy; the trainers' reference is their starting policy, the exported one (export --checkpoint sft starts from the SFT policy)",
    },
    {
      lab: 'promptFormat',
      value: (cfg as { promptFormat?: string }).promptFormat ?? null,
      kind: 'carried',
      why: `(absent: auto) decides the prompts' shape: ${run.format === 'chat' ? "chat messages through the model's chat template" : 'plain code the model continues'}`,
    },
  ];
  if (cfg.pretrained)
    notes.push({
      lab: 'pretrained',
      value: cfg.pretrained,
      kind: 'carried',
      why: 'the imported model the run trained: its trained weights are model/',
    });
  if (cfg.lora?.lrRatio !== undefined)
    notes.push({
      lab: 'lora.lrRatio',
      value: cfg.lora.lrRatio,
      kind: cfg.lora.lrRatio === 1 ? 'carried' : 'unmapped',
      why:
        cfg.lora.lrRatio === 1
          ? 'plain LoRA, as the trainers train it'
          : "LoRA+ (lora_B at lr x the ratio) is an optimizer grouping, not a config key in veRL, OpenRLHF or TRL; with TRL, PEFT's create_loraplus_optimizer(model, torch.optim.AdamW, {'lr': lr}, loraplus_lr_ratio=ratio) passed as GRPOTrainer(optimizers=(opt, None)) trains it",
    });
  if (cfg.lora?.baseDtype !== undefined)
    notes.push({
      lab: 'lora.baseDtype',
      value: cfg.lora.baseDtype,
      kind: 'unmapped',
      why: 'how the lab keeps the frozen base on one WebGPU device (16-bit halves its memory); on a cluster the trainer loads the model in the dtype its own settings name',
    });
  if (cfg.lora?.from)
    notes.push({
      lab: 'lora.from',
      value: cfg.lora.from,
      kind: 'carried',
      why: 'the adapter the run started from: already in the trained weights',
    });
  return notes;
}

/** The settings of the critic and of GAE, unused by a GRPO run (no value function). */
export function grpoUnusedNotes(cfg: RlConfig): Note[] {
  const why = 'GRPO has no critic: group-relative advantages, no value function or GAE';
  return (['vclip', 'vfCoef', 'gamma', 'lambda', 'whiten'] as const).map((k) => ({
    lab: `rl.${k}`,
    value: cfg.rl[k],
    kind: 'unused',
    why,
  }));
}

/** rl.groupStd in a PPO run: it scales GRPO's group advantages only. */
export function ppoUnusedNotes(cfg: RlConfig): Note[] {
  return [
    { lab: 'rl.groupStd', value: cfg.rl.groupStd, kind: 'unused', why: "it scales GRPO's group-relative advantages; PPO's are GAE's" },
  ];
}

/** The note for eval.temperature / eval.maxNewTokens when the trainer samples validation like training. */
export function sameAsTrainingNote(run: ExportRun, lab: 'eval.temperature' | 'eval.maxNewTokens', trainer: string): Note {
  const evalV = labValue(run, lab) as number;
  const rlV = lab === 'eval.temperature' ? run.cfg.rl.temperature : run.cfg.rl.maxNewTokens;
  const rlKey = lab === 'eval.temperature' ? 'rl.temperature' : 'rl.maxNewTokens';
  return {
    lab,
    value: evalV,
    kind: evalV === rlV ? 'carried' : 'unmapped',
    why:
      evalV === rlV
        ? `${trainer} validates with the training value, which is the same (${rlKey} ${rlV})`
        : `${trainer} validates with the training value (${rlKey} ${rlV}), not the lab's ${evalV}`,
  };
}
