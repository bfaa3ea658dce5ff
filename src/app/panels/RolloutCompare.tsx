/**
 * The Code panel's Compare tab: two rollouts (`s.rollouts.compare`, A and B) in Monaco's diff
 * editor, read-only, each side the prompt (dimmed, as context) and the completion; above it a
 * header per side (run, iteration, task, sample, reward, advantage, tests) and below it both
 * reward breakdowns with the difference B − A, under the what-if weights when they are set (the
 * arithmetic is lab/whatif.ts through lab/compare.ts). B can be the same prompt
 * at another iteration of A's run: pick the iteration and one of that prompt's rollouts there.
 *
 * Monaco is imported on first use; the diff editor and both models are disposed together.
 */
import { useEffect, useId, useRef, useState } from 'react';
import type * as M from 'monaco-editor';
import type { RolloutRecord } from '../../rl/ppo-loop';
import { useLab } from '../../store';
import { readIterationRollouts, readRunIterations } from '../../store/rolloutSlice';
import {
  breakdownDiff,
  matchPrompt,
  promptLanguage,
  sampleNumber,
  sideKey,
  sideOf,
  sideScore,
  type CompareSide,
  type SideName,
} from '../../lab/compare';
import { fmtNum } from '../rollout/tokens';
import { rescore, type RewardWeights } from '../../lab/whatif';
import '../rollout/view.css';
import { loadRolloutMonaco, type MonacoApi } from '../rollout/monaco';
import { errorText } from '../../util/errors';

const message = (e: unknown): string => errorText(e);
const num = (x: number, d = 3): string => fmtNum(Number.isFinite(x) ? x : null, d);
const LABEL: Record<SideName, string> = { a: 'A', b: 'B' };
/** the diff editor's height bounds */
const DIFF_MIN_PX = 100;
const DIFF_MAX_PX = 360;

export function RolloutCompare() {
  const a = useLab((s) => s.rollouts.compare.a);
  const b = useLab((s) => s.rollouts.compare.b);
  const weights = useLab((s) => s.rollouts.weights);
  const swap = useLab((s) => s.swapCompare);
  const clear = useLab((s) => s.clearCompare);
  const [inline, setInline] = useState(false);
  const inlineId = useId();

  if (!a && !b) {
    return (
      <p className="empty" data-testid="compare-empty">
        Nothing to compare yet. In the rollout list, mark a rollout as A (key A on its row, or “Set selected as A”) and another as B (key B,
        or “Set selected as B”); or mark A and pick the same prompt at another iteration here.
      </p>
    );
  }
  return (
    <div className="rc" data-testid="compare" data-a={a ? sideKey(a) : ''} data-b={b ? sideKey(b) : ''}>
      <div className="rv-row" role="toolbar" aria-label="Comparison">
        <button type="button" onClick={swap} data-testid="compare-swap" aria-label="Swap sides A and B">
          Swap A ⇄ B
        </button>
        <button type="button" onClick={clear} data-testid="compare-clear" aria-label="Clear the comparison">
          Clear
        </button>
        <input id={inlineId} type="checkbox" checked={inline} onChange={(e) => setInline(e.target.checked)} data-testid="compare-inline" />
        <label htmlFor={inlineId}>Inline diff</label>
        {a && b && sideKey(a) === sideKey(b) && <span className="rv-note">A and B are the same rollout.</span>}
      </div>
      <div className="rc-heads">
        <SideHead name="a" side={a} weights={weights} />
        <SideHead name="b" side={b} weights={weights} />
      </div>
      {a && <SamePromptPicker a={a} b={b} weights={weights} />}
      {a && b ? (
        <>
          <p className="rv-note">
            {a.record.prompt === b.record.prompt
              ? 'Both sides have the same prompt (dimmed): the diff is the completions’.'
              : 'The prompts differ (another task, or a repair turn): they are part of the diff.'}
          </p>
          <DiffLoader a={a} b={b} inline={inline} />
          <BreakdownTable a={a.record} b={b.record} weights={weights} />
        </>
      ) : (
        <p className="rv-note">Pick {a ? 'B' : 'A'} to see the diff.</p>
      )}
    </div>
  );
}

export default RolloutCompare;

function SideHead({ name, side, weights }: { name: SideName; side: CompareSide | null; weights: RewardWeights | null }) {
  const set = useLab((s) => s.setCompareSide);
  const N = LABEL[name];
  if (!side) {
    return (
      <section className="rc-side" aria-label={`Side ${N}`} data-testid={`compare-side-${name}`} data-empty="true">
        <h3>{N}: not set</h3>
      </section>
    );
  }
  const r = side.record;
  const sc = sideScore(side, weights);
  const { k, of } = sampleNumber(side);
  return (
    <section
      className="rc-side"
      aria-label={`Side ${N}: task ${r.task_id}, iteration ${side.iteration}, rollout ${side.index}`}
      data-testid={`compare-side-${name}`}
      data-run={side.run}
      data-iteration={side.iteration}
      data-index={side.index}
      data-task={r.task_id}
      data-total={sc.total.toFixed(6)}
      data-recorded-total={sc.recorded.toFixed(6)}
      data-tests={`${r.tests_passed}/${r.tests_total}`}
    >
      <h3>
        {N} <span className={r.passed ? 'ok' : 'bad'}>{r.passed ? 'pass' : r.verdict}</span>
        <button type="button" className="rc-clear-side" onClick={() => set(name, null)} aria-label={`Clear side ${N}`}>
          ×
        </button>
      </h3>
      <dl className="rv-meta">
        <dt>run</dt>
        <dd>{side.run}</dd>
        <dt>iteration</dt>
        <dd>{side.iteration}</dd>
        <dt>task</dt>
        <dd>
          {r.task_id}
          {r.turn === 2 ? ' (repair turn)' : ''}
        </dd>
        <dt>sample</dt>
        <dd>
          #{side.index}: {k} of {of} in group {r.group}
        </dd>
        <dt>reward{weights ? ' (what-if)' : ''}</dt>
        <dd data-testid={`compare-reward-${name}`}>
          {num(sc.total)}
          {weights ? ` (recorded ${num(sc.recorded)})` : ''}
        </dd>
        <dt>advantage</dt>
        <dd title="the recorded per-token advantages' mean and last value; the group-normalised advantage under the weights">
          {num(sc.meanAdvantage)} mean, {num(sc.finalAdvantage)} last; {num(sc.groupAdvantage)} in its group
        </dd>
        <dt>tests</dt>
        <dd>
          {r.tests_passed}/{r.tests_total} passed
        </dd>
      </dl>
    </section>
  );
}

/** B := a rollout of A's task at another (or the same) iteration of A's run. */
function SamePromptPicker({ a, b, weights }: { a: CompareSide; b: CompareSide | null; weights: RewardWeights | null }) {
  const set = useLab((s) => s.setCompareSide);
  const open = useLab((s) => (s.rollouts.run === a.run ? s.rollouts.iterations : null));
  const [listed, setListed] = useState<{ run: string; iterations: number[] } | { run: string; error: string } | null>(null);
  const [it, setIt] = useState<number | null>(null);
  const [loaded, setLoaded] = useState<{ it: number; records: RolloutRecord[] } | { it: number; error: string } | null>(null);
  const id = useId();

  useEffect(() => {
    if (open) return;
    let live = true;
    readRunIterations(a.run).then(
      (iterations) => live && setListed({ run: a.run, iterations }),
      (e: unknown) => live && setListed({ run: a.run, error: message(e) }),
    );
    return () => {
      live = false;
    };
  }, [a.run, open]);

  useEffect(() => {
    if (it === null) return;
    let live = true;
    setLoaded(null);
    readIterationRollouts(a.run, it).then(
      (records) => live && setLoaded({ it, records }),
      (e: unknown) => live && setLoaded({ it, error: message(e) }),
    );
    return () => {
      live = false;
    };
  }, [a.run, it]);

  const iterations = open ?? (listed && listed.run === a.run && 'iterations' in listed ? listed.iterations : []);
  const matches = loaded && 'records' in loaded ? matchPrompt(loaded.records, a.record) : null;
  return (
    <section className="rc-pick" aria-label={`B: the same prompt at another iteration`} data-testid="compare-same-prompt">
      <div className="rv-row">
        <label htmlFor={id}>B: task {a.record.task_id} at iteration</label>
        <select
          id={id}
          value={it ?? ''}
          onChange={(e) => setIt(e.target.value === '' ? null : Number(e.target.value))}
          data-testid="compare-iteration"
        >
          <option value="">choose…</option>
          {iterations.map((n) => (
            <option key={n} value={n}>
              {n}
              {n === a.iteration ? ' (A’s)' : ''}
            </option>
          ))}
        </select>
        {listed && 'error' in listed && listed.run === a.run && (
          <span role="alert" className="alert">
            {listed.error}
          </span>
        )}
      </div>
      {it !== null && loaded === null && <p className="rv-note">loading…</p>}
      {loaded && 'error' in loaded && (
        <p role="alert" className="alert">
          {loaded.error}
        </p>
      )}
      {matches &&
        loaded &&
        'records' in loaded &&
        (matches.length === 0 ? (
          <p className="rv-note" data-testid="compare-no-match">
            Iteration {loaded.it} has no rollout of task {a.record.task_id}.
          </p>
        ) : (
          <ul className="rc-candidates" aria-label={`Rollouts of task ${a.record.task_id} at iteration ${loaded.it}`}>
            {matches.map((m) => {
              const r = loaded.records[m.index]!;
              const chosen = b !== null && sideKey(b) === sideKey({ run: a.run, iteration: loaded.it, index: m.index });
              return (
                <li key={m.index}>
                  <button
                    type="button"
                    aria-pressed={chosen}
                    data-testid="compare-candidate"
                    data-index={m.index}
                    onClick={() => set('b', sideOf(a.run, loaded.it, loaded.records, m.index))}
                  >
                    #{m.index} · reward {num(rescore(r, weights).total)} · {r.tests_passed}/{r.tests_total} tests ·{' '}
                    {r.passed ? 'pass' : r.verdict}
                    {!m.samePrompt && ' · another prompt (repair turn)'}
                  </button>
                </li>
              );
            })}
          </ul>
        ))}
    </section>
  );
}

function DiffLoader({ a, b, inline }: { a: CompareSide; b: CompareSide; inline: boolean }) {
  const [monaco, setMonaco] = useState<MonacoApi | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (monaco) return;
    let live = true;
    loadRolloutMonaco().then(
      (m) => live && setMonaco(m),
      (e: unknown) => live && setError(`The editor could not be loaded: ${message(e)}`),
    );
    return () => {
      live = false;
    };
  }, [monaco]);
  if (error)
    return (
      <p role="alert" className="alert">
        {error}
      </p>
    );
  if (!monaco) return <p className="empty">Loading the editor…</p>;
  return (
    <DiffView
      monaco={monaco}
      a={a.record}
      b={b.record}
      inline={inline}
      label={`A: ${a.record.task_id}, iteration ${a.iteration}, rollout ${a.index}`}
      labelB={`B: ${b.record.task_id}, iteration ${b.iteration}, rollout ${b.index}`}
    />
  );
}

interface DiffState {
  /** the models' text lengths, once created */
  aLength: number;
  bLength: number;
  /** changed line ranges once the diff is computed; null before */
  changes: number | null;
}

/** The prompt's range in `model` (Monaco normalises line endings), dimmed. */
function dimPrompt(
  monaco: MonacoApi,
  editor: M.editor.ICodeEditor,
  model: M.editor.ITextModel,
  prompt: string,
): M.editor.IEditorDecorationsCollection {
  const p = prompt.replace(/\r\n|\r|\n/g, model.getEOL());
  const range = monaco.Range.fromPositions(model.getPositionAt(0), model.getPositionAt(p.length));
  return editor.createDecorationsCollection([{ range, options: { inlineClassName: 'rollout-prompt' } }]);
}

function DiffView({
  monaco,
  a,
  b,
  inline,
  label,
  labelB,
}: {
  monaco: MonacoApi;
  a: RolloutRecord;
  b: RolloutRecord;
  inline: boolean;
  label: string;
  labelB: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<M.editor.IStandaloneDiffEditor | null>(null);
  const [state, setState] = useState<DiffState | null>(null);

  // the diff editor and its two models: created per pair of records, disposed editor first
  useEffect(() => {
    const original = monaco.editor.createModel(a.prompt + a.completion, promptLanguage(a.prompt));
    const modified = monaco.editor.createModel(b.prompt + b.completion, promptLanguage(b.prompt));
    const diff = monaco.editor.createDiffEditor(host.current!, {
      readOnly: true,
      originalEditable: false,
      automaticLayout: true,
      renderSideBySide: true,
      useInlineViewWhenSpaceIsLimited: false,
      renderOverviewRuler: false,
      minimap: { enabled: false },
      scrollBeyondLastLine: false,
      fontSize: 13,
      theme: 'vs',
      originalAriaLabel: `${label} (read-only)`,
      modifiedAriaLabel: `${labelB} (read-only)`,
    });
    diff.setModel({ original, modified });
    const dims = [
      dimPrompt(monaco, diff.getOriginalEditor(), original, a.prompt),
      dimPrompt(monaco, diff.getModifiedEditor(), modified, b.prompt),
    ];
    const sizes = { aLength: original.getValueLength(), bLength: modified.getValueLength() };
    setState({ ...sizes, changes: null });
    const sub = diff.onDidUpdateDiff(() => {
      const changes = diff.getLineChanges();
      if (changes) setState({ ...sizes, changes: changes.length });
    });
    editor.current = diff;
    return () => {
      sub.dispose();
      dims.forEach((d) => d.clear());
      editor.current = null;
      diff.dispose();
      original.dispose();
      modified.dispose();
    };
  }, [monaco, a, b, label, labelB]);

  useEffect(() => {
    editor.current?.updateOptions({ renderSideBySide: !inline });
  }, [inline, state]);

  // as tall as the longer program (at about 20 px a line), within bounds
  const lines = Math.max(...[a, b].map((r) => (r.prompt + r.completion).split('\n').length));
  const height = Math.min(DIFF_MAX_PX, Math.max(DIFF_MIN_PX, lines * 20 + 16));
  return (
    <div
      className="rc-diff"
      ref={host}
      style={{ height }}
      data-testid="compare-diff"
      data-ready={state !== null}
      data-a-length={state?.aLength ?? ''}
      data-b-length={state?.bLength ?? ''}
      data-changes={state?.changes ?? ''}
      data-inline={inline}
    />
  );
}

function BreakdownTable({ a, b, weights }: { a: RolloutRecord; b: RolloutRecord; weights: RewardWeights | null }) {
  const d = breakdownDiff(a, b, weights);
  const signed = (x: number): string => `${x > 0 ? '+' : ''}${num(x)}`;
  return (
    <section
      className="rc-breakdown"
      aria-label="Reward breakdown of A and B"
      data-testid="compare-breakdown"
      data-delta={d.delta.toFixed(6)}
    >
      <h3>
        Reward{weights ? ' (what-if weights)' : ''}: B − A = {signed(d.delta)}
      </h3>
      <table>
        <thead>
          <tr>
            <th scope="col">component</th>
            <th scope="col" className="num">
              weight
            </th>
            <th scope="col" className="num">
              A raw
            </th>
            <th scope="col" className="num">
              A
            </th>
            <th scope="col" className="num">
              B raw
            </th>
            <th scope="col" className="num">
              B
            </th>
            <th scope="col" className="num">
              Δ B − A
            </th>
          </tr>
        </thead>
        <tbody>
          {d.rows.map((row) => (
            <tr key={row.name} data-component={row.name} data-delta={row.delta.toFixed(6)}>
              <th scope="row">{row.name}</th>
              <td className="num">
                {row.sign < 0 ? '−' : '+'}
                {num((row.a ?? row.b)!.weight)}
              </td>
              <td className="num">{fmtNum(row.a?.raw ?? null, 3)}</td>
              <td className="num">{fmtNum(row.a?.contribution ?? null, 3)}</td>
              <td className="num">{fmtNum(row.b?.raw ?? null, 3)}</td>
              <td className="num">{fmtNum(row.b?.contribution ?? null, 3)}</td>
              <td className={`num${row.delta > 0 ? ' ok' : row.delta < 0 ? ' bad' : ''}`}>{signed(row.delta)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">total</th>
            <td />
            <td />
            <th className="num">{num(d.totalA)}</th>
            <td />
            <th className="num">{num(d.totalB)}</th>
            <th className="num">{signed(d.delta)}</th>
          </tr>
        </tfoot>
      </table>
    </section>
  );
}
