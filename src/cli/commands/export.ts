/** `coderl export`: a run directory as a folder for a cluster RL trainer (src/export/). */
import { join } from 'node:path';
import { DEFAULT_SERVE_URL } from '../../export/launch';
import { ExportError, exportRun } from '../../export';
import { TRAINERS, type Trainer } from '../../export/mapping';
import type { CheckpointChoice } from '../../export/run';
import { UsageError, type Command } from '../command';

function checkpointOption(v: string | boolean | undefined): CheckpointChoice {
  if (v === undefined) return 'final';
  if (typeof v !== 'string' || !v) throw new UsageError('coderl export: --checkpoint takes sft, rl or a checkpoint file');
  return v === 'sft' || v === 'rl' ? v : { path: v };
}

function serveUrlOption(v: string | boolean | undefined): string {
  if (v === undefined) return DEFAULT_SERVE_URL;
  let url: URL | null;
  try {
    url = typeof v === 'string' ? new URL(v) : null;
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new UsageError(`coderl export: --serve-url must be an http(s) URL like ${DEFAULT_SERVE_URL}, got '${String(v)}'`);
  return String(v).replace(/\/+$/, '');
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write a run as a folder for a cluster RL trainer (veRL, TRL, OpenRLHF)',
  usage:
    'coderl export --run DIR --to verl|trl|openrlhf [--out OUT] [--serve-url URL] [--checkpoint sft|rl|PATH] [--model HF_DIR] [--force]',
  description: [
    "Writes the run's RL and held-out tasks in the trainer's dataset format (veRL: parquet; TRL, OpenRLHF:",
    "JSONL), its settings as the trainer's config (veRL: coderl.yaml + run.sh; TRL: train.py; OpenRLHF: run.sh",
    'with ray job submit), the policy as a Hugging Face folder (model/; adapter/ too for a LoRA run), the reward',
    'wired to `coderl serve` (tasks.jsonl, reward.json, the Python client), README.md with the commands, and',
    "NOTES.md with every setting the trainer's config does not carry. The policy is the run's final one;",
    "--checkpoint sft or rl picks a stage's, or a checkpoint file. A run on an imported model needs its base",
    'model folder (--model HF_DIR) unless the run directory keeps a copy. OUT defaults to DIR/export-<trainer>;',
    'an existing non-empty OUT is refused unless --force. docs/export.md has the mapping.',
  ].join('\n'),
  options: {
    run: { type: 'string', description: 'the run directory (coderl train --out DIR)', value: 'DIR' },
    to: { type: 'string', description: `the trainer: ${TRAINERS.join(', ')}`, value: 'T' },
    out: { type: 'string', description: 'the folder to write (default DIR/export-<trainer>)', value: 'OUT' },
    'serve-url': {
      type: 'string',
      description: `the scorer's address the launch files default to (default ${DEFAULT_SERVE_URL})`,
      value: 'URL',
    },
    checkpoint: { type: 'string', description: "sft, rl or a checkpoint file (default: the finished run's final policy)", value: 'C' },
    model: { type: 'string', description: 'the base Hugging Face model of a run on an imported model', value: 'HF_DIR' },
    force: { type: 'boolean', description: "write into a non-empty OUT (the export's own files there are replaced)" },
  },
  examples: [
    'npx coderl export --run runs/tiny-1 --to verl',
    'npx coderl export --run runs/tiny-1 --to trl --out runs/tiny-1-trl --serve-url http://10.0.0.5:8000',
    'npx coderl export --run runs/lora-1 --to openrlhf --model ~/models/SmolLM2-135M --checkpoint sft',
  ],
  async run(options, _positionals, io) {
    const dir = options.run;
    if (typeof dir !== 'string' || !dir) throw new UsageError('coderl export: --run DIR is required (a run directory of coderl train)');
    const to = options.to;
    if (typeof to !== 'string' || !(TRAINERS as readonly string[]).includes(to))
      throw new UsageError(`coderl export: --to must be one of ${TRAINERS.join(', ')}, got '${to === undefined ? '' : String(to)}'`);
    const trainer = to as Trainer;
    const out = typeof options.out === 'string' && options.out ? options.out : join(dir, `export-${trainer}`);
    const model = typeof options.model === 'string' ? options.model : undefined;
    try {
      const r = await exportRun({
        run: dir,
        to: trainer,
        out,
        serveUrl: serveUrlOption(options['serve-url']),
        checkpoint: checkpointOption(options.checkpoint),
        model,
        force: options.force === true,
      });
      const unmapped = r.mapping.notes.filter((n) => n.kind === 'unmapped').map((n) => n.lab);
      io.out(`wrote ${r.out} for ${trainer}: ${r.files.length} files; ${r.mapping.mapped.length} settings mapped`);
      io.out(`not carried (NOTES.md): ${unmapped.length ? unmapped.join(', ') : 'none'}`);
      io.out(`launch: see ${join(r.out, 'README.md')}`);
      for (const w of r.warnings) io.err(`coderl export: note: ${w}`);
      return 0;
    } catch (e) {
      if (e instanceof ExportError) throw new UsageError(`coderl export: ${e.message}`);
      throw e;
    }
  },
};
