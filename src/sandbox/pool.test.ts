/**
 * The pool with real worker threads: backpressure, and what happens when a worker misbehaves.
 * The misbehaving workers are real threads running a small hostile script (a compromised or
 * broken worker is exactly the case under test); replacements are the real sandbox worker.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, test } from 'vitest';
import type { Task } from '../tasks/types';
import { nodeWorkerFile } from './node-worker-bundle';
import { SandboxPool, type SpawnWorker } from './pool';
import { nodeSpawner } from './pool.node';
import { DEFAULT_LIMITS, type RunResult } from './result';

const task: Task = {
  task_id: 'P/1',
  language: 'javascript',
  prompt: 'const f = (ms) => {\n',
  entry_point: 'f',
  tests: 'console.assert(f(150) === 1)\nconsole.assert(f(0) === 1)\n',
};
const slow = '  const t = Date.now(); while (Date.now() - t < ms);\n  return 1\n}\n';
const job = (timeoutMs = 10_000) => ({ task, completion: slow, limits: { ...DEFAULT_LIMITS, timeoutMs, graceMs: 300 } });

/** A spawner whose first worker runs `hostile` (a worker_threads script), and later ones the real worker. */
async function firstHostile(hostile: string): Promise<SpawnWorker> {
  const real = nodeSpawner(await nodeWorkerFile());
  let first = true;
  return (events) => {
    if (!first) return real(events);
    first = false;
    const w = new Worker(`const { parentPort: p } = require('node:worker_threads');\n${hostile}`, { eval: true });
    w.on('message', (m: unknown) => events.message(m));
    w.on('exit', (code) => events.exit(`exit code ${code}`));
    return { post: (m) => w.postMessage(m), terminate: () => void w.terminate() };
  };
}

let pool: SandboxPool | undefined;
afterEach(() => pool?.close());

describe('sandbox pool', () => {
  test('backpressure: with one worker and a queue of one, the third submit waits for the first result', async () => {
    pool = new SandboxPool({ spawn: nodeSpawner(await nodeWorkerFile()), size: 1, queueLimit: 1 });
    const events: string[] = [];
    const results: Promise<RunResult>[] = [];
    for (let i = 1; i <= 4; i++) {
      const { result } = await pool.submit(job());
      events.push(`submitted ${i}`);
      results.push(result.then((r) => (events.push(`result ${i}`), r)));
    }
    const all = await Promise.all(results);
    expect(all.every((r) => r.passed)).toBe(true);
    expect(events.indexOf('submitted 3')).toBeGreaterThan(events.indexOf('result 1'));
    expect(events.indexOf('submitted 4')).toBeGreaterThan(events.indexOf('result 2'));
    expect(pool.stats).toMatchObject({ spawned: 1, replaced: 0, completed: 4 });
  });

  test('a forged result (wrong nonce) is tampering; the worker is replaced and the next job passes', async () => {
    const hostile =
      "p.on('message', (m) => { if (m.type === 'init') p.postMessage({ type: 'ready' }); else p.postMessage({ type: 'result', id: m.id, nonce: 'forged', recycle: false, result: { task_id: m.job.task.task_id, verdict: 'passed', passed: true, tests: [], output: '', duration_ms: 1 } }) })";
    pool = new SandboxPool({ spawn: await firstHostile(hostile), size: 1 });
    const forged = await pool.run(job());
    expect(forged).toMatchObject({ verdict: 'tampering', passed: false, message: expect.stringMatching(/does not belong to its job/) });
    expect((await pool.run(job())).verdict).toBe('passed');
    expect(pool.stats.replaced).toBe(1);
  });

  test('a message outside the protocol is tampering', async () => {
    pool = new SandboxPool({
      spawn: await firstHostile(
        "p.on('message', (m) => p.postMessage(m.type === 'init' ? { type: 'ready' } : { type: 'passed', all: true }))",
      ),
      size: 1,
    });
    expect(await pool.run(job())).toMatchObject({ verdict: 'tampering', message: expect.stringMatching(/outside the protocol/) });
  });

  test('a worker that dies mid-job: error verdict, replaced', async () => {
    pool = new SandboxPool({
      spawn: await firstHostile("p.on('message', (m) => m.type === 'init' ? p.postMessage({ type: 'ready' }) : process.exit(3))"),
      size: 1,
    });
    expect(await pool.run(job())).toMatchObject({ verdict: 'error', message: expect.stringMatching(/crashed: exit code 3/) });
    expect((await pool.run(job())).verdict).toBe('passed');
  });

  test('a worker that starts a job and never answers is killed at the hard timeout; its tests are reported', async () => {
    const hostile =
      "p.on('message', (m) => m.type === 'init' ? p.postMessage({ type: 'ready' }) : p.postMessage({ type: 'started', id: m.id, nonce: m.nonce, tests: [{ name: 'assert 1', status: 'error', line: 1, source: 'x', evaluations: 0 }] }))";
    pool = new SandboxPool({ spawn: await firstHostile(hostile), size: 1 });
    const t0 = performance.now();
    const r = await pool.run(job(1000));
    expect(r).toMatchObject({ verdict: 'timeout', tests: [{ name: 'assert 1', status: 'timeout' }] });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1250);
    expect((await pool.run(job())).verdict).toBe('passed');
  });

  test('a worker that never starts the job is killed after startupMs', async () => {
    pool = new SandboxPool({
      spawn: await firstHostile("p.on('message', (m) => m.type === 'init' && p.postMessage({ type: 'ready' }))"),
      size: 1,
      startupMs: 300,
    });
    expect(await pool.run(job())).toMatchObject({
      verdict: 'timeout',
      message: expect.stringMatching(/did not start the job within 300 ms/),
    });
  });

  test('close() settles queued jobs', async () => {
    pool = new SandboxPool({ spawn: nodeSpawner(await nodeWorkerFile()), size: 1, queueLimit: 10 });
    const pending = await Promise.all([1, 2, 3].map(() => pool!.submit(job())));
    pool.close();
    const rs = await Promise.all(pending.map((p) => p.result));
    expect(rs.map((r) => r.verdict)).toEqual(['error', 'error', 'error']);
    await expect(pool.submit(job())).rejects.toThrow(/closed/);
  });
});
