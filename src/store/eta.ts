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
