/**
 * The built-in task set: every concept in every family, split into train (with reference
 * solutions, for SFT), val (train-like, for SFT's early stopping), rl (tests only, for the
 * reward model's samples and PPO) and heldout (tests only, for evaluation).
 *
 * Splits are drawn per template over its constants, seeded: each template has constants in
 * train, rl and heldout, and a concept (template, constant) lands in one split for all three
 * families, so the held-out functions are disjoint by construction from everything the policy
 * trains on, while every kind of function is taught.
 */
import type { Task } from '../../tasks/types';
import { Rng, shuffle } from '../../util/random';
import { allConcepts, operatorBugs, TEMPLATES, type Concept } from './concepts';
import { EXAMPLES, FAMILIES, makeTask, type Family, type GeneratedTask, type Split } from './families';

export { FAMILIES, FAMILY_DOC, type Family, type GeneratedTask, type Split, type TaskMeta } from './families';
export { TEMPLATES, allConcepts, type Concept, type Template } from './concepts';

export interface TaskSetOptions {
  seed: number;
  /** families to include (default all) */
  families?: readonly Family[];
  /** share of each template's constants held out for evaluation (at least one) */
  heldoutShare?: number;
  /** share for RL (at least one) */
  rlShare?: number;
  /** share of train tasks set aside for SFT validation */
  valShare?: number;
  /**
   * 'concept' (default): a concept's tasks in every family land in one split, so no held-out
   * function is ever a train or RL solution. 'task': each (family, concept) task is drawn on its
   * own (stratified by family and template), so a held-out task's function may be taught in
   * another family: the splits share no task, but skills transfer between them.
   */
  splitBy?: 'concept' | 'task';
  /**
   * Share of train and val demonstrations replaced by one of the concept's plausible bugs
   * (seeded; meta.noisy marks them, meta.demonstration holds the text). Real demonstrations hold
   * mistakes; SFT imitates them and only execution feedback can tell. Default 0.
   */
  noise?: number;
  /**
   * Which bugs a noisy demonstration is drawn from: 'any' of the concept's plausible bugs
   * (default), or 'operator': only those that keep the constant (a wrong operation, the same
   * mistake for every constant of the template, which RL on other constants can unlearn).
   */
  noiseBugs?: 'any' | 'operator';
}

export interface TaskSet {
  seed: number;
  train: GeneratedTask[];
  val: GeneratedTask[];
  rl: GeneratedTask[];
  heldout: GeneratedTask[];
}

/** concept key -> split (train or rl or heldout), seeded and stratified by template. */
export function splitConcepts(seed: number, heldoutShare = 0.25, rlShare = 0.25): Map<string, Exclude<Split, 'val'>> {
  if (!(heldoutShare > 0 && rlShare > 0 && heldoutShare + rlShare < 1)) {
    throw new Error(`task split: heldoutShare (${heldoutShare}) and rlShare (${rlShare}) must be > 0 and sum to < 1`);
  }
  const rng = new Rng(seed);
  const out = new Map<string, Exclude<Split, 'val'>>();
  const byTemplate = new Map<string, Concept[]>();
  for (const c of allConcepts()) byTemplate.set(c.template.id, [...(byTemplate.get(c.template.id) ?? []), c]);
  for (const t of TEMPLATES) {
    const cs = shuffle([...byTemplate.get(t.id)!], rng);
    const nHeld = Math.max(1, Math.round(cs.length * heldoutShare));
    const nRl = Math.max(1, Math.round(cs.length * rlShare));
    if (nHeld + nRl >= cs.length) throw new Error(`task split: template ${t.id} has too few constants (${cs.length}) for three splits`);
    cs.forEach((c, i) => out.set(c.key, i < nHeld ? 'heldout' : i < nHeld + nRl ? 'rl' : 'train'));
  }
  return out;
}

export function buildTaskSet(opts: TaskSetOptions): TaskSet {
  const { seed } = opts;
  if (!Number.isInteger(seed)) throw new Error(`task set: seed must be an integer, got ${seed}`);
  const families = opts.families ?? FAMILIES;
  for (const f of families)
    if (!FAMILIES.includes(f)) throw new Error(`task set: unknown family "${f}" (families: ${FAMILIES.join(', ')})`);
  const splitBy = opts.splitBy ?? 'concept';
  if (splitBy !== 'concept' && splitBy !== 'task') throw new Error(`task set: splitBy must be concept or task, got "${String(splitBy)}"`);
  const set: TaskSet = { seed, train: [], val: [], rl: [], heldout: [] };
  const shared = splitConcepts(seed, opts.heldoutShare, opts.rlShare);
  const perFamily = new Map(
    families.map((f, i) => [f, splitBy === 'task' ? splitConcepts((seed * 7919 + i + 1) >>> 0, opts.heldoutShare, opts.rlShare) : shared]),
  );
  for (const concept of allConcepts()) {
    for (const f of families) {
      const split = perFamily.get(f)!.get(concept.key)!;
      set[split].push(makeTask(f, concept, split, seed));
    }
  }
  const noise = opts.noise ?? 0;
  if (!(noise >= 0 && noise < 1)) throw new Error(`task set: noise must be in [0, 1), got ${noise}`);
  const noiseBugs = opts.noiseBugs ?? 'any';
  if (noiseBugs !== 'any' && noiseBugs !== 'operator')
    throw new Error(`task set: noiseBugs must be any or operator, got "${String(noiseBugs)}"`);
  if (noise > 0) {
    const nrng = new Rng(seed ^ 0x6e015e);
    const concepts = new Map(allConcepts().map((c) => [c.key, c]));
    for (const t of set.train) {
      if (nrng.next() >= noise) continue;
      const concept = concepts.get(t.meta.concept)!;
      const bugs = noiseBugs === 'operator' ? operatorBugs(concept) : concept.template.bugs(concept.c);
      t.demonstration = `  ${bugs[Math.floor(nrng.next() * bugs.length)]!}\n}\n`;
      t.meta.noisy = true;
    }
  }
  const valShare = opts.valShare ?? 0.1;
  if (!(valShare >= 0 && valShare < 1)) throw new Error(`task set: valShare must be in [0, 1), got ${valShare}`);
  const rng = new Rng(seed ^ 0x5eed);
  shuffle(set.train, rng);
  const nVal = Math.round(set.train.length * valShare);
  set.val = set.train.splice(0, nVal).map((t) => ({ ...t, meta: { ...t.meta, split: 'val' } }));
  const byId = (a: Task, b: Task) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0);
  for (const k of ['train', 'val', 'rl', 'heldout'] as const) set[k].sort(byId);
  return set;
}

/** What fitTaskSet changed: io prompts shown with fewer examples, and tasks that could not be made to fit. */
export interface TaskFit {
  set: TaskSet;
  /** task ids whose io prompt now shows fewer examples */
  shortened: string[];
  /** task ids left out of their split: no shorter form fits */
  dropped: string[];
}

/**
 * The task set with every prompt made to fit: a prompt `fits` rejects is made again, for a
 * built-in `io` task, with fewer input/output examples (down to one; its tests, demonstration and
 * split unchanged), and left out of its split when no form fits. Random example strings tokenize
 * long, so a tokenizer trained on one seed's tasks can make one of that seed's io prompts outgrow
 * the context; this keeps every seed's run going instead of refusing it. `builtIn` false (a
 * suite file's tasks, which this generator did not make for this seed): tasks are only left out.
 */
export function fitTaskSet(set: TaskSet, fits: (task: GeneratedTask) => boolean, builtIn: boolean): TaskFit {
  const concepts = new Map(allConcepts().map((c) => [c.key, c]));
  const shortened: string[] = [];
  const dropped: string[] = [];
  const fit = (t: GeneratedTask): GeneratedTask | null => {
    if (fits(t)) return t;
    const concept = concepts.get(t.meta.concept);
    if (builtIn && t.meta.family === 'io' && concept && t.task_id === `coderl/io/${concept.key}`) {
      for (let n = EXAMPLES - 1; n >= 1; n--) {
        const again = makeTask('io', concept, t.meta.split, set.seed, n);
        if (fits(again)) {
          shortened.push(t.task_id);
          return { ...t, prompt: again.prompt, meta: { ...t.meta, examples: n } };
        }
      }
    }
    dropped.push(t.task_id);
    return null;
  };
  const pick = (ts: GeneratedTask[]) => ts.map(fit).filter((t): t is GeneratedTask => t !== null);
  return {
    set: { seed: set.seed, train: pick(set.train), val: pick(set.val), rl: pick(set.rl), heldout: pick(set.heldout) },
    shortened,
    dropped,
  };
}

/**
 * A split as suite tasks (src/tasks format): train and val carry `canonical_solution`; rl and
 * heldout carry tests only, as the data contract says.
 */
export function toSuite(tasks: readonly GeneratedTask[]): Task[] {
  return tasks.map((t) => {
    const { reference, demonstration, ...task } = t;
    const withSolution = t.meta.split === 'train' || t.meta.split === 'val';
    if (!withSolution) return task;
    // the suite's canonical solution is always correct; a noisy demonstration is kept in meta
    return { ...task, canonical_solution: reference, ...(t.meta.noisy ? { meta: { ...t.meta, demonstration } } : {}) };
  });
}

/** JSONL text of a split, one task a line. */
export function suiteJsonl(tasks: readonly GeneratedTask[]): string {
  return (
    toSuite(tasks)
      .map((t) => JSON.stringify(t))
      .join('\n') + '\n'
  );
}
