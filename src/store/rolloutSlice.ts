/**
 * The rollout browser's state: which stored run and PPO iteration is open, its rollout records
 * (rollouts/iter-NNNN.jsonl, read with rl/run-files.ts from the browser's run storage), the
 * selected rollout, and the what-if reward weights (component name -> weight; null means the
 * weights the run recorded), and the two sides of a comparison (Code panel, Compare tab), each
 * holding its record so that B can come from another iteration. Pure what-if arithmetic lives in
 * lab/whatif.ts, the comparison's in lab/compare.ts.
 */
import type { StateCreator } from 'zustand';
import { sideOf, type ComparePair, type CompareSide, type SideName } from '../lab/compare';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { LabState } from './index';
import { errorText } from '../util/errors';

export interface RolloutSlice {
  rollouts: {
    status: 'idle' | 'loading' | 'ready' | 'error';
    error: string | null;
    /** the run whose rollouts are open */
    run: string | null;
    /** iterations (1-based) the run has rollouts for */
    iterations: number[];
    iteration: number | null;
    records: RolloutRecord[];
    /** index into records */
    selected: number | null;
    /** what-if weights by component name; null: as recorded */
    weights: Record<string, number> | null;
    /** the rollouts compared: A (left, original) and B (right, modified) */
    compare: ComparePair;
  };
  /** lists the run's iterations and opens `iteration` (default: the last one) */
  openRollouts(run: string, iteration?: number): Promise<void>;
  selectRollout(index: number | null): void;
  setRewardWeight(name: string, weight: number): void;
  resetRewardWeights(): void;
  /** marks record `index` of the open iteration as side `side` of the comparison */
  markForCompare(side: SideName, index: number): void;
  /** sets (null: clears) one side, e.g. a rollout of another iteration */
  setCompareSide(side: SideName, value: CompareSide | null): void;
  swapCompare(): void;
  clearCompare(): void;
}

async function openStore(run: string) {
  const [{ runStorage }, files] = await Promise.all([import('../rl/run-dir-browser'), import('../rl/run-files')]);
  return { store: (await runStorage()).open(run), files };
}

/** The iterations (ascending) a stored run has rollouts for. */
export async function readRunIterations(run: string): Promise<number[]> {
  const { store, files } = await openStore(run);
  return files.rolloutIterations(await store.files());
}

/** The rollouts of one iteration of a stored run; throws when it has none. */
export async function readIterationRollouts(run: string, iteration: number): Promise<RolloutRecord[]> {
  const { store, files } = await openStore(run);
  const records = await files.readRollouts(store, iteration);
  if (records === null) throw new Error(`run "${run}" has no rollouts for iteration ${iteration}`);
  return records;
}

let openSeq = 0;

export const createRolloutSlice: StateCreator<LabState, [], [], RolloutSlice> = (set, get) => {
  const patch = (p: Partial<RolloutSlice['rollouts']>): void => set((s) => ({ rollouts: { ...s.rollouts, ...p } }));
  return {
    rollouts: {
      status: 'idle',
      error: null,
      run: null,
      iterations: [],
      iteration: null,
      records: [],
      selected: null,
      weights: null,
      compare: { a: null, b: null },
    },

    async openRollouts(run, iteration) {
      const seq = ++openSeq;
      patch({ status: 'loading', error: null });
      let iterations: number[] | null = null;
      let it: number | null = null;
      try {
        const {
          store,
          files: { readRollouts, rolloutIterations },
        } = await openStore(run);
        iterations = rolloutIterations(await store.files());
        it = iteration ?? iterations[iterations.length - 1] ?? null;
        if (it === null) {
          if (seq === openSeq) patch({ status: 'ready', run, iterations, iteration: null, records: [], selected: null });
          return;
        }
        const records = await readRollouts(store, it);
        if (records === null)
          throw new Error(
            `run "${run}" has no rollouts for iteration ${it} (it has ${iterations.length ? iterations.join(', ') : 'none'})`,
          );
        if (seq !== openSeq) return;
        const same = get().rollouts.run === run && get().rollouts.iteration === it;
        patch({ status: 'ready', run, iterations, iteration: it, records, selected: same ? get().rollouts.selected : null });
      } catch (e) {
        if (seq !== openSeq) return;
        const error = `${run}: ${errorText(e)}`;
        // with the run's iterations listed, the failed one is open (empty), so another can be picked
        if (iterations === null) patch({ status: 'error', error });
        else patch({ status: 'error', error, run, iterations, iteration: it, records: [], selected: null });
      }
    },

    selectRollout(index) {
      const n = get().rollouts.records.length;
      patch({ selected: index === null || index < 0 || index >= n ? null : index });
    },

    setRewardWeight(name, weight) {
      if (!Number.isFinite(weight) || weight < 0) return;
      patch({ weights: { ...(get().rollouts.weights ?? {}), [name]: weight } });
    },

    resetRewardWeights() {
      patch({ weights: null });
    },

    markForCompare(side, index) {
      const { run, iteration, records, compare } = get().rollouts;
      if (run === null || iteration === null || !records[index]) return;
      patch({ compare: { ...compare, [side]: sideOf(run, iteration, records, index) } });
    },

    setCompareSide(side, value) {
      patch({ compare: { ...get().rollouts.compare, [side]: value } });
    },

    swapCompare() {
      const { a, b } = get().rollouts.compare;
      patch({ compare: { a: b, b: a } });
    },

    clearCompare() {
      patch({ compare: { a: null, b: null } });
    },
  };
};
