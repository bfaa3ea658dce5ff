/**
 * Reading a run directory's files back (any RunDir: disk, OPFS, IndexedDB, memory): the
 * metrics lines, the rollouts of each PPO iteration. What the app's curves, rollout browser
 * and run export read; malformed content is an error naming the file and line.
 */
import { canonicalMetrics } from './metric-names';
import type { Metrics, RolloutRecord } from './ppo-loop';
import { readText, type RunDir } from './run-dir';
import { errorText } from '../util/errors';

/** One metrics.jsonl line: its stage, then the stage's numbers (and the alarms' messages). */
export type MetricLine = { stage: string } & Record<string, Metrics[string] | string>;

/** `rollouts/iter-0007.jsonl` -> 7 */
export function rolloutFile(iteration: number): string {
  return `rollouts/iter-${String(iteration).padStart(4, '0')}.jsonl`;
}

/** The iterations (1-based, ascending) a run directory's file list has rollouts for. */
export function rolloutIterations(files: readonly string[]): number[] {
  const out: number[] = [];
  for (const f of files) {
    const m = /^rollouts\/iter-(\d{4,})\.jsonl$/.exec(f);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}

function parseLines<T>(text: string, file: string): T[] {
  const out: T[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(JSON.parse(line) as T);
    } catch (e) {
      throw new Error(`${file} line ${i + 1}: not valid JSON (${errorText(e)})`, { cause: e });
    }
  });
  return out;
}

/**
 * metrics.jsonl, one object per line (`stage` first), with today's metric keys (a run logged
 * before the TRL renames is read with its keys renamed: metric-names.ts); [] when the run has none yet.
 */
export async function readMetrics(store: RunDir): Promise<MetricLine[]> {
  const text = await readText(store, 'metrics.jsonl');
  if (text === null) return [];
  const lines = parseLines<MetricLine>(text, 'metrics.jsonl');
  lines.forEach((l, i) => {
    if (typeof l !== 'object' || l === null || typeof l.stage !== 'string')
      throw new Error(`metrics.jsonl line ${i + 1}: expected an object with a "stage"`);
  });
  return lines.map(canonicalMetrics);
}

/** The rollouts of PPO iteration `iteration` (1-based, as the file is named); null when there is no such file. */
export async function readRollouts(store: RunDir, iteration: number): Promise<RolloutRecord[] | null> {
  const file = rolloutFile(iteration);
  const text = await readText(store, file);
  if (text === null) return null;
  const rows = parseLines<RolloutRecord>(text, file);
  rows.forEach((r, i) => {
    if (typeof r !== 'object' || r === null || typeof r.completion !== 'string' || !Array.isArray(r.tokens) || !Array.isArray(r.logprobs)) {
      throw new Error(`${file} line ${i + 1}: not a rollout record (needs completion, tokens, logprobs)`);
    }
  });
  return rows;
}
