/**
 * The Monaco view of the selected rollout (`s.rollouts.records[selected]`): prompt (dimmed) +
 * completion in a JavaScript editor, a per-token heatmap of the recorded tokens (log-prob,
 * advantage, KL, entropy) with each token's numbers on hover, markers for syntax errors (owner
 * 'ast'), lint findings ('lint') and failing tests ('tests'), and beside it the reward breakdown
 * (under the what-if weights), the tests and tree-sitter's tree of the code.
 *
 * Editing the completion rescores it after 400 ms of quiet exactly as the run scored it: the
 * task's tests from the run's tasks/rl.jsonl (a repair turn with the record's own prompt), the
 * run's reward config from config.json, the page's one sandbox pool (worker) and analyzer
 * (store/scorerSlice.ts). Components the page cannot measure (the reward model's score) keep
 * their recorded value. The heatmap belongs to the recorded tokens: a token whose text is
 * edited loses its colour, and new text has none.
 *
 * Monaco is imported on first use, so importing this file does not load the editor.
 */
import { useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type * as M from 'monaco-editor';
import type { AnalysisResult } from '../../analysis';
import { computeReward, DEFAULT_REWARD, validateRewardConfig, type RewardConfig } from '../../reward/reward';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import type { Task } from '../../tasks/types';
import { useLab } from '../../store';
import { getAnalyzer, runInSandbox } from '../../store/scorerSlice';
import {
  alignTokens,
  HEAT_SCALES,
  heatBucket,
  heatClass,
  heatLegend,
  mean,
  scaleValue,
  testLine,
  tokenHover,
  tokenInfo,
  type HeatScale,
  type TokenSpan,
} from '../rollout/tokens';
import type { RewardWeights } from '../../lab/whatif';
import { AstTree, Breakdown, OUTLINE_NODES, Tests, type Outline, type Scored } from '../rollout/panes';
import '../rollout/view.css';
import { loadRolloutMonaco, type MonacoApi } from '../rollout/monaco';
import { errorText } from '../../util/errors';

const DEBOUNCE_MS = 400;
const OWNERS = ['ast', 'lint', 'tests'] as const;
const message = (e: unknown): string => errorText(e);

// ---------------------------------------------------------------------------------------------
// Loading: Monaco once per page, each run's tasks and reward config once per run

interface RunContext {
  tasks: Map<string, Task>;
  reward: RewardConfig;
  /** why the default reward config is used, if it is */
  rewardNote: string | null;
}

const runContexts = new Map<string, Promise<RunContext>>();

/** tasks/rl.jsonl and config.json's reward of a stored run, cached per run name. */
function runContext(run: string): Promise<RunContext> {
  let p = runContexts.get(run);
  if (!p) {
    p = (async () => {
      const [{ runStorage }, { readJson }, { loadSuite }] = await Promise.all([
        import('../../rl/run-dir-browser'),
        import('../../rl/run-dir'),
        import('../../tasks/suite'),
      ]);
      const store = (await runStorage()).open(run);
      const bytes = await store.read('tasks/rl.jsonl');
      if (!bytes) throw new Error(`run "${run}" has no tasks/rl.jsonl, so its tasks' tests are unknown`);
      const { items } = await loadSuite(bytes, 'tasks/rl.jsonl');
      const config = await readJson<{ cfg?: { reward?: unknown } }>(store, 'config.json');
      let reward = DEFAULT_REWARD;
      let rewardNote: string | null = 'config.json has no reward config: the default reward config is used';
      if (config?.cfg?.reward !== undefined) {
        try {
          reward = validateRewardConfig(config.cfg.reward, 'config.reward');
          rewardNote = null;
        } catch (e) {
          rewardNote = `${message(e)}: the default reward config is used`;
        }
      }
      return { tasks: new Map(items.map((t) => [t.task_id, t])), reward, rewardNote };
    })();
    p.catch(() => runContexts.delete(run));
    runContexts.set(run, p);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// The heatmap layer: one decoration per token (per group of tokens sharing a range)

interface HeatItem {
  /** token indices (several for an `approx` group) */
  tokens: number[];
  kind: TokenSpan['kind'];
  /** editor offsets when the editor shows the recorded program */
  start: number;
  end: number;
  /** the recorded text of the range: the decoration is dropped once it changes */
  text: string;
}

function heatItems(r: RolloutRecord, prompt: string, completion: string): { items: HeatItem[]; exact: boolean } {
  const { spans, exact } = alignTokens(r.tokens, completion, prompt.length);
  const program = prompt + completion;
  const items: HeatItem[] = [];
  spans.forEach((s, i) => {
    if (s.group !== i) items[items.length - 1]!.tokens.push(i);
    else items.push({ tokens: [i], kind: s.kind, start: s.start, end: s.end, text: program.slice(s.start, s.end) });
  });
  return { items, exact };
}

interface EditorSession {
  monaco: MonacoApi;
  editor: M.editor.IStandaloneCodeEditor;
  model: M.editor.ITextModel;
  heat: M.editor.IEditorDecorationsCollection;
  /** the dimmed prompt */
  prompt: M.editor.IEditorDecorationsCollection;
  /** the items whose decorations are alive, in the collection's order */
  live: HeatItem[];
  edited: boolean;
}

const rangeAt = (s: EditorSession, start: number, end: number): M.Range =>
  s.monaco.Range.fromPositions(s.model.getPositionAt(start), s.model.getPositionAt(end));

function heatOptions(s: EditorSession, it: HeatItem, r: RolloutRecord, scale: HeatScale): M.editor.IModelDecorationOptions {
  const v = mean(it.tokens.map((i) => scaleValue(r, scale, i) ?? NaN));
  const cls = `heat-tok ${heatClass(scale, heatBucket(scale, v))}`;
  const notes = [
    it.kind === 'approx' ? `${it.tokens.length} tokens share this range: their texts split a character's bytes` : '',
    it.kind === 'extra' ? 'past the end of the completion (the EOS token)' : '',
    s.edited ? 'recorded token: the completion has been edited elsewhere' : '',
  ].filter(Boolean);
  const hoverMessage = it.tokens.map((i) => ({ value: tokenHover(tokenInfo(r, i), notes.join('; ') || undefined) }));
  const base = { stickiness: s.monaco.editor.TrackedRangeStickiness.NeverGrowsWhenTypingAtEdges, hoverMessage };
  if (it.start < it.end) return { ...base, inlineClassName: cls };
  return { ...base, showIfCollapsed: true, after: { content: r.tokens[it.tokens[0]!] || 'EOS', inlineClassName: `${cls} heat-extra` } };
}

/** The prompt's dimming and every token's heat, at the recorded program's offsets. */
function paintRecorded(s: EditorSession, prompt: string, items: HeatItem[], r: RolloutRecord, scale: HeatScale): void {
  const stickiness = s.monaco.editor.TrackedRangeStickiness.NeverGrowsWhenTypingAtEdges;
  s.prompt.set([{ range: rangeAt(s, 0, prompt.length), options: { inlineClassName: 'rollout-prompt', stickiness } }]);
  s.edited = false;
  paintHeat(
    s,
    items,
    items.map((it) => rangeAt(s, it.start, it.end)),
    r,
    scale,
  );
}

function paintHeat(s: EditorSession, items: HeatItem[], ranges: M.IRange[], r: RolloutRecord, scale: HeatScale): void {
  s.heat.set(items.map((it, k) => ({ range: ranges[k]!, options: heatOptions(s, it, r, scale) })));
  s.live = items;
}

/** Drops the decorations of tokens whose text changed (an EOS survives only at the very end). */
function pruneHeat(s: EditorSession, r: RolloutRecord, scale: HeatScale): void {
  const items: HeatItem[] = [];
  const ranges: M.Range[] = [];
  const end = s.model.getValueLength();
  s.live.forEach((it, k) => {
    const range = s.heat.getRange(k);
    if (!range) return;
    const same =
      it.start === it.end
        ? range.isEmpty() && s.model.getOffsetAt(range.getStartPosition()) === end
        : s.model.getValueInRange(range) === it.text;
    if (same) {
      items.push(it);
      ranges.push(range);
    }
  });
  if (items.length !== s.live.length || !s.edited) {
    s.edited = true;
    paintHeat(s, items, ranges, r, scale);
  }
}

// ---------------------------------------------------------------------------------------------
// Markers: analysis offsets are completion offsets; the editor's are prompt.length further

interface Diagnosis {
  analysis: AnalysisResult | null;
  tests: TestResult[];
}

function setMarkers(
  s: EditorSession,
  d: Diagnosis,
  promptLength: number,
  prompt: string,
  entryPoint: string | undefined,
): Record<(typeof OWNERS)[number], number> {
  const { MarkerSeverity } = s.monaco;
  const at = (start: number, end: number) => {
    const r = rangeAt(s, promptLength + start, promptLength + end);
    return { startLineNumber: r.startLineNumber, startColumn: r.startColumn, endLineNumber: r.endLineNumber, endColumn: r.endColumn };
  };
  const severity = { error: MarkerSeverity.Error, warning: MarkerSeverity.Warning, info: MarkerSeverity.Info };
  const ast = (d.analysis?.ast.errors ?? []).map((e) => ({
    ...at(e.start, e.end),
    severity: MarkerSeverity.Error,
    message: e.message,
    source: 'tree-sitter',
    code: e.kind === 'ERROR' ? 'syntax/error' : 'syntax/missing',
  }));
  const lint = (d.analysis?.diagnostics ?? [])
    .filter((f) => f.source !== 'ast')
    .map((f) => ({ ...at(f.start, f.end), severity: severity[f.severity], message: f.message, source: f.source, code: f.ruleId }));
  const lines = s.model.getLineCount();
  const tests = d.tests
    .filter((t) => t.status !== 'passed')
    .map((t) => {
      const { line: l, known } = testLine(t, prompt, entryPoint);
      const line = Math.min(Math.max(l, 1), lines);
      const where = known ? '' : ' (shown at the function header: the failure is in the test code)';
      return {
        startLineNumber: line,
        startColumn: s.model.getLineFirstNonWhitespaceColumn(line) || 1,
        endLineNumber: line,
        endColumn: s.model.getLineMaxColumn(line),
        severity: MarkerSeverity.Error,
        message: `${t.name} ${t.status}: ${t.message ?? t.source}${where}`,
        source: 'tests',
        code: t.name,
      };
    });
  const byOwner = { ast, lint, tests };
  for (const owner of OWNERS) s.monaco.editor.setModelMarkers(s.model, owner, byOwner[owner]);
  return { ast: ast.length, lint: lint.length, tests: tests.length };
}

// ---------------------------------------------------------------------------------------------
// Scoring an edited completion

type RescoreState = 'idle' | 'scoring' | 'done' | 'error';

async function analyse(
  language: string,
  prompt: string,
  completion: string,
): Promise<{ analysis: AnalysisResult; outline: Outline } | null> {
  if (language !== 'javascript') return null;
  const a = await getAnalyzer();
  const text = prompt + completion;
  const { root, complete } = a.syntax.outline(text, { maxNodes: OUTLINE_NODES });
  return { analysis: a.analyze(completion, { prompt }), outline: { root, complete, text } };
}

async function scoreEdit(r: RolloutRecord, run: string | null, prompt: string, completion: string): Promise<Scored> {
  if (!run) throw new Error('no run is open, so the task is unknown');
  const ctx = await runContext(run);
  const task = ctx.tasks.get(r.task_id);
  if (!task) throw new Error(`task ${r.task_id} is not in the run's tasks/rl.jsonl`);
  const [ran, analysed] = await Promise.allSettled([
    runInSandbox({ ...task, prompt }, completion),
    analyse(task.language, prompt, completion),
  ]);
  if (ran.status === 'rejected') throw ran.reason;
  if (analysed.status === 'rejected') throw new Error(`Static analysis could not be loaded: ${message(analysed.reason)}`);
  const { tests, verdict } = ran.value;
  const exec = { verdict, tests_passed: tests.filter((t) => t.status === 'passed').length, tests_total: tests.length };
  const analysis = analysed.value?.analysis ?? null;
  const measured = computeReward(completion, exec, analysis, ctx.reward).components;
  const kept = r.reward.components
    .filter((c) => !measured.some((m) => m.name === c.name))
    .map((c) => ({ ...c, detail: `as recorded, not re-measured in the page (${c.detail})` }));
  return { completion, analysis, outline: analysed.value?.outline ?? null, tests, ...exec, components: [...measured, ...kept] };
}

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
  const run = useLab((s) => s.rollouts.run);
  const weights = useLab((s) => s.rollouts.weights);
  const [scale, setScale] = useState<HeatScale>('logprob');
  const [monaco, setMonaco] = useState<MonacoApi | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const wanted = record !== null;

  useEffect(() => {
    if (!wanted || monaco) return;
    let live = true;
    loadRolloutMonaco().then(
      (m) => live && setMonaco(m),
      (e: unknown) => live && setLoadError(`The editor could not be loaded: ${message(e)}`),
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
  return (
    <RolloutDetail key={recordKey(record)} monaco={monaco} record={record} run={run} weights={weights} scale={scale} setScale={setScale} />
  );
}

export default RolloutView;

interface DetailProps {
  monaco: MonacoApi;
  record: RolloutRecord;
  run: string | null;
  weights: RewardWeights | null;
  scale: HeatScale;
  setScale(scale: HeatScale): void;
}

function RolloutDetail({ monaco, record, run, weights, scale, setScale }: DetailProps) {
  const host = useRef<HTMLDivElement>(null);
  const session = useRef<EditorSession | null>(null);
  const scaleRef = useRef(scale);
  const seq = useRef(0);
  const heatId = useId();
  const heat = useMemo(() => heatItems(record, record.prompt, record.completion), [record]);
  const [ready, setReady] = useState(false);
  /** the prompt as the editor holds it (line endings normalised), and whether that changed it */
  const [prompt, setPrompt] = useState(record.prompt);
  const [original, setOriginal] = useState(record.completion);
  /** the completion in the editor; null when the prompt part was edited */
  const [text, setText] = useState<string | null>(record.completion);
  const [heatLeft, setHeatLeft] = useState(heat.items.length);
  const [ctx, setCtx] = useState<{ ok: RunContext } | { error: string } | null>(null);
  const [recorded, setRecorded] = useState<{ analysis: AnalysisResult | null; outline: Outline | null; note: string | null } | null>(null);
  const [edit, setEdit] = useState<{ state: RescoreState; note: string | null; result: Scored | null }>({
    state: 'idle',
    note: null,
    result: null,
  });
  const [markers, setMarkerCounts] = useState<Record<(typeof OWNERS)[number], number>>({ ast: 0, lint: 0, tests: 0 });

  const task = ctx && 'ok' in ctx ? (ctx.ok.tasks.get(record.task_id) ?? null) : null;
  const language = ctx === null ? null : (task?.language ?? 'javascript');

  // the editor: created once per record, disposed with its markers
  useEffect(() => {
    const program = record.prompt + record.completion;
    const model = monaco.editor.createModel(program, 'javascript');
    const editor = monaco.editor.create(host.current!, {
      model,
      ariaLabel: `Rollout of task ${record.task_id}: the prompt (dimmed, read-only) and the completion (editable; edits are rescored)`,
      automaticLayout: true,
      minimap: { enabled: false },
      fontSize: 13,
      scrollBeyondLastLine: false,
      theme: 'vs',
    });
    const s: EditorSession = {
      monaco,
      editor,
      model,
      heat: editor.createDecorationsCollection(),
      prompt: editor.createDecorationsCollection(),
      live: [],
      edited: false,
    };
    const initial = model.getValue();
    // Monaco normalises mixed line endings; the prompt is then compared in the editor's form
    const p = initial === program ? record.prompt : record.prompt.replace(/\r\n|\r|\n/g, model.getEOL());
    paintRecorded(s, p, heat.items, record, scaleRef.current);
    const sub = model.onDidChangeContent(() => {
      pruneHeat(s, record, scaleRef.current);
      setHeatLeft(s.live.length);
      const v = model.getValue();
      setText(v.startsWith(p) ? v.slice(p.length) : null);
    });
    session.current = s;
    setPrompt(p);
    setOriginal(initial.slice(p.length));
    setText(initial.slice(p.length));
    setReady(true);
    return () => {
      sub.dispose();
      for (const owner of OWNERS) monaco.editor.setModelMarkers(model, owner, []);
      session.current = null;
      editor.dispose();
      model.dispose();
    };
  }, [monaco, record, heat]);

  // the heat scale: recolour the surviving decorations where they are now
  useEffect(() => {
    scaleRef.current = scale;
    const s = session.current;
    if (!s || !ready) return;
    paintHeat(
      s,
      s.live,
      s.live.map((_, k) => s.heat.getRange(k)!),
      record,
      scale,
    );
  }, [scale, ready, record]);

  // the run's tasks and reward config (cached per run)
  useEffect(() => {
    if (!run) {
      setCtx({ error: 'no run is open, so the task is unknown' });
      return;
    }
    let live = true;
    runContext(run).then(
      (c) => live && setCtx({ ok: c }),
      (e: unknown) => live && setCtx({ error: message(e) }),
    );
    return () => {
      live = false;
    };
  }, [run]);

  // the recorded completion's analysis and tree (not stored in the record)
  useEffect(() => {
    const s = session.current;
    if (!language || !s) return;
    s.monaco.editor.setModelLanguage(s.model, language);
    if (language !== 'javascript') {
      setRecorded({ analysis: null, outline: null, note: `Static analysis is not measured for ${language}.` });
      return;
    }
    let live = true;
    analyse(language, prompt, original).then(
      (a) => live && setRecorded({ analysis: a?.analysis ?? null, outline: a?.outline ?? null, note: null }),
      (e: unknown) => live && setRecorded({ analysis: null, outline: null, note: `Static analysis could not be loaded: ${message(e)}` }),
    );
    return () => {
      live = false;
    };
  }, [language, prompt, original, ready]);

  // what-if editing: rescore after DEBOUNCE_MS of quiet; a later edit drops an earlier result
  useEffect(() => {
    const my = ++seq.current;
    if (text === null) {
      setEdit({ state: 'error', note: 'The prompt is read-only: undo (Ctrl+Z) or reset to the recorded completion.', result: null });
      return;
    }
    if (text === original) {
      setEdit({ state: 'idle', note: null, result: null });
      return;
    }
    setEdit((e) => ({ ...e, state: 'scoring', note: null }));
    const timer = setTimeout(() => {
      scoreEdit(record, run, prompt, text).then(
        (result) => {
          if (my === seq.current && session.current && !session.current.model.isDisposed()) setEdit({ state: 'done', note: null, result });
        },
        (e: unknown) => {
          if (my === seq.current && session.current) setEdit({ state: 'error', note: message(e), result: null });
        },
      );
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [text, original, prompt, record, run]);

  // markers from the edited result once there is one, else from the recording
  const diagnosis = useMemo<Diagnosis | null>(
    () => edit.result ?? (recorded ? { analysis: recorded.analysis, tests: record.tests ?? [] } : null),
    [edit.result, recorded, record],
  );
  // (a layout effect: data-marker-count changes in the same frame as the rescore status)
  useLayoutEffect(() => {
    const s = session.current;
    if (!s || !diagnosis || s.model.isDisposed()) return;
    setMarkerCounts(setMarkers(s, diagnosis, prompt.length, prompt, task?.entry_point));
  }, [diagnosis, prompt, task, ready]);

  const reveal = (start: number, end: number): void => {
    const s = session.current;
    if (!s) return;
    const r = rangeAt(s, start, Math.min(end, s.model.getValueLength()));
    s.editor.setSelection(r);
    s.editor.revealRangeInCenterIfOutsideViewport(r);
    s.editor.focus();
  };

  const reset = (): void => {
    const s = session.current;
    if (!s) return;
    // one undoable edit; it collapses every decoration, so both layers are painted afresh
    s.editor.executeEdits('rollout-reset', [{ range: s.model.getFullModelRange(), text: prompt + original }]);
    paintRecorded(s, prompt, heat.items, record, scale);
    setHeatLeft(heat.items.length);
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
          Task <strong>{record.task_id}</strong> · iteration {record.iteration} · group {record.group} · turn {record.turn} · verdict{' '}
          <strong>{record.verdict}</strong> · {record.tests_passed}/{record.tests_total} tests · finish {record.finish} ·{' '}
          {record.tokens.length} tokens
        </p>
        <div className="rv-row">
          <label htmlFor={heatId}>Heatmap</label>
          <select id={heatId} data-testid="heatmap-mode" value={scale} onChange={(e) => setScale(e.target.value as HeatScale)}>
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
        <div className="rv-editor" ref={host} />
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

function statusText(state: RescoreState, note: string | null): string {
  if (note) return note;
  if (state === 'scoring') return 'Scoring the edited completion…';
  if (state === 'done') return 'Edited completion scored: see the breakdown.';
  return 'Edit the completion to rescore it (what-if).';
}
