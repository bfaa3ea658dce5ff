/**
 * A task set from a user's suite file (src/tasks JSONL, e.g. a split the lab exported, or
 * HumanEval-X) instead of the built-in families. Tasks are drawn into the four splits by task,
 * seeded: held-out and RL tasks need only tests; train and val tasks need a canonical solution
 * (SFT imitates it), so tasks without one fill the held-out and RL splits first.
 *
 * The config names the file by name, size in tasks and SHA-256 (config.tasks.suite); the run
 * directory keeps its text as tasks/suite.jsonl, so a run resumes without the file and a changed
 * file is refused rather than silently mixed into a half-finished run.
 */
import { parseSuite } from '../../tasks/suite';
import { formatIssue, type Task } from '../../tasks/types';
import { Rng, shuffle } from '../../util/random';
import type { GeneratedTask, Split } from './families';
import type { TaskSet } from './index';

/** What config.tasks.suite records about a suite file. */
export interface SuiteRef {
  /** the file's name, as the user picked it (for messages) */
  name: string;
  /** hex SHA-256 of the file's text (UTF-8) */
  sha256: string;
  /** tasks in it */
  tasks: number;
}

/** Where a run directory keeps the suite's text. */
export const SUITE_FILE = 'tasks/suite.jsonl';

export class SuiteSourceError extends Error {
  override readonly name = 'SuiteSourceError';
}

/** Hex SHA-256 of a text (as UTF-8) or of bytes. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Parses a suite's text for use as a run's task source: every load issue is an error (a run must
 * not quietly train on part of a file), and the file must give every split at least one task.
 * Returns the tasks and the reference the config records.
 */
export async function readSuiteSource(text: string, name: string): Promise<{ tasks: Task[]; ref: SuiteRef }> {
  const { items, issues } = parseSuite(text, name);
  if (issues.length) {
    const shown = issues.slice(0, 5).map(formatIssue).join('; ');
    throw new SuiteSourceError(
      `${name}: ${issues.length} problem${issues.length > 1 ? 's' : ''} in the suite: ${shown}${issues.length > 5 ? '; …' : ''}`,
    );
  }
  const withSolution = items.filter((t) => t.canonical_solution !== undefined).length;
  if (items.length < 3)
    throw new SuiteSourceError(`${name}: a run needs at least 3 tasks (train, RL and held-out), the file has ${items.length}`);
  if (withSolution < 1) {
    throw new SuiteSourceError(`${name}: no task has a canonical_solution, so SFT has nothing to imitate; add solutions to some tasks`);
  }
  return { tasks: items, ref: { name, sha256: await sha256Hex(text), tasks: items.length } };
}

export interface SuiteSplitOptions {
  seed: number;
  heldoutShare: number;
  rlShare: number;
  valShare: number;
}

/**
 * Splits a suite's tasks: round(n * heldoutShare) held-out and round(n * rlShare) RL tasks (at
 * least one each), taken from the tasks without a solution first, then at random; the remaining
 * tasks with a solution are train, of which valShare go to val. Tasks without a solution left
 * over go to RL (they have tests). Deterministic in the seed.
 */
export function taskSetFromSuite(tasks: readonly Task[], name: string, o: SuiteSplitOptions): TaskSet {
  const rng = new Rng((o.seed ^ 0x5717e) >>> 0);
  const solved = shuffle(
    tasks.filter((t) => t.canonical_solution !== undefined),
    rng,
  );
  const unsolved = shuffle(
    tasks.filter((t) => t.canonical_solution === undefined),
    rng,
  );
  const n = tasks.length;
  const nHeld = Math.max(1, Math.round(n * o.heldoutShare));
  const nRl = Math.max(1, Math.round(n * o.rlShare));
  // tests-only tasks first, then tasks with solutions, for the two splits that need no solution
  const pool = [...unsolved, ...solved];
  const heldout = pool.slice(0, nHeld);
  const rl = pool.slice(nHeld, nHeld + nRl);
  const rest = pool.slice(nHeld + nRl);
  const train = rest.filter((t) => t.canonical_solution !== undefined);
  rl.push(...rest.filter((t) => t.canonical_solution === undefined));
  if (train.length < 1) {
    throw new SuiteSourceError(
      `${name}: after ${nHeld} held-out and ${nRl} RL tasks no task with a canonical_solution is left for SFT ` +
        `(${solved.length} of ${n} have one); lower tasks.heldoutShare or tasks.rlShare, or add solutions`,
    );
  }
  const nVal = Math.min(train.length - 1, Math.round(train.length * o.valShare));
  const val = train.splice(0, nVal);
  const as =
    (split: Split) =>
    (t: Task): GeneratedTask => {
      const family = typeof t.meta?.family === 'string' && t.meta.family ? t.meta.family : 'suite';
      const reference = t.canonical_solution ?? '';
      const demonstration = typeof t.meta?.demonstration === 'string' ? t.meta.demonstration : reference;
      return {
        ...t,
        meta: { ...t.meta, family, split, concept: String(t.meta?.concept ?? t.task_id), source: name },
        reference,
        demonstration,
      };
    };
  const byId = (a: Task, b: Task) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0);
  return {
    seed: o.seed,
    train: train.map(as('train')).sort(byId),
    val: val.map(as('val')).sort(byId),
    rl: rl.map(as('rl')).sort(byId),
    heldout: heldout.map(as('heldout')).sort(byId),
  };
}
