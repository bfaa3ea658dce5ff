/**
 * veRL's files: data/{train,test}.parquet, coderl.yaml (a Hydra config that composes veRL's
 * ppo_trainer and sets the run's settings, each under its comment) and run.sh (python3 -m
 * verl.trainer.main_ppo with that config and the cluster's paths). The reward is veRL's
 * custom_reward_function: the client's verl_compute_score, which asks `coderl serve`.
 */
import { mappingComment, shellWord, yamlTree } from './emit';
import { CLIENT_FILE, scriptHead, type LaunchContext } from './launch';
import { verlParquet } from './parquet';

/** The config's name: run.sh passes --config-name=coderl. */
export const VERL_CONFIG = 'coderl.yaml';

export function verlConfigYaml(ctx: LaunchContext): string {
  const head = [
    `# veRL config of the coderl export of run ${ctx.name}: veRL's ppo_trainer with the run's settings.`,
    '# Each key: the lab setting it carries, how, and the veRL file where the key was checked.',
    '# run.sh adds the paths, the cluster and the reward function; NOTES.md lists what is not carried.',
    'hydra:',
    '  searchpath:',
    '    - pkg://verl.trainer.config',
    'defaults:',
    '  - ppo_trainer',
    '  - _self_',
  ];
  const body = yamlTree(ctx.mapping.mapped.map((k) => ({ key: k.key, value: k.value, comment: mappingComment(k) })));
  return `${head.join('\n')}\n${body}`;
}

export function verlRunSh(ctx: LaunchContext): string {
  const ppo = ctx.run.cfg.rl.algo === 'ppo';
  const args = [
    '--config-path="$EXPORT_DIR"',
    `--config-name=${VERL_CONFIG.replace(/\.yaml$/, '')}`,
    'data.train_files="$EXPORT_DIR/data/train.parquet"',
    'data.val_files="$EXPORT_DIR/data/test.parquet"',
    'data.filter_overlong_prompts=True',
    'data.truncation=error',
    'actor_rollout_ref.model.path="$EXPORT_DIR/model"',
    ...(ppo ? ['critic.model.path="$EXPORT_DIR/model"', 'critic.ppo_micro_batch_size_per_gpu="$MICRO_BATCH"'] : []),
    // remove-padding patches the flash-attention path of Llama-like models; GPT-2 goes without it
    ...(ctx.family === 'gpt2'
      ? ['actor_rollout_ref.model.use_remove_padding=False', ...(ppo ? ['critic.model.use_remove_padding=False'] : [])]
      : []),
    'actor_rollout_ref.rollout.name=vllm',
    'actor_rollout_ref.rollout.tensor_model_parallel_size=1',
    'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$MICRO_BATCH"',
    'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH"',
    'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH"',
    `custom_reward_function.path="$EXPORT_DIR/${CLIENT_FILE}"`,
    'custom_reward_function.name=verl_compute_score',
    // the reward workers are Ray actors: the scorer's address reaches them through Ray's runtime env
    '+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SERVE_URL="$CODERL_SERVE_URL"',
    'trainer.n_gpus_per_node="$N_GPUS"',
    'trainer.nnodes="$NNODES"',
    `trainer.logger='["console"]'`,
    'trainer.project_name=coderl',
    `trainer.experiment_name=${shellWord(ctx.name)}`,
    'trainer.default_local_dir="$EXPORT_DIR/checkpoints"',
  ];
  return [
    ...scriptHead('veRL launch', ctx, ['EXPORT_DIR', 'CODERL_SERVE_URL', 'N_GPUS', 'NNODES', 'MICRO_BATCH']),
    'export CODERL_SERVE_URL',
    "# the scorer's token and a suite other than its --suite reach the reward workers too, when set",
    'forward=()',
    'for v in CODERL_SERVE_TOKEN CODERL_SUITE; do',
    '  val="${!v:-}"',
    '  [ -n "$val" ] || continue',
    `  case "$val" in *\\'*|*\\\\*) echo "run.sh: $v holds a quote or a backslash, which Hydra's override grammar cannot carry here" >&2; exit 2;; esac`,
    `  forward+=("+ray_kwargs.ray_init.runtime_env.env_vars.$v='$val'")`,
    'done',
    `# the run's settings are in ${VERL_CONFIG}; more overrides can follow on the command line: bash run.sh key=value`,
    'python3 -m verl.trainer.main_ppo \\',
    ...args.map((a) => `  ${a} \\`),
    '  ${forward[@]+"${forward[@]}"} "$@"',
    '',
  ].join('\n');
}

export function verlFiles(ctx: LaunchContext): Map<string, Uint8Array | string> {
  return new Map<string, Uint8Array | string>([
    ['data/train.parquet', verlParquet(ctx.rows.train, ctx.run.format)],
    ['data/test.parquet', verlParquet(ctx.rows.test, ctx.run.format)],
    [VERL_CONFIG, verlConfigYaml(ctx)],
    ['run.sh', verlRunSh(ctx)],
  ]);
}
