/**
 * OpenRLHF's files: data/{train,test}.jsonl (--data.input_key input, --data.label_key label) and
 * run.sh: `ray job submit ... python3 -m openrlhf.cli.train_ppo_ray` with the run's settings as
 * flags in a bash array, each under its comment, and the reward from `coderl serve`'s
 * /get_reward (--reward.remote_url).
 */
import { flagWords, mappingComment } from './emit';
import { scriptHead, type LaunchContext } from './launch';
import { jsonl, openrlhfRow } from './rows';

export function openrlhfRunSh(ctx: LaunchContext): string {
  const ppo = ctx.run.cfg.rl.algo === 'ppo';
  const settings = ctx.mapping.mapped.flatMap((k) => {
    const words = flagWords(k);
    return [`  # ${mappingComment(k)}`, words.length ? `  ${words.join(' ')}` : `  # (${k.key} false: the flag is left out)`];
  });
  const launch = [
    '--actor.model_name_or_path "$EXPORT_DIR/model"',
    '--data.prompt_dataset "$EXPORT_DIR/data/train.jsonl"',
    '--eval.dataset "$EXPORT_DIR/data/test.jsonl"',
    '--data.input_key input',
    '--data.label_key label',
    ...(ctx.run.format === 'chat' ? ['--data.apply_chat_template'] : []),
    '--reward.remote_url "$CODERL_SERVE_URL/get_reward"',
    '--actor.num_nodes "$NNODES"',
    '--actor.num_gpus_per_node "$N_GPUS"',
    '--ref.num_nodes "$NNODES"',
    '--ref.num_gpus_per_node "$N_GPUS"',
    ...(ppo ? ['--critic.num_nodes "$NNODES"', '--critic.num_gpus_per_node "$N_GPUS"'] : []),
    '--vllm.num_engines "$N_GPUS"',
    '--vllm.tensor_parallel_size 1',
    '--vllm.gpu_memory_utilization 0.5',
    '--train.colocate_all',
    '--ckpt.output_dir "$EXPORT_DIR/trained"',
    '--ckpt.path "$EXPORT_DIR/checkpoints"',
    '--ckpt.save_hf',
  ];
  return [
    ...scriptHead('OpenRLHF launch', ctx, ['EXPORT_DIR', 'CODERL_SERVE_URL', 'N_GPUS', 'NNODES', 'RAY_ADDRESS']),
    "# the run's settings as train_ppo_ray flags",
    'SETTINGS=(',
    ...settings,
    ')',
    '# the folder, the cluster and the reward',
    'LAUNCH=(',
    ...launch.map((a) => `  ${a}`),
    ')',
    'ray job submit --address="$RAY_ADDRESS" -- python3 -m openrlhf.cli.train_ppo_ray "${LAUNCH[@]}" "${SETTINGS[@]}" "$@"',
    '',
  ].join('\n');
}

export function openrlhfFiles(ctx: LaunchContext): Map<string, Uint8Array | string> {
  return new Map<string, Uint8Array | string>([
    ['data/train.jsonl', jsonl(ctx.rows.train.map((r) => openrlhfRow(r, ctx.run.format)))],
    ['data/test.jsonl', jsonl(ctx.rows.test.map((r) => openrlhfRow(r, ctx.run.format)))],
    ['run.sh', openrlhfRunSh(ctx)],
  ]);
}
