/**
 * The metrics lines of a run for the curves: a stored run's metrics.jsonl, read once per pick,
 * or the run in flight.
 *
 * The store keeps only the run in flight's last METRICS_KEPT lines, so the live view is the
 * stored file (earlier sessions of a resumed run, and lines the tail has dropped) followed by
 * the store's tail; they overlap, and the series take the last line of each x. The file is read
 * when the live run changes or restarts (the store then resets the tail), and again before the
 * tail drops a line the last read did not have (the line that was newest when that read began is
 * near the tail's start).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useLab } from '../../store';
import { METRICS_KEPT } from '../../store/runSlice';
import type { MetricRow } from './series';
import { errorText } from '../../util/errors';

export type RunSource = { kind: 'live' } | { kind: 'stored'; name: string };

export interface RunMetrics {
  lines: readonly MetricRow[];
  /** a read is in flight (the lines shown are the previous ones) */
  loading: boolean;
  /** why the stored run could not be read, naming it */
  error: string | null;
}

const EMPTY: readonly MetricRow[] = [];
/** re-read the live run's file when the line newest at the last read is this close to the tail's start */
const REREAD_MARGIN = 50;

async function readStored(name: string): Promise<MetricRow[]> {
  const [{ readMetrics }, { runStorage }] = await Promise.all([import('../../rl/run-files'), import('../../rl/run-dir-browser')]);
  return readMetrics((await runStorage()).open(name));
}

const problem = (name: string, e: unknown): string => `Could not read the metrics of run “${name}”: ${errorText(e)}`;

/** A stored run's metrics, read when `name` changes; null reads nothing. */
function useStoredMetrics(name: string | null): RunMetrics {
  const [state, setState] = useState<{ name: string | null; lines: readonly MetricRow[]; error: string | null }>({
    name: null,
    lines: EMPTY,
    error: null,
  });
  useEffect(() => {
    if (name === null) return;
    let live = true;
    readStored(name).then(
      (lines) => live && setState({ name, lines, error: null }),
      (e: unknown) => live && setState({ name, lines: EMPTY, error: problem(name, e) }),
    );
    return () => {
      live = false;
    };
  }, [name]);
  if (name === null) return { lines: EMPTY, loading: false, error: null };
  return { lines: state.lines, loading: state.name !== name, error: state.name === name ? state.error : null };
}

/** The run in flight (or the last one): its stored file followed by the store's tail. */
function useLiveMetrics(active: boolean): RunMetrics {
  const tail = useLab((s) => s.run.metrics);
  const name = useLab((s) => s.run.name);
  // a run (re)started: the tail was reset, and lines the last read missed are now only in the file
  const [session, setSession] = useState(0);
  useEffect(
    () =>
      useLab.subscribe((s, prev) => {
        if (s.run.metrics !== prev.run.metrics && s.run.metrics.length === 0) setSession((n) => n + 1);
      }),
    [],
  );
  const key = name === null ? null : `${session}\u0000${name}`;
  const [stored, setStored] = useState<{ key: string; lines: readonly MetricRow[]; anchor: unknown; error: string | null } | null>(null);
  const reading = useRef<string | null>(null);
  const current = useRef(key);
  useEffect(() => {
    current.current = key;
    return () => {
      current.current = null; // unmounted, or the key changed: a read in flight is stale
    };
  }, [key]);

  const ours = stored !== null && stored.key === key;
  const anchorAt = ours && stored.anchor !== undefined ? (tail as readonly unknown[]).indexOf(stored.anchor) : -1;
  const stale = active && key !== null && (!ours || (tail.length >= METRICS_KEPT && anchorAt < REREAD_MARGIN));
  useEffect(() => {
    if (!stale || key === null || name === null || reading.current === key) return;
    reading.current = key;
    const anchor = tail[tail.length - 1];
    const done = (lines: readonly MetricRow[], error: string | null) => {
      if (reading.current === key) reading.current = null;
      if (current.current === key) setStored({ key, lines, anchor, error });
    };
    readStored(name).then(
      (lines) => done(lines, null),
      (e: unknown) => done(EMPTY, problem(name, e)),
    );
  }, [stale, key, name, tail]);

  const lines = useMemo(() => (ours && stored.lines.length ? [...stored.lines, ...tail] : tail), [ours, stored, tail]);
  if (!active) return { lines: EMPTY, loading: false, error: null };
  return { lines, loading: key !== null && !ours, error: ours ? stored.error : null };
}

/** The metrics of `source`; null: none. */
export function useRunMetrics(source: RunSource | null): RunMetrics {
  const live = useLiveMetrics(source?.kind === 'live');
  const stored = useStoredMetrics(source?.kind === 'stored' ? source.name : null);
  return source?.kind === 'live' ? live : stored;
}
