/**
 * Progress of a command's phases (train's pipeline stages, eval's sampling and scoring, score's
 * programs). On a terminal each phase is one line redrawn in place with `\r`, a bar with its rate
 * and time left, and is left as a finished line when the next phase starts. Piped (a log file, CI),
 * it prints plain lines: one when a phase starts, then at most one per 10% of the phase and 10 s,
 * and the phase's last event if it was not printed, so a phase of 450 steps takes about a dozen.
 * The renderer knows nothing of what the phases are beyond their names.
 */
import type { Io } from './command';
import { phaseEta } from '../util/eta';

export interface ProgressEvent {
  phase: string;
  /** 0..1 within the phase; defaults to done/total when those are given */
  progress?: number;
  /** the phase's latest word, shown after the figures */
  message?: string;
  /** counts, shown as `done/total unit` and used for the rate, only when the caller has them */
  done?: number;
  total?: number;
  unit?: string;
}

export interface Progress {
  update(e: ProgressEvent): void;
  /** finishes the current phase's line (before anything else is written); idempotent */
  end(): void;
}

export interface ProgressOptions {
  /** raw text: lines end with `\n`, terminal redraws start with `\r` */
  write: (s: string) => void;
  isTTY: boolean;
  /** terminal width; terminal lines are cut to one less, so a redraw never wraps (default 80) */
  columns?: number;
  /** milliseconds, for rates and the piped mode's throttle (default performance.now) */
  now?: () => number;
}

/** piped mode: a line at most every this share of the phase ... */
export const PIPED_EVERY_PROGRESS = 0.1;
/** ... and at most every this many milliseconds */
export const PIPED_EVERY_MS = 10_000;
const BAR = 20;
const NAME = 10;

interface Phase {
  name: string;
  start: number;
  /** progress and count at the phase's first event (a resumed phase does not start at 0) */
  p0: number;
  done0?: number;
  progress: number;
  message: string;
  done?: number;
  total?: number;
  unit?: string;
  /** piped mode: when and at what progress the last line was printed; whether the latest event was */
  printedAt: number;
  printedProgress: number;
  printedMessage: string;
  pending: boolean;
}

/** `m:ss`, or `h:mm:ss` from an hour */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

function formatRate(r: number): string {
  return r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(1) : r.toFixed(2);
}

const clamp01 = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

export class ProgressRenderer implements Progress {
  private readonly write: (s: string) => void;
  private readonly isTTY: boolean;
  private readonly width: number;
  private readonly now: () => number;
  private phase: Phase | null = null;
  /** terminal mode: length of the line now on screen, to blank what a shorter redraw leaves */
  private shown = 0;

  constructor(o: ProgressOptions) {
    this.write = o.write;
    this.isTTY = o.isTTY;
    this.width = Math.max(10, o.columns && o.columns > 0 ? o.columns : 80);
    this.now = o.now ?? (() => performance.now());
  }

  update(e: ProgressEvent): void {
    const t = this.now();
    const counted = e.done !== undefined && e.total !== undefined && e.total > 0;
    const progress = clamp01(e.progress ?? (counted ? e.done! / e.total! : 0));
    const message = (e.message ?? '').replace(/\s+/g, ' ').trim();
    let p = this.phase;
    const fresh = !p || p.name !== e.phase;
    if (fresh) {
      this.end();
      p = this.phase = {
        name: e.phase,
        start: t,
        p0: progress,
        done0: counted ? e.done : undefined,
        progress,
        message,
        printedAt: t,
        printedProgress: progress,
        printedMessage: message,
        pending: true,
      };
    }
    p = p!;
    p.progress = progress;
    p.message = message;
    if (counted) {
      p.done0 ??= e.done;
      p.done = e.done;
      p.total = e.total;
      p.unit = e.unit;
    }
    if (this.isTTY) {
      this.draw(this.ttyLine(p, t, false), false);
      return;
    }
    p.pending ||= progress !== p.printedProgress || message !== p.printedMessage;
    if (fresh || (progress - p.printedProgress >= PIPED_EVERY_PROGRESS && t - p.printedAt >= PIPED_EVERY_MS)) this.print(p, t, false);
  }

  end(): void {
    const p = this.phase;
    if (!p) return;
    const t = this.now();
    if (this.isTTY) this.draw(this.ttyLine(p, t, true), true);
    else if (p.pending) this.print(p, t, true);
    this.phase = null;
  }

  /** percent, counts, rate and time left (or, finished, the phase's time) */
  private figures(p: Phase, t: number, finished: boolean): string[] {
    const elapsed = t - p.start;
    const out = [`${Math.floor(p.progress * 100)}%`];
    if (p.done !== undefined && p.total !== undefined) out.push(`${p.done}/${p.total}${p.unit ? ` ${p.unit}` : ''}`);
    if (elapsed >= 1000) {
      if (p.done !== undefined && p.done0 !== undefined && p.done > p.done0) {
        out.push(`${formatRate((p.done - p.done0) / (elapsed / 1000))} ${p.unit || 'it'}/s`);
      } else if (p.done === undefined && p.progress > p.p0) {
        out.push(`${formatRate(((p.progress - p.p0) * 100) / (elapsed / 1000))}%/s`);
      }
    }
    if (finished) out.push(`in ${formatDuration(elapsed)}`);
    else {
      const left = phaseEta({ t: p.start, p: p.p0 }, p.progress, t);
      if (left !== null) out.push(`${formatDuration(left * 1000)} left`);
    }
    return out;
  }

  private ttyLine(p: Phase, t: number, finished: boolean): string {
    const [pct, ...rest] = this.figures(p, t, finished);
    const figures = rest.map((x) => `  ${x}`).join('');
    // a narrow terminal narrows the bar (to half) before it cuts the figures; the message goes first
    const name = p.name.padEnd(NAME);
    const fixed = name.length + 4 + pct!.padStart(4).length + figures.length;
    const bar = Math.max(BAR / 2, Math.min(BAR, this.width - 1 - fixed));
    const filled = Math.floor(p.progress * bar);
    const line = `${name} [${'#'.repeat(filled)}${'-'.repeat(bar - filled)}] ${pct!.padStart(4)}${figures}${p.message ? `  ${p.message}` : ''}`;
    return line.slice(0, this.width - 1).trimEnd();
  }

  private draw(line: string, final: boolean): void {
    this.write(`\r${line}${' '.repeat(Math.max(0, this.shown - line.length))}${final ? '\n' : ''}`);
    this.shown = final ? 0 : line.length;
  }

  private print(p: Phase, t: number, finished: boolean): void {
    const figures = this.figures(p, t, finished).join(', ');
    const line = `[${p.name}] ${p.message ? `${p.message} (${figures})` : figures}`;
    p.pending = false;
    p.printedAt = t;
    p.printedProgress = p.progress;
    p.printedMessage = p.message;
    this.write(`${line}\n`);
  }
}

const SILENT: Progress = { update: () => undefined, end: () => undefined };

/**
 * The progress of a command run with `io`: nothing with --quiet; a redrawn bar on stderr when it
 * is a terminal (written to process.stderr directly: io.err ends every text with a newline);
 * otherwise plain lines through io.err, or nothing where `piped` is false (eval and score print no
 * progress to a pipe, as before: scripts read their stderr).
 */
export function commandProgress(io: Io, o: { quiet: boolean; piped: boolean }): Progress {
  if (o.quiet) return SILENT;
  if (process.stderr.isTTY === true) {
    return new ProgressRenderer({ isTTY: true, columns: process.stderr.columns, write: (s) => void process.stderr.write(s) });
  }
  if (!o.piped) return SILENT;
  return new ProgressRenderer({ isTTY: false, write: (s) => io.err(s.replace(/\n$/, '')) });
}
