/**
 * Our own API on a real listener (127.0.0.1, port 0) and a real sandbox worker: /v1/score gives
 * the records `coderl score` writes (checked against scoreCompletions + annotateRecords on the
 * same completions: honest, failing and hostile ones, JavaScript and Python), suites uploaded
 * by hash, the field errors, and the Prometheus text of /metrics.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { DEFAULT_REWARD } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { DEFAULT_LIMITS } from '../sandbox/result';
import type { ScoreRecord } from '../sandbox/score';
import type { Completion, Task } from '../tasks/types';
import type { ScoreResponseSummary } from './scoring';
import type { ServeServer } from './server';
import { SuiteStore } from './suites';
import { call, referenceRecords, startTestServer, untimed } from './test-helpers';

const LIMITS = { ...DEFAULT_LIMITS, timeoutMs: 1000, graceMs: 1500 };
let pool: SandboxPool;
let analyzer: Analyzer;
let server: ServeServer;
let base: string;
let js: Task[];
let py: Task[];

interface ScoreBody {
  records: ScoreRecord[];
  summary: ScoreResponseSummary;
}

beforeAll(async () => {
  [pool, analyzer] = await Promise.all([createNodePool({ size: 1 }), createAnalyzer(nodeWasmLoader)]);
  server = await startTestServer({ limits: LIMITS, suiteCacheSize: 2 }, { pool, analyzer });
  base = server.url;
  const store = new SuiteStore(1);
  js = (await store.byName('humaneval-x-js', 'suite')).tasks.slice(0, 3);
  py = (await store.byName('humaneval-python', 'suite')).tasks.slice(0, 2);
}, 60_000);
afterAll(async () => {
  await server?.close();
  pool?.close();
});

const jsCompletions = (): Completion[] => [
  { task_id: js[0]!.task_id, completion: js[0]!.canonical_solution! },
  { task_id: js[0]!.task_id, completion: '  return false;\n}\n' },
  { task_id: js[1]!.task_id, completion: '  while (true) {}\n}\n' },
  { task_id: js[1]!.task_id, completion: "  for (;;) console.log('x'.repeat(1000));\n}\n" },
  { task_id: js[2]!.task_id, completion: "  return require('fs').readFileSync('/etc/passwd', 'utf8');\n}\n" },
];

const pyCompletions = (): Completion[] => [
  { task_id: py[0]!.task_id, completion: py[0]!.canonical_solution! },
  { task_id: py[0]!.task_id, completion: '    return False\n' },
  { task_id: py[1]!.task_id, completion: "    import os\n    os.system('echo pwned')\n    return []\n" },
  { task_id: py[1]!.task_id, completion: '    while True:\n        pass\n' },
];

describe('POST /v1/score', () => {
  test('JavaScript by built-in name: the records coderl score writes (honest, failing, endless loop, huge output, require)', async () => {
    const completions = jsCompletions();
    const a = await call<ScoreBody>(base, '/v1/score', { suite: 'humaneval-x-js', completions });
    expect(a.status).toBe(200);
    const ref = await referenceRecords(pool, analyzer, js, completions, LIMITS, DEFAULT_REWARD);
    expect(a.json.records.map(untimed)).toEqual(ref.map(untimed));
    expect(a.json.records.map((r) => r.verdict)).toEqual(['passed', 'failed', 'timeout', 'output-limit', 'error']);
    expect(a.json.records[0]!.reward!.total).toBeGreaterThan(1.5);
    expect(a.json.records[0]!.ast?.valid).toBe(true);
    expect(a.json.summary).toMatchObject({
      completions: 5,
      passed: 1,
      failed: 4,
      tasks: 3,
      verdicts: { passed: 1, failed: 1, timeout: 1 },
    });
    expect(a.json.summary.pass_at_1).toBeCloseTo(0.5 / 3, 10);
  });

  test('Python by built-in name: the same records, os.system is tampering, the loop a timeout', async () => {
    const completions = pyCompletions();
    const a = await call<ScoreBody>(base, '/v1/score', { suite: 'humaneval-python', completions, reward: { allPass: 2 } });
    expect(a.status).toBe(200);
    const ref = await referenceRecords(pool, analyzer, py, completions, LIMITS, { ...DEFAULT_REWARD, allPass: 2 });
    expect(a.json.records.map(untimed)).toEqual(ref.map(untimed));
    expect(a.json.records.map((r) => r.verdict)).toEqual(['passed', 'failed', 'tampering', 'timeout']);
    expect(a.json.records[0]!.reward!.components.find((c) => c.name === 'all_pass')!.contribution).toBe(2);
  }, 60_000);

  test('inline tasks and an uploaded suite (by the SHA-256 of the bytes sent) score the same; a missing hash is 404 naming it', async () => {
    const completions = jsCompletions().slice(0, 2);
    const inline = await call<ScoreBody>(base, '/v1/score', { tasks: js, completions });
    expect(inline.status).toBe(200);
    const jsonl = js.map((t) => JSON.stringify(t)).join('\n');
    const up = await call<{ suite_hash: string; tasks: number }>(base, '/v1/suites', jsonl, { 'content-type': 'application/x-ndjson' });
    expect(up.json).toMatchObject({ suite_hash: createHash('sha256').update(jsonl).digest('hex'), tasks: 3 });
    const byHash = await call<ScoreBody>(base, '/v1/score', { suite_hash: up.json.suite_hash, completions });
    expect(byHash.json.records.map(untimed)).toEqual(inline.json.records.map(untimed));
    // the LRU holds 2: two more uploads push this one out
    for (const n of [1, 2]) expect((await call(base, '/v1/suites', JSON.stringify(js.slice(0, n)))).status).toBe(200);
    const gone = await call(base, '/v1/score', { suite_hash: up.json.suite_hash, completions });
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ error: expect.stringContaining(`suite ${up.json.suite_hash} is not on this server`), field: 'suite_hash' });
  });

  test.each([
    [
      'a task id not in the suite',
      {
        suite: 'humaneval-python',
        completions: [
          { task_id: 'HumanEval/0', completion: '' },
          { task_id: 'JavaScript/0', completion: '' },
        ],
      },
      'completions[1].task_id',
      "'JavaScript/0' is not in suite humaneval-python",
    ],
    [
      'a completion of the wrong type',
      { suite: 'humaneval-x-js', completions: [{ task_id: 'JavaScript/0', completion: 3 }] },
      'completions[0].completion',
      'must be a string, got a number',
    ],
    ['no completions', { suite: 'humaneval-x-js', completions: [] }, 'completions', 'at least 1'],
    ['no completions field', { suite: 'humaneval-x-js' }, 'completions', 'must be an array, got nothing'],
    [
      'an unknown field',
      { suite: 'humaneval-x-js', completions: [{ task_id: 'JavaScript/0', completion: '' }], temperature: 1 },
      'temperature',
      'unknown field',
    ],
    ['two suites', { suite: 'humaneval-x-js', tasks: [], completions: [] }, 'tasks', 'exactly one of suite, suite_hash and tasks'],
    [
      'no suite, and no --suite to fall back on',
      { completions: [{ task_id: 'JavaScript/0', completion: '' }] },
      'suite',
      'give exactly one of suite, suite_hash and tasks (this server has no --suite',
    ],
    ['an unknown built-in', { suite: 'mbpp', completions: [{ task_id: 'x', completion: '' }] }, 'suite', "'mbpp' is not a built-in suite"],
    ['a bad hash', { suite_hash: 'abc', completions: [{ task_id: 'x', completion: '' }] }, 'suite_hash', '64 hex digits'],
    [
      'a bad reward weight',
      { suite: 'humaneval-x-js', completions: [{ task_id: 'JavaScript/0', completion: '' }], reward: { lint: -1 } },
      'reward.lint',
      'finite number >= 0',
    ],
    [
      'an inline task without tests',
      { tasks: [{ task_id: 't', language: 'python', prompt: '', entry_point: 'f' }], completions: [] },
      'tasks[0]',
      "missing field 'tests'",
    ],
    ['a body that is not JSON', '{"suite": ', 'body', 'not valid JSON'],
  ])('400 naming the field: %s', async (_what, body, field, message) => {
    const a = await call(base, '/v1/score', body);
    expect(a.status).toBe(400);
    expect(a.json.field).toBe(field);
    expect(a.json.error).toContain(message);
    expect(a.json.error.startsWith(`${field}:`)).toBe(true);
  });

  test('an upload with a bad line is refused naming the line; an unknown path is 404, a wrong method 405', async () => {
    const bad = await call(base, '/v1/suites', `${JSON.stringify(js[0])}\n{"task_id": 1}\n`);
    expect(bad.status).toBe(400);
    expect(bad.json.field).toBe('line 2');
    expect((await call(base, '/v2/score', {})).status).toBe(404);
    const wrong = await call(base, '/v1/score');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });
});

describe('GET /metrics', () => {
  test('Prometheus text: every line parses; requests by endpoint and code, verdicts, latency histogram, cache hit rate, queue depth', async () => {
    const completions = jsCompletions().slice(0, 2);
    for (let i = 0; i < 2; i++) await call(base, '/v1/score', { suite: 'humaneval-x-js', completions }); // the second run hits the analysis cache
    const a = await call<undefined>(base, '/metrics');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = new Map<string, number>();
    const typed = new Map<string, string>();
    for (const line of a.text.split('\n')) {
      if (line === '') continue;
      const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
      if (meta) {
        if (meta[1] === 'TYPE') typed.set(meta[2]!, meta[3]!);
        continue;
      }
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*\})? (-?[0-9.e+-]+|\+Inf|NaN)$/.exec(
        line,
      );
      expect(m, `not an exposition line: ${line}`).not.toBeNull();
      const family = m![1]!.replace(/_(bucket|sum|count)$/, '');
      expect(typed.has(m![1]!) || typed.get(family) === 'histogram', `no TYPE before ${line}`).toBe(true);
      samples.set(m![1]! + (m![2] ?? ''), Number(m![3]));
    }
    expect(samples.get('coderl_serve_requests_total{endpoint="/v1/score",code="200"}')).toBeGreaterThanOrEqual(2);
    expect(samples.get('coderl_serve_requests_total{endpoint="/v1/score",code="400"}')).toBeGreaterThanOrEqual(1);
    expect(samples.get('coderl_serve_verdicts_total{pool="score",verdict="passed"}')).toBeGreaterThanOrEqual(2);
    expect(samples.get('coderl_serve_queue_depth{pool="score"}')).toBe(0);
    expect(samples.get('coderl_serve_workers_replaced{pool="score"}')).toBeGreaterThanOrEqual(0);
    expect(samples.get('coderl_serve_analysis_cache_hit_ratio')).toBeGreaterThan(0);
    const buckets = [...samples]
      .filter(([k]) => k.startsWith('coderl_serve_request_duration_seconds_bucket{endpoint="/v1/score"'))
      .map(([, v]) => v);
    expect(buckets.length).toBeGreaterThan(5);
    expect(buckets).toEqual([...buckets].sort((x, y) => x - y)); // cumulative
    expect(buckets.at(-1)).toBe(samples.get('coderl_serve_request_duration_seconds_count{endpoint="/v1/score"}'));
  });
});
