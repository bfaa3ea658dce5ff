/**
 * Plain programs: one source file run with a standard input, giving back its standard output,
 * standard error and exit code, as a judge runs `python main.py < in` or `node main.js < in`
 * (what Sandbox Fusion's `run_code` does; `coderl serve` answers veRL with it). The programs run
 * in the same engines as the tests (QuickJS for JavaScript, Pyodide for Python) with the same
 * defences against the host (no network, no processes, no module loading, a fresh runtime per
 * run), on a pool of their own: program.worker.ts, whose Python harness has no tests to grade.
 *
 * A program job is a RunJob whose `completion` is the source and whose `program` carries stdin,
 * so SandboxPool runs it unchanged; its result is a RunResult with `process` added. Verdicts:
 * - `passed`: the program exited with code 0; `failed`: with another code (an uncaught exception
 *   is code 1 with the traceback on stderr, as in CPython and Node);
 * - `timeout`: the wall-clock limit was reached (also when the program caught the interrupt and
 *   finished late); `output-limit`: stdout and stderr together passed the output limit (the
 *   program is stopped, exit code 1);
 * - `error`: the sandbox itself failed (an engine crash, a killed worker): no `process` then.
 */
import type { Language } from '../tasks/types';
import type { RunJob } from './protocol';
import type { RunLimits, RunResult } from './result';

export interface ProgramJob extends RunJob {
  program: { stdin: string };
}

export interface ProcessOutput {
  stdout: string;
  stderr: string;
  /** null when the program did not exit by itself (timeout) */
  exit_code: number | null;
}

export interface ProgramResult extends RunResult {
  process: ProcessOutput;
}

/** The task id every program job carries (the pool checks results against it). */
export const PROGRAM_TASK_ID = 'program';

export function programJob(language: Language, code: string, stdin: string, limits: RunLimits): ProgramJob {
  return {
    task: { task_id: PROGRAM_TASK_ID, language, prompt: '', entry_point: '', tests: '' },
    completion: code,
    limits,
    program: { stdin },
  };
}

export function isProgramJob(job: RunJob): job is ProgramJob {
  const p = (job as { program?: unknown }).program;
  return typeof p === 'object' && p !== null && typeof (p as { stdin?: unknown }).stdin === 'string';
}

export function isProgramResult(r: RunResult): r is ProgramResult {
  const p = (r as { process?: unknown }).process;
  if (typeof p !== 'object' || p === null) return false;
  const o = p as Record<string, unknown>;
  return typeof o.stdout === 'string' && typeof o.stderr === 'string' && (o.exit_code === null || typeof o.exit_code === 'number');
}

/** stdout and stderr of one run, cut when both together pass `limit` characters. */
export class OutputCapture {
  stdout = '';
  stderr = '';
  exceeded = false;

  constructor(private readonly limit: number) {}

  /** Appends `text` to a stream; false once the limit is passed (the text is cut there). */
  write(stream: 'stdout' | 'stderr', text: string): boolean {
    if (this.exceeded) return false;
    const room = this.limit - this.stdout.length - this.stderr.length;
    const kept = text.length > room ? text.slice(0, Math.max(0, room)) : text;
    if (stream === 'stdout') this.stdout += kept;
    else this.stderr += kept;
    if (text.length > room) this.exceeded = true;
    return !this.exceeded;
  }
}

export interface ProgramEnd {
  /** the exit code the program ended with; null when it was stopped at the deadline */
  exitCode: number | null;
  timedOut: boolean;
  output: OutputCapture;
  limits: RunLimits;
  durationMs: number;
}

/** The result of a program run, its verdict decided from how it ended (see the header). */
export function programResult(end: ProgramEnd): ProgramResult {
  const { output, limits } = end;
  let verdict: RunResult['verdict'];
  let message: string | undefined;
  let exitCode = end.exitCode;
  if (end.timedOut || end.durationMs > limits.timeoutMs) {
    verdict = 'timeout';
    message = `the program exceeded ${limits.timeoutMs} ms`;
    exitCode = null;
  } else if (output.exceeded) {
    verdict = 'output-limit';
    message = `the program printed more than ${limits.outputChars} characters (stdout and stderr together); it was stopped`;
    exitCode = 1;
  } else {
    verdict = exitCode === 0 ? 'passed' : 'failed';
    if (exitCode !== 0) message = `the program exited with code ${exitCode}`;
  }
  const r: ProgramResult = {
    task_id: PROGRAM_TASK_ID,
    verdict,
    passed: verdict === 'passed',
    tests: [],
    output: output.stdout,
    duration_ms: Math.round(end.durationMs * 10) / 10,
    process: { stdout: output.stdout, stderr: output.stderr, exit_code: exitCode },
  };
  if (message !== undefined) r.message = message;
  return r;
}
