/**
 * `coderl serve` as a real process (node bin/coderl.mjs serve --port 0 ...; the first stdout line
 * is its address), over plain node:http connections (one per request, so no keep-alive socket
 * outlives a drain): the refusals before it listens (0.0.0.0 without a token, a bad --suite file,
 * exit 2 with the message), the token (401 without or with a wrong one, 200 with it as a bearer,
 * in the URL's user:T@ and as ?token=T; the probes without), 413 past --max-body naming the
 * field, --suite FILE for /get_reward's task-id labels and a /v1/score without suite fields,
 * 429 with Retry-After on a full queue, 504 past --request-timeout, and SIGTERM's drain.
 *
 * That /v1/score's records are the ones `coderl score` writes is src/serve/serve.test.ts's
 * check (scoreCompletions + annotateRecords on the same completions); it is not repeated here.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ScoreRecord } from '../sandbox/score';
import type { Task } from '../tasks/types';

const BIN = join(import.meta.dirname, '../../bin/coderl.mjs');
const dir = mkdtempSync(join(tmpdir(), 'coderl-serve-cli-'));
const TOKEN = 'test-token-1';

const TASKS: Task[] = [
  { task_id: 'inc', language: 'javascript', prompt: 'function inc(x) {\n', entry_point: 'inc', tests: 'console.assert(inc(1) === 2);\n' },
  {
    task_id: 'dbl',
    language: 'javascript',
    prompt: 'function dbl(x) {\n',
    entry_point: 'dbl',
    tests: 'console.assert(dbl(2) === 4);\nconsole.assert(dbl(0) === 0);\n',
  },
];
const SUITE = join(dir, 'tasks.jsonl');
writeFileSync(SUITE, `${TASKS.map((t) => JSON.stringify(t)).join('\n')}\n`);
const REWARD = join(dir, 'reward.json');
writeFileSync(REWARD, JSON.stringify({ allPass: 3 }));
const LOOP = '  while (true) {}\n}\n';

/** The environment without a token, so only --token gives one. */
function env(): NodeJS.ProcessEnv {
  const e = { ...process.env };
  delete e.CODERL_SERVE_TOKEN;
  return e;
}

interface Serve {
  proc: ChildProcessWithoutNullStreams;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function spawnServe(args: string[]): { proc: ChildProcessWithoutNullStreams; stderr: () => string; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--program-workers', '0', ...args], { env: env() });
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, stderr: () => err, exited };
}

/** Starts a server and waits for its address and /readyz 200. */
async function startServe(args: string[]): Promise<Serve> {
  const s = spawnServe(args);
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: s.proc.stdout }).once('line', resolve);
    void s.exited.then((code) => reject(new Error(`coderl serve exited ${code} before printing its address: ${s.stderr()}`)));
  });
  expect(first).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  for (let i = 0; ; i++) {
    if ((await call(first, '/readyz')).status === 200) break;
    if (i > 200) throw new Error(`not ready after 20 s: ${s.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { ...s, url: first };
}

interface Reply<T> {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: T;
}

interface ErrorBody {
  error: string;
  field: string | null;
}

/** One request on its own connection: GET without a body, POST with `body` (JSON unless a string). */
function call<T = ErrorBody>(
  base: string,
  path: string,
  body?: unknown,
  o: { token?: string; headers?: Record<string, string>; auth?: string } = {},
): Promise<Reply<T>> {
  const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (data !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      new URL(path, base),
      { method: data === undefined ? 'GET' : 'POST', headers, agent: false, auth: o.auth },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: json as T });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Polls /metrics until `sample` (a whole exposition line's name and labels) reads `value`. */
async function waitMetric(base: string, sample: string, value: number, token?: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const text = (await call<undefined>(base, '/metrics', undefined, { token })).text;
    if (text.split('\n').includes(`${sample} ${value}`)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${sample} never read ${value}`);
}

interface ScoreBody {
  records: ScoreRecord[];
}

describe('coderl serve refuses to start (exit 2, before it listens)', () => {
  test('on 0.0.0.0 without a token', async () => {
    const s = spawnServe(['--host', '0.0.0.0']);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toMatch(
      /coderl serve: refusing to listen on 0\.0\.0\.0 without a token: .*give --token T or set CODERL_SERVE_TOKEN/,
    );
  });

  test('with a --suite file that has a bad line, naming the file and the line; with a --suite that is nothing', async () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, `${JSON.stringify(TASKS[0])}\n{"task_id": "x", "language": "javascript", "prompt": "", "entry_point": "f"}\n`);
    const s = spawnServe(['--suite', bad]);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toContain(`coderl serve: --suite ${bad}: line 2: missing field 'tests'`);
    const none = spawnServe(['--suite', join(dir, 'missing.jsonl')]);
    expect(await none.exited).toBe(2);
    expect(none.stderr()).toMatch(/missing\.jsonl: not a built-in suite \(built-in: humaneval-x-js, humaneval-python\)/);
  });
});

describe('coderl serve --token T --suite FILE --reward FILE --max-body 20000', () => {
  let s: Serve;
  beforeAll(async () => {
    s = await startServe([
      '--token',
      TOKEN,
      '--suite',
      SUITE,
      '--reward',
      REWARD,
      '--max-body',
      '20000',
      '--timeout',
      '2500',
      '--workers',
      '1',
    ]);
  }, 60_000);
  afterAll(() => {
    if (s?.proc.exitCode === null) s.proc.kill('SIGKILL');
  });

  const completions = [
    { task_id: 'inc', completion: '  return x + 1;\n}\n' },
    { task_id: 'dbl', completion: '  return x + 2;\n}\n' },
  ];

  test('the token: 401 without it or with a wrong one, 200 with it (bearer, user:T@ in the URL, ?token=T); the probes need none', async () => {
    expect((await call(s.url, '/healthz')).json).toEqual({ status: 'ok' });
    expect((await call(s.url, '/readyz')).status).toBe(200);
    const body = { completions: completions.slice(0, 1) };
    const none = await call(s.url, '/v1/score', body);
    expect(none.status).toBe(401);
    expect(none.json.field).toBe('authorization');
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect((await call(s.url, '/v1/score', body, { token: 'wrong' })).status).toBe(401);
    expect((await call(s.url, '/metrics')).status).toBe(401);
    expect((await call(s.url, '/v1/score', body, { token: TOKEN })).status).toBe(200);
    expect((await call(s.url, '/v1/score', body, { auth: `coderl:${TOKEN}` })).status).toBe(200);
    expect((await call(s.url, `/v1/score?token=${TOKEN}`, body)).status).toBe(200);
  });

  test('413 past --max-body, naming the field', async () => {
    const big = { completions: [{ task_id: 'inc', completion: 'x'.repeat(30_000) }] };
    const a = await call(s.url, '/v1/score', big, { token: TOKEN });
    expect(a.status).toBe(413);
    expect(a.json).toEqual({ error: 'body: larger than the limit of 20000 bytes', field: 'body' });
  });

  test('/v1/score without suite fields scores against --suite FILE (named by its path), with --reward', async () => {
    const a = await call<ScoreBody>(s.url, '/v1/score', { completions }, { token: TOKEN });
    expect(a.status).toBe(200);
    expect(a.json.records.map((r) => [r.task_id, r.verdict])).toEqual([
      ['inc', 'passed'],
      ['dbl', 'failed'],
    ]);
    expect(a.json.records[0]!.reward!.components.find((c) => c.name === 'all_pass')).toMatchObject({ weight: 3, contribution: 3 });
    const named = await call<ScoreBody>(s.url, '/v1/score', { suite: SUITE, completions }, { token: TOKEN });
    expect(named.json.records.map((r) => r.reward!.total)).toEqual(a.json.records.map((r) => r.reward!.total));
    const wrong = await call(s.url, '/v1/score', { completions: [{ task_id: 'nope', completion: '' }] }, { token: TOKEN });
    expect(wrong.status).toBe(400);
    expect(wrong.json).toEqual({ error: `completions[0].task_id: 'nope' is not in suite ${SUITE}`, field: 'completions[0].task_id' });
  });

  test("/get_reward with labels = the --suite file's task ids: rewards as /v1/score's, scores 1 for a pass", async () => {
    const ref = await call<ScoreBody>(s.url, '/v1/score', { completions }, { token: TOKEN });
    const prompts = completions.map((c) => TASKS.find((t) => t.task_id === c.task_id)!.prompt);
    const a = await call<{ rewards: number[]; scores: number[]; extra_logs: Record<string, number[]> }>(
      s.url,
      '/get_reward',
      { query: completions.map((c, i) => `${prompts[i]}${c.completion}<|im_end|>`), prompts, labels: completions.map((c) => c.task_id) },
      { auth: `coderl:${TOKEN}` },
    );
    expect(a.status).toBe(200);
    expect(a.json.rewards).toEqual(ref.json.records.map((r) => r.reward!.total));
    expect(a.json.scores).toEqual([1, 0]);
    expect(a.json.extra_logs['rewards/all_pass']).toEqual([3, 0]);
  });

  // last: it stops the server
  test('SIGTERM drains: /readyz 503, a request in flight finishes with its result, new requests 503, exit 0', async () => {
    const inflight = call<ScoreBody>(s.url, '/v1/score', { completions: [{ task_id: 'inc', completion: LOOP }] }, { token: TOKEN });
    await waitMetric(s.url, 'coderl_serve_programs_running{pool="score"}', 1, TOKEN);
    s.proc.kill('SIGTERM');
    for (let i = 0; !s.stderr().includes('SIGTERM: draining'); i++) {
      if (i > 100) throw new Error(`no drain line: ${s.stderr()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const ready = await call<{ status: string }>(s.url, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.json.status).toBe('draining');
    const late = await call(s.url, '/v1/score', { completions }, { token: TOKEN });
    expect(late.status).toBe(503);
    expect(late.json.error).toMatch(/shutting down/);
    const done = await inflight;
    expect(done.status).toBe(200);
    expect(done.json.records.map((r) => r.verdict)).toEqual(['timeout']);
    expect(await s.exited).toBe(0);
    expect(s.stderr()).toMatch(/coderl serve: stopped\n$/);
  });
});

describe('coderl serve --queue 1 --workers 1 --request-timeout 1500', () => {
  let s: Serve;
  beforeAll(async () => {
    s = await startServe(['--suite', SUITE, '--queue', '1', '--workers', '1', '--request-timeout', '1500', '--timeout', '5000']);
  }, 60_000);
  afterAll(async () => {
    s?.proc.kill('SIGTERM');
    expect(await s?.exited).toBe(0);
  });

  test('a full queue is 429 with Retry-After; a request past --request-timeout is 504', async () => {
    const t0 = Date.now();
    // an endless program on the worker, then one waiting in the queue's one place
    const endless = (task_id: string) => call(s.url, '/v1/score', { completions: [{ task_id, completion: LOOP }] });
    const running = endless('inc');
    await waitMetric(s.url, 'coderl_serve_programs_running{pool="score"}', 1);
    const waiting = endless('dbl');
    await waitMetric(s.url, 'coderl_serve_queue_depth{pool="score"}', 1);
    const busy = await call<ErrorBody & { retry_after_s: number }>(s.url, '/v1/score', {
      completions: [{ task_id: 'inc', completion: '' }],
    });
    expect(busy.status).toBe(429);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(busy.json.retry_after_s).toBe(Number(busy.headers['retry-after']));
    expect(busy.json.error).toMatch(/the queue is full \(1 programs waiting, limit 1\)/);
    for (const late of await Promise.all([running, waiting])) {
      expect(late.status).toBe(504);
      expect(late.json.error).toBe('the request took longer than 1500 ms and was stopped');
    }
    expect(Date.now() - t0).toBeLessThan(4500); // answered at the deadline, not when the program ends (5 s)
    await waitMetric(s.url, 'coderl_serve_queue_depth{pool="score"}', 0); // the waiting program left with its request
  });
});
