/**
 * A run directory opened for export: its config (validated again), its RL and held-out tasks,
 * whether it finished, and the checkpoint chosen (`--checkpoint sft|rl|PATH`; by default the
 * final policy of a finished run). Every refusal is an ExportError naming the path or the flag.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { validateRlConfig, type RlConfig } from '../rl/config';
import { parseSuite } from '../tasks/suite';
import { formatIssue, type Task } from '../tasks/types';
import { errorText } from '../util/errors';

export class ExportError extends Error {
  override readonly name = 'ExportError';
}

export type CheckpointChoice = 'final' | 'sft' | 'rl' | { path: string };

export interface OpenedRun {
  dir: string;
  cfg: RlConfig;
  seed: number;
  backend: string;
  rl: Task[];
  heldout: Task[];
  /** summary.json is there */
  finished: boolean;
  /** PPO iterations finished (ppo-state.json) */
  iterations: number;
  checkpoint: { kind: 'rl' | 'sft' | 'file'; path: string; bytes: Uint8Array };
}

async function readOptional(path: string): Promise<Uint8Array | null> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ExportError(`${path}: cannot be read (${errorText(e)})`);
  }
}

function parseJson<T>(bytes: Uint8Array, path: string): T {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as T;
  } catch (e) {
    throw new ExportError(`${path}: not valid JSON (${errorText(e)})`);
  }
}

async function readTasks(dir: string, split: 'rl' | 'heldout'): Promise<Task[]> {
  const path = join(dir, 'tasks', `${split}.jsonl`);
  const bytes = await readOptional(path);
  if (!bytes)
    throw new ExportError(
      `--run ${dir}: no tasks/${split}.jsonl: the run stopped before its setup wrote the tasks; rerun its coderl train command`,
    );
  const { items, issues } = parseSuite(new TextDecoder().decode(bytes), path);
  if (issues.length) throw new ExportError(`${formatIssue(issues[0]!)}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`);
  if (!items.length) throw new ExportError(`${path}: no tasks`);
  return items;
}

/** The checkpoint file a choice names, read; refusals say which files the run has. */
async function readCheckpoint(dir: string, choice: CheckpointChoice, finished: boolean): Promise<OpenedRun['checkpoint']> {
  if (typeof choice === 'object') {
    const bytes = await readOptional(choice.path);
    if (!bytes) throw new ExportError(`--checkpoint ${choice.path}: no such file`);
    return { kind: 'file', path: choice.path, bytes };
  }
  if (choice === 'final' && !finished)
    throw new ExportError(
      `--run ${dir}: the run is not finished (no summary.json): finish it (rerun its coderl train command, which resumes), or export what it has with --checkpoint sft or --checkpoint rl`,
    );
  const policy = join(dir, 'policy.ckpt');
  const sft = join(dir, 'sft.ckpt');
  const want = choice === 'sft' ? [sft] : choice === 'rl' ? [policy] : [policy, sft]; // a run of 0 RL iterations ends at SFT
  for (const path of want) {
    const bytes = await readOptional(path);
    if (bytes) return { kind: path === sft ? 'sft' : 'rl', path, bytes };
  }
  throw new ExportError(
    `--run ${dir}: no ${want.map((p) => p.slice(dir.length + 1)).join(' or ')}${choice === 'rl' ? ': RL has not finished an iteration yet' : ''}`,
  );
}

export async function openRun(dir: string, choice: CheckpointChoice = 'final'): Promise<OpenedRun> {
  const s = await stat(dir).catch(() => null);
  if (!s) throw new ExportError(`--run ${dir}: no such directory`);
  if (!s.isDirectory()) throw new ExportError(`--run ${dir}: not a directory (a run directory is what coderl train --out DIR writes)`);
  const cfgPath = join(dir, 'config.json');
  const cfgBytes = await readOptional(cfgPath);
  if (!cfgBytes) throw new ExportError(`--run ${dir}: no config.json, so not a run directory (coderl train --out DIR writes one)`);
  const stored = parseJson<{ cfg?: unknown; seed?: unknown; backend?: unknown }>(cfgBytes, cfgPath);
  let cfg: RlConfig;
  try {
    cfg = validateRlConfig(structuredClone(stored.cfg));
  } catch (e) {
    throw new ExportError(`${cfgPath}: ${errorText(e)}`);
  }
  if (typeof stored.seed !== 'number') throw new ExportError(`${cfgPath}: no seed`);
  const [rl, heldout] = [await readTasks(dir, 'rl'), await readTasks(dir, 'heldout')];
  const finished = (await readOptional(join(dir, 'summary.json'))) !== null;
  const ppoBytes = await readOptional(join(dir, 'ppo-state.json'));
  const iterations = ppoBytes ? (parseJson<{ iteration?: number }>(ppoBytes, join(dir, 'ppo-state.json')).iteration ?? 0) : 0;
  const checkpoint = await readCheckpoint(dir, choice, finished);
  return {
    dir,
    cfg,
    seed: stored.seed,
    backend: typeof stored.backend === 'string' ? stored.backend : 'cpu',
    rl,
    heldout,
    finished,
    iterations,
    checkpoint,
  };
}
