/**
 * Training curves: a run's metrics as charts (charts/series.ts groups them, charts/Chart.tsx
 * draws them with uPlot), optionally overlaid with a second run's, and the alarms raised.
 *
 * The run is the one in flight (or the last one started here) or any stored run; the first
 * choice is made for the user until they pick (the live run when there is one, else the first
 * stored run). In an overlay the first run is drawn in cool colours with solid lines, the second
 * in warm colours with dashed lines, and each legend entry names its run. RL iterations are
 * numbered 1..N as in the Rollouts panel (logged 0-based: charts/axes.ts displayX), the SFT
 * policy's evaluation at 0, "before RL"; dashed red marks on the charts are iterations that raised alarms.
 */
import { useId, useMemo, useState } from 'react';
import { displayData, displayX, xAxisLabel, xText } from '../charts/axes';
import { Chart, type ChartLine } from '../charts/Chart';
import { chartGroups, flattenAlarms, groupData, X_LABEL, type ChartGroup, type ChartSeries, type MetricRow } from '../charts/series';
import { useRunMetrics, type RunSource } from '../charts/useRunMetrics';
import { useLab } from '../../store';

/** Line colours of the first run (cool) and the second (warm); a run's series take them in order. */
const PALETTES = [
  ['#1f4e79', '#2ca02c', '#7b3fb5', '#17a2b8', '#5f6b7a', '#8a9a1b', '#3b5bdb', '#0b7a5a', '#b83280'],
  ['#d9480f', '#c92a2a', '#a0522d', '#e67700', '#9c36b5', '#b08900', '#e8590c', '#862e2e', '#d6336c'],
] as const;
/** the second run's dash pattern */
const DASH = [6, 4];

interface Option {
  value: string;
  /** the run's name */
  name: string;
  text: string;
}

const sourceOf = (value: string): RunSource | null =>
  value === 'live' ? { kind: 'live' } : value.startsWith('run:') ? { kind: 'stored', name: value.slice(4) } : null;

function chartLines(series: readonly ChartSeries[], names: readonly string[]): ChartLine[] {
  const overlay = names.length > 1;
  const seen = [0, 0];
  return series.map((s) => {
    const palette = PALETTES[s.run % 2]!;
    const color = palette[seen[s.run % 2]!++ % palette.length]!;
    return { label: overlay ? `${names[s.run]}: ${s.label}` : s.label, color, dash: s.run % 2 ? DASH : undefined, points: s.sparse };
  });
}

export function TrainingCurves() {
  const status = useLab((s) => s.run.status);
  const liveName = useLab((s) => s.run.name);
  const runs = useLab((s) => s.run.runs);
  const [pick, setPick] = useState<string | null>(null); // null: chosen for the user
  const [comparePick, setComparePick] = useState('');
  const id = useId();

  const options = useMemo<Option[]>(() => {
    const live = status !== 'idle' && liveName !== null ? [{ value: 'live', name: liveName, text: `${liveName} (live, ${status})` }] : [];
    return [...live, ...runs.map((r) => ({ value: `run:${r}`, name: r, text: r }))];
  }, [status, liveName, runs]);
  const find = (v: string) => options.find((o) => o.value === v);
  const primary = (pick !== null ? find(pick) : undefined) ?? options[0];
  const second = comparePick !== primary?.value ? find(comparePick) : undefined;

  const a = useRunMetrics(primary ? sourceOf(primary.value) : null);
  const b = useRunMetrics(second ? sourceOf(second.value) : null);
  const names = useMemo(() => (primary ? [primary.name, ...(second ? [second.name] : [])] : []), [primary, second]);
  const runLines = useMemo<(readonly MetricRow[])[]>(() => (second ? [a.lines, b.lines] : [a.lines]), [second, a.lines, b.lines]);
  const charts = useMemo(() => {
    const groups = chartGroups(runLines.flat());
    return groups.map((group) => ({ group, data: displayData(group.x, groupData(group, runLines)) }));
  }, [runLines]);
  const alarms = useMemo(
    () =>
      runLines.flatMap((lines, run) => flattenAlarms(lines).map((al) => ({ ...al, iteration: displayX('iteration', al.iteration), run }))),
    [runLines],
  );
  const markers = useMemo(() => [...new Set(alarms.map((al) => al.iteration))].sort((x, y) => x - y), [alarms]);
  const hasPpo = useMemo(() => runLines.some((lines) => lines.some((l) => l.stage === 'ppo')), [runLines]);

  const loading = [a.loading && primary, b.loading && second].filter((o): o is Option => !!o);
  const errors = [a.error, second ? b.error : null].filter((e): e is string => e !== null);

  return (
    <div className="curves" data-testid="curves">
      <div className="curves-pickers">
        <label htmlFor={`${id}-run`}>Run</label>
        <select
          id={`${id}-run`}
          value={primary?.value ?? ''}
          disabled={!options.length}
          onChange={(e) => setPick(e.target.value)}
          data-testid="curves-run"
        >
          {!options.length && <option value="">no runs</option>}
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.text}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-compare`}>Compare with</label>
        <select
          id={`${id}-compare`}
          value={second?.value ?? ''}
          disabled={options.length < 2}
          onChange={(e) => setComparePick(e.target.value)}
          data-testid="curves-compare"
        >
          <option value="">none</option>
          {options
            .filter((o) => o.value !== primary?.value)
            .map((o) => (
              <option key={o.value} value={o.value}>
                {o.text}
              </option>
            ))}
        </select>
        <span className="curves-status hint" aria-live="polite" data-testid="curves-status">
          {loading.length ? `Reading ${loading.map((o) => `“${o.name}”`).join(' and ')}…` : ''}
        </span>
      </div>
      {errors.map((e) => (
        <p key={e} role="alert" className="alert" data-testid="curves-error">
          {e}
        </p>
      ))}
      {second && <RunLegend names={names} />}
      {charts.length ? (
        <div className="curves-grid" aria-busy={loading.length > 0} data-testid="curves-grid">
          {charts.map(({ group, data }) => {
            const lines = chartLines(data.series, names);
            const xAxis = xAxisLabel(group.x, data.x);
            return (
              <Chart
                key={`${chartKey(group, lines)}|${xAxis}`}
                id={group.id}
                title={group.title}
                xLabel={X_LABEL[group.x]}
                xAxis={xAxis}
                xText={(x) => xText(group.x, x)}
                yKind={group.y}
                data={data}
                lines={lines}
                markers={group.x === 'iteration' ? markers : undefined}
              />
            );
          })}
        </div>
      ) : (
        !loading.length && (
          <p className="empty" data-testid="curves-empty">
            {emptyText(options.length > 0, names, errors.length > 0)}
          </p>
        )
      )}
      {hasPpo && <AlarmList alarms={alarms} names={names} />}
    </div>
  );
}

const chartKey = (g: ChartGroup, lines: readonly ChartLine[]): string => `${g.id}|${lines.map((l) => `${l.label}/${l.color}`).join('|')}`;

function emptyText(anyRun: boolean, names: readonly string[], failed: boolean): string {
  if (!anyRun)
    return 'No runs yet. Start one in the Experiment panel: reward per component, pass rate, KL, entropy and losses are plotted here live.';
  const which = names.map((n) => `“${n}”`).join(' and ');
  if (failed) return `Nothing to plot for ${which}.`;
  return `No metrics to plot yet for ${which}. SFT losses appear after the first logged step, PPO curves after the first iteration.`;
}

function RunLegend({ names }: { names: readonly string[] }) {
  return (
    <ul className="curves-legend" data-testid="curves-legend" aria-label="Runs overlaid">
      {names.map((n, run) => (
        <li key={run} style={{ color: PALETTES[run % 2]![0] }}>
          <span className={`curves-swatch${run % 2 ? ' dashed' : ''}`} aria-hidden="true" />
          <span style={{ color: '#1b1f24' }}>
            {n} ({run === 0 ? 'cool colours, solid' : 'warm colours, dashed'})
          </span>
        </li>
      ))}
    </ul>
  );
}

function AlarmList({
  alarms,
  names,
}: {
  alarms: readonly { run: number; iteration: number; message: string }[];
  names: readonly string[];
}) {
  const id = useId();
  return (
    <section className="curves-alarms" aria-labelledby={`${id}-title`} data-testid="curves-alarms" data-count={alarms.length}>
      <h3 id={`${id}-title`}>Alarms</h3>
      {alarms.length === 0 ? (
        <p className="hint">No alarms raised.</p>
      ) : (
        <ul>
          {alarms.map((al, i) => (
            <li key={i} data-iteration={al.iteration} data-run={names[al.run]}>
              <span className="curves-alarm-it">iteration {al.iteration}</span>
              {names.length > 1 && ` (${names[al.run]})`}: {al.message}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
