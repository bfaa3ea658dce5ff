/**
 * The Monaco view of the selected rollout (`s.rollouts.records[selected]`): prompt (dimmed) +
 * completion in a JavaScript editor, a per-token heatmap of the recorded tokens (log-prob,
 * advantage, KL, entropy) with each token's numbers on hover, markers for syntax errors (owner
 * 'ast'), lint findings ('lint') and failing tests ('tests'), and beside it the reward breakdown
 * (under the what-if weights), the tests and tree-sitter's tree of the code.
 *
 * Editing the completion rescores it after 400 ms of quiet exactly as the run scored it
 * (store/rollout-scoring.ts). The heatmap belongs to the recorded tokens: a token whose text is
 * edited loses its colour, and new text has none.
 *
 * The view's state (the heat scale, the editor's text, the run's context, the recorded analysis,
 * the rescoring) is the rollout slice's `rollouts.view` (store/rolloutSlice.ts); Monaco is behind
 * rollout/monaco-adapter.ts. Monaco is imported on first use, so importing this file does not
 * load the editor.
 */
import { useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { RolloutRecord } from '../../rl/ppo-loop';
import { useLab } from '../../store';
import { detailOf, IDLE_EDIT, type RescoreState, type RolloutDetail } from '../../store/rolloutSlice';
import { HEAT_SCALES, heatClass, heatLegend, type HeatScale } from '../rollout/tokens';
import { AstTree, Breakdown, Tests } from '../rollout/panes';
import '../rollout/view.css';
import { loadRolloutMonaco, type MonacoApi } from '../rollout/monaco';
import { heatItems, markerCounts, RolloutEditor, type Diagnosis } from '../rollout/monaco-adapter';
import { errorText } from '../../util/errors';

// ---------------------------------------------------------------------------------------------
// Components

/** A React key per record object: a reloaded iteration gets fresh editors. */
const recordIds = new WeakMap<RolloutRecord, number>();
let nextRecordId = 0;
const recordKey = (r: RolloutRecord): number => {
  if (!recordIds.has(r)) recordIds.set(r, nextRecordId++);
  return recordIds.get(r)!;
};

export function RolloutView() {
  const record = useLab((s) => (s.rollouts.selected === null ? null : (s.rollouts.records[s.rollouts.selected] ?? null)));
  const [monaco, setMonaco] = useState<MonacoApi | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const wanted = record !== null;

  useEffect(() => {
    if (!wanted || monaco) return;
    let live = true;
    loadRolloutMonaco().then(
      (m) => live && setMonaco(m),
      (e: unknown) => live && setLoadError(`The editor could not be loaded: ${errorText(e)}`),
    );
    return () => {
      live = false;
    };
  }, [wanted, monaco]);

  if (!record) {
    return (
      <p className="empty" data-testid="rollout-view-empty">
        No rollout selected: pick one in the rollout list to see its tokens, reward and tests here.
      </p>
    );
  }
  if (loadError)
    return (
      <p role="alert" className="alert">
        {loadError}
      </p>
    );
  if (!monaco) return <p className="empty">Loading the editor…</p>;
  return <RolloutDetail key={recordKey(record)} monaco={monaco} record={record} />;
}

export default RolloutView;

/** One field of the view's state of `record`; `fallback` until the view has opened it (the first render). */
function useDetail<K extends keyof RolloutDetail>(record: RolloutRecord, key: K, fallback: RolloutDetail[K]): RolloutDetail[K] {
  return useLab((s) => {
    const d = detailOf(s, record);
    return d ? d[key] : fallback;
  });
}

function RolloutDetail({ monaco, record }: { monaco: MonacoApi; record: RolloutRecord }) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<RolloutEditor | null>(null);
  const heatId = useId();
  const heat = useMemo(() => heatItems(record, record.prompt, record.completion), [record]);
  /** the editor exists (its effect ran) */
  const [ready, setReady] = useState(false);
  const weights = useLab((s) => s.rollouts.weights);
  const scale = useLab((s) => s.rollouts.view.scale);
  const setHeatScale = useLab((s) => s.setHeatScale);
  const openDetail = useLab((s) => s.openRolloutDetail);
  const closeDetail = useLab((s) => s.closeRolloutDetail);
  const editCompletion = useLab((s) => s.editRolloutCompletion);
  const setHeatLeft = useLab((s) => s.setRolloutHeatLeft);
  const prompt = useDetail(record, 'prompt', record.prompt);
  const original = useDetail(record, 'original', record.completion);
  const text = useDetail(record, 'text', record.completion);
  const heatLeft = useDetail(record, 'heatLeft', heat.items.length);
  const ctx = useDetail(record, 'context', null);
  const recorded = useDetail(record, 'recorded', null);
  const edit = useDetail(record, 'edit', IDLE_EDIT);

  const task = ctx && 'ok' in ctx ? (ctx.ok.tasks.get(record.task_id) ?? null) : null;
  const language = ctx === null ? null : (task?.language ?? 'javascript');

  // the editor: created once per record, disposed with its markers
  useEffect(() => {
    const ed = new RolloutEditor(monaco, host.current!, {
      record,
      heat: heat.items,
      scale: useLab.getState().rollouts.view.scale,
      ariaLabel: `Rollout of task ${record.task_id}: the prompt (dimmed, read-only) and the completion (editable; edits are rescored)`,
      onEdit: (text, heatLeft) => editCompletion(record, text, heatLeft),
    });
    editor.current = ed;
    openDetail(record, { prompt: ed.prompt, original: ed.original, heat: ed.heatLeft });
    setReady(true);
    return () => {
      closeDetail(record);
      editor.current = null;
      ed.dispose();
    };
  }, [monaco, record, heat, openDetail, closeDetail, editCompletion]);

  // the heat scale: recolour the surviving decorations where they are now
  useEffect(() => {
    if (ready) editor.current?.setScale(scale);
  }, [scale, ready]);

  // the task's language, once the run's tasks are known
  useEffect(() => {
    if (language && ready) editor.current?.setLanguage(language);
  }, [language, ready]);

  // markers from the edited result once there is one, else from the recording
  const diagnosis = useMemo<Diagnosis | null>(
    () => edit.result ?? (recorded ? { analysis: recorded.analysis, tests: record.tests ?? [] } : null),
    [edit.result, recorded, record],
  );
  const markers = useMemo(() => markerCounts(diagnosis), [diagnosis]);
  // (a layout effect: the markers change in the same frame as data-marker-count and the rescore status)
  useLayoutEffect(() => {
    if (diagnosis) editor.current?.showDiagnosis(diagnosis, task?.entry_point);
  }, [diagnosis, task, ready]);

  const reveal = (start: number, end: number): void => editor.current?.reveal(start, end);
  const reset = (): void => {
    const ed = editor.current;
    if (ed) setHeatLeft(record, ed.reset());
  };

  const dirty = text !== original;
  const outline = edit.result ? edit.result.outline : (recorded?.outline ?? null);
  const extras = heat.items.filter((it) => it.kind === 'extra').length;
  const total = markers.ast + markers.lint + markers.tests;

  return (
    <div
      className="rv"
      data-testid="rollout-view"
      data-marker-count={total}
      data-marker-ast={markers.ast}
      data-marker-lint={markers.lint}
      data-marker-tests={markers.tests}
    >
      <div className="rv-main">
        <p className="rv-head">
          Task <strong>{record.task_id}</strong> · iteration {record.iteration + 1} · group {record.group} · turn {record.turn} · verdict{' '}
          <strong>{record.verdict}</strong> · {record.tests_passed}/{record.tests_total} tests · finish {record.finish} ·{' '}
          {record.tokens.length} tokens
        </p>
        <div className="rv-row">
          <label htmlFor={heatId}>Heatmap</label>
          <select id={heatId} data-testid="heatmap-mode" value={scale} onChange={(e) => setHeatScale(e.target.value as HeatScale)}>
            {HEAT_SCALES.map((h) => (
              <option key={h.id} value={h.id} title={h.help}>
                {h.label}
              </option>
            ))}
          </select>
          <ul className="rv-legend" aria-label={`${scale} colour scale`}>
            {heatLegend(scale).map((label, b) => (
              <li key={b} className={heatClass(scale, b)}>
                {label}
              </li>
            ))}
          </ul>
        </div>
        <p className="rv-note">
          {HEAT_SCALES.find((h) => h.id === scale)!.help}. Hover a token for its numbers.
          {extras > 0 && ` The EOS token is shown after the end of the completion.`}
          {!heat.exact &&
            ' Some token texts do not match the completion (a character split across tokens): such tokens share one coloured range.'}
        </p>
        {dirty && (
          <p className="rv-note" data-testid="rollout-heat-edited">
            The heatmap shows the recorded completion's tokens only: {heatLeft} of {heat.items.length} still have their recorded text and
            keep their colour; edited and new text has none.
          </p>
        )}
        <div className="rv-editor" ref={host} style={{ height: editorHeight(prompt + text) }} data-testid="rollout-editor" />
        <div className="rv-row">
          <span className="rv-status" data-testid="rollout-rescore-status" data-state={edit.state} aria-live="polite">
            {statusText(edit.state, edit.note)}
          </span>
          <button type="button" onClick={reset} disabled={!dirty && edit.state !== 'error'}>
            Reset to the recorded completion
          </button>
        </div>
        {ctx && 'ok' in ctx && ctx.ok.rewardNote && <p className="rv-note">{ctx.ok.rewardNote}.</p>}
      </div>
      <div className="rv-side">
        <Breakdown record={record} weights={weights} edited={edit.result} />
        <Tests
          tests={edit.result?.tests ?? record.tests ?? []}
          edited={edit.result !== null}
          record={record}
          prompt={prompt}
          entryPoint={task?.entry_point}
        />
        <section aria-label="Syntax tree">
          <h3>Syntax tree (tree-sitter){edit.result ? ', edited completion' : ''}</h3>
          {outline ? (
            <AstTree outline={outline} onReveal={reveal} />
          ) : (
            <p className="rv-note" data-testid="ast-tree">
              {recorded?.note ?? 'Parsing…'}
            </p>
          )}
        </section>
      </div>
    </div>
  );
}

/** Monaco's height for `text`: every line (19 px each) in view, 8 to 30 lines. */
export function editorHeight(text: string): number {
  const lines = text.split('\n').length + 1;
  return Math.min(30, Math.max(8, lines)) * 19 + 12;
}

function statusText(state: RescoreState, note: string | null): string {
  if (note) return note;
  if (state === 'scoring') return 'Scoring the edited completion…';
  if (state === 'done') return 'Edited completion scored: see the breakdown.';
  return 'Edit the completion to rescore it (what-if).';
}
