/**
 * The rollout browser's state: which stored run and PPO iteration is open, its rollout records
 * (rollouts/iter-NNNN.jsonl, read with rl/run-files.ts from the browser's run storage), the
 * selected rollout, and the what-if reward weights (component name -> weight; null means the
 * weights the run recorded). Pure what-if arithmetic lives in app/rollout/whatif.ts.
 */
import type { StateCreator } from 'zustand';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { LabState } from './index';

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
  };
  /** lists the run's iterations and opens `iteration` (default: the last one) */
  openRollouts(run: string, iteration?: number): Promise<void>;
  selectRollout(index: number | null): void;
  setRewardWeight(name: string, weight: number): void;
  resetRewardWeights(): void;
}

let openSeq = 0;

export const createRolloutSlice: StateCreator<LabState, [], [], RolloutSlice> = (set, get) => {
  const patch = (p: Partial<RolloutSlice['rollouts']>): void => set((s) => ({ rollouts: { ...s.rollouts, ...p } }));
  return {
    rollouts: { status: 'idle', error: null, run: null, iterations: [], iteration: null, records: [], selected: null, weights: null },

    async openRollouts(run, iteration) {
      const seq = ++openSeq;
      patch({ status: 'loading', error: null });
      let iterations: number[] | null = null;
      let it: number | null = null;
      try {
        const [{ runStorage }, { readRollouts, rolloutIterations }] = await Promise.all([import('../rl/store-browser'), import('../rl/run-files')]);
        const store = (await runStorage()).open(run);
        iterations = rolloutIterations(await store.files());
        it = iteration ?? iterations[iterations.length - 1] ?? null;
        if (it === null) {
          if (seq === openSeq) patch({ status: 'ready', run, iterations, iteration: null, records: [], selected: null });
          return;
        }
        const records = await readRollouts(store, it);
        if (records === null) throw new Error(`run "${run}" has no rollouts for iteration ${it} (it has ${iterations.length ? iterations.join(', ') : 'none'})`);
        if (seq !== openSeq) return;
        const same = get().rollouts.run === run && get().rollouts.iteration === it;
        patch({ status: 'ready', run, iterations, iteration: it, records, selected: same ? get().rollouts.selected : null });
      } catch (e) {
        if (seq !== openSeq) return;
        const error = `${run}: ${e instanceof Error ? e.message : String(e)}`;
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
  };
};
