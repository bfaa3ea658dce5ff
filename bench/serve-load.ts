/**
 * `coderl bench serve`: `coderl serve` under load, checked answer by answer. For 1 and N sandbox
 * workers it starts a real server (the CLI's `serve`, a child process on 127.0.0.1 with a bearer
 * token, as deployed) and drives it with autocannon: C concurrent keep-alive connections cycling
 * through one round of requests, a mix of honest, failing and hostile programs in JavaScript and
 * Python, over /v1/score (one program, and one batch per language) and OpenRLHF's /get_reward.
 *
 * Every answer is checked against the verdict its program must get (honest: passed; failing:
 * failed; hostile: its refusal, never a pass). Runs send a fixed number of requests (autocannon's
 * `amount`), so nothing is abandoned at a deadline: lost = sent - answered with 200. Each program
 * carries a unique trailing comment, so the analysis cache never answers for it (every request
 * is linted, parsed and rewarded as a trainer's fresh sample is). The server's RSS and main-thread
 * heap are sampled over IPC (a preload, `--import data:...`, answers `process.memoryUsage()`;
 * Node 20.6+; in a soak also every 15 s after a full collection, `--expose-gc`: the heap live
 * objects hold, since heapUsed alone also counts garbage V8 has not collected yet, which grows for
 * minutes), the server's /metrics is read back after each phase, and SIGTERM must drain it to
 * exit 0. Per phase: an untimed warm-up round (Pyodide loads), then the timed rounds.
 * --soak S keeps the N-worker server under the same load for S seconds: lost, wrong, and the RSS
 * and heap slope and first-vs-last.
 *
 * Figures are printed, never asserted; correctness (lost, wrong, hostile passes) makes exit 1.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type autocannon from 'autocannon';
import type { Verdict } from '../src/sandbox/result';
import { SuiteStore } from '../src/serve/suites';
import type { Task } from '../src/tasks/types';

type SuiteName = 'humaneval-x-js' | 'humaneval-python';
type Kind = 'honest' | 'failing' | 'hostile';

/** One program of the mix and the verdict it must get. */
export interface MixProgram {
  name: string;
  suite: SuiteName;
  task_id: string;
  completion: string;
  kind: Kind;
  verdict: Verdict;
}

export interface ServeBenchOptions {
  /** N, the second server's sandbox workers (the first has 1) */
  workers: number;
  /** concurrent client connections, the same for both servers */
  connections: number;
  /** untimed rounds before the timed ones (Pyodide loads on each worker here) */
  warmRounds: number;
  /** timed rounds of the mix per server */
  rounds: number;
  /** seconds of soak on the N-worker server; 0: none */
  soakS: number;
  /** the server's --timeout (wall-clock limit of one program), ms */
  timeoutMs: number;
  /** memory sample interval, ms */
  sampleMs: number;
}

/** --quick: one timed round per server; N defaults to cores - 1, at least 2; 4 connections per worker of N (2 with --quick). */
export function serveBenchDefaults(quick: boolean, workers = Math.max(2, availableParallelism() - 1)): ServeBenchOptions {
  return quick
    ? { workers, connections: 2 * workers, warmRounds: 1, rounds: 1, soakS: 0, timeoutMs: 1000, sampleMs: 250 }
    : { workers, connections: Math.max(8, 4 * workers), warmRounds: 1, rounds: 8, soakS: 0, timeoutMs: 1000, sampleMs: 1000 };
}

export interface Tally {
  /** requests sent */
  requests: number;
  /** programs in them */
  programs: number;
  /** answered 200 and right */
  ok: number;
  /** sent but never answered 200 (connection errors, timeouts, other statuses) */
  lost: number;
  /** answered 200 with a verdict or shape other than the program's */
  wrong: number;
  /** hostile programs the answer says passed (counted in wrong too) */
  hostile_passes: number;
  /** answers other than 200, by status */
  non200: Record<string, number>;
  /** autocannon's connection errors and timeouts */
  errors: number;
  timeouts: number;
  /** the first few wrong answers, described */
  wrong_examples: string[];
}

export interface MemoryFigures {
  samples: number;
  rss_mib: { first: number; last: number; peak: number };
  heap_mib: { first: number; last: number; peak: number };
  external_mib: { first: number; last: number; peak: number };
}

export interface PhaseResult extends Tally {
  workers: number;
  seconds: number;
  requests_per_s: number;
  programs_per_s: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number };
  /** the server's own count of 200 answers on /v1/score and /get_reward (warm-up included), read from /metrics */
  server_answered_200: number;
  /** the client's count over the same requests */
  client_answered_200: number;
  /** coderl_serve_queue_depth{pool="score"} after the phase: programs left waiting */
  queue_depth_after: number;
  /** coderl_serve_workers_replaced{pool="score"} after the phase (soak included): workers that crashed, were killed or recycled */
  workers_replaced: number;
  /** the server's exit code after SIGTERM (0: drained) */
  exit_code: number | null;
  memory: MemoryFigures;
}

export interface SoakResult extends Tally {
  workers: number;
  seconds: number;
  requests_per_s: number;
  memory: MemoryFigures & {
    /** least-squares slope over the soak, MiB per minute */
    rss_slope_mib_per_min: number;
    heap_slope_mib_per_min: number;
    /** mean of the first and of the last tenth of the samples */
    rss_first_tenth_mib: number;
    rss_last_tenth_mib: number;
    heap_first_tenth_mib: number;
    heap_last_tenth_mib: number;
    /**
     * The heap after a full collection, every 15 s: what live objects hold (heapUsed above also
     * counts garbage not yet collected). A leak shows here; garbage does not.
     */
    retained_heap_mib: { samples: number; first: number; last: number; peak: number; first_tenth: number; last_tenth: number };
    retained_heap_slope_mib_per_min: number;
    /**
     * Every 15 s, with the heap after a full collection: seconds into the soak, RSS, that heap and
     * the workers replaced so far (coderl_serve_workers_replaced): a step in RSS that comes with a
     * replacement is a fresh interpreter's memory, one without is something else.
     */
    series: SoakPoint[];
  };
}

export interface SoakPoint {
  t_s: number;
  rss_mib: number;
  retained_heap_mib: number;
  replaced: number;
}

export interface ServeBenchResult {
  cores: number;
  /** the machine's 1-minute load average at the start and at the end (other work on it slows every figure) */
  load_average: [number, number];
  connections: number;
  timeout_ms: number;
  mix: { programs: number; requests: number; kinds: Record<Kind, number>; endpoints: Record<string, number> };
  phases: PhaseResult[];
  scaling: { workers: number; ratio: number; goal: number; met: boolean };
  soak: SoakResult | null;
  /** no request lost, none answered wrongly, no hostile pass, every server drained */
  correct: boolean;
}

// ---------------------------------------------------------------------------------------------
// The mix: 21 programs on HumanEval-X JS tasks 0-3 and HumanEval tasks 0-2.

const JS_HOSTILE: [string, number, string, Verdict][] = [
  ['endless loop', 1, '  while (true) {}\n}\n', 'timeout'],
  ['huge output', 1, "  for (;;) console.log('x'.repeat(1000));\n}\n", 'output-limit'],
  ['silences console.assert', 0, '  console.assert = () => {};\n  return false;\n}\n', 'tampering'],
  ['process.exit', 0, '  process.exit(0);\n}\n', 'error'],
  ["require('fs')", 2, "  return require('fs').readFileSync('/etc/passwd', 'utf8');\n}\n", 'error'],
];
const PY_HOSTILE: [string, number, string, Verdict][] = [
  ['endless loop', 1, '    while True:\n        pass\n', 'timeout'],
  ['huge output', 0, "    print('x' * 10000000)\n    return True\n", 'output-limit'],
  ['os.system', 1, "    import os\n    os.system('echo pwned')\n    return []\n", 'tampering'],
  [
    'replaces AssertionError',
    0,
    "    import builtins\n    builtins.AssertionError = type('A', (Exception,), {})\n    return False\n",
    'tampering',
  ],
  ['sys.exit', 0, '    import sys\n    sys.exit(0)\n', 'error'],
];

export function mixPrograms(js: readonly Task[], py: readonly Task[]): MixProgram[] {
  const p = (suite: SuiteName, t: Task, name: string, completion: string, kind: Kind, verdict: Verdict): MixProgram => ({
    name: `${suite === 'humaneval-x-js' ? 'js' : 'py'} ${kind}: ${name}`,
    suite,
    task_id: t.task_id,
    completion,
    kind,
    verdict,
  });
  const honest = (suite: SuiteName, tasks: readonly Task[]) =>
    tasks.map((t) => p(suite, t, t.task_id, t.canonical_solution ?? '', 'honest', 'passed'));
  const jsT = (i: number): Task => js[i]!;
  const pyT = (i: number): Task => py[i]!;
  return [
    ...honest('humaneval-x-js', js.slice(0, 4)),
    ...honest('humaneval-python', py.slice(0, 3)),
    p('humaneval-x-js', jsT(0), 'return false', '  return false;\n}\n', 'failing', 'failed'),
    p('humaneval-x-js', jsT(2), 'return 0', '  return 0;\n}\n', 'failing', 'failed'),
    p('humaneval-python', pyT(0), 'return False', '    return False\n', 'failing', 'failed'),
    p('humaneval-python', pyT(2), 'return 0', '    return 0\n', 'failing', 'failed'),
    ...JS_HOSTILE.map(([n, i, c, v]) => p('humaneval-x-js', jsT(i), n, c, 'hostile', v)),
    ...PY_HOSTILE.map(([n, i, c, v]) => p('humaneval-python', pyT(i), n, c, 'hostile', v)),
  ];
}

// ---------------------------------------------------------------------------------------------
// One round of requests, each with its check.

export interface LoadRequest {
  path: '/v1/score' | '/get_reward';
  programs: MixProgram[];
  /** the body, its programs tagged `tag` so the analysis cache misses */
  body(tag: string): string;
  /** problems with a 200 answer (empty: right); hostile passes counted apart */
  check(body: string): { problems: string[]; hostilePasses: number };
}

const tagged = (p: MixProgram, tag: string): string =>
  `${p.completion}${p.suite === 'humaneval-x-js' ? `// bench ${tag}\n` : `    # bench ${tag}\n`}`;

function parse(body: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function scoreRequest(programs: MixProgram[]): LoadRequest {
  const suite = programs[0]!.suite;
  return {
    path: '/v1/score',
    programs,
    body: (tag) =>
      JSON.stringify({ suite, completions: programs.map((p, i) => ({ task_id: p.task_id, completion: tagged(p, `${tag}.${i}`) })) }),
    check(body) {
      const records = parse(body)?.records;
      if (!Array.isArray(records) || records.length !== programs.length)
        return { problems: [`/v1/score: expected ${programs.length} records, got ${body.slice(0, 120)}`], hostilePasses: 0 };
      const problems: string[] = [];
      let hostilePasses = 0;
      programs.forEach((p, i) => {
        const r = records[i] as { task_id?: unknown; verdict?: unknown; passed?: unknown; message?: unknown; reward?: { total?: unknown } };
        if (p.kind === 'hostile' && r.passed === true) hostilePasses++;
        if (
          r.task_id !== p.task_id ||
          r.verdict !== p.verdict ||
          r.passed !== (p.verdict === 'passed') ||
          typeof r.reward?.total !== 'number'
        )
          problems.push(
            `/v1/score ${p.name}: expected ${p.verdict}, got ${String(r.verdict)} (passed ${String(r.passed)}${r.message ? `: ${String(r.message).slice(0, 200)}` : ''})`,
          );
      });
      return { problems, hostilePasses };
    },
  };
}

function rewardRequest(p: MixProgram, prompt: string): LoadRequest {
  return {
    path: '/get_reward',
    programs: [p],
    body: (tag) => JSON.stringify({ query: [prompt + tagged(p, tag)], prompts: [prompt], labels: [p.task_id] }),
    check(body) {
      const j = parse(body) as { rewards?: unknown; scores?: unknown; extra_logs?: { pass?: unknown } } | undefined;
      const want = p.verdict === 'passed' ? 1 : 0;
      const [score] = Array.isArray(j?.scores) ? (j.scores as unknown[]) : [];
      const [reward] = Array.isArray(j?.rewards) ? (j.rewards as unknown[]) : [];
      const [pass] = Array.isArray(j?.extra_logs?.pass) ? (j.extra_logs.pass as unknown[]) : [];
      const hostilePasses = p.kind === 'hostile' && (score === 1 || pass === 1) ? 1 : 0;
      const right = score === want && pass === want && typeof reward === 'number' && Number.isFinite(reward);
      return { problems: right ? [] : [`/get_reward ${p.name}: expected score ${want}, got ${body.slice(0, 120)}`], hostilePasses };
    },
  };
}

/** The round: every program alone (alternating /v1/score and /get_reward), then one /v1/score batch of each language's honest and failing programs. */
export function mixRequests(programs: readonly MixProgram[], prompts: ReadonlyMap<string, string>): LoadRequest[] {
  const single = programs.map((p, i) => (i % 2 === 0 ? scoreRequest([p]) : rewardRequest(p, prompts.get(`${p.suite}:${p.task_id}`)!)));
  const batches = (['humaneval-x-js', 'humaneval-python'] as const).map((s) =>
    scoreRequest(programs.filter((p) => p.suite === s && p.kind !== 'hostile')),
  );
  return [...single, ...batches];
}

// ---------------------------------------------------------------------------------------------
// The server under test: `coderl serve` in a child process.

/**
 * Answers process.memoryUsage() on the IPC channel ('memory-gc': after a full collection, when the
 * server runs with --expose-gc); unref'd so the channel never keeps the server up.
 */
const MEMORY_PRELOAD =
  "data:text/javascript,process.on('message',(m)=>{if(m==='memory'||m==='memory-gc'){const c=m==='memory-gc'&&typeof globalThis.gc==='function';if(c)globalThis.gc();process.send({memory:process.memoryUsage(),collected:c})}});process.channel&&process.channel.unref();";

/** How often a soak samples the heap after a full collection, ms. */
const RETAINED_EVERY_MS = 15_000;

interface MemorySample {
  t: number;
  rss: number;
  heap: number;
  /** the main thread's memory outside its JS heap (Buffers, ArrayBuffers); RSS less heap and this is mostly the workers' */
  external: number;
  /** taken after a full collection */
  collected: boolean;
}

/** bin/coderl.mjs: the launcher this process runs under, else the one in the repository above this module. */
export function coderlLauncher(): string {
  const argv1 = process.argv[1] ?? '';
  if (/^coderl(\.mjs)?$/.test(basename(argv1))) return argv1;
  for (let d = import.meta.dirname; ; d = dirname(d)) {
    const bin = join(d, 'bin', 'coderl.mjs');
    if (existsSync(bin)) return bin;
    if (dirname(d) === d) throw new Error('bench serve: cannot find bin/coderl.mjs to start `coderl serve` with');
  }
}

class ServerChild {
  private readonly exited: Promise<number | null>;
  private readonly memoryWaiters: ((s: MemorySample) => void)[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly token: string,
    /** the last 4000 characters of its stderr */
    readonly log: () => string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    child.on('message', (m: { memory?: NodeJS.MemoryUsage; collected?: boolean }) => {
      if (!m.memory) return;
      const s = {
        t: performance.now(),
        rss: m.memory.rss,
        heap: m.memory.heapUsed,
        external: m.memory.external,
        collected: m.collected === true,
      };
      for (const w of this.memoryWaiters.splice(0)) w(s);
    });
  }

  static async start(workers: number, timeoutMs: number): Promise<ServerChild> {
    const token = randomBytes(16).toString('hex');
    const args = ['serve', '--host', '127.0.0.1', '--port', '0', '--workers', String(workers), '--program-workers', '0'];
    const child = fork(coderlLauncher(), [...args, '--timeout', String(timeoutMs)], {
      execArgv: [...process.execArgv, '--expose-gc', '--import', MEMORY_PRELOAD],
      env: { ...process.env, CODERL_SERVE_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-4000)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0]!;
        if (out.includes('\n')) resolve(line.trim());
      });
      child.once('exit', (code) => reject(new Error(`coderl serve exited with ${code} before listening:\n${err}`)));
    });
    const server = new ServerChild(child, url, token, () => err);
    await server.waitReady();
    return server;
  }

  private async waitReady(): Promise<void> {
    const t0 = performance.now();
    for (;;) {
      const status = await fetch(`${this.url}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return;
      if (this.child.exitCode !== null || performance.now() - t0 > 180_000)
        throw new Error(`coderl serve at ${this.url} never became ready:\n${this.log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** One memory sample; `gc`: after a full collection (the heap live objects hold). */
  memory(gc = false): Promise<MemorySample | undefined> {
    if (!this.child.connected) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 5000);
      this.memoryWaiters.push((s) => {
        clearTimeout(timer);
        resolve(s);
      });
      this.child.send(gc ? 'memory-gc' : 'memory');
    });
  }

  /** The /metrics text (with the token). */
  async metrics(): Promise<string> {
    const r = await fetch(`${this.url}/metrics`, { headers: { authorization: `Bearer ${this.token}` } });
    return r.text();
  }

  /** SIGTERM, then the exit code (null if it had to be killed after 60 s). */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }

  get alive(): boolean {
    return this.child.exitCode === null;
  }
}

/** The sum of `name{...}` samples whose labels include every one of `labels`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Load.

const emptyTally = (): Tally => ({
  requests: 0,
  programs: 0,
  ok: 0,
  lost: 0,
  wrong: 0,
  hostile_passes: 0,
  non200: {},
  errors: 0,
  timeouts: 0,
  wrong_examples: [],
});

function addTally(into: Tally, t: Tally): void {
  for (const k of ['requests', 'programs', 'ok', 'lost', 'wrong', 'hostile_passes', 'errors', 'timeouts'] as const) into[k] += t[k];
  for (const [s, n] of Object.entries(t.non200)) into.non200[s] = (into.non200[s] ?? 0) + n;
  into.wrong_examples.push(...t.wrong_examples.slice(0, Math.max(0, 5 - into.wrong_examples.length)));
}

interface LoadRun {
  tally: Tally;
  seconds: number;
  latency: { p50: number; p90: number; p99: number; max: number };
}

let serial = 0;

/** `rounds` rounds of `requests` over `connections` connections; client i starts where client i-1's share ends, so each request is sent `rounds` times. */
async function drive(server: ServerChild, requests: readonly LoadRequest[], rounds: number, connections: number): Promise<LoadRun> {
  const { default: autocannon } = await import('autocannon').catch((e: unknown) => {
    throw new Error(`bench serve needs autocannon, a dev dependency (npm ci installs it): ${String(e)}`);
  });
  const amount = rounds * requests.length;
  const c = Math.min(connections, amount);
  const tally = emptyTally();
  const run = ++serial;
  let sent = 0;
  const share = (i: number): number => Math.floor(amount / c) + (i < amount % c ? 1 : 0);
  const template = requests.map((r) => ({
    method: 'POST' as const,
    path: r.path === '/get_reward' ? `${r.path}?suite=${r.programs[0]!.suite}` : r.path,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
    setupRequest: (req: autocannon.Request) => ({ ...req, body: r.body(`${run}.${++sent}`) }),
    onResponse: (status: number, body: string) => {
      if (status !== 200) {
        tally.non200[status] = (tally.non200[status] ?? 0) + 1;
        return;
      }
      const { problems, hostilePasses } = r.check(body);
      tally.hostile_passes += hostilePasses;
      if (problems.length) {
        tally.wrong++;
        tally.wrong_examples.push(...problems.slice(0, Math.max(0, 5 - tally.wrong_examples.length)));
      } else tally.ok++;
    },
  }));
  let client = 0;
  let offset = 0;
  const t0 = performance.now();
  const result = await autocannon({
    url: server.url,
    connections: c,
    amount,
    timeout: 120,
    requests: template,
    setupClient: (cl) => {
      const at = offset % template.length;
      offset += share(client++);
      cl.setRequests([...template.slice(at), ...template.slice(0, at)].map((r) => ({ ...r })));
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  tally.requests = amount;
  tally.programs = rounds * requests.reduce((n, r) => n + r.programs.length, 0);
  tally.errors = result.errors;
  tally.timeouts = result.timeouts;
  tally.lost = amount - tally.ok - tally.wrong;
  const l = result.latency;
  return { tally, seconds, latency: { p50: l.p50, p90: l.p90, p99: l.p99, max: l.max } };
}

/**
 * Samples the server's memory every `ms` until stopped; with `retainedMs`, also one after a full
 * collection that often (into `retained`, kept apart: it would pull the heap series down).
 */
function sampler(
  server: ServerChild,
  ms: number,
  retainedMs = 0,
): { samples: MemorySample[]; retained: MemorySample[]; stop(): Promise<void> } {
  const samples: MemorySample[] = [];
  const retained: MemorySample[] = [];
  let running = true;
  let nextRetained = retainedMs > 0 ? performance.now() : Infinity;
  const loop = (async () => {
    while (running && server.alive) {
      const gc = performance.now() >= nextRetained;
      const s = await server.memory(gc);
      if (s) (s.collected ? retained : samples).push(s);
      if (gc) nextRetained = performance.now() + retainedMs;
      await new Promise((r) => setTimeout(r, ms));
    }
  })();
  return {
    samples,
    retained,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const MIB = 2 ** 20;
const r1 = (x: number): number => Math.round(x * 10) / 10;

function memoryFigures(samples: readonly MemorySample[]): MemoryFigures {
  const f = (key: 'rss' | 'heap' | 'external') => ({
    first: r1((samples[0]?.[key] ?? 0) / MIB),
    last: r1((samples.at(-1)?.[key] ?? 0) / MIB),
    peak: r1(Math.max(0, ...samples.map((s) => s[key])) / MIB),
  });
  return { samples: samples.length, rss_mib: f('rss'), heap_mib: f('heap'), external_mib: f('external') };
}

/** Least-squares slope of `key` in MiB per minute. */
function slope(samples: readonly MemorySample[], key: 'rss' | 'heap'): number {
  if (samples.length < 2) return 0;
  const xs = samples.map((s) => s.t / 60_000);
  const ys = samples.map((s) => s[key] / MIB);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const sxy = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0);
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return sxx > 0 ? Math.round((sxy / sxx) * 100) / 100 : 0;
}

const tenth = (samples: readonly MemorySample[], last: boolean, key: 'rss' | 'heap' = 'rss'): number => {
  const k = Math.max(1, Math.floor(samples.length / 10));
  const part = last ? samples.slice(-k) : samples.slice(0, k);
  return r1(part.reduce((a, s) => a + s[key], 0) / Math.max(1, part.length) / MIB);
};

// ---------------------------------------------------------------------------------------------
// The bench.

async function loadMix(): Promise<{ programs: MixProgram[]; requests: LoadRequest[] }> {
  const store = new SuiteStore(1);
  const [js, py] = await Promise.all([store.byName('humaneval-x-js', 'suite'), store.byName('humaneval-python', 'suite')]);
  const programs = mixPrograms(js.tasks.slice(0, 4), py.tasks.slice(0, 3));
  const prompts = new Map<string, string>();
  for (const [suite, s] of [['humaneval-x-js', js] as const, ['humaneval-python', py] as const])
    for (const t of s.tasks.slice(0, 4)) prompts.set(`${suite}:${t.task_id}`, t.prompt);
  return { programs, requests: mixRequests(programs, prompts) };
}

async function phase(
  workers: number,
  o: ServeBenchOptions,
  requests: readonly LoadRequest[],
  say: (m: string) => void,
): Promise<{ result: PhaseResult; soak: SoakResult | null }> {
  say(`starting coderl serve with ${workers} worker(s)`);
  const server = await ServerChild.start(workers, o.timeoutMs);
  let soak: SoakResult | null = null;
  try {
    say(`${workers} worker(s): warm-up (${o.warmRounds} round(s), untimed)`);
    const warm = await drive(server, requests, o.warmRounds, o.connections);
    say(`${workers} worker(s): ${o.rounds} timed round(s) of ${requests.length} requests over ${o.connections} connections`);
    const mem = sampler(server, o.sampleMs);
    const timed = await drive(server, requests, o.rounds, o.connections);
    await mem.stop();
    const total = emptyTally();
    addTally(total, warm.tally);
    addTally(total, timed.tally);
    if (o.soakS > 0 && workers > 1) soak = await soakRun(server, requests, o, say, total);
    const metrics = await server.metrics();
    const server200 =
      metricSum(metrics, 'coderl_serve_requests_total', { endpoint: '/v1/score', code: '200' }) +
      metricSum(metrics, 'coderl_serve_requests_total', { endpoint: '/get_reward', code: '200' });
    const t = timed.tally;
    const result: PhaseResult = {
      workers,
      ...t,
      seconds: Math.round(timed.seconds * 100) / 100,
      requests_per_s: r1((t.ok + t.wrong) / timed.seconds),
      programs_per_s: r1((t.programs * (t.ok + t.wrong)) / t.requests / timed.seconds),
      latency_ms: timed.latency,
      server_answered_200: server200,
      client_answered_200: total.ok + total.wrong,
      queue_depth_after: metricSum(metrics, 'coderl_serve_queue_depth', { pool: 'score' }),
      workers_replaced: metricSum(metrics, 'coderl_serve_workers_replaced', { pool: 'score' }),
      exit_code: null,
      memory: memoryFigures(mem.samples),
    };
    // the warm-up's (and soak's) answers are checked too: their faults count against the phase
    result.lost += warm.tally.lost;
    result.wrong += warm.tally.wrong;
    result.hostile_passes += warm.tally.hostile_passes;
    result.wrong_examples = [...t.wrong_examples, ...warm.tally.wrong_examples].slice(0, 5);
    say('SIGTERM: draining');
    result.exit_code = await server.stop();
    return { result, soak };
  } finally {
    if (server.alive) await server.stop();
  }
}

async function soakRun(
  server: ServerChild,
  requests: readonly LoadRequest[],
  o: ServeBenchOptions,
  say: (m: string) => void,
  total: Tally,
): Promise<SoakResult> {
  say(`${o.workers} workers: soak for ${o.soakS} s`);
  const tally = emptyTally();
  const mem = sampler(server, o.sampleMs, RETAINED_EVERY_MS);
  const rounds = Math.max(1, Math.ceil(o.connections / requests.length));
  const t0 = performance.now();
  let lastSay = t0;
  const series: SoakPoint[] = [];
  let pointed: MemorySample | undefined;
  const point = async () => {
    const g = mem.retained.at(-1);
    const s = mem.samples.at(-1);
    if (!g || !s || g === pointed) return;
    pointed = g;
    const replaced = metricSum(await server.metrics(), 'coderl_serve_workers_replaced', { pool: 'score' });
    series.push({ t_s: Math.round((g.t - t0) / 1000), rss_mib: r1(s.rss / MIB), retained_heap_mib: r1(g.heap / MIB), replaced });
  };
  while ((performance.now() - t0) / 1000 < o.soakS) {
    addTally(tally, (await drive(server, requests, rounds, o.connections)).tally);
    await point();
    if (performance.now() - lastSay > 30_000) {
      lastSay = performance.now();
      const s = mem.samples.at(-1);
      say(
        `soak: ${Math.round((lastSay - t0) / 1000)} s, ${tally.requests} requests, RSS ${s ? r1(s.rss / MIB) : '?'} MiB, heap ${s ? r1(s.heap / MIB) : '?'} MiB`,
      );
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  await mem.stop();
  await point();
  addTally(total, tally);
  const s = mem.samples;
  const g = mem.retained;
  return {
    workers: o.workers,
    ...tally,
    seconds: Math.round(seconds),
    requests_per_s: r1((tally.ok + tally.wrong) / seconds),
    memory: {
      ...memoryFigures(s),
      rss_slope_mib_per_min: slope(s, 'rss'),
      heap_slope_mib_per_min: slope(s, 'heap'),
      rss_first_tenth_mib: tenth(s, false),
      rss_last_tenth_mib: tenth(s, true),
      heap_first_tenth_mib: tenth(s, false, 'heap'),
      heap_last_tenth_mib: tenth(s, true, 'heap'),
      retained_heap_mib: {
        samples: g.length,
        ...memoryFigures(g).heap_mib,
        first_tenth: tenth(g, false, 'heap'),
        last_tenth: tenth(g, true, 'heap'),
      },
      retained_heap_slope_mib_per_min: slope(g, 'heap'),
      series,
    },
  };
}

export async function benchServe(o: ServeBenchOptions, say: (m: string) => void = () => {}): Promise<ServeBenchResult> {
  const load0 = loadavg()[0]!;
  const { programs, requests } = await loadMix();
  const kinds = { honest: 0, failing: 0, hostile: 0 };
  for (const p of programs) kinds[p.kind]++;
  const endpoints: Record<string, number> = {};
  for (const r of requests) endpoints[r.path] = (endpoints[r.path] ?? 0) + 1;
  const one = await phase(1, o, requests, say);
  const many = await phase(o.workers, o, requests, say);
  const ratio = Math.round((many.result.requests_per_s / one.result.requests_per_s) * 100) / 100;
  const goal = Math.round(0.8 * o.workers * 100) / 100;
  const phases = [one.result, many.result];
  const bad = (t: Tally): boolean => t.lost > 0 || t.wrong > 0 || t.hostile_passes > 0;
  return {
    cores: availableParallelism(),
    load_average: [r1(load0), r1(loadavg()[0]!)],
    connections: o.connections,
    timeout_ms: o.timeoutMs,
    mix: { programs: programs.length, requests: requests.length, kinds, endpoints },
    phases,
    scaling: { workers: o.workers, ratio, goal, met: ratio >= goal },
    soak: many.soak,
    correct:
      !phases.some(bad) &&
      !(many.soak && bad(many.soak)) &&
      phases.every((p) => p.exit_code === 0 && p.queue_depth_after === 0 && p.server_answered_200 === p.client_answered_200),
  };
}

export function formatServeBench(r: ServeBenchResult): string {
  const m = r.mix;
  const head = [
    `coderl serve under load: ${r.cores} cores (load average ${r.load_average[0]} at the start, ${r.load_average[1]} at the end), ${r.connections} connections, --timeout ${r.timeout_ms} ms;`,
    `a round: ${m.programs} programs (${m.kinds.honest} honest, ${m.kinds.failing} failing, ${m.kinds.hostile} hostile) in ${m.requests} requests (${Object.entries(
      m.endpoints,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
    '',
    'workers  requests  req/s  programs/s  p50 ms  p99 ms  lost  wrong  hostile passed  RSS MiB (peak)  heap MiB (peak)  replaced  drained',
  ];
  const rows = r.phases.map(
    (p) =>
      `${String(p.workers).padStart(7)}  ${String(p.requests).padStart(8)}  ${String(p.requests_per_s).padStart(5)}  ${String(p.programs_per_s).padStart(10)}  ${String(p.latency_ms.p50).padStart(6)}  ${String(p.latency_ms.p99).padStart(6)}  ${String(p.lost).padStart(4)}  ${String(p.wrong).padStart(5)}  ${String(p.hostile_passes).padStart(14)}  ${String(p.memory.rss_mib.peak).padStart(14)}  ${String(p.memory.heap_mib.peak).padStart(15)}  ${String(p.workers_replaced).padStart(8)}  ${p.exit_code === 0 ? 'yes' : `no (${p.exit_code})`}`,
  );
  const s = r.scaling;
  const lines = [
    ...head,
    ...rows,
    '',
    `scaling: ${s.ratio}x the 1-worker requests/s with ${s.workers} workers (goal 0.8 x ${s.workers} = ${s.goal}x): ${s.met ? 'met' : 'not met'}`,
  ];
  if (r.soak) {
    const k = r.soak;
    const mem = k.memory;
    lines.push(
      `soak (${k.workers} workers, ${k.seconds} s): ${k.requests} requests, ${k.requests_per_s} req/s, lost ${k.lost}, wrong ${k.wrong}, hostile passed ${k.hostile_passes}`,
      `  RSS ${mem.rss_mib.first} -> ${mem.rss_mib.last} MiB (peak ${mem.rss_mib.peak}; first tenth ${mem.rss_first_tenth_mib}, last tenth ${mem.rss_last_tenth_mib}; slope ${mem.rss_slope_mib_per_min} MiB/min), heap ${mem.heap_mib.first} -> ${mem.heap_mib.last} MiB (first tenth ${mem.heap_first_tenth_mib}, last tenth ${mem.heap_last_tenth_mib}; slope ${mem.heap_slope_mib_per_min} MiB/min), external ${mem.external_mib.first} -> ${mem.external_mib.last} MiB`,
      `  heap after a full collection (${mem.retained_heap_mib.samples} samples, every ${RETAINED_EVERY_MS / 1000} s): ${mem.retained_heap_mib.first} -> ${mem.retained_heap_mib.last} MiB (first tenth ${mem.retained_heap_mib.first_tenth}, last tenth ${mem.retained_heap_mib.last_tenth}; slope ${mem.retained_heap_slope_mib_per_min} MiB/min)`,
      `  every ${RETAINED_EVERY_MS / 1000} s (s: RSS MiB, workers replaced so far): ${mem.series.map((p) => `${p.t_s}: ${p.rss_mib}, ${p.replaced}`).join('; ')}`,
    );
  }
  const examples = [...r.phases.flatMap((p) => p.wrong_examples), ...(r.soak?.wrong_examples ?? [])];
  lines.push(r.correct ? 'every answer right, nothing lost, every server drained' : 'FAULTS: see lost / wrong above');
  for (const e of examples.slice(0, 5)) lines.push(`  ${e}`);
  return lines.join('\n');
}
