/**
 * The settings mappings on the presets' configs (GRPO and Dr. GRPO, PPO with a fixed and an
 * adaptive KL, LoRA): every leaf of the config is mapped or noted for every trainer; every key
 * that carries one setting holds its value; derived keys hold their formula's; the unmapped
 * settings are the ones the trainer cannot express.
 */
import { describe, expect, test } from 'vitest';
import { mergeConfig, resolveConfig, type RlConfig } from '../rl/config';
import type { Task } from '../tasks/types';
import { MAPPINGS } from '.';
import {
  accountedFor,
  configLeaves,
  LAB_RL_OPTIM,
  labValue,
  maxPromptTokens,
  TRAINERS,
  type ExportRun,
  type Mapped,
  type Trainer,
} from './mapping';
import { trlStepsPerIteration } from './map-trl';

const task = (i: number): Task => ({
  task_id: `t/${i}`,
  language: 'javascript',
  prompt: `function f${i}(x) {\n`,
  entry_point: `f${i}`,
  tests: '',
});
const tasks = (n: number) => Array.from({ length: n }, (_, i) => task(i));

function exportRun(cfg: RlConfig, over: Partial<ExportRun> = {}): ExportRun {
  return { cfg, seed: 3, rl: tasks(100), heldout: tasks(20), format: 'completion', checkpoint: 'rl', ...over };
}

const LORA_RUN = mergeConfig(resolveConfig('tiny'), {
  pretrained: { name: 'qwen2/', sha256: 'a'.repeat(64) },
  lora: { rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] },
}) as RlConfig;

const CASES: [string, RlConfig][] = [
  ['tiny (Dr. GRPO)', resolveConfig('tiny')],
  ['tiny with group std and KL (GRPO)', resolveConfig('tiny', { rl: { groupStd: true, kl: { coef: 0.04 } } })],
  ['small (PPO, fixed KL)', resolveConfig('small')],
  ['composer2-scaled (PPO, adaptive KL, entropy)', resolveConfig('composer2-scaled')],
  ['a LoRA run on an imported model', LORA_RUN],
  ['a LoRA+ run (lora.lrRatio)', mergeConfig(LORA_RUN, { lora: { lrRatio: 8 } }) as RlConfig],
];

/** The code constants a `code:` source stands for. */
const CODE: Record<string, (k: Mapped) => unknown> = {
  'code:rl optimizer betas': (k) =>
    k.key.endsWith('beta1') ? LAB_RL_OPTIM.beta1 : k.key.endsWith('beta2') ? LAB_RL_OPTIM.beta2 : [LAB_RL_OPTIM.beta1, LAB_RL_OPTIM.beta2],
  'code:rl optimizer eps': () => LAB_RL_OPTIM.eps,
  'code:rl optimizer weight decay': () => LAB_RL_OPTIM.weightDecay,
};

describe.each(TRAINERS)('%s mapping', (trainer: Trainer) => {
  test.each(CASES)('%s: every config leaf is mapped or noted; single-source keys hold the run value', (_name, cfg) => {
    const run = exportRun(cfg);
    const m = MAPPINGS[trainer](run);
    const missing = configLeaves(cfg).filter((p) => !accountedFor(m, p));
    expect(missing, `${trainer}: neither mapped nor noted`).toEqual([]);
    const keys = m.mapped.map((k) => k.key);
    expect(new Set(keys).size, `${trainer}: a key set twice`).toBe(keys.length);
    for (const k of m.mapped) {
      expect(k.source, k.key).toMatch(/^(volcengine\/verl|huggingface\/(trl|transformers|peft)|OpenRLHF\/OpenRLHF) \S+/);
      expect(k.from.length, k.key).toBeGreaterThan(0);
      for (const f of k.from) if (!f.startsWith('code:')) expect(labValue(run, f), `${k.key} from ${f}`).not.toBeUndefined();
      if (k.how || k.from.length !== 1) continue;
      const f = k.from[0]!;
      const want = f.startsWith('code:') ? CODE[f]?.(k) : labValue(run, f);
      if (want !== undefined) expect(k.value, `${k.key} = ${f}`).toEqual(want);
    }
    // a note names a real setting (or section) and says why
    for (const n of m.notes) {
      if (n.value !== null) expect(labValue(run, n.lab), n.lab).not.toBeUndefined(); // null: an optional setting the run left out
      expect(n.why.length, n.lab).toBeGreaterThan(10);
    }
  });
});

const get = (trainer: Trainer, cfg: RlConfig, key: string, over: Partial<ExportRun> = {}) => {
  const k = MAPPINGS[trainer](exportRun(cfg, over)).mapped.find((x) => x.key === key);
  if (!k) throw new Error(`${trainer}: no ${key}`);
  return k.value;
};
const unmapped = (trainer: Trainer, cfg: RlConfig, over: Partial<ExportRun> = {}) =>
  MAPPINGS[trainer](exportRun(cfg, over))
    .notes.filter((n) => n.kind === 'unmapped')
    .map((n) => n.lab);

describe('derived and algorithm-dependent keys', () => {
  const tiny = resolveConfig('tiny');
  const small = resolveConfig('small');
  const c2 = resolveConfig('composer2-scaled');

  test('veRL: Dr. GRPO, batches in prompts, steps and lengths', () => {
    expect(get('verl', tiny, 'algorithm.adv_estimator')).toBe('grpo');
    expect(get('verl', tiny, 'algorithm.norm_adv_by_std_in_grpo')).toBe(false);
    expect(get('verl', tiny, 'actor_rollout_ref.actor.use_kl_loss')).toBe(false); // tiny's KL coef is 0
    expect(get('verl', resolveConfig('tiny', { rl: { kl: { coef: 0.04 } } }), 'actor_rollout_ref.actor.use_kl_loss')).toBe(true);
    expect(get('verl', tiny, 'actor_rollout_ref.actor.ppo_mini_batch_size')).toBe(tiny.rl.minibatch / tiny.rl.samplesPerPrompt);
    expect(get('verl', tiny, 'data.max_prompt_length')).toBe(maxPromptTokens(tiny));
    expect(maxPromptTokens(tiny)).toBe(tiny.model.contextLength - Math.max(tiny.rl.maxNewTokens, tiny.eval.maxNewTokens));
    expect(get('verl', tiny, 'trainer.total_training_steps')).toBe(tiny.rl.iterations);
    // 100 prompts, 32 a step: 3 steps an epoch, 50 steps need 17 epochs
    expect(get('verl', tiny, 'trainer.total_epochs')).toBe(17);
    expect(get('verl', small, 'algorithm.adv_estimator')).toBe('gae');
    expect(get('verl', small, 'algorithm.use_kl_in_reward')).toBe(true);
    expect(get('verl', small, 'algorithm.kl_ctrl.type')).toBe('fixed');
    expect(get('verl', c2, 'algorithm.kl_ctrl.type')).toBe('adaptive');
    expect(get('verl', small, 'critic.optim.lr')).toBe(small.rl.lr);
    expect(unmapped('verl', small)).toEqual(expect.arrayContaining(['rl.vfCoef', 'rl.targetKl', 'eval.k', 'rl.reference']));
    expect(unmapped('verl', tiny)).not.toContain('rl.vfCoef');
  });

  test('TRL: generations, steps, Dr. GRPO and PPO as GRPO', () => {
    expect(get('trl', tiny, 'num_generations')).toBe(8);
    expect(get('trl', tiny, 'generation_batch_size')).toBe(32 * 8);
    expect(get('trl', tiny, 'per_device_train_batch_size')).toBe(32);
    // 256 completions in steps of 32, 2 epochs: 16 optimizer steps an iteration
    expect(trlStepsPerIteration(exportRun(tiny))).toBe(16);
    expect(get('trl', tiny, 'max_steps')).toBe(50 * 16);
    expect(get('trl', tiny, 'eval_steps')).toBe(tiny.rl.evalEvery * 16);
    expect(get('trl', tiny, 'scale_rewards')).toBe('none');
    expect(get('trl', resolveConfig('tiny', { rl: { groupStd: true } }), 'scale_rewards')).toBe('group');
    expect(get('trl', tiny, 'loss_type')).toBe('dapo');
    expect(unmapped('trl', small)).toEqual(
      expect.arrayContaining(['rl.algo', 'rl.vclip', 'rl.vfCoef', 'rl.gamma', 'rl.lambda', 'rl.whiten']),
    );
    expect(unmapped('trl', c2)).toEqual(expect.arrayContaining(['rl.kl.adaptive', 'rl.kl.target', 'rl.kl.horizon']));
    expect(unmapped('trl', tiny)).not.toContain('rl.algo');
    // a PPO run with one sample a prompt still needs groups of 2 in TRL
    const one = resolveConfig('small', { rl: { samplesPerPrompt: 1 } });
    expect(get('trl', one, 'num_generations')).toBe(2);
    expect(unmapped('trl', one)).toContain('rl.samplesPerPrompt');
  });

  test('OpenRLHF: estimators, KL placement and episodes', () => {
    expect(get('openrlhf', tiny, 'algo.advantage.estimator')).toBe('dr_grpo');
    expect(get('openrlhf', resolveConfig('tiny', { rl: { groupStd: true } }), 'algo.advantage.estimator')).toBe('group_norm');
    expect(get('openrlhf', small, 'algo.advantage.estimator')).toBe('gae');
    expect(get('openrlhf', small, 'algo.kl.estimator')).toBe('k1');
    expect(get('openrlhf', small, 'algo.kl.use_loss')).toBe(false);
    const grpoKl = resolveConfig('tiny', { rl: { kl: { coef: 0.04 } } });
    expect(get('openrlhf', grpoKl, 'algo.kl.estimator')).toBe('k3');
    expect(get('openrlhf', grpoKl, 'algo.kl.use_loss')).toBe(true);
    expect(get('openrlhf', c2, 'algo.kl.target')).toBe(c2.rl.kl.target);
    expect(MAPPINGS.openrlhf(exportRun(small)).mapped.some((k) => k.key === 'algo.kl.target')).toBe(false);
    // 50 iterations x 32 prompts over 90 prompts: 18 passes, and a note that it is not exact
    expect(get('openrlhf', tiny, 'train.num_episodes', { rl: tasks(90) })).toBe(18);
    expect(unmapped('openrlhf', tiny, { rl: tasks(90) })).toContain('rl.iterations');
    expect(get('openrlhf', tiny, 'train.num_episodes', { rl: tasks(64) })).toBe(25);
    expect(unmapped('openrlhf', tiny, { rl: tasks(64) })).not.toContain('rl.iterations');
  });

  test('features the trainers lack are unmapped exactly when the run used them', () => {
    const on = resolveConfig('tiny', { explore: { repair: true }, rm: { weight: 0.2 } });
    for (const t of TRAINERS) {
      expect(unmapped(t, on)).toEqual(expect.arrayContaining(['explore.repair', 'rm']));
      expect(unmapped(t, tiny)).not.toContain('explore.repair');
      expect(unmapped(t, tiny)).not.toContain('rm');
      // the KL reference is the exported policy itself when the SFT checkpoint is exported
      expect(unmapped(t, tiny, { checkpoint: 'sft' })).not.toContain('rl.reference');
    }
  });

  test('LoRA settings reach every trainer', () => {
    expect(get('verl', LORA_RUN, 'actor_rollout_ref.model.lora_rank')).toBe(8);
    expect(get('verl', LORA_RUN, 'actor_rollout_ref.model.target_modules')).toEqual(['q_proj', 'v_proj']);
    expect(get('trl', LORA_RUN, 'peft.lora_alpha')).toBe(16);
    expect(get('openrlhf', LORA_RUN, 'ds.lora.target_modules')).toEqual(['q_proj', 'v_proj']);
    // LoRA+ is an optimizer grouping none of them has a key for: noted, never dropped silently
    const plus = mergeConfig(LORA_RUN, { lora: { lrRatio: 8 } }) as RlConfig;
    for (const t of TRAINERS) {
      expect(unmapped(t, plus)).toContain('lora.lrRatio');
      expect(unmapped(t, LORA_RUN)).not.toContain('lora.lrRatio');
    }
    // the base's GPU storage is the lab's own choice: noted when set
    const bf16 = mergeConfig(LORA_RUN, { lora: { baseDtype: 'bf16' } }) as RlConfig;
    for (const t of TRAINERS) {
      expect(unmapped(t, bf16)).toContain('lora.baseDtype');
      expect(unmapped(t, LORA_RUN)).not.toContain('lora.baseDtype');
    }
  });
});
