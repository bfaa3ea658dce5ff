/** Time left in a phase, and durations as the app and the CLI print them. */

/**
 * Time left in a pipeline phase, from when it became active (time and progress then) and its
 * progress now, at the rate seen so far; null until it has moved enough to say (2% of the phase
 * and a second). A resumed phase starts from its resumed progress, so the rate is this session's.
 */
export interface PhaseStart {
  /** ms (performance.now() or Date.now(); the same clock as `now`) */
  t: number;
  /** progress (0..1) when the phase became active */
  p: number;
}

export function phaseEta(start: PhaseStart | null | undefined, progress: number, now: number): number | null {
  if (!start) return null;
  const moved = progress - start.p;
  const elapsed = now - start.t;
  if (moved < 0.02 || elapsed < 1000 || progress >= 1) return null;
  return ((elapsed / moved) * (1 - progress)) / 1000;
}

/** "45 s", "3 min 05 s", "1 h 02 min". */
export function formatEta(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}
