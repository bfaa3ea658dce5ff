/** The rollout view's state in the rollout slice: opening a record, edits and their debounced rescoring, closing. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { create } from 'zustand';
import type { RolloutRecord } from '../rl/ppo-loop';
import type { LabState } from './index';
import type { RunContext, Scored } from './rollout-scoring';
import { createRolloutSlice, DEBOUNCE_MS, detailOf, type RolloutSlice } from './rolloutSlice';

const scoring = vi.hoisted(() => ({
  runContext: vi.fn<(run: string) => Promise<RunContext>>(),
  analyse: vi.fn(),
  scoreEdit: vi.fn<(r: RolloutRecord, run: string | null, prompt: string, completion: string) => Promise<Scored>>(),
}));
vi.mock('./rollout-scoring', () => scoring);

const PROMPT = 'function f(x) {\n';
const rec = (completion: string): RolloutRecord => ({ task_id: 't/1', prompt: PROMPT, completion }) as RolloutRecord;
const scored = (completion: string): Scored => ({
  completion,
  analysis: null,
  outline: null,
  tests: [],
  verdict: 'passed',
  tests_passed: 1,
  tests_total: 1,
  components: [],
});

function store() {
  const s = create<RolloutSlice>()(
    (...a) => createRolloutSlice(...(a as unknown as Parameters<typeof createRolloutSlice>)) as RolloutSlice & Partial<LabState>,
  );
  const r = rec('  return x;\n}\n');
  s.setState((st) => ({
    rollouts: { ...st.rollouts, status: 'ready', run: 'r', iterations: [1], iteration: 1, records: [r], selected: 0 },
  }));
  return { s, r, detail: () => detailOf(s.getState(), r) };
}

const flush = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers();
  scoring.runContext.mockResolvedValue({
    tasks: new Map([['t/1', { language: 'javascript' }]]),
    reward: {},
    rewardNote: null,
  } as unknown as RunContext);
  scoring.analyse.mockResolvedValue(null);
  scoring.scoreEdit.mockImplementation(async (_r, _run, _p, completion) => scored(completion));
});
afterEach(() => {
  vi.useRealTimers();
  vi.clearAllMocks();
});

describe("the rollout view's state", () => {
  it('keeps the heat scale across records', () => {
    const { s } = store();
    expect(s.getState().rollouts.view.scale).toBe('logprob');
    s.getState().setHeatScale('kl');
    expect(s.getState().rollouts.view.scale).toBe('kl');
  });

  it("opens a record with the editor's text, then loads the run's context and the recorded analysis", async () => {
    const { s, r, detail } = store();
    expect(detail()).toBeNull();
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 5 });
    expect(detail()).toMatchObject({ run: 'r', text: r.completion, heatLeft: 5, context: null, recorded: null, edit: { state: 'idle' } });
    await flush();
    expect(scoring.runContext).toHaveBeenCalledWith('r');
    expect(scoring.analyse).toHaveBeenCalledWith('javascript', PROMPT, r.completion);
    expect(detail()!.context).toMatchObject({ ok: { rewardNote: null } });
    expect(detail()!.recorded).toEqual({ analysis: null, outline: null, note: null });
  });

  it('says why there is no context without a run, and skips the analysis of a language other than JavaScript', async () => {
    const { s, r, detail } = store();
    s.setState((st) => ({ rollouts: { ...st.rollouts, run: null } }));
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 0 });
    expect(detail()!.context).toEqual({ error: 'no run is open, so the task is unknown' });
    await flush();
    s.setState((st) => ({ rollouts: { ...st.rollouts, run: 'r' } }));
    scoring.runContext.mockResolvedValue({
      tasks: new Map([['t/1', { language: 'python' }]]),
      reward: {},
      rewardNote: null,
    } as unknown as RunContext);
    scoring.analyse.mockClear();
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 0 });
    await flush();
    expect(scoring.analyse).not.toHaveBeenCalled();
    expect(detail()!.recorded).toEqual({ analysis: null, outline: null, note: 'Static analysis is not measured for python.' });
  });

  it('rescores an edit after the quiet time, drops an earlier edit, and goes back to idle at the recorded text', async () => {
    const { s, r, detail } = store();
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 5 });
    await flush();
    s.getState().editRolloutCompletion(r, '  return 1;\n}\n', 3);
    expect(detail()).toMatchObject({ text: '  return 1;\n}\n', heatLeft: 3, edit: { state: 'scoring', note: null, result: null } });
    await vi.advanceTimersByTimeAsync(DEBOUNCE_MS - 50);
    s.getState().editRolloutCompletion(r, '  return 2;\n}\n', 3);
    await vi.advanceTimersByTimeAsync(DEBOUNCE_MS - 50);
    expect(scoring.scoreEdit).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(100);
    expect(scoring.scoreEdit).toHaveBeenCalledTimes(1);
    expect(scoring.scoreEdit).toHaveBeenCalledWith(r, 'r', PROMPT, '  return 2;\n}\n');
    expect(detail()!.edit).toEqual({ state: 'done', note: null, result: scored('  return 2;\n}\n') });
    // a further edit keeps the last result on show while it is scored
    s.getState().editRolloutCompletion(r, '  return 3;\n}\n', 2);
    expect(detail()!.edit).toMatchObject({ state: 'scoring', result: { completion: '  return 2;\n}\n' } });
    s.getState().editRolloutCompletion(r, r.completion, 2);
    expect(detail()!.edit).toEqual({ state: 'idle', note: null, result: null });
    await vi.advanceTimersByTimeAsync(DEBOUNCE_MS * 2);
    expect(scoring.scoreEdit).toHaveBeenCalledTimes(1);
    s.getState().setRolloutHeatLeft(r, 5);
    expect(detail()!.heatLeft).toBe(5);
  });

  it('reports an edited prompt and a failed rescoring as errors', async () => {
    const { s, r, detail } = store();
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 5 });
    s.getState().editRolloutCompletion(r, null, 4);
    expect(detail()!.edit).toEqual({
      state: 'error',
      note: 'The prompt is read-only: undo (Ctrl+Z) or reset to the recorded completion.',
      result: null,
    });
    // the same text again (another change of the prompt) changes only the heat left
    s.getState().editRolloutCompletion(r, null, 3);
    expect(detail()).toMatchObject({ heatLeft: 3, edit: { state: 'error' } });
    scoring.scoreEdit.mockRejectedValueOnce(new Error('The sandbox failed: boom'));
    s.getState().editRolloutCompletion(r, 'x', 3);
    await vi.advanceTimersByTimeAsync(DEBOUNCE_MS);
    expect(detail()!.edit).toEqual({ state: 'error', note: 'The sandbox failed: boom', result: null });
  });

  it('drops a pending rescoring and late loads once the record is closed, and ignores another record', async () => {
    const { s, r, detail } = store();
    let resolve!: (c: RunContext) => void;
    scoring.runContext.mockReturnValueOnce(new Promise((res) => (resolve = res)));
    s.getState().openRolloutDetail(r, { prompt: PROMPT, original: r.completion, heat: 5 });
    s.getState().editRolloutCompletion(r, 'x', 1);
    const other = rec('other');
    s.getState().closeRolloutDetail(other); // not the one open
    expect(detail()).not.toBeNull();
    s.getState().editRolloutCompletion(other, 'y', 0);
    expect(detail()!.text).toBe('x');
    s.getState().closeRolloutDetail(r);
    expect(s.getState().rollouts.view.detail).toBeNull();
    resolve({ tasks: new Map(), reward: {}, rewardNote: null } as unknown as RunContext);
    await vi.advanceTimersByTimeAsync(DEBOUNCE_MS * 2);
    expect(scoring.scoreEdit).not.toHaveBeenCalled();
    expect(scoring.analyse).not.toHaveBeenCalled();
    expect(s.getState().rollouts.view.detail).toBeNull();
  });
});
