/**
 * `coderl export`: a run directory written as a folder for a cluster trainer (veRL, TRL,
 * OpenRLHF): the tasks as its dataset, the settings as its config (map-*.ts), the policy as a
 * Hugging Face folder (policy.ts), the reward wired to `coderl serve` through the Python client,
 * the suite and reward weights the scorer loads, a README and NOTES. docs/export.md tells the story.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile, copyFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { PromptFormatSetting } from '../rl/prompt-format';
import { notes, readme, type DocsInput } from './docs';
import { CLIENT_FILE, type LaunchContext } from './launch';
import { openrlhfMapping } from './map-openrlhf';
import { trlMapping } from './map-trl';
import { verlMapping } from './map-verl';
import type { ExportRun, Trainer, TrainerMapping } from './mapping';
import { openrlhfFiles } from './openrlhf';
import { exportPolicy, PASS_THROUGH_TEMPLATE, withChatTemplate } from './policy';
import { jsonl, taskRows } from './rows';
import { ExportError, openRun, type CheckpointChoice } from './run';
import { trlFiles } from './trl';
import { verlFiles } from './verl';

export { ExportError } from './run';

export interface ExportOptions {
  run: string;
  to: Trainer;
  out: string;
  serveUrl: string;
  checkpoint?: CheckpointChoice;
  /** the base model folder of a run on an imported model (else the run's copy) */
  model?: string;
  /** write into a non-empty `out` (the export's own files and folders there are replaced) */
  force?: boolean;
  /** the Python client to copy in; undefined: the repository's clients/python/coderl_client.py when there is one; null: none */
  clientFile?: string | null;
}

export interface ExportResult {
  out: string;
  /** the files written, relative to `out` */
  files: string[];
  mapping: TrainerMapping;
  /** what the user must still do (a client file to copy) */
  warnings: string[];
}

export const MAPPINGS: Record<Trainer, (run: ExportRun) => TrainerMapping> = {
  verl: verlMapping,
  trl: trlMapping,
  openrlhf: openrlhfMapping,
};
const LAUNCH_FILES: Record<Trainer, (ctx: LaunchContext) => Map<string, Uint8Array | string>> = {
  verl: verlFiles,
  trl: trlFiles,
  openrlhf: openrlhfFiles,
};

/** clients/python/coderl_client.py of the repository this module runs from (src/export/ in tests, node_modules/.cache/coderl/ in the CLI bundle). */
export function repoClientFile(): string | null {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    const f = join(dir, 'clients', 'python', CLIENT_FILE);
    if (existsSync(f)) return f;
    if (dirname(dir) === dir) return null;
  }
}

/** An existing non-empty --out is refused unless --force; with it, the paths the export writes are removed first. */
async function prepareOut(out: string, force: boolean, paths: readonly string[]): Promise<void> {
  const s = await stat(out).catch(() => null);
  if (s && !s.isDirectory()) throw new ExportError(`--out ${out}: exists and is not a folder`);
  if (s && (await readdir(out)).length > 0) {
    if (!force)
      throw new ExportError(`--out ${out}: exists and is not empty; choose a new folder, or pass --force to write over the export there`);
    const tops = [...new Set(paths.map((p) => p.split('/')[0]!))];
    for (const p of tops) await rm(join(out, p), { recursive: true, force: true });
  }
}

export async function exportRun(o: ExportOptions): Promise<ExportResult> {
  const opened = await openRun(o.run, o.checkpoint ?? 'final');
  const policy = await exportPolicy(opened, o.model);
  const { cfg } = opened;
  const setting: PromptFormatSetting = (cfg as { promptFormat?: PromptFormatSetting }).promptFormat ?? 'auto';
  const format = setting === 'chat' || (setting === 'auto' && policy.chatTemplate) ? 'chat' : 'completion';
  const run: ExportRun = { cfg, seed: opened.seed, rl: opened.rl, heldout: opened.heldout, format, checkpoint: opened.checkpoint.kind };
  const mapping = MAPPINGS[o.to](run);
  const name = basename(resolve(o.run));
  const ctx: LaunchContext = {
    run,
    mapping,
    rows: taskRows(opened.rl, opened.heldout, cfg.tasks.suite?.name),
    name,
    serveUrl: o.serveUrl,
    family: policy.family,
  };
  // veRL renders every prompt through the chat template: a completion-format run gets one that passes the code through
  const passThrough = o.to === 'verl' && format === 'completion';
  const model = passThrough ? withChatTemplate(policy.model, PASS_THROUGH_TEMPLATE) : policy.model;
  const client = o.clientFile === undefined ? repoClientFile() : o.clientFile;
  const files = new Map<string, Uint8Array | string>();
  for (const [f, b] of model) files.set(`model/${f}`, b);
  for (const [f, b] of policy.adapter ?? []) files.set(`adapter/${f}`, b);
  for (const [f, b] of LAUNCH_FILES[o.to](ctx)) files.set(f, b);
  files.set('tasks.jsonl', jsonl([...opened.rl, ...opened.heldout]));
  files.set('reward.json', `${JSON.stringify(cfg.reward, null, 2)}\n`);
  const d: DocsInput = {
    ctx,
    trainer: o.to,
    policy: policy.describe,
    checkpoint: opened.checkpoint.path,
    adapter: policy.adapter !== null,
    clientCopied: client !== null,
    passThroughTemplate: passThrough,
  };
  files.set('README.md', readme(d));
  files.set('NOTES.md', notes(d));
  files.set(
    'export.json',
    `${JSON.stringify(
      {
        run: resolve(o.run),
        seed: opened.seed,
        trainer: o.to,
        checkpoint: {
          kind: opened.checkpoint.kind,
          path: opened.checkpoint.path,
          finished: opened.finished,
          iterations: opened.iterations,
        },
        promptFormat: format,
        policy: policy.describe,
        serveUrl: o.serveUrl,
        mapped: mapping.mapped,
        notes: mapping.notes,
      },
      null,
      2,
    )}\n`,
  );
  const paths = [...files.keys(), ...(client ? [CLIENT_FILE] : [])];
  await prepareOut(o.out, o.force === true, paths);
  for (const [f, b] of files) {
    const p = join(o.out, f);
    await mkdir(dirname(p), { recursive: true });
    await writeFile(p, b, f.endsWith('.sh') ? { mode: 0o755 } : undefined);
  }
  if (client) await copyFile(client, join(o.out, CLIENT_FILE));
  const warnings = client ? [] : [`copy clients/python/${CLIENT_FILE} of Code RL Lab into ${o.out}: the reward function imports it`];
  return { out: o.out, files: paths.sort(), mapping, warnings };
}
