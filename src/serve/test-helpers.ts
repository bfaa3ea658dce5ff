/**
 * What the serve tests share: a real server on 127.0.0.1 port 0 over given pools, JSON requests
 * with fetch, and the records `coderl score` would write for the same completions (the
 * reference every answer is checked against). Imported by tests only.
 */
import type { Analyzer } from '../analysis';
import { annotateRecords } from '../reward/annotate';
import type { RewardConfig } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import type { RunLimits } from '../sandbox/result';
import { scoreCompletions, type ScoreRecord } from '../sandbox/score';
import type { Completion, Task } from '../tasks/types';
import { DEFAULT_SERVE, type ServeConfig } from './config';
import { ServeServer, type ServeDeps } from './server';

export async function startTestServer(overrides: Partial<ServeConfig>, deps: ServeDeps): Promise<ServeServer> {
  const server = await ServeServer.start({ ...DEFAULT_SERVE, port: 0, programWorkers: 0, ...overrides }, deps);
  await server.ready;
  return server;
}

export interface Answer<T> {
  status: number;
  headers: Headers;
  /** the body parsed as JSON (undefined when it is not JSON), typed as the caller says */
  json: T;
  text: string;
}

/** An error answer's body. */
export interface ErrorBody {
  error: string;
  field: string | null;
}

/** GET (no body) or POST (`body` as JSON, or as it is when text or bytes). */
export async function call<T = ErrorBody>(
  base: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const init: RequestInit =
    body === undefined
      ? { headers }
      : {
          method: 'POST',
          body: typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body) : JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...headers },
        };
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json: json as T, text };
}

/** What `coderl score` writes for these completions: scoreCompletions on the pool, annotateRecords, as JSON (so -0 is 0). */
export async function referenceRecords(
  pool: SandboxPool,
  analyzer: Analyzer,
  tasks: readonly Task[],
  completions: readonly Completion[],
  limits: RunLimits,
  reward: RewardConfig,
): Promise<ScoreRecord[]> {
  const records = await scoreCompletions(pool, tasks, completions, { limits });
  annotateRecords(records, tasks, completions, analyzer, reward);
  return JSON.parse(JSON.stringify(records)) as ScoreRecord[];
}

/**
 * How a timeout was caught: Python's harness interrupts the run at its limit, and the pool kills a
 * worker that has not answered by the limit plus a grace time. Which one answers depends on how
 * loaded the machine is (a clean-clone CI run here: the server's kill against the reference's interrupt, two
 * test files at once), so two runs of one endless loop agree on the verdict, not on these words.
 */
const TIMEOUT_MESSAGES = [
  /^(timeout: )?the run exceeded its time limit \(interrupted\)$/,
  /^the run exceeded \d+ ms \(worker terminated\)$/,
];
const timeoutWords = (m: string | undefined): string | undefined =>
  m !== undefined && TIMEOUT_MESSAGES.some((re) => re.test(m)) ? '(a timeout, interrupted or terminated)' : m;

/**
 * A record without what depends on the machine's speed, for comparing two runs of one program:
 * its timings (duration_ms), and a timeout's message (either of TIMEOUT_MESSAGES) on the record
 * and on its timed-out tests. Any other message is kept as it is.
 */
export function untimed(r: ScoreRecord): Omit<ScoreRecord, 'duration_ms'> {
  const { duration_ms: _, ...rest } = r;
  if (rest.verdict !== 'timeout') return rest;
  return {
    ...rest,
    message: timeoutWords(rest.message),
    tests: rest.tests.map((t) => (t.status === 'timeout' ? { ...t, message: timeoutWords(t.message) } : t)),
  };
}
