/**
 * The exported folder's README.md (what is there, how to launch: the scorer, then the trainer)
 * and NOTES.md (every run setting the trainer's config does not carry, and why; then the whole
 * mapping as a table).
 */
import { TRAINER_NAMES, type Mapped, type Note, type NoteKind, type Trainer } from './mapping';
import { mappingComment } from './emit';
import { CLIENT_FILE, LAUNCH_ENV, type LaunchContext } from './launch';

export interface DocsInput {
  ctx: LaunchContext;
  trainer: Trainer;
  /** the policy, in words (policy.ts describe) */
  policy: string;
  /** the checkpoint file exported */
  checkpoint: string;
  adapter: boolean;
  /** whether coderl_client.py was copied in */
  clientCopied: boolean;
  /** veRL: the model's chat template was replaced by a pass-through one */
  passThroughTemplate: boolean;
}

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

const LAUNCH: Record<Trainer, string[]> = {
  verl: ['bash run.sh                      # N_GPUS=8 NNODES=2 bash run.sh on a bigger cluster'],
  trl: ['python3 train.py                  # or: accelerate launch --num_processes N train.py'],
  openrlhf: [
    'ray start --head                  # once, if no Ray cluster runs yet',
    'bash run.sh                       # submits the job to RAY_ADDRESS',
  ],
};

const FILES: Record<Trainer, [string, string][]> = {
  verl: [
    [
      'data/train.parquet, data/test.parquet',
      "the RL split (training prompts) and the held-out split (validation), as veRL's RLHFDataset reads them",
    ],
    [
      'coderl.yaml',
      "veRL's ppo_trainer config with the run's settings, each under a comment naming the lab setting and the veRL file checked",
    ],
    ['run.sh', 'python3 -m verl.trainer.main_ppo with coderl.yaml, the paths, the cluster and the reward function'],
  ],
  trl: [
    [
      'data/train.jsonl, data/test.jsonl',
      'the RL split and the held-out split for load_dataset("json"): a `prompt` column and the task\'s fields',
    ],
    [
      'train.py',
      "GRPOTrainer with the run's settings (SETTINGS, LORA), each under a comment naming the lab setting and the TRL file checked",
    ],
  ],
  openrlhf: [
    [
      'data/train.jsonl, data/test.jsonl',
      'the RL split and the held-out split: `input` (the prompt), `label` (the task id the scorer gets), `datasource`',
    ],
    [
      'run.sh',
      "ray job submit ... openrlhf.cli.train_ppo_ray with the run's settings as flags, each under a comment naming the lab setting",
    ],
  ],
};

export function readme(d: DocsInput): string {
  const { ctx, trainer } = d;
  const name = TRAINER_NAMES[trainer];
  const files: [string, string][] = [
    [
      'model/',
      `the policy as a Hugging Face folder: ${d.policy}, from ${d.checkpoint}${d.passThroughTemplate ? "; its tokenizer_config.json has a pass-through chat template so veRL's chat rendering sends the plain code prompt" : ''}`,
    ],
    ...(d.adapter
      ? ([['adapter/', "the run's LoRA adapter in PEFT's format (PeftModel.from_pretrained(base, 'adapter'))"]] as [string, string][])
      : []),
    ...FILES[trainer],
    [
      'tasks.jsonl',
      `the ${ctx.rows.train.length} RL and ${ctx.rows.test.length} held-out tasks as a suite: the scorer loads it (coderl serve --suite)`,
    ],
    ['reward.json', "the run's reward weights: the scorer rewards with them (coderl serve --reward)"],
    [
      CLIENT_FILE,
      d.clientCopied
        ? "the Python client the reward function imports (Code RL Lab's clients/python/)"
        : "NOT COPIED: put Code RL Lab's clients/python/coderl_client.py here",
    ],
    ['NOTES.md', "the run's settings this config does not carry and why, and the whole mapping"],
    ['export.json', 'what was exported, and the mapping, as JSON'],
  ];
  return [
    `# Run ${ctx.name} for ${name}`,
    '',
    `Exported by \`coderl export --to ${trainer}\` from the run directory of \`coderl train\` (seed ${ctx.run.seed}, ${ctx.run.cfg.rl.algo.toUpperCase()}, prompts in the ${ctx.run.format} format). Copy this folder to storage every node of the cluster reads.`,
    '',
    '| file | what |',
    '| --- | --- |',
    ...files.map(([f, w]) => `| ${f} | ${w} |`),
    '',
    '## Launch',
    '',
    "1. Start the scorer where the trainer's nodes reach it (a checkout of Code RL Lab, `npm ci`):",
    '',
    '   ```sh',
    '   npx coderl serve --suite tasks.jsonl --reward reward.json    # 127.0.0.1:8000',
    '   ```',
    '',
    '   Beyond loopback it needs a token and a host (docs/serve.md of Code RL Lab); then set',
    `   CODERL_SERVE_URL to its address (this export's default is ${ctx.serveUrl}).`,
    trainer === 'openrlhf'
      ? '   OpenRLHF sends no Authorization header: put the token in the URL, `CODERL_SERVE_URL=http://coderl:TOKEN@HOST:8000` (coderl serve reads it as the bearer token).'
      : `   The client sends CODERL_SERVE_TOKEN as the bearer token${trainer === 'verl' ? "; run.sh forwards it (and CODERL_SUITE) to veRL's Ray reward workers when set" : ''}.`,
    `2. ${d.clientCopied ? `${CLIENT_FILE} is here already.` : `Copy clients/python/${CLIENT_FILE} of Code RL Lab into this folder.`} Python needs ${name} installed, nothing else of ours.`,
    '3. Start the trainer from this folder:',
    '',
    '   ```sh',
    ...LAUNCH[trainer].map((l) => `   ${l}`),
    '   ```',
    '',
    'The scripts read these environment variables:',
    '',
    '| variable | what |',
    '| --- | --- |',
    ...Object.entries(LAUNCH_ENV)
      .filter(([k]) => (trainer === 'trl' ? k === 'CODERL_SERVE_URL' : trainer === 'verl' ? k !== 'RAY_ADDRESS' : k !== 'MICRO_BATCH'))
      .map(([k, w]) => `| ${k} | ${w} |`),
    '',
    "The trained policy lands in `trained/` (OpenRLHF, TRL) or `checkpoints/` (veRL, and every trainer's resumable state).",
    "`coderl eval --suite tasks.jsonl` on it gives the lab's pass@k.",
    '',
  ].join('\n');
}

const SECTIONS: [NoteKind, string][] = [
  ['unmapped', 'Used by the run, with no equivalent here'],
  ['carried', 'Carried by the exported files or the trainer as it is, not by a key'],
  ['unused', 'Not used by this run'],
];

function noteLine(n: Note): string {
  return `- \`${n.lab}\` = \`${show(n.value)}\`: ${n.why}`;
}

function mappedRow(k: Mapped): string {
  const v = Array.isArray(k.value) ? k.value.map(show).join(', ') : show(k.value);
  return `| \`${k.key}\` | \`${v}\` | ${mappingComment(k).replace(/; source: .*$/, '')} | ${k.source} |`;
}

export function notes(d: DocsInput): string {
  const { ctx, trainer } = d;
  const name = TRAINER_NAMES[trainer];
  const m = ctx.mapping;
  const chat = ctx.run.format === 'chat';
  return [
    `# What ${name} does not carry of run ${ctx.name}`,
    '',
    ...SECTIONS.flatMap(([kind, title]) => {
      const ns = m.notes.filter((n) => n.kind === kind);
      return ns.length ? [`## ${title}`, '', ...ns.map(noteLine), ''] : [];
    }),
    '## The reward and the prompts',
    '',
    `- The reward is the scorer's: \`coderl serve\` runs each completion against the task's tests in its sandbox and returns the run's reward (reward.json: tests passed, all passed, a valid AST, lint, complexity, length), as \`coderl score\` does.`,
    chat
      ? "- Chat format: the prompt is the lab's user turn; the lab also opened the assistant's reply with the code block and the function's header, which these trainers cannot do, so the model writes the whole reply. The scorer runs task prompt + completion: a reply that repeats the header in a code block needs the client to take the code out of the block (check coderl_client.py)."
      : '- Completion format: the prompt is the code the model continues, and the program the scorer runs is that prompt + the completion, as in the lab.',
    `- Each row names its task by \`task_id\` (${trainer === 'verl' ? 'reward_model.ground_truth and extra_info.task_id' : trainer === 'openrlhf' ? 'the `label` column' : 'a column TRL passes to the reward function'}); the scorer looks it up in tasks.jsonl.`,
    "- The exported policy has no value head (a causal LM folder): a PPO critic starts from the policy's weights with a fresh head.",
    '',
    `## The mapping (${m.mapped.length} keys)`,
    '',
    '| key | value | from the run | checked in |',
    '| --- | --- | --- | --- |',
    ...m.mapped.map(mappedRow),
    '',
  ].join('\n');
}
