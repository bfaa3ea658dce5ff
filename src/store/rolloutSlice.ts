/**
 * The rollout browser's state: which stored run and PPO iteration is open, its rollout records
 * (rollouts/iter-NNNN.jsonl, read with rl/run-files.ts from the browser's run storage), the
 * selected rollout, and the what-if reward weights (component name -> weight; null means the
 * weights the run recorded), and the two sides of a comparison (Code panel, Compare tab), each
 * holding its record so that B can come from another iteration. Pure what-if arithmetic lives in
 * lab/whatif.ts, the comparison's in lab/compare.ts.
 *
 * Also the rollout view's state (app/panels/RolloutView.tsx, `rollouts.view`): the heatmap's scale,
 * and for the record the view's editor holds, the editor's copy of its prompt and completion, the
 * run's tasks and reward config, the recorded completion's analysis and the rescoring of an edit
 * (after DEBOUNCE_MS of quiet; a later edit drops an earlier result). The editor itself (Monaco,
 * app/rollout/monaco-adapter.ts) stays in the view; the scoring is rollout-scoring.ts.
 */
import type { StateCreator } from 'zustand';
import { sideOf, type ComparePair, type CompareSide, type SideName } from '../lab/compare';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { AnalysisResult } from '../analysis';
import type { LabState } from './index';
import { errorText } from '../util/errors';
import { analyse, runContext, scoreEdit, type Outline, type RunContext, type Scored } from './rollout-scoring';

/** What the rollout view's heatmap colours tokens by. */
export type HeatScale = 'logprob' | 'advantage' | 'kl' | 'entropy';

/** The rescoring of an edited completion. */
export type RescoreState = 'idle' | 'scoring' | 'done' | 'error';

export interface RolloutEdit {
  state: RescoreState;
  /** what went wrong, or why the edit is not scored */
  note: string | null;
  result: Scored | null;
}

/** The rollout view's state of the record its editor holds. */
export interface RolloutDetail {
  /** the record: the view reads this state only for the record it shows */
  record: RolloutRecord;
  /** the run open when the view opened the record: its tasks and reward score edits */
  run: string | null;
  /** the prompt as the editor holds it (line endings normalised) */
  prompt: string;
  /** the recorded completion as the editor holds it */
  original: string;
  /** the completion in the editor; null when the prompt part was edited */
  text: string | null;
  /** heatmap decorations whose token still has its recorded text */
  heatLeft: number;
  /** the run's tasks and reward config; null while loading */
  context: { ok: RunContext } | { error: string } | null;
  /** the recorded completion's analysis and tree (not stored in the record); null while loading */
  recorded: { analysis: AnalysisResult | null; outline: Outline | null; note: string | null } | null;
  edit: RolloutEdit;
}

/** Quiet time after an edit before it is rescored. */
export const DEBOUNCE_MS = 400;
export const IDLE_EDIT: RolloutEdit = { state: 'idle', note: null, result: null };
const PROMPT_EDITED = 'The prompt is read-only: undo (Ctrl+Z) or reset to the recorded completion.';

/** The view's state of `record`; null unless the view's editor holds that record. */
export function detailOf(s: Pick<LabState, 'rollouts'>, record: RolloutRecord): RolloutDetail | null {
  const d = s.rollouts.view.detail;
  return d && d.record === record ? d : null;
}

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
    /** the rollout view (Code panel, Rollout tab) */
    view: {
      scale: HeatScale;
      /** null when no editor holds a record */
      detail: RolloutDetail | null;
    };
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
  setHeatScale(scale: HeatScale): void;
  /**
   * The view's editor holds `record`: its state starts afresh (the editor's prompt and completion,
   * `heat` decorations), and the open run's tasks and reward config, then the recorded
   * completion's analysis, load.
   */
  openRolloutDetail(record: RolloutRecord, editor: { prompt: string; original: string; heat: number }): void;
  /** The editor of `record` is gone: its pending rescoring is dropped. */
  closeRolloutDetail(record: RolloutRecord): void;
  /**
   * The editor's text changed: `text` is the completion (null when the prompt part changed),
   * `heatLeft` the heat decorations left. A new completion is rescored after DEBOUNCE_MS of quiet.
   */
  editRolloutCompletion(record: RolloutRecord, text: string | null, heatLeft: number): void;
  /** The heat decorations left in the editor of `record` (all again after a reset). */
  setRolloutHeatLeft(record: RolloutRecord, heatLeft: number): void;
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
/** the view's detail: bumped when it opens or closes a record, so a late load is dropped */
let detailSeq = 0;
/** the rescoring of edits: bumped by each edit, so a late result is dropped */
let editSeq = 0;
let editTimer: ReturnType<typeof setTimeout> | undefined;

export const createRolloutSlice: StateCreator<LabState, [], [], RolloutSlice> = (set, get) => {
  const patch = (p: Partial<RolloutSlice['rollouts']>): void => set((s) => ({ rollouts: { ...s.rollouts, ...p } }));
  const patchView = (p: Partial<RolloutSlice['rollouts']['view']>): void =>
    set((s) => ({ rollouts: { ...s.rollouts, view: { ...s.rollouts.view, ...p } } }));
  /** patches the detail of `record` if the view still holds it */
  const patchDetail = (record: RolloutRecord, p: Partial<RolloutDetail>): void => {
    const d = detailOf(get(), record);
    if (d) patchView({ detail: { ...d, ...p } });
  };
  const stopRescoring = (): void => {
    editSeq++;
    clearTimeout(editTimer);
  };

  /** the run's context, then the recorded completion's analysis, while the view holds `record` */
  async function loadDetail(record: RolloutRecord, run: string | null, prompt: string, original: string): Promise<void> {
    const my = detailSeq;
    const alive = (): boolean => my === detailSeq && detailOf(get(), record) !== null;
    let context: RolloutDetail['context'];
    if (!run) context = { error: 'no run is open, so the task is unknown' };
    else {
      try {
        context = { ok: await runContext(run) };
      } catch (e) {
        context = { error: errorText(e) };
      }
      if (!alive()) return;
    }
    patchDetail(record, { context });
    const language = ('ok' in context ? context.ok.tasks.get(record.task_id)?.language : undefined) ?? 'javascript';
    if (language !== 'javascript') {
      patchDetail(record, { recorded: { analysis: null, outline: null, note: `Static analysis is not measured for ${language}.` } });
      return;
    }
    let recorded: RolloutDetail['recorded'];
    try {
      const a = await analyse(language, prompt, original);
      recorded = { analysis: a?.analysis ?? null, outline: a?.outline ?? null, note: null };
    } catch (e) {
      recorded = { analysis: null, outline: null, note: `Static analysis could not be loaded: ${errorText(e)}` };
    }
    if (alive()) patchDetail(record, { recorded });
  }

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
      view: { scale: 'logprob', detail: null },
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

    setHeatScale(scale) {
      patchView({ scale });
    },

    openRolloutDetail(record, { prompt, original, heat }) {
      stopRescoring();
      detailSeq++;
      const run = get().rollouts.run;
      patchView({
        detail: { record, run, prompt, original, text: original, heatLeft: heat, context: null, recorded: null, edit: IDLE_EDIT },
      });
      void loadDetail(record, run, prompt, original);
    },

    closeRolloutDetail(record) {
      if (!detailOf(get(), record)) return;
      stopRescoring();
      detailSeq++;
      patchView({ detail: null });
    },

    editRolloutCompletion(record, text, heatLeft) {
      const d = detailOf(get(), record);
      if (!d) return;
      if (text === d.text) {
        if (heatLeft !== d.heatLeft) patchDetail(record, { heatLeft });
        return;
      }
      stopRescoring();
      if (text === null) {
        patchDetail(record, { text, heatLeft, edit: { state: 'error', note: PROMPT_EDITED, result: null } });
        return;
      }
      if (text === d.original) {
        patchDetail(record, { text, heatLeft, edit: IDLE_EDIT });
        return;
      }
      // the last result stays on show while the new text is scored
      patchDetail(record, { text, heatLeft, edit: { ...d.edit, state: 'scoring', note: null } });
      const my = editSeq;
      const current = (): boolean => my === editSeq && detailOf(get(), record) !== null;
      editTimer = setTimeout(() => {
        scoreEdit(record, d.run, d.prompt, text).then(
          (result) => {
            if (current()) patchDetail(record, { edit: { state: 'done', note: null, result } });
          },
          (e: unknown) => {
            if (current()) patchDetail(record, { edit: { state: 'error', note: errorText(e), result: null } });
          },
        );
      }, DEBOUNCE_MS);
    },

    setRolloutHeatLeft(record, heatLeft) {
      patchDetail(record, { heatLeft });
    },
  };
};
