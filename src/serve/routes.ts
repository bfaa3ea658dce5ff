/**
 * The endpoints: our own (/v1/suites, /v1/score), OpenRLHF's (/get_reward), Sandbox Fusion's
 * (/run_code) and the operational ones (/healthz, /readyz, /metrics). docs/serve.md describes
 * each request and answer; validate.ts checks the bodies.
 */
import { programJob } from '../sandbox/program';
import { fieldError, HttpError, type ServeConfig } from './config';
import type { Reply, Route } from './http';
import type { ServeMetrics } from './metrics';
import { resolveLabel, responseOf, rewardResponse } from './openrlhf';
import { runCodeDeadlineMs, runCodeLimits, runCodeResponse } from './sandbox-fusion';
import type { Scheduler } from './scheduler';
import { scoreItems, scoreSummary, type Scorer } from './scoring';
import type { LoadedSuite, SuiteStore } from './suites';
import { checkCompletions, parseJsonBody, parseRewardRequest, parseRunCodeRequest, parseScoreRequest, type SuiteRef } from './validate';

export interface ServeState {
  config: ServeConfig;
  suites: SuiteStore;
  scorer: Scorer;
  /** the plain-program queue; undefined with --program-workers 0 */
  programs: Scheduler | undefined;
  metrics: ServeMetrics;
  ready(): boolean;
  draining(): boolean;
}

async function loadRef(s: ServeState, ref: SuiteRef): Promise<LoadedSuite> {
  if (ref.kind === 'default') {
    if (s.config.defaultSuite === undefined)
      throw fieldError('suite', 'give exactly one of suite, suite_hash and tasks (this server has no --suite to fall back on)');
    return s.suites.resolve(s.config.defaultSuite, '--suite');
  }
  if (ref.kind === 'name') return s.suites.byName(ref.name, 'suite');
  if (ref.kind === 'hash') return s.suites.byHash(ref.hash, 'suite_hash');
  return { label: 'tasks (inline)', tasks: ref.tasks, byId: new Map(ref.tasks.map((t) => [t.task_id, t])) };
}

function metricsText(s: ServeState): string {
  const { scheduler, analyzer } = s.scorer;
  const pools = [['score', scheduler] as const, ...(s.programs ? [['program', s.programs] as const] : [])];
  const cache = analyzer.stats();
  return s.metrics.render([
    {
      name: 'coderl_serve_queue_depth',
      help: 'Programs waiting for a sandbox worker, by pool.',
      samples: pools.map(([pool, q]) => ({ labels: { pool }, value: q.waiting })),
    },
    {
      name: 'coderl_serve_programs_running',
      help: 'Programs on a sandbox worker now, by pool.',
      samples: pools.map(([pool, q]) => ({ labels: { pool }, value: q.running })),
    },
    {
      name: 'coderl_serve_queue_limit',
      help: 'Programs that may wait before requests are refused, by pool.',
      samples: pools.map(([pool, q]) => ({ labels: { pool }, value: q.limit })),
    },
    {
      name: 'coderl_serve_workers',
      help: 'Sandbox workers, by pool.',
      samples: pools.map(([pool, q]) => ({ labels: { pool }, value: q.workers })),
    },
    {
      name: 'coderl_serve_workers_replaced',
      help: 'Sandbox workers replaced since start, by pool: crashed, killed past the hard timeout, or recycled (an interpreter past its heap limit or left unrestorable); each replacement loads a fresh interpreter.',
      samples: pools.map(([pool, q]) => ({ labels: { pool }, value: q.replaced })),
    },
    {
      name: 'coderl_serve_analysis_cache_hits',
      help: 'Analysis cache hits since start (the AST, lint and metrics of a completion seen before).',
      samples: [{ value: cache.hits }],
    },
    { name: 'coderl_serve_analysis_cache_misses', help: 'Analysis cache misses since start.', samples: [{ value: cache.misses }] },
    {
      name: 'coderl_serve_analysis_cache_hit_ratio',
      help: 'Analysis cache hits / lookups since start (0 before any).',
      samples: [{ value: cache.hitRate }],
    },
    { name: 'coderl_serve_suites_uploaded', help: 'Uploaded suites held in memory.', samples: [{ value: s.suites.size }] },
    {
      name: 'coderl_serve_ready',
      help: '1 when the server takes work, 0 while starting or draining.',
      samples: [{ value: s.ready() && !s.draining() ? 1 : 0 }],
    },
  ]);
}

async function score(s: ServeState, body: Uint8Array, signal: AbortSignal): Promise<Reply> {
  const req = parseScoreRequest(parseJsonBody(body), s.config.queueLimit);
  const suite = await loadRef(s, req.suite);
  checkCompletions(req.completions, suite.tasks, suite.label);
  const t0 = performance.now();
  const items = req.completions.map((c) => ({ task: suite.byId.get(c.task_id)!, completion: c.completion }));
  const records = await scoreItems(s.scorer, items, req.reward ?? s.config.reward, signal);
  return { json: { records, summary: scoreSummary(records, performance.now() - t0) } };
}

async function getReward(s: ServeState, body: Uint8Array, query: URLSearchParams, signal: AbortSignal): Promise<Reply> {
  const req = parseRewardRequest(parseJsonBody(body), s.config.queueLimit);
  const name = query.get('suite') ?? s.config.defaultSuite;
  const suite = name === undefined ? undefined : await s.suites.resolve(name, query.has('suite') ? 'suite' : '--suite');
  const items = req.query.map((q, i) => {
    const task = resolveLabel(req.labels[i]!, `labels[${i}]`, suite);
    const completion = responseOf(q, req.prompts[i]!, s.config.eosMarkers);
    if (completion === undefined) throw fieldError(`query[${i}]`, `does not hold prompts[${i}] (the query is prompt + response)`);
    return { task, completion };
  });
  return { json: rewardResponse(await scoreItems(s.scorer, items, s.config.reward, signal)) };
}

export function serveRoutes(s: ServeState): Route[] {
  return [
    { method: 'GET', path: '/healthz', auth: false, handle: async () => ({ json: { status: 'ok' } }) },
    {
      method: 'GET',
      path: '/readyz',
      auth: false,
      handle: async () =>
        s.draining()
          ? { status: 503, json: { status: 'draining', error: 'shutting down', field: null } }
          : s.ready()
            ? { json: { status: 'ready' } }
            : { status: 503, json: { status: 'starting', error: 'the sandbox workers are starting', field: null } },
    },
    {
      method: 'GET',
      path: '/metrics',
      auth: true,
      handle: async () => ({ text: metricsText(s), contentType: 'text/plain; version=0.0.4; charset=utf-8' }),
    },
    { method: 'POST', path: '/v1/suites', auth: true, handle: async (r) => ({ json: await s.suites.upload(r.body) }) },
    { method: 'POST', path: '/v1/score', auth: true, handle: (r) => score(s, r.body, r.signal) },
    { method: 'POST', path: '/get_reward', auth: true, handle: (r) => getReward(s, r.body, r.query, r.signal) },
    {
      method: 'POST',
      path: '/run_code',
      auth: true,
      // veRL's call_sandbox_api retries a 504 and no other status, so a full queue answers 504
      busyStatus: 504,
      handle: async (r) => {
        if (!s.programs) throw new HttpError(503, '/run_code is off: the server was started with --program-workers 0');
        const req = parseRunCodeRequest(parseJsonBody(r.body));
        r.narrowDeadline(runCodeDeadlineMs(req, s.config));
        const [result] = s.programs.enqueue([programJob(req.language, req.code, req.stdin, runCodeLimits(req, s.config))], r.signal);
        return { json: runCodeResponse(await result!) };
      },
    },
  ];
}
