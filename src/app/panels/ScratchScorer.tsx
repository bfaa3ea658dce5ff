/**
 * Scores a hand-written completion of the built-in task (tasks/scratch.ts: JavaScript or Python) with the CLI's
 * sandbox, analysis and reward: the verdict, each test, the syntax check, the lint findings
 * and the reward breakdown. The completion is edited in a plain textarea (a second Monaco
 * editor would load the 2.7 MB editor core just for this); Ctrl/Cmd+Enter scores.
 */
import { useId, type KeyboardEvent } from 'react';
import type { Finding } from '../../analysis';
import type { RewardBreakdown } from '../../reward/reward';
import type { TestResult } from '../../sandbox/result';
import { useLab } from '../../store';
import type { ScratchScore } from '../../store/scorerSlice';
import { SCRATCH_TASKS, type ScratchLanguage } from '../../tasks/scratch';

/** 1-based line of a character offset in `text`. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < Math.min(offset, text.length); i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

const fmt = (x: number | null, digits = 3): string => (x === null ? '—' : x.toFixed(digits));

export function ScratchScorer() {
  const language = useLab((s) => s.scorer.language);
  const completion = useLab((s) => s.scorer.completion);
  const busy = useLab((s) => s.scorer.busy);
  const result = useLab((s) => s.scorer.result);
  const error = useLab((s) => s.scorer.error);
  const setCompletion = useLab((s) => s.setScratchCompletion);
  const reset = useLab((s) => s.resetScratchCompletion);
  const score = useLab((s) => s.scoreScratch);
  const setLanguage = useLab((s) => s.setScratchLanguage);
  const editorId = useId();
  const taskId = useId();
  const task = SCRATCH_TASKS[language].task;

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void score();
    }
  };

  return (
    <div className="scorer" data-testid="scorer">
      <p className="hint">
        Score a completion of a built-in task here with the CLI's sandbox, analysis and reward; a selected rollout's breakdown will appear
        here too.
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
      <label htmlFor={editorId}>Completion (follows the prompt)</label>
      <textarea
        id={editorId}
        className="scorer-editor"
        data-testid="scorer-completion"
        spellCheck={false}
        rows={6}
        value={completion}
        onChange={(e) => setCompletion(e.target.value)}
        onKeyDown={onKeyDown}
      />
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
    </div>
  );
}

function ScoreView({ r, stale }: { r: ScratchScore; stale: boolean }) {
  const ok = r.run.verdict === 'passed';
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
      {r.run.message && (
        <p className="hint" data-testid="scorer-message">
          {r.run.message}
        </p>
      )}
      <Tests tests={r.run.tests} />
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

function Tests({ tests }: { tests: TestResult[] }) {
  return (
    <>
      <h3>Tests</h3>
      <table data-testid="scorer-tests">
        <thead>
          <tr>
            <th>test</th>
            <th>status</th>
            <th>assertion</th>
            <th>message</th>
          </tr>
        </thead>
        <tbody>
          {tests.map((t) => (
            <tr key={t.name} data-status={t.status}>
              <td>{t.name}</td>
              <td className={t.status === 'passed' ? 'ok' : 'bad'}>{t.status}</td>
              <td>
                <code>{t.source}</code>
              </td>
              <td>{t.message ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Ast({ valid, errors, code }: { valid: boolean; errors: { start: number; message: string }[]; code: string }) {
  return (
    <>
      <h3>Syntax (tree-sitter)</h3>
      <p data-testid="scorer-ast" data-valid={valid}>
        {valid ? 'valid: no syntax errors' : `invalid: ${errors.length} error(s)`}
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
  return (
    <>
      <h3>Lint and metrics ({findings.length})</h3>
      {findings.length === 0 ? (
        <p className="hint" data-testid="scorer-lint-none">
          No findings.
        </p>
      ) : (
        <table data-testid="scorer-lint">
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
      <table data-testid="scorer-reward">
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
            <tr key={c.name}>
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
