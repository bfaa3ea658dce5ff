/**
 * Chart axes: pure, no DOM. What Chart.tsx gives uPlot as its axes' tick formatter (`values`)
 * and its scales' `range`, and how the logged x becomes the x a chart shows.
 *
 * x shown: SFT and reward-model steps as logged; RL iterations 1..N, as the Rollouts panel numbers
 * them ("iteration 1 of 2") and as the run's progress says ("iteration 1/2"). metrics.jsonl logs
 * PPO iteration i 0-based, so it is shown at i + 1: the policy after i + 1 updates, whose rollouts
 * file is rollouts of iteration i + 1. series.ts places the SFT policy's evaluation at -1 (before
 * iteration 0), shown at 0 and labelled "before RL", so x is never negative.
 */
import type { Aligned, XKind } from './series';

// ---- x

/** The x a chart shows for a logged x: RL iterations 1-based (an evaluation before RL at 0), steps as logged. */
export function displayX(kind: XKind, x: number): number {
  return kind === 'iteration' ? Math.max(0, x + 1) : x;
}

/** Aligned data with the x the chart shows. */
export function displayData<T extends Aligned>(kind: XKind, data: T): T {
  return kind === 'iteration' ? { ...data, x: data.x.map((x) => displayX(kind, x)) } : data;
}

/** An x shown in a legend or a sentence: "0 (before RL)" for the evaluation before RL. */
export function xText(kind: XKind, x: number): string {
  return kind === 'iteration' && x === 0 ? '0 (before RL)' : String(x);
}

/** What a chart's x-axis counts, noting x = 0 when the chart has a point before RL. */
export function xAxisLabel(kind: XKind, x: readonly number[]): string {
  const label = X_AXIS[kind];
  return kind === 'iteration' && x[0] === 0 ? `${label} (0 = before RL)` : label;
}

const X_AXIS: Record<XKind, string> = { iteration: 'RL iteration', 'sft-step': 'SFT step', 'rm-step': 'RM step' };

/** The x range: the data's, a lone point with a step either side but never below 0 when the data is not. */
export function xRange(min: number | null, max: number | null): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min < max) return [min, max];
  return [min >= 0 ? Math.max(0, min - 1) : min - 1, min + 1];
}

// ---- y

/**
 * How a chart's y is ranged: 'fraction' for rates in [0, 1] (pass rates, clip fraction): from 0,
 * and 0..1 when all zero, the natural scale of a rate; 'auto' for everything else.
 */
export type YKind = 'auto' | 'fraction';

/** Values closer than this (relative to their magnitude) are one value: float32 noise, as logged from the GPU. */
const SAME = 1e-6;
/** padding either side of a series' range, as a fraction of it */
const PAD = 0.05;
/** half the range of a constant series, as a fraction of its value */
const MARGIN = 0.05;

/**
 * The y range for data from `min` to `max`: padded by 5%, not crossing 0 when the data does not;
 * a constant c is c ± 5%, a constant 0 is [-1, 1] (or [0, 1] for a fraction); never uPlot's 0..100.
 */
export function yRange(min: number | null, max: number | null, kind: YKind = 'auto'): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return kind === 'fraction' ? [0, 1] : [-1, 1];
  if (min > max) [min, max] = [max, min];
  if (kind === 'fraction' && min >= 0 && max <= 1) return [0, max === 0 ? 1 : Math.min(1, max * (1 + 2 * PAD))];
  const mag = Math.max(Math.abs(min), Math.abs(max));
  const span = max - min;
  if (span <= mag * SAME) {
    if (mag === 0) return [-1, 1];
    const c = (min + max) / 2;
    return [c - Math.abs(c) * MARGIN, c + Math.abs(c) * MARGIN];
  }
  let lo = min - span * PAD;
  let hi = max + span * PAD;
  if (min >= 0 && lo < 0) lo = 0;
  if (max <= 0 && hi > 0) hi = 0;
  return [lo, hi];
}

// ---- ticks

/** The decimals that print multiples of `step` exactly: 0 for 1 or 50, 1 for 2.5 or 0.5, 5 for 2e-5. */
export function stepDecimals(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  for (let d = Math.max(0, -Math.floor(Math.log10(step))); d <= 20; d++) {
    const m = step * 10 ** d;
    if (Math.abs(m - Math.round(m)) <= 1e-6 * m) return d;
  }
  return 20;
}

/** Ticks print as plain numbers while their largest magnitude is in [1e-3, 1e6), else in exponent form. */
const PLAIN_MIN = 1e-3;
const PLAIN_MAX = 1e6;

/** A number in compact exponent form with `digits` decimals in the mantissa, trailing zeros dropped: 1.5e-14, 2e6. */
function exponent(v: number, digits: number): string {
  const [m, e] = v.toExponential(digits).split('e') as [string, string];
  const mant = m.includes('.') ? m.replace(/\.?0+$/, '') : m;
  return `${mant}e${e.replace('+', '')}`;
}

function labels(ticks: readonly number[], step: number, extra: number): string[] {
  const snapped = ticks.map((t) => (Math.abs(t) < step * 1e-6 ? 0 : t)); // no "-0.00" from float noise
  const maxAbs = Math.max(0, ...snapped.map(Math.abs));
  if (maxAbs === 0) return snapped.map(() => '0');
  if (maxAbs >= PLAIN_MIN && maxAbs < PLAIN_MAX) {
    const d = Math.min(100, stepDecimals(step) + extra);
    return snapped.map((t) => t.toFixed(d));
  }
  let e = Math.floor(Math.log10(maxAbs));
  if (maxAbs / 10 ** e >= 10) e++;
  const d = Math.min(100, stepDecimals(step / 10 ** e) + extra);
  return snapped.map((t) => (t === 0 ? '0' : exponent(t, d)));
}

/**
 * Tick labels for ticks `step` apart: decimals from the step, so adjacent ticks never print the
 * same (ticks 6.14700, 6.14705, 6.14710; 0, 1e-14, 2e-14); plain numbers for magnitudes in
 * [1e-3, 1e6), compact exponent form outside. Should the ticks not be multiples of the step,
 * decimals are added until adjacent labels differ.
 */
export function tickLabels(ticks: readonly number[], step: number): string[] {
  const s = step > 0 && Number.isFinite(step) ? step : smallestGap(ticks);
  let out = labels(ticks, s, 0);
  for (let extra = 1; extra <= 20 && repeats(out); extra++) out = labels(ticks, s, extra);
  return out;
}

function smallestGap(ticks: readonly number[]): number {
  let gap = Infinity;
  for (let i = 1; i < ticks.length; i++) {
    const g = Math.abs(ticks[i]! - ticks[i - 1]!);
    if (g > 0 && g < gap) gap = g;
  }
  return Number.isFinite(gap) ? gap : 1;
}

const repeats = (labels: readonly string[]): boolean => labels.some((l, i) => i > 0 && l === labels[i - 1]);
