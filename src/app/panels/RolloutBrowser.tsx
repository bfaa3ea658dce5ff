/**
 * The rollout browser: one PPO iteration's rollouts of a stored or the live run, grouped by
 * prompt, ranked and sorted under what-if reward weights (the arithmetic is lab/whatif.ts),
 * filtered, and selectable for the code view (`s.rollouts.selected`); a row can be marked as side A
 * or B of a comparison (`s.rollouts.compare`, the Code panel's Compare tab). It opens the live run
 * when one starts, and a new 'ppo' metrics line of the open run refreshes its iterations.
 */
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { useLab } from '../../store';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { CompareSide, SideName } from '../../lab/compare';
import {
  arrange,
  firstCommentLine,
  firstLine,
  groupStats,
  meanAdvantage,
  NO_FILTER,
  recordedWeights,
  type ArrangedGroup,
  type GroupStats,
  type RolloutFilter,
  type SortKey,
} from '../../lab/whatif';
import '../rollout/rollout.css';
import { errorText } from '../../util/errors';

const SORTS: { key: SortKey; label: string }[] = [
  { key: 'total', label: 'Reward total' },
  { key: 'mean_advantage', label: 'Mean advantage' },
  { key: 'final_advantage', label: 'Final advantage' },
  { key: 'tests_passed', label: 'Tests passed' },
];
const FILTERS: { key: keyof RolloutFilter; label: string }[] = [
  { key: 'failed', label: 'Failed' },
  { key: 'astInvalid', label: 'AST-invalid' },
  { key: 'repaired', label: 'Repaired (turn 2)' },
];

const num = (x: number, d = 3): string => (Number.isFinite(x) ? x.toFixed(d) : '—');

export function RolloutBrowser() {
  const r = useLab((s) => s.rollouts);
  const [sort, setSort] = useState<SortKey>('total');
  const [descending, setDescending] = useState(true);
  const [filter, setFilter] = useState<RolloutFilter>(NO_FILTER);
  useFollowRun();

  const components = useMemo(() => recordedWeights(r.records), [r.records]);
  const computed = useMemo((): { stats: GroupStats; error: null } | { stats: null; error: string } => {
    try {
      return { stats: groupStats(r.records, r.weights), error: null };
    } catch (e) {
      return { stats: null, error: errorText(e) };
    }
  }, [r.records, r.weights]);
  // a component's sort key falls back to the total on an iteration without that component
  const by: SortKey = SORTS.some((s) => s.key === sort) || components.some((c) => `component:${c.name}` === sort) ? sort : 'total';
  const layout = useMemo(
    () => (computed.stats ? arrange(r.records, computed.stats, { sort: by, descending, filter }) : []),
    [r.records, computed.stats, by, descending, filter],
  );

  return (
    <div className="rb" data-testid="rollouts" data-status={r.status}>
      <RunBar />
      {r.status === 'error' && (
        <p role="alert" className="alert" data-testid="rollouts-error">
          Could not read the rollouts of run {r.error}
        </p>
      )}
      {computed.error && (
        <p role="alert" className="alert" data-testid="rollouts-error">
          Run “{r.run}”, what-if weights: {computed.error}
        </p>
      )}
      {r.records.length === 0 ? (
        r.status !== 'loading' && r.status !== 'error' && <EmptyNote />
      ) : (
        <>
          <WeightSliders components={components} />
          <div className="rb-controls">
            <label>
              Sort by{' '}
              <select value={by} onChange={(e) => setSort(e.target.value as SortKey)} data-testid="rollouts-sort">
                {SORTS.map((s) => (
                  <option key={s.key} value={s.key}>
                    {s.label}
                  </option>
                ))}
                {components.map((c) => (
                  <option key={c.name} value={`component:${c.name}`}>
                    {c.name} (contribution)
                  </option>
                ))}
              </select>
            </label>
            <select
              aria-label="Sort direction"
              value={descending ? 'desc' : 'asc'}
              onChange={(e) => setDescending(e.target.value === 'desc')}
              data-testid="rollouts-sort-direction"
            >
              <option value="desc">descending</option>
              <option value="asc">ascending</option>
            </select>
            {FILTERS.map((f) => (
              <label key={f.key} className="rb-check">
                <input
                  type="checkbox"
                  checked={filter[f.key]}
                  onChange={(e) => setFilter({ ...filter, [f.key]: e.target.checked })}
                  data-testid={`rollouts-filter-${f.key}`}
                />
                {f.label}
              </label>
            ))}
          </div>
          <CompareBar />
          {computed.stats && <RolloutTable records={r.records} stats={computed.stats} layout={layout} whatIf={r.weights !== null} />}
        </>
      )}
    </div>
  );
}

/** Opens a run when it starts (or, with nothing open, the Experiment panel's run if it has rollouts); follows its new iterations. */
function useFollowRun(): void {
  const started = useLab((s) => (s.run.status === 'running' ? s.run.name : null));
  const stored = useLab((s) => s.run.stored);
  const lastPpo = useLab((s) => s.run.metrics.findLast((m) => m.stage === 'ppo') ?? null);
  const open = useLab((s) => s.openRollouts);

  useEffect(() => {
    if (started) void open(started);
  }, [started, open]);

  useEffect(() => {
    const { rollouts } = useLab.getState();
    if (rollouts.run !== null || rollouts.status !== 'idle' || !stored) return;
    if (stored.files.some((f) => f.startsWith('rollouts/'))) void open(stored.run);
  }, [stored, open]);

  const seen = useRef(lastPpo);
  useEffect(() => {
    if (!lastPpo || lastPpo === seen.current) return;
    seen.current = lastPpo;
    const st = useLab.getState();
    const { run, iteration, iterations, selected } = st.rollouts;
    if (!run || run !== st.run.name) return;
    // on the last iteration with nothing selected, move to the new one; otherwise stay and update the list
    const follow = iteration === null || (iteration === iterations[iterations.length - 1] && selected === null);
    void open(run, follow ? undefined : iteration);
  }, [lastPpo, open]);
}

function RunBar() {
  const r = useLab((s) => s.rollouts);
  const runs = useLab((s) => s.run.runs);
  const live = useLab((s) => s.run.name);
  const liveStatus = useLab((s) => s.run.status);
  const open = useLab((s) => s.openRollouts);
  const id = useId();
  const running = liveStatus === 'running' || liveStatus === 'stopping';
  const names = [...new Set([...(live ? [live] : []), ...(r.run ? [r.run] : []), ...runs])];
  const at = r.iteration === null ? -1 : r.iterations.indexOf(r.iteration);
  const go = (k: number): void => {
    if (r.run && r.iterations[k] !== undefined) void open(r.run, r.iterations[k]);
  };
  const refresh = (): void => {
    const st = useLab.getState();
    if (st.run.stored) void st.inspectRun(st.run.stored.run); // re-reads the list of runs; the Experiment panel's run stays
    if (r.run) void open(r.run, at === r.iterations.length - 1 ? undefined : (r.iteration ?? undefined));
  };
  return (
    <div className="rb-bar">
      <label htmlFor={`${id}-run`}>Run</label>
      <select id={`${id}-run`} value={r.run ?? ''} onChange={(e) => e.target.value && void open(e.target.value)} data-testid="rollouts-run">
        {r.run === null && <option value="">choose a run</option>}
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
            {n === live && running ? ' (running)' : ''}
          </option>
        ))}
      </select>
      <label htmlFor={`${id}-it`}>Iteration</label>
      <button type="button" onClick={() => go(at - 1)} disabled={at <= 0} aria-label="Previous iteration" data-testid="rollouts-prev">
        ‹
      </button>
      <select
        id={`${id}-it`}
        value={r.iteration ?? ''}
        disabled={!r.iterations.length}
        onChange={(e) => r.run && void open(r.run, Number(e.target.value))}
        data-testid="rollouts-iteration"
      >
        {r.iteration === null ? <option value="">—</option> : at < 0 && <option value={r.iteration}>{r.iteration}</option>}
        {r.iterations.map((it) => (
          <option key={it} value={it}>
            {it} of {r.iterations[r.iterations.length - 1]}
          </option>
        ))}
      </select>
      <button
        type="button"
        onClick={() => go(at + 1)}
        disabled={at < 0 || at >= r.iterations.length - 1}
        aria-label="Next iteration"
        data-testid="rollouts-next"
      >
        ›
      </button>
      <button type="button" onClick={refresh} disabled={!r.run} data-testid="rollouts-refresh">
        Refresh
      </button>
      <span className="hint" aria-live="polite">
        {r.status === 'loading' ? 'loading…' : r.run === live && running ? 'run in flight: new iterations appear as they finish' : ''}
      </span>
    </div>
  );
}

function EmptyNote() {
  const r = useLab((s) => s.rollouts);
  const text =
    r.run === null
      ? "No rollouts yet. Each PPO iteration's samples are listed here, grouped by prompt and sortable by reward: start a run in the Experiment panel, or choose a stored run above."
      : r.iteration === null
        ? `Run “${r.run}” has no rollouts yet: they are written after each PPO iteration.`
        : `Iteration ${r.iteration} of run “${r.run}” has no rollouts.`;
  return (
    <p className="empty" data-testid="rollouts-empty">
      {text}
    </p>
  );
}

function WeightSliders({ components }: { components: ReturnType<typeof recordedWeights> }) {
  const weights = useLab((s) => s.rollouts.weights);
  const setWeight = useLab((s) => s.setRewardWeight);
  const reset = useLab((s) => s.resetRewardWeights);
  return (
    <fieldset className="rb-weights" data-testid="rollouts-weights">
      <legend>What-if reward weights</legend>
      {components.map((c) => {
        const w = weights?.[c.name] ?? c.weight;
        const changed = w !== c.weight;
        return (
          <div key={c.name} className="rb-weight" data-changed={changed}>
            <span className="rb-weight-name" title={c.sign > 0 ? 'bonus: adds weight × raw' : 'penalty: subtracts weight × raw'}>
              {c.sign > 0 ? '+' : '−'} {c.name}
            </span>
            <input
              type="range"
              min={0}
              max={2 * Math.max(c.weight, 0.5)}
              step={0.01}
              value={w}
              aria-label={`Weight ${c.name}`}
              onChange={(e) => setWeight(c.name, Number(e.target.value))}
              data-testid={`rollouts-weight-${c.name}`}
            />
            <output className="rb-weight-value" title={`recorded ${c.weight}`}>
              {w.toFixed(2)}
            </output>
          </div>
        );
      })}
      <button type="button" onClick={reset} disabled={weights === null} data-testid="rollouts-weights-reset">
        Reset
      </button>
    </fieldset>
  );
}

interface TableProps {
  records: RolloutRecord[];
  stats: GroupStats;
  layout: ArrangedGroup[];
  whatIf: boolean;
}

/** Marks the selected rollout as side A or B of a comparison; rows take the keys A and B too. */
function CompareBar() {
  const selected = useLab((s) => s.rollouts.selected);
  const { a, b } = useLab((s) => s.rollouts.compare);
  const mark = useLab((s) => s.markForCompare);
  const setTab = useLab((s) => s.setCodeTab);
  const chip = (name: SideName, side: CompareSide | null) => (
    <span className="rb-cmp-chip" data-testid={`compare-chip-${name}`} data-set={side !== null}>
      <span className="rb-cmp" aria-hidden="true">
        {name.toUpperCase()}
      </span>
      {side ? `${side.record.task_id} · it. ${side.iteration} · #${side.index}` : 'not set'}
    </span>
  );
  return (
    <div className="rb-controls rb-compare" role="group" aria-label="Compare two rollouts" data-testid="compare-bar">
      <span>Compare</span>
      {chip('a', a)}
      {chip('b', b)}
      <button
        type="button"
        onClick={() => selected !== null && mark('a', selected)}
        disabled={selected === null}
        data-testid="compare-set-a"
      >
        Set selected as A
      </button>
      <button
        type="button"
        onClick={() => selected !== null && mark('b', selected)}
        disabled={selected === null}
        data-testid="compare-set-b"
      >
        Set selected as B
      </button>
      <button type="button" onClick={() => setTab('compare')} disabled={!a && !b} data-testid="compare-open">
        Open Compare
      </button>
      <span className="hint">keys on a row: A, B</span>
    </div>
  );
}

function RolloutTable({ records, stats, layout, whatIf }: TableProps) {
  const selected = useLab((s) => s.rollouts.selected);
  const select = useLab((s) => s.selectRollout);
  const mark = useLab((s) => s.markForCompare);
  // which rows of the open iteration are sides of the comparison
  const sideAt = useLab(({ rollouts: { run, iteration, compare } }) => {
    const at = (c: CompareSide | null): number => (c && c.run === run && c.iteration === iteration ? c.index : -1);
    return `${at(compare.a)},${at(compare.b)}`;
  });
  const [atA, atB] = sideAt.split(',').map(Number) as [number, number];
  const [focus, setFocus] = useState<number | null>(null);
  const table = useRef<HTMLTableElement>(null);
  const order = layout.flatMap((g) => g.rows);
  const tabbable = [focus, selected, order[0]].find((i) => i !== null && i !== undefined && order.includes(i));

  const onKeyDown = (e: KeyboardEvent<HTMLTableRowElement>, i: number): void => {
    const k = order.indexOf(i);
    const to = { ArrowDown: k + 1, ArrowUp: k - 1, Home: 0, End: order.length - 1 }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      const j = order[Math.min(order.length - 1, Math.max(0, to))]!;
      setFocus(j);
      table.current?.querySelector<HTMLElement>(`tr[data-index="${j}"]`)?.focus();
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      select(i);
    } else if ((e.key === 'a' || e.key === 'b' || e.key === 'A' || e.key === 'B') && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      mark(e.key.toLowerCase() as SideName, i);
    }
  };

  return (
    <div className="rb-scroll">
      <table ref={table} className="rb-table" role="grid" aria-label="Rollouts of the iteration" data-testid="rollouts-table">
        <thead>
          <tr>
            <th scope="col">Rank</th>
            <th scope="col">Reward</th>
            <th scope="col" title="mean of the per-token advantages">
              Adv.
            </th>
            <th scope="col">Verdict</th>
            <th scope="col">Tests</th>
            <th scope="col">AST</th>
            <th scope="col">Turn</th>
            <th scope="col">Completion</th>
          </tr>
        </thead>
        {layout.length === 0 && (
          <tbody>
            <tr>
              <td colSpan={8} className="empty" data-testid="rollouts-none-match">
                No rollout of this iteration matches the filters.
              </td>
            </tr>
          </tbody>
        )}
        {layout.map(({ group: g, rows }) => (
          <tbody key={g.key} data-testid="rollout-group" data-group={g.group} data-turn={g.turn}>
            <tr className="rb-group">
              <th colSpan={8} scope="colgroup">
                <span className="rb-task">{g.task_id}</span>
                {g.turn === 2 && <span className="rb-tag">repair turn</span>}
                <span className="rb-passed" data-testid="rollout-group-passed">
                  {g.passed}/{g.ranked.length} passed
                </span>
                <span className="rb-desc">{firstCommentLine(g.prompt)}</span>
              </th>
            </tr>
            {rows.map((i) => {
              const rec = records[i]!;
              const total = stats.totals[i]!;
              const astText = rec.ast_valid === undefined ? '—' : rec.ast_valid ? 'yes' : 'no';
              return (
                <tr
                  key={i}
                  className="rb-row"
                  data-testid="rollout-row"
                  data-index={i}
                  data-rank={stats.ranks[i]}
                  data-total={total.toFixed(6)}
                  data-group-advantage={stats.advantages[i]!.toFixed(6)}
                  aria-selected={selected === i}
                  tabIndex={i === tabbable ? 0 : -1}
                  data-compare={i === atA ? (i === atB ? 'ab' : 'a') : i === atB ? 'b' : undefined}
                  aria-keyshortcuts="Enter A B"
                  onClick={() => {
                    setFocus(i);
                    select(i);
                  }}
                  onFocus={() => setFocus(i)}
                  onKeyDown={(e) => onKeyDown(e, i)}
                >
                  <td>
                    {stats.ranks[i]}
                    {i === atA && (
                      <span className="rb-cmp" title="compared: side A">
                        A
                      </span>
                    )}
                    {i === atB && (
                      <span className="rb-cmp" title="compared: side B">
                        B
                      </span>
                    )}
                  </td>
                  <td title={`group-normalised advantage under these weights: ${num(stats.advantages[i]!)}`}>
                    {num(total)}
                    {whatIf && (
                      <span className="rb-recorded" title="the recorded total">
                        was {num(rec.reward.total)}
                      </span>
                    )}
                  </td>
                  <td>{num(meanAdvantage(rec))}</td>
                  <td className={rec.passed ? 'ok' : 'bad'} title={rec.message ?? `verdict: ${rec.verdict}`}>
                    {rec.passed ? 'pass' : rec.verdict === 'failed' ? 'fail' : rec.verdict}
                  </td>
                  <td>
                    {rec.tests_passed}/{rec.tests_total}
                  </td>
                  <td className={rec.ast_valid === false ? 'bad' : undefined}>{astText}</td>
                  <td title={rec.turn === 2 ? 'error-driven repair' : 'first attempt'}>{rec.turn}</td>
                  <td className="rb-code">
                    <code title={rec.completion.slice(0, 400)}>{firstLine(rec.completion).trim().slice(0, 120)}</code>
                  </td>
                </tr>
              );
            })}
          </tbody>
        ))}
      </table>
    </div>
  );
}
