/**
 * `coderl serve`, composed: the sandbox pools (tests; plain programs), the cached analyzer, the
 * suite store (the --suite loaded into it first), a bounded queue per pool, the routes, and a
 * node:http listener. `start` listens before the workers are warm (so /healthz answers at once)
 * and is ready (/readyz 200) once one warm-up program per worker has run. `close` drains: /readyz and every new request answer 503, the requests in
 * flight finish, then the listener and the pools it made are closed.
 *
 * Pools and analyzer may be passed in (tests share them between servers); those are not closed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { programJob } from '../sandbox/program';
import { DEFAULT_LIMITS, type RunResult } from '../sandbox/result';
import { createProgramPool } from '../sandbox/program-pool.node';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import type { Language, Task } from '../tasks/types';
import type { ServeConfig } from './config';
import { createListener } from './http';
import { ServeMetrics } from './metrics';
import { serveRoutes, type ServeState } from './routes';
import { Scheduler } from './scheduler';
import { scoreJob } from './scoring';
import { SuiteStore } from './suites';

type Inflight = { count: number; onIdle?: () => void };

export interface ServeDeps {
  pool?: SandboxPool;
  programPool?: SandboxPool;
  analyzer?: Analyzer;
}

const WARM_TASKS: Record<Language, Task> = {
  javascript: {
    task_id: 'warm-up',
    language: 'javascript',
    prompt: 'function f(x) {\n',
    entry_point: 'f',
    tests: 'console.assert(f(1) === 2);\n',
  },
  python: {
    task_id: 'warm-up',
    language: 'python',
    prompt: 'def f(x):\n',
    entry_point: 'f',
    tests: 'def check(candidate):\n    assert candidate(1) == 2\n',
  },
};
const WARM_COMPLETION: Record<Language, string> = { javascript: '  return x + 1;\n}\n', python: '    return x + 1\n' };

export class ServeServer {
  private readyFlag = false;
  private drainingFlag = false;
  /** resolves once every worker ran its warm-up program */
  readonly ready: Promise<void>;

  private constructor(
    readonly config: ServeConfig,
    readonly state: ServeState,
    private readonly http: Server,
    private readonly inflight: Inflight,
    private readonly owned: { close(): void }[],
    warmUp: () => Promise<void>,
  ) {
    this.ready = warmUp().then(() => void (this.readyFlag = true));
    this.ready.catch(() => {}); // a failed warm-up leaves /readyz at 503; start()'s caller sees it through `ready`
  }

  /** Loads the --suite first (a DefaultSuiteError before anything starts), then the pools, then listens. */
  static async start(config: ServeConfig, deps: ServeDeps = {}): Promise<ServeServer> {
    const suites = new SuiteStore(config.suiteCacheSize);
    const defaultSuite = config.defaultSuite === undefined ? undefined : await suites.loadDefault(config.defaultSuite);
    // the default suite's language warms the workers (Python loads the interpreters); JavaScript without one
    const language: Language = defaultSuite?.tasks[0]?.language ?? 'javascript';
    const owned: { close(): void }[] = [];
    const [pool, programPool, analyzer] = await Promise.all([
      deps.pool ?? createNodePool({ size: config.workers }).then((p) => (owned.push(p), p)),
      deps.programPool ??
        (config.programWorkers > 0 ? createProgramPool({ size: config.programWorkers }).then((p) => (owned.push(p), p)) : undefined),
      deps.analyzer ?? createAnalyzer(nodeWasmLoader),
    ]);
    const metrics = new ServeMetrics();
    const scheduler = new Scheduler(pool, config.queueLimit);
    const programs = programPool ? new Scheduler(programPool, config.queueLimit) : undefined;
    scheduler.onResult = (r) => metrics.verdicts.inc({ pool: 'score', verdict: r.verdict });
    if (programs) programs.onResult = (r) => metrics.verdicts.inc({ pool: 'program', verdict: r.verdict });
    let server: ServeServer | undefined;
    const state: ServeState = {
      config,
      suites,
      scorer: { scheduler, analyzer, limits: config.limits },
      programs,
      metrics,
      ready: () => server?.readyFlag ?? false,
      draining: () => server?.drainingFlag ?? false,
    };
    const opts = {
      token: config.token,
      maxBodyBytes: config.maxBodyBytes,
      requestTimeoutMs: config.requestTimeoutMs,
      metrics,
      draining: state.draining,
    };
    const inflight: Inflight = { count: 0 };
    const http = createServer({ keepAliveTimeout: 65_000 }, createListener(serveRoutes(state), opts, inflight));
    try {
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(config.port, config.host, () => resolve());
      });
      server = new ServeServer(config, state, http, inflight, owned, () => warm(pool, programPool, language));
    } catch (e) {
      for (const o of owned) o.close();
      throw e;
    }
    return server;
  }

  get address(): AddressInfo {
    return this.http.address() as AddressInfo;
  }

  /** http://host:port, IPv6 hosts in brackets */
  get url(): string {
    const a = this.address;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /** Drains (see the header); resolves when everything is closed. */
  async close(): Promise<void> {
    if (this.drainingFlag) return;
    this.drainingFlag = true;
    this.http.closeIdleConnections();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.config.drainTimeoutMs);
      const idle = (): void => {
        clearTimeout(timer);
        resolve();
      };
      if (this.inflight.count === 0) idle();
      else this.inflight.onIdle = idle;
    });
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
    for (const o of this.owned) o.close();
  }
}

/**
 * One warm-up program per worker: the test workers in the default suite's language; the program
 * workers in JavaScript, then in Python (veRL's default language: a fresh worker's first Python
 * program loads the interpreter, seconds that would otherwise count against a /run_code deadline).
 */
async function warm(pool: SandboxPool, programPool: SandboxPool | undefined, language: Language): Promise<void> {
  const limits = { ...DEFAULT_LIMITS, timeoutMs: 30_000 };
  const each = (p: SandboxPool | undefined, run: (p: SandboxPool) => Promise<RunResult>) =>
    Promise.all(Array.from({ length: p?.size ?? 0 }, () => run(p!)));
  const programs = async (): Promise<RunResult[]> => [
    ...(await each(programPool, (p) => p.run(programJob('javascript', 'console.log(1)', '', limits)))),
    ...(await each(programPool, (p) => p.run(programJob('python', 'print(1)', '', limits)))),
  ];
  const [tests, plain] = await Promise.all([
    each(pool, (p) => p.run(scoreJob(WARM_TASKS[language], WARM_COMPLETION[language], limits))),
    programs(),
  ]);
  const bad = tests.find((r) => !r.passed) ?? plain.find((r) => r.verdict !== 'passed');
  if (bad) throw new Error(`the warm-up program did not pass: ${bad.verdict} ${bad.message ?? ''}`);
}
