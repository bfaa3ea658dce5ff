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

/** A record without its timings (duration_ms), for comparing two runs of one program. */
export function untimed(r: ScoreRecord): Omit<ScoreRecord, 'duration_ms'> {
  const { duration_ms: _, ...rest } = r;
  return rest;
}
