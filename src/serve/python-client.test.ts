/**
 * The Python client (clients/python/coderl_client.py) against a real `coderl serve`: a server on
 * 127.0.0.1 port 0 with a token, a real sandbox worker and a small queue, then python3 runs
 * clients/python/test_coderl_client.py with CODERL_TEST_SERVE_URL and CODERL_TEST_SERVE_TOKEN set.
 * Its real-server tests check TRL's trl_reward and the component functions, veRL's
 * verl_compute_score and OpenRLHF's /get_reward against /v1/score's own records (honest,
 * failing and hostile completions, chat replies), token auth, and a 429 from the full queue
 * retried. Every test must run and pass: a skip is a failure here, as in CI. A second run with a
 * wrong token must fail, so the Python tests can fail.
 */
import { execFile, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { DEFAULT_LIMITS } from '../sandbox/result';
import type { ServeServer } from './server';
import { startTestServer } from './test-helpers';

const TEST_FILE = 'clients/python/test_coderl_client.py';
/** The tests in TEST_FILE: ExtractionTest 6, FakeServerTest 9, RealServerTest 11. */
const EXPECTED_TESTS = 26;
const TOKEN = 'python-client-test-token';
const python3 = spawnSync('python3', ['--version'], { encoding: 'utf8' }).status === 0;

let pool: SandboxPool;
let analyzer: Analyzer;
let server: ServeServer;

interface Run {
  code: number;
  output: string;
}

/** python3 -m unittest, asynchronously (the server answers on this process's event loop). */
function unittest(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'python3',
      ['-m', 'unittest', '-v', ...args],
      { env: { ...process.env, ...env }, timeout: 240_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

beforeAll(async () => {
  if (!python3) return;
  [pool, analyzer] = await Promise.all([createNodePool({ size: 1 }), createAnalyzer(nodeWasmLoader)]);
  server = await startTestServer(
    { limits: { ...DEFAULT_LIMITS, timeoutMs: 1000, graceMs: 1500 }, token: TOKEN, queueLimit: 12, defaultSuite: 'humaneval-python' },
    { pool, analyzer },
  );
}, 60_000);
afterAll(async () => {
  await server?.close();
  pool?.close();
});

describe('clients/python/coderl_client.py', () => {
  test.skipIf(!python3)(
    `${TEST_FILE} against a real coderl serve: all ${EXPECTED_TESTS} tests run and pass, none skipped`,
    async () => {
      const t0 = performance.now();
      const run = await unittest({ CODERL_TEST_SERVE_URL: server.url, CODERL_TEST_SERVE_TOKEN: TOKEN }, TEST_FILE);
      const seconds = ((performance.now() - t0) / 1000).toFixed(1);
      expect(run.code, run.output).toBe(0);
      expect(run.output).toMatch(new RegExp(`^Ran ${EXPECTED_TESTS} tests in `, 'm'));
      expect(run.output, run.output).toMatch(/^OK$/m); // "OK (skipped=N)" when a test was skipped
      expect(run.output).not.toMatch(/skipped/);
      const passed = run.output.split('\n').filter((l) => / \.\.\. ok$/.test(l));
      expect(passed.length, `${passed.length} passed in ${seconds} s`).toBe(EXPECTED_TESTS);
      expect(run.output).toMatch(/test_a_full_queue_is_retried_after_its_retry_after .*\.\.\. ok/);
    },
    300_000,
  );

  test.skipIf(!python3)(
    'the real-server tests fail with a wrong token',
    async () => {
      const run = await unittest(
        { CODERL_TEST_SERVE_URL: server.url, CODERL_TEST_SERVE_TOKEN: 'wrong' },
        `${TEST_FILE.replace(/\.py$/, '').replaceAll('/', '.')}.RealServerTest.test_verl_compute_score_dict`,
      );
      expect(run.code, run.output).not.toBe(0);
      expect(run.output).toMatch(/401/);
      expect(run.output).toMatch(/^FAILED \(errors=1\)$/m);
    },
    120_000,
  );
});
