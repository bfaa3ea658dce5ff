/**
 * TRL's files: data/{train,test}.jsonl for load_dataset("json") and train.py, a GRPOTrainer
 * script whose SETTINGS (GRPOConfig's fields) and LORA (PEFT's LoraConfig) are literals, one
 * field a line under its comment. The reward function is the client's trl_reward, which GRPOTrainer
 * calls with the prompts, the completions and the rows' other columns as keyword lists.
 */
import { mappingComment, pyValue } from './emit';
import { CLIENT_FILE, type LaunchContext } from './launch';
import { jsonl, trlRow } from './rows';

export function trlTrainPy(ctx: LaunchContext): string {
  const settings = ctx.mapping.mapped.filter((k) => !k.key.startsWith('peft.'));
  const lora = ctx.mapping.mapped.filter((k) => k.key.startsWith('peft.'));
  const dict = (name: string, keys: typeof settings, prefix = '') => [
    `${name} = {`,
    ...keys.flatMap((k) => [`    # ${mappingComment(k)}`, `    ${JSON.stringify(k.key.slice(prefix.length))}: ${pyValue(k.value)},`]),
    '}',
  ];
  return [
    `"""TRL launch of the coderl export of run ${ctx.name}: GRPOTrainer with the run's settings.`,
    '',
    'Start the scorer first (README.md), then, from any directory:',
    '    python3 train.py                                  # one GPU',
    '    accelerate launch --num_processes N train.py      # N processes',
    `The reward is ${CLIENT_FILE}'s trl_reward (beside this file), which asks coderl serve at`,
    'CODERL_SERVE_URL. NOTES.md lists the run settings GRPOConfig does not carry.',
    '"""',
    'import os',
    'import sys',
    'from pathlib import Path',
    '',
    'HERE = Path(__file__).resolve().parent',
    'sys.path.insert(0, str(HERE))',
    `os.environ.setdefault("CODERL_SERVE_URL", ${JSON.stringify(ctx.serveUrl)})`,
    '',
    "# GRPOConfig's fields: each the lab setting it carries and where the field was checked.",
    ...dict('SETTINGS', settings),
    '',
    "# PEFT's LoraConfig for a run that trained LoRA adapters (None: full fine-tuning).",
    ...(lora.length ? dict('LORA', lora, 'peft.') : ['LORA = None']),
    '',
    '',
    'def main():',
    '    from datasets import load_dataset',
    '    from trl import GRPOConfig, GRPOTrainer',
    '',
    '    from coderl_client import trl_reward',
    '',
    '    world = int(os.environ.get("WORLD_SIZE", "1"))',
    '    settings = dict(SETTINGS)',
    '    # rl.minibatch is sequences per optimizer step over all processes',
    '    if settings["per_device_train_batch_size"] % world:',
    '        raise SystemExit(f"{settings[\'per_device_train_batch_size\']} sequences per step do not split over {world} processes")',
    '    settings["per_device_train_batch_size"] //= world',
    '    data = load_dataset(',
    '        "json", data_files={"train": str(HERE / "data" / "train.jsonl"), "test": str(HERE / "data" / "test.jsonl")}',
    '    )',
    '    peft_config = None',
    '    if LORA is not None:',
    '        from peft import LoraConfig',
    '',
    '        peft_config = LoraConfig(task_type="CAUSAL_LM", **LORA)',
    '    args = GRPOConfig(output_dir=str(HERE / "checkpoints"), logging_steps=1, report_to="none", **settings)',
    '    trainer = GRPOTrainer(',
    '        model=str(HERE / "model"),',
    '        reward_funcs=[trl_reward],',
    '        args=args,',
    '        train_dataset=data["train"],',
    '        eval_dataset=data["test"],',
    '        peft_config=peft_config,',
    '    )',
    '    trainer.train()',
    '    trainer.save_model(str(HERE / "trained"))',
    '',
    '',
    'if __name__ == "__main__":',
    '    main()',
    '',
  ].join('\n');
}

export function trlFiles(ctx: LaunchContext): Map<string, Uint8Array | string> {
  return new Map<string, Uint8Array | string>([
    ['data/train.jsonl', jsonl(ctx.rows.train.map((r) => trlRow(r, ctx.run.format)))],
    ['data/test.jsonl', jsonl(ctx.rows.test.map((r) => trlRow(r, ctx.run.format)))],
    ['train.py', trlTrainPy(ctx)],
  ]);
}
