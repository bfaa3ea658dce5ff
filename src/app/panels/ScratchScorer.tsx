/**
 * The Reward panel. With a rollout selected in the Rollouts panel it shows that rollout's reward
 * breakdown and tests (rollout/panes.tsx, as the Code panel's Rollout tab does; an edit rescored
 * there is shown here too), with a tab back to the scratch scorer; with none, the scratch scorer.
 *
 * The scratch scorer scores a hand-written completion of the built-in task (tasks/scratch.ts:
 * JavaScript or Python) with the CLI's sandbox, analysis and reward: the verdict, each test, the
 * syntax check, the lint findings and the reward breakdown. The completion is edited in Monaco
 * (loaded lazily, as the rollout views load it: rollout/monaco.ts), with the score's findings and
 * syntax errors as markers; until Monaco is there (or if it fails to load) a plain textarea does
 * the job, and it stays in the page visually hidden, bound to the same text, as a plain-text
 * fallback. Ctrl/Cmd+Enter scores in either.
 */
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type * as M from 'monaco-editor';
import type { Finding } from '../../analysis';
import { groupKey } from '../../lab/whatif';
import { sampleNumber } from '../../lab/compare';
import type { RewardBreakdown } from '../../reward/reward';
import type { RolloutRecord } from '../../rl/ppo-loop';
import { useLab } from '../../store';
import { detailOf } from '../../store/rolloutSlice';
import { findingSummary } from '../../analysis';
import { scratchMarks, type ScratchScore } from '../../store/scorerSlice';
import { SCRATCH_TASKS, type ScratchLanguage } from '../../tasks/scratch';
import { errorText } from '../../util/errors';
import { loadRolloutMonaco, type MonacoApi } from '../rollout/monaco';
import { offsetRange, SEVERITY } from '../rollout/monaco-adapter';
import { Breakdown, sharedFailure, TestTable, Tests } from '../rollout/panes';
import './scorer.css';

/** 1-based line of a character offset in `text`. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < Math.min(offset, text.length); i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

const fmt = (x: number | null, digits = 3): string => (x === null ? '—' : x.toFixed(digits));

/** The rollout selected in the Rollouts panel, if any. */
const selectedRecord = (s: ReturnType<typeof useLab.getState>): RolloutRecord | null =>
  s.rollouts.selected === null ? null : (s.rollouts.records[s.rollouts.selected] ?? null);

export function ScratchScorer() {
  const record = useLab(selectedRecord);
  // the scratch tab chosen for this selection; a new selection shows the rollout again
  const [scratchFor, setScratchFor] = useState<{ record: RolloutRecord | null; scratch: boolean }>({ record, scratch: false });
  if (scratchFor.record !== record) setScratchFor({ record, scratch: false });
  const showRollout = record !== null && !(scratchFor.record === record && scratchFor.scratch);

  return (
    <div className="scorer" data-testid="scorer" data-view={showRollout ? 'rollout' : 'scratch'}>
      {record && (
        <div role="tablist" aria-label="Reward view" className="tabs scorer-tabs">
          <button
            role="tab"
            type="button"
            aria-selected={showRollout}
            onClick={() => setScratchFor({ record, scratch: false })}
            data-testid="reward-tab-rollout"
          >
            Selected rollout
          </button>
          <button
            role="tab"
            type="button"
            aria-selected={!showRollout}
            onClick={() => setScratchFor({ record, scratch: true })}
            data-testid="reward-tab-scratch"
          >
            Score your own completion
          </button>
        </div>
      )}
      {record && showRollout && <SelectedRollout record={record} />}
      {/* kept mounted under the rollout: the editor keeps its text, undo and result */}
      <div className="scorer-scratch" hidden={showRollout}>
        <Scratch rolloutSelected={record !== null} />
      </div>
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// The selected rollout

function SelectedRollout({ record }: { record: RolloutRecord }) {
  const records = useLab((s) => s.rollouts.records);
  const weights = useLab((s) => s.rollouts.weights);
  const detail = useLab((s) => detailOf(s, record));
  const { k, of } = useMemo(() => {
    const key = groupKey(record);
    return sampleNumber({ record, peers: records.filter((r) => groupKey(r) === key) });
  }, [record, records]);
  const edited = detail?.edit.result ?? null;
  const ctx = detail?.context;
  const task = ctx && 'ok' in ctx ? ctx.ok.tasks.get(record.task_id) : undefined;
  return (
    <div
      className="scorer-rollout rv-side"
      data-testid="scorer-rollout"
      data-iteration={record.iteration + 1}
      data-task={record.task_id}
      data-sample={k}
    >
      <h3 className="scorer-rollout-head" data-testid="scorer-rollout-head">
        Selected rollout: iteration {record.iteration + 1}, {record.task_id}, sample {k}
      </h3>
      <p className="hint">
        Sample {k} of {of} for this prompt{record.turn === 2 ? ' (a repair turn)' : ''} · verdict <strong>{record.verdict}</strong> · the
        reward as recorded{weights ? ' and under the what-if weights' : ''}
        {edited ? ', and of the completion edited in the Code panel' : ''}.
      </p>
      <Breakdown record={record} weights={weights} edited={edited} testId="scorer-rollout-breakdown" />
      <Tests
        tests={edited?.tests ?? record.tests ?? []}
        edited={edited !== null}
        record={record}
        prompt={detail?.prompt ?? record.prompt}
        entryPoint={task?.entry_point}
        testId="scorer-rollout-tests"
      />
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// The scratch scorer

function Scratch({ rolloutSelected }: { rolloutSelected: boolean }) {
  const language = useLab((s) => s.scorer.language);
  const completion = useLab((s) => s.scorer.completion);
  const busy = useLab((s) => s.scorer.busy);
  const result = useLab((s) => s.scorer.result);
  const error = useLab((s) => s.scorer.error);
  const reset = useLab((s) => s.resetScratchCompletion);
  const score = useLab((s) => s.scoreScratch);
  const setLanguage = useLab((s) => s.setScratchLanguage);
  const taskId = useId();
  const task = SCRATCH_TASKS[language].task;

  return (
    <>
      <p className="hint">
        Scores your completion of a built-in task with the CLI's sandbox, static analysis and reward.{' '}
        {rolloutSelected
          ? 'The rollout selected in the Rollouts panel is under “Selected rollout”.'
          : 'Select a rollout in the Rollouts panel to see its reward breakdown and tests here instead.'}
      </p>
      <div className="scorer-row">
        <label htmlFor={taskId}>Task</label>
        <select
          id={taskId}
          data-testid="scorer-language"
          value={language}
          disabled={busy}
          onChange={(e) => setLanguage(e.target.value as ScratchLanguage)}
        >
          {(Object.keys(SCRATCH_TASKS) as ScratchLanguage[]).map((l) => (
            <option key={l} value={l}>
              {SCRATCH_TASKS[l].label}
            </option>
          ))}
        </select>
        {language === 'python' && <span className="hint">runs in Pyodide (the first score loads it); no static analysis for Python</span>}
      </div>
      <details>
        <summary>Task {task.task_id}: prompt and tests</summary>
        <pre className="scorer-code" data-testid="scorer-prompt">
          {task.prompt}
        </pre>
        <pre className="scorer-code">{task.tests}</pre>
      </details>
      <CompletionEditor />
      <div className="scorer-row">
        <button type="button" onClick={() => void score()} disabled={busy} data-testid="scorer-score">
          {busy ? 'Scoring…' : 'Score'}
        </button>
        <button type="button" onClick={reset} disabled={busy}>
          Reset to reference
        </button>
        <span className="hint">Ctrl/Cmd+Enter</span>
      </div>
      {error && (
        <p role="alert" className="alert" data-testid="scorer-error">
          {error}
        </p>
      )}
      {result && <ScoreView r={result} stale={result.completion !== completion} />}
    </>
  );
}

/** Monaco's language id of a scratch task's language. */
const monacoLanguage = (l: ScratchLanguage): string => (l === 'python' ? 'python' : 'javascript');
const LINE_HEIGHT = 18;
const MIN_LINES = 6;
const MAX_LINES = 18;

/**
 * The completion: Monaco once it has loaded, the textarea until then (and if it cannot load).
 * The textarea stays in the page, visually hidden and bound to the same text (the store's
 * completion), as a plain-text fallback; the label focuses whichever is shown.
 */
function CompletionEditor() {
  const language = useLab((s) => s.scorer.language);
  const completion = useLab((s) => s.scorer.completion);
  const result = useLab((s) => s.scorer.result);
  const setCompletion = useLab((s) => s.setScratchCompletion);
  const score = useLab((s) => s.scoreScratch);
  const textareaId = useId();
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<M.editor.IStandaloneCodeEditor | null>(null);
  const [monaco, setMonaco] = useState<MonacoApi | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    loadRolloutMonaco().then(
      (m) => live && setMonaco(m),
      (e: unknown) => live && setLoadError(errorText(e)),
    );
    return () => {
      live = false;
    };
  }, []);

  // the editor: created once Monaco is there, with the store's text
  useEffect(() => {
    const el = host.current;
    if (!monaco || !el) return;
    const st = useLab.getState().scorer;
    const model = monaco.editor.createModel(st.completion, monacoLanguage(st.language));
    const ed = monaco.editor.create(el, {
      model,
      ariaLabel: 'Completion editor: the code after the task prompt; Ctrl/Cmd+Enter scores it',
      automaticLayout: true,
      fixedOverflowWidgets: true,
      minimap: { enabled: false },
      fontSize: 12,
      lineHeight: LINE_HEIGHT,
      lineNumbersMinChars: 3,
      lineDecorationsWidth: 6,
      glyphMargin: false,
      folding: false,
      renderLineHighlight: 'none',
      overviewRulerLanes: 0,
      hideCursorInOverviewRuler: true,
      scrollBeyondLastLine: false,
      scrollbar: { alwaysConsumeMouseWheel: false, verticalScrollbarSize: 8, horizontalScrollbarSize: 8 },
      quickSuggestions: false,
      suggestOnTriggerCharacters: false,
      tabSize: 2,
      theme: 'vs',
    });
    ed.addAction({
      id: 'coderl.scratch.score',
      label: 'Score the completion',
      keybindings: [monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter],
      run: () => void useLab.getState().scoreScratch(),
    });
    const fit = (h: number): void => {
      el.style.height = `${Math.min(Math.max(h, MIN_LINES * LINE_HEIGHT), MAX_LINES * LINE_HEIGHT) + 2}px`;
    };
    fit(ed.getContentHeight());
    const subs = [
      model.onDidChangeContent(() => {
        if (model.getValue() !== useLab.getState().scorer.completion) useLab.getState().setScratchCompletion(model.getValue());
      }),
      ed.onDidContentSizeChange((e) => e.contentHeightChanged && fit(e.contentHeight)),
    ];
    editor.current = ed;
    return () => {
      for (const s of subs) s.dispose();
      editor.current = null;
      monaco.editor.setModelMarkers(model, 'coderl-scratch', []);
      ed.dispose();
      model.dispose();
    };
  }, [monaco]);

  // the store's text into the editor (reset, a language switch, typing into the fallback), as one undoable edit.
  // The store's text now, not this render's: text typed while Monaco loaded (the render that
  // brings Monaco still holds the older text) must not be replaced by what was there before it.
  useEffect(() => {
    const model = editor.current?.getModel();
    const text = useLab.getState().scorer.completion;
    if (!model || model.getValue() === text) return;
    model.pushEditOperations([], [{ range: model.getFullModelRange(), text }], () => null);
  }, [completion, monaco]);

  useEffect(() => {
    const model = editor.current?.getModel();
    if (!monaco || !model) return;
    monaco.editor.setModelLanguage(model, monacoLanguage(language));
    model.updateOptions({ tabSize: language === 'python' ? 4 : 2 });
  }, [language, monaco]);

  // the score's marks while the editor holds the text that was scored
  const marks = useMemo(
    () => (result && result.completion === completion && result.language === language ? scratchMarks(result) : []),
    [result, completion, language],
  );
  useEffect(() => {
    const model = editor.current?.getModel();
    if (!monaco || !model) return;
    monaco.editor.setModelMarkers(
      model,
      'coderl-scratch',
      marks.map((m) => ({
        ...offsetRange(model, m.start, m.end),
        severity: SEVERITY[m.severity],
        message: m.message,
        source: m.source,
        code: m.code,
      })),
    );
  }, [marks, monaco]);

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void score();
    }
  };
  const shown = monaco !== null;

  return (
    <div className="scorer-completion">
      <label
        htmlFor={textareaId}
        onClick={(e) => {
          if (editor.current) {
            e.preventDefault();
            editor.current.focus();
          }
        }}
      >
        Completion (follows the prompt)
      </label>
      <textarea
        id={textareaId}
        className={shown ? 'scorer-editor scorer-fallback' : 'scorer-editor'}
        data-testid="scorer-completion"
        spellCheck={false}
        rows={6}
        tabIndex={shown ? -1 : undefined}
        value={completion}
        onChange={(e) => setCompletion(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <div
        ref={host}
        className="scorer-monaco"
        hidden={!shown}
        data-testid="scorer-monaco"
        data-marker-count={marks.length}
        data-marker-errors={marks.filter((m) => m.severity === 'error').length}
      />
      {loadError && <p className="hint">The code editor could not be loaded ({loadError}): the completion is edited as plain text.</p>}
    </div>
  );
}

function ScoreView({ r, stale }: { r: ScratchScore; stale: boolean }) {
  const ok = r.run.verdict === 'passed';
  // the reason every test shares is said once, above the tests; it is the run's message too
  const shared = sharedFailure(r.run.tests);
  const merged = shared !== null && (!r.run.message || shared.includes(r.run.message));
  return (
    <div className="scorer-result" data-testid="scorer-result" data-seq={r.seq} aria-live="polite">
      <p className="scorer-verdict">
        Verdict:{' '}
        <strong className={ok ? 'status-ready' : 'status-lost'} data-testid="scorer-verdict">
          {r.run.verdict}
        </strong>{' '}
        ·{' '}
        <span data-testid="scorer-tests-count">
          {r.tests_passed}/{r.tests_total}
        </span>{' '}
        tests passed · {Math.round(r.ms)} ms
        {stale && <span className="hint"> (the completion has changed since)</span>}
      </p>
      {r.run.message && !merged && (
        <p className="hint" data-testid="scorer-message">
          {r.run.message}
        </p>
      )}
      <h3>Tests</h3>
      {merged && (
        <p className="test-shared" data-testid="scorer-message">
          {shared}
        </p>
      )}
      <TestTable tests={r.run.tests} testId="scorer-tests" sharedNote={!merged} />
      {r.run.output && (
        <details className="scorer-output">
          <summary>Output ({r.run.output.length} characters)</summary>
          <pre data-testid="scorer-output">{r.run.output}</pre>
        </details>
      )}
      {r.analysis && <Ast errors={r.analysis.ast.errors} valid={r.analysis.ast.valid} code={r.completion} />}
      {r.analysis && <Lint findings={r.analysis.diagnostics.filter((d) => d.source !== 'ast')} code={r.completion} />}
      {!r.analysis && r.language === 'python' && (
        <p className="hint" data-testid="scorer-no-analysis">
          Static analysis (syntax, lint, complexity) is not measured for Python.
        </p>
      )}
      {r.reward && <Reward reward={r.reward} />}
    </div>
  );
}

function Ast({ valid, errors, code }: { valid: boolean; errors: { start: number; message: string }[]; code: string }) {
  return (
    <>
      <h3>Syntax (tree-sitter)</h3>
      <p data-testid="scorer-ast" data-valid={valid}>
        {valid ? 'valid: no syntax errors' : `invalid: ${errors.length} syntax error${errors.length === 1 ? '' : 's'}`}
      </p>
      {!valid && (
        <ul data-testid="scorer-ast-errors">
          {errors.map((e, i) => (
            <li key={i}>
              line {lineAt(code, e.start)}: {e.message}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function Lint({ findings, code }: { findings: Finding[]; code: string }) {
  const eslint = findings.filter((f) => f.source === 'eslint').length;
  return (
    <>
      <h3 data-testid="scorer-lint-summary">Lint and metrics: {findingSummary(findings)}</h3>
      {eslint < findings.length && (
        <p className="hint">
          The lint penalty counts the {eslint} ESLint finding{eslint === 1 ? '' : 's'}; the metrics findings are for information.
        </p>
      )}
      {findings.length === 0 ? (
        <p className="hint" data-testid="scorer-lint-none">
          No findings.
        </p>
      ) : (
        <table data-testid="scorer-lint" className="scorer-lint">
          <thead>
            <tr>
              <th>line</th>
              <th>severity</th>
              <th>rule</th>
              <th>message</th>
            </tr>
          </thead>
          <tbody>
            {findings.map((f, i) => (
              <tr key={i}>
                <td>{lineAt(code, f.start)}</td>
                <td className={f.severity === 'error' ? 'bad' : ''}>{f.severity}</td>
                <td>
                  <code>{f.ruleId}</code>
                </td>
                <td>{f.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Reward({ reward }: { reward: RewardBreakdown }) {
  return (
    <>
      <h3>Reward</h3>
      <table data-testid="scorer-reward" className="scorer-reward">
        <thead>
          <tr>
            <th>component</th>
            <th>raw</th>
            <th>weight</th>
            <th>contribution</th>
            <th>detail</th>
          </tr>
        </thead>
        <tbody>
          {reward.components.map((c) => (
            <tr key={c.name} data-component={c.name}>
              <td>{c.name}</td>
              <td>{fmt(c.raw)}</td>
              <td>
                {c.sign < 0 ? '−' : '+'}
                {fmt(c.weight)}
              </td>
              <td className={c.contribution > 0 ? 'ok' : c.contribution < 0 ? 'bad' : ''}>{fmt(c.contribution)}</td>
              <td>{c.detail}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th>total</th>
            <td />
            <td />
            <th data-testid="scorer-reward-total" data-value={reward.total}>
              {fmt(reward.total)}
            </th>
            <td />
          </tr>
        </tfoot>
      </table>
    </>
  );
}
