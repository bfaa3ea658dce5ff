/**
 * No network from the sandbox, measured at the other end: a TCP listener and a WebSocket listener
 * on 127.0.0.1 count every connection they accept while a real pool of two workers scores every
 * route of the network corpus, Python and JavaScript; then honest programs scored after them in
 * the same pool must still pass, and both listeners must have seen nothing. The root of the
 * Python defence (Emscripten's socket layer removed, no-network.ts; the Node worker's module loader
 * sealed, node-seal.ts) is also checked alone, on a bare Pyodide without the harness and its audit
 * hook.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadSuite } from '../tasks/suite';
import type { Task } from '../tasks/types';
import { benchmarkPath } from '../tasks/benchmarks';
import { JS_TASK, PY_TASK, type Attack } from './adversarial/corpus';
import { tcpListener, wsListener, type Listener } from './adversarial/listeners';
import { jsNetworkAttacks, pythonNetworkAttacks } from './adversarial/network';
import { removeSockets, type SocketModule } from './no-network';
import type { SandboxPool } from './pool';
import { createNodePool } from './pool.node';
import { DEFAULT_LIMITS, type RunResult } from './result';

const limits = { ...DEFAULT_LIMITS, timeoutMs: 4000, graceMs: 3000 };

const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let tcp: Listener;
let ws: Listener;
let pool: SandboxPool;
let pyAttacks: Attack[];
let jsAttacks: Attack[];
let pyResults: RunResult[];
let jsResults: RunResult[];
let honest: RunResult[];
let honestTasks: Task[];

beforeAll(async () => {
  [tcp, ws] = await Promise.all([tcpListener(), wsListener()]);
  pyAttacks = pythonNetworkAttacks(tcp.port, ws.port);
  jsAttacks = jsNetworkAttacks(tcp.port, ws.port);
  pool = await createNodePool({ size: 2 });
  const py = (await loadSuite(new Uint8Array(readFileSync(benchmarkPath('humaneval-python.jsonl.gz'))), 'humaneval-python')).items;
  const jsSuite = (await loadSuite(new Uint8Array(readFileSync(benchmarkPath('humaneval-x-js.jsonl.gz'))), 'humaneval-x-js')).items;
  honestTasks = [PY_TASK, JS_TASK, ...py.slice(0, 4), ...jsSuite.slice(0, 4)];
  const score = (task: Task, a: Attack) => pool.run({ task, completion: a.completion, limits });
  [pyResults, jsResults] = await Promise.all([
    Promise.all(pyAttacks.map((a) => score(PY_TASK, a))),
    Promise.all(jsAttacks.map((a) => score(JS_TASK, a))),
  ]);
  honest = await Promise.all(honestTasks.map((t) => pool.run({ task: t, completion: t.canonical_solution!, limits })));
  await settle(500); // a connection opened asynchronously would have been accepted by now
}, 120_000);

afterAll(async () => {
  pool?.close();
  await Promise.all([tcp, ws].map((l) => l?.close()));
});

describe('no network from sandboxed programs', () => {
  test('the listeners accepted no connection', () => {
    expect({ tcp: tcp.count(), ws: ws.count() }).toEqual({ tcp: 0, ws: 0 });
  });

  test.each(pythonNetworkAttacks(1, 2).map((a, i) => [a.name, a.verdict, i] as const))(
    'Python %s: no credit, verdict %s',
    (_n, verdict, i) => {
      const r = pyResults[i]!;
      expect(r.tests.filter((t) => t.status === 'passed')).toEqual([]);
      expect(r.verdict, r.message).toBe(verdict);
      expect(r.message).toBeTruthy();
      if (verdict === 'tampering')
        expect(r.message).toMatch(
          /^the program tried to (reach the network \([\w.]+\); the sandbox has none|run a command on the host \([\w.]+\); the sandbox has no processes)$/,
        );
    },
  );

  test.each(jsNetworkAttacks(1, 2).map((a, i) => [a.name, a.verdict, i] as const))(
    'JavaScript %s: no credit, verdict %s',
    (_n, verdict, i) => {
      const r = jsResults[i]!;
      expect(r.tests.filter((t) => t.status === 'passed')).toEqual([]);
      expect(r.verdict, r.message).toBe(verdict);
      expect(r.message).toBeTruthy();
    },
  );

  test('honest programs scored after them, in the same pool, pass', () => {
    expect(honest.map((r) => `${r.task_id} ${r.verdict}`)).toEqual(honestTasks.map((t) => `${t.task_id} passed`));
  });
});

describe("the root: Emscripten's socket layer removed", () => {
  test('a bare Pyodide (no harness, no audit hook) cannot connect: socket() fails with EACCES', async () => {
    const { loadPyodide } = await import('pyodide');
    const py = await loadPyodide({ jsglobals: Object.create(null) as object, stdout: () => {}, stderr: () => {} });
    const mod = (py as unknown as { _module: SocketModule })._module;
    const replaced = removeSockets(mod);
    expect(replaced).toContain('SOCKFS.createSocket');
    expect(replaced).toContain('SOCKFS.websocket_sock_ops.connect');
    const before = tcp.count();
    const out = py.runPython(`
import errno, socket, urllib.request
seen = []
for attempt in (lambda: socket.create_connection(('127.0.0.1', ${tcp.port}), 1),
                lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', ${tcp.port})),
                lambda: urllib.request.urlopen('http://127.0.0.1:${ws.port}/', timeout=1)):
    try:
        attempt()
        seen.append('connected')
    except OSError as e:
        seen.append(errno.errorcode.get(getattr(e, 'errno', None) or getattr(getattr(e, 'reason', None), 'errno', None), type(e).__name__))
','.join(seen)
`) as string;
    expect(out).toBe('EACCES,EACCES,EACCES');
    await settle(300);
    expect(tcp.count() - before).toBe(0);
    expect(ws.count()).toBe(0);
  }, 60_000);
});

describe("the root: the Node worker's module loader sealed", () => {
  test('in a worker thread with a bare Pyodide, os.system runs no host command and opens no connection', async () => {
    const esbuild = await import('esbuild');
    // inside node_modules, so the bundle's bare imports (pyodide) resolve as the sandbox worker's do
    const dir = join(import.meta.dirname, '../../node_modules/.cache/coderl/dev');
    mkdirSync(dir, { recursive: true });
    const outfile = join(dir, `seal-test-${process.pid}.mjs`);
    const entry = [
      "import { parentPort, workerData } from 'node:worker_threads';",
      "import { loadPyodide } from 'pyodide';",
      "import { sealNodeRequire } from './node-seal';",
      'const py = await loadPyodide({ jsglobals: Object.create(null), stdout: () => {}, stderr: () => {} });',
      'sealNodeRequire();',
      'let status;',
      'try { status = String(py.runPython(`import os\\nos.system("curl -s -m 1 http://127.0.0.1:${workerData.port}/")`)); } catch (e) { status = String(e.message); }',
      'let required = "loaded";',
      "try { (await import('node:module')).createRequire(import.meta.url)('node:child_process'); } catch (e) { required = String(e.message); }",
      'parentPort.postMessage({ status, required });',
    ].join('\n');
    await esbuild.build({
      stdin: { contents: entry, resolveDir: import.meta.dirname, loader: 'ts' },
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'error',
    });
    const before = tcp.count();
    const worker = new Worker(outfile, { workerData: { port: tcp.port } });
    const got = await new Promise<{ status: string; required: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    rmSync(outfile, { force: true });
    // system() reached its require("node:child_process") and was refused there: no shell ran
    expect(got.status).toMatch(/loading a module is not allowed/);
    expect(got.required).toMatch(/loading a module is not allowed/);
    await settle(1500);
    expect(tcp.count() - before).toBe(0);
  }, 60_000);
});
