/**
 * The two foreign protocols on a real listener and real sandbox workers, read as their clients
 * read them.
 *
 * POST /run_code gets the body veRL's call_sandbox_api sends (volcengine/verl b178a3cd56f5,
 * verl/utils/reward_score/sandbox_fusion/utils.py: compile_timeout, run_timeout, code, stdin
 * (a string or None), memory_limit_MB, language, files {}, fetch_files []), and each answer is
 * classified by `verlStatus`, a line-by-line transcription of that file's _process_single_case:
 * the verdict veRL reaches (success, wrong_answer, runtime_error, timeout) is the one a real
 * Sandbox Fusion would give. A full program queue is 504, the only status veRL retries.
 *
 * POST /get_reward gets OpenRLHF's {query, prompts, labels} (openrlhf/utils/agent.py at v0.11.0):
 * the response split off a query that holds the prompt, one whose prompt was cut from the left,
 * EOS tokens stripped; labels as task ids of ?suite=, as a task object and as a task in JSON
 * text; every answer's extra_logs has the same keys (the batched client up to 0.9.0 torch.cat-s
 * them across answers), an empty request's too (0.9.1+ shards a one-sample request across its
 * servers, so all but the first get empty lists); the field errors.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { createProgramPool } from '../sandbox/program-pool.node';
import { DEFAULT_LIMITS } from '../sandbox/result';
import type { ScoreRecord } from '../sandbox/score';
import type { Task } from '../tasks/types';
import type { RewardResponse } from './openrlhf';
import type { RunCodeResponse } from './sandbox-fusion';
import type { ServeServer } from './server';
import { SuiteStore } from './suites';
import { call, startTestServer } from './test-helpers';

const LIMITS = { ...DEFAULT_LIMITS, timeoutMs: 1500, graceMs: 1500 };
let pool: SandboxPool;
let programPool: SandboxPool;
let analyzer: Analyzer;
let server: ServeServer;
let busy: ServeServer;
let base: string;
let js: Task[];

beforeAll(async () => {
  [pool, programPool, analyzer] = await Promise.all([
    createNodePool({ size: 1 }),
    createProgramPool({ size: 1 }),
    createAnalyzer(nodeWasmLoader),
  ]);
  server = await startTestServer({ limits: LIMITS, programWorkers: 1 }, { pool, programPool, analyzer });
  busy = await startTestServer({ limits: LIMITS, programWorkers: 1, queueLimit: 1 }, { pool, programPool, analyzer });
  base = server.url;
  js = (await new SuiteStore(1).byName('humaneval-x-js', 'suite')).tasks.slice(0, 2);
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.close(), busy?.close()]);
  pool?.close();
  programPool?.close();
});

/** veRL's _process_single_case: the status it gives an answer (sandbox_fusion/utils.py, b178a3cd56f5). */
function verlStatus(api: RunCodeResponse, expectedOutput: string | null): string {
  const c = api.compile_result;
  const r = api.run_result;
  if (api.status === 'SandboxError') return 'sandbox_error';
  if (api.status === 'Failed') {
    const compileError =
      c && (c.status === 'Error' || c.status === 'TimeLimitExceeded' || (c.status === 'Finished' && c.return_code !== 0));
    if (compileError) return c.status === 'TimeLimitExceeded' ? 'compile_timeout' : 'compile_error';
    if (r) {
      const runtimeError = r.status === 'TimeLimitExceeded' || r.status === 'Error' || (r.status === 'Finished' && r.return_code !== 0);
      if (!runtimeError) return 'unknown_failure';
      return r.status === 'TimeLimitExceeded' ? 'timeout' : 'runtime_error';
    }
    return 'unknown_failure_state';
  }
  if (api.status === 'Success') {
    if (!r || r.status !== 'Finished') return 'unexpected_success_state';
    const actual = r.stdout ?? '';
    // Python's str.rstrip("\n")
    return expectedOutput === null || actual.replace(/\n+$/, '') === expectedOutput.replace(/\n+$/, '') ? 'success' : 'wrong_answer';
  }
  return `unknown_api_status_${String(api.status)}`;
}

/** The body call_sandbox_api sends (check_correctness passes one timeout as both; memory 1024, veRL's default). */
const verlBody = (language: string, code: string, stdin: string | null, timeout = 2) => ({
  compile_timeout: timeout,
  run_timeout: timeout,
  code,
  stdin,
  memory_limit_MB: 1024,
  language,
  files: {},
  fetch_files: [],
});

describe('POST /run_code as veRL calls it', () => {
  test.each([
    ['python, stdin in, the right answer', 'python', 'import sys\nprint(int(sys.stdin.read()) * 2)\n', '21', '42', 'success'],
    ['python, the wrong answer', 'python', 'print(41)\n', null, '42', 'wrong_answer'],
    ['python, an exception', 'python', "raise ValueError('no')\n", null, '42', 'runtime_error'],
    ['python, an endless loop', 'python', 'while True:\n    pass\n', null, '42', 'timeout'],
    [
      'nodejs, stdin through fs.readFileSync(0)',
      'nodejs',
      "const s = require('fs').readFileSync(0, 'utf8');\nconsole.log(s.trim().split(' ').map(Number).reduce((a, b) => a + b));\n",
      '1 2 3',
      '6',
      'success',
    ],
    ['nodejs, process.exit(3)', 'nodejs', 'process.exit(3);\n', null, '', 'runtime_error'],
  ])('%s: veRL reads %s', async (_what, language, code, stdin, expected, status) => {
    const a = await call<RunCodeResponse>(base, '/run_code', verlBody(language, code, stdin, 1));
    expect(a.status).toBe(200);
    expect(verlStatus(a.json, expected)).toBe(status);
    expect(a.json.compile_result).toBeNull();
    expect(Object.keys(a.json).sort()).toEqual(['compile_result', 'executor_pod_name', 'files', 'message', 'run_result', 'status']);
    if (status === 'runtime_error')
      expect(a.json.run_result).toMatchObject({ status: 'Finished', return_code: language === 'python' ? 1 : 3 });
    if (status === 'runtime_error' && language === 'python') expect(a.json.run_result!.stderr).toMatch(/ValueError: no/);
    if (status === 'timeout') expect(a.json.run_result).toMatchObject({ status: 'TimeLimitExceeded', return_code: null });
  });

  test.each([
    [
      'a language it does not run',
      { ...verlBody('cpp', 'int main(){}', null) },
      'language',
      'a Sandbox Fusion language that coderl serve does not run',
    ],
    ['files to upload', { ...verlBody('python', 'print(1)', null), files: { 'a.txt': 'eA==' } }, 'files', 'not supported'],
    ['no code', { language: 'python' }, 'code', 'must be a string'],
  ])('400 naming the field: %s', async (_what, body, field, message) => {
    const a = await call(base, '/run_code', body);
    expect(a.status).toBe(400);
    expect(a.json.field).toBe(field);
    expect(a.json.error).toContain(message);
  });

  test('a full program queue is 504 with Retry-After (veRL retries a 504 and nothing else)', async () => {
    const endless = call<RunCodeResponse>(busy.url, '/run_code', verlBody('nodejs', 'for (;;) {}', null, 1));
    for (let i = 0; busy.state.programs!.running < 1; i++) {
      if (i > 100) throw new Error('the endless program never started');
      await new Promise((r) => setTimeout(r, 20));
    }
    const waiting = call<RunCodeResponse>(busy.url, '/run_code', verlBody('nodejs', 'console.log(1)', null));
    for (let i = 0; busy.state.programs!.waiting < 1; i++) {
      if (i > 100) throw new Error('the second program never queued');
      await new Promise((r) => setTimeout(r, 20));
    }
    const full = await call(busy.url, '/run_code', verlBody('nodejs', 'console.log(2)', null));
    expect(full.status).toBe(504);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(full.json.error).toMatch(/the queue is full/);
    expect(verlStatus((await endless).json, null)).toBe('timeout');
    expect(verlStatus((await waiting).json, '1')).toBe('success');
  });
});

interface ScoreBody {
  records: ScoreRecord[];
}

const EXTRA_LOG_KEYS = [
  'pass',
  ...['all_pass', 'ast_valid', 'complexity', 'length', 'lint', 'test_pass'].map((c) => `rewards/${c}`),
].sort();

describe('POST /get_reward as OpenRLHF calls it', () => {
  const ids = () => js.map((t) => t.task_id);
  const completions = () => [js[0]!.canonical_solution!, '  return false;\n}\n'];

  test('labels are task ids of ?suite=: rewards are /v1/score reward totals; EOS stripped; a prompt cut from the left still splits', async () => {
    const ref = await call<ScoreBody>(base, '/v1/score', {
      suite: 'humaneval-x-js',
      completions: ids().map((task_id, i) => ({ task_id, completion: completions()[i]! })),
    });
    const prompts = js.map((t) => t.prompt);
    const query = [
      `${prompts[0]}${completions()[0]}<|im_end|>\n<|endoftext|>`,
      // OpenRLHF keeps prompt_token_ids[-max_prompt_length:]: the decoded query starts inside the prompt
      `${prompts[1]!.slice(40)}${completions()[1]}`,
    ];
    const a = await call<RewardResponse>(base, '/get_reward?suite=humaneval-x-js', { query, prompts, labels: ids() });
    expect(a.status).toBe(200);
    expect(a.json.rewards).toEqual(ref.json.records.map((r) => r.reward!.total));
    expect(a.json.scores).toEqual([1, 0]);
    expect(a.json.extra_logs.pass).toEqual([1, 0]);
  });

  test('labels as a task object and as a task in JSON text; a JavaScript and a Python answer have the same extra_logs keys', async () => {
    const pyTask = {
      task_id: 'neg',
      language: 'python',
      prompt: 'def neg(x):\n',
      entry_point: 'neg',
      tests: 'def check(candidate):\n    assert candidate(2) == -2\n',
    };
    const one = (label: unknown, query: string, prompt: string) =>
      call<RewardResponse>(base, '/get_reward', { query: [query], prompts: [prompt], labels: [label] });
    const py = await one(JSON.stringify(pyTask), `${pyTask.prompt}    return -x\n`, pyTask.prompt);
    expect(py.status).toBe(200);
    expect(py.json.scores).toEqual([1]);
    const jsAnswer = await one(js[0], `${js[0]!.prompt}${js[0]!.canonical_solution}`, js[0]!.prompt);
    expect(jsAnswer.json.scores).toEqual([1]);
    expect(Object.keys(py.json.extra_logs).sort()).toEqual(Object.keys(jsAnswer.json.extra_logs).sort());
    expect(Object.keys(py.json.extra_logs).sort()).toEqual(EXTRA_LOG_KEYS);
  }, 60_000);

  test("an empty request (OpenRLHF's shard for a second server when a request holds one sample) is empty lists, with every extra_logs key", async () => {
    const a = await call<RewardResponse>(base, '/get_reward', { query: [], prompts: [], labels: [] });
    expect(a.status).toBe(200);
    expect(a.json.rewards).toEqual([]);
    expect(a.json.scores).toEqual([]);
    expect(Object.keys(a.json.extra_logs).sort()).toEqual(EXTRA_LOG_KEYS);
    expect(Object.values(a.json.extra_logs).every((v) => Array.isArray(v) && v.length === 0)).toBe(true);
  });

  test.each([
    ['labels of another length', { query: ['a', 'b'], prompts: ['a', 'b'], labels: ['x'] }, '', 'labels', 'one item per query (2), got 1'],
    ['a task id without a suite', { query: ['pq'], prompts: ['p'], labels: ['JavaScript/0'] }, '', 'labels[0]', 'no suite is loaded'],
    [
      'a task id not in the suite',
      { query: ['pq'], prompts: ['p'], labels: ['nope'] },
      '?suite=humaneval-x-js',
      'labels[0]',
      "'nope' is not a task of suite humaneval-x-js",
    ],
    [
      'a query without its prompt',
      { query: ['something else'], prompts: ['a long prompt of its own'], labels: ['JavaScript/0'] },
      '?suite=humaneval-x-js',
      'query[0]',
      'does not hold prompts[0]',
    ],
  ])('400 naming the field: %s', async (_what, body, query, field, message) => {
    const a = await call(base, `/get_reward${query}`, body);
    expect(a.status).toBe(400);
    expect(a.json.field).toBe(field);
    expect(a.json.error).toContain(message);
  });
});
