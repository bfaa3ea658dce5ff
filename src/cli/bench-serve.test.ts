/**
 * `coderl bench serve`: the checker first (a right answer passes it; an answer that lets a hostile
 * program pass, or gives any program another verdict, is caught and counted), then the bench for
 * real through the CLI (`node bin/coderl.mjs bench serve --quick --soak 2 --json`: real `coderl serve`
 * children with 1 and N workers under autocannon): the JSON's shape, nothing lost, nothing
 * wrong, no hostile pass, the server's own count of answers equal to the client's, every server
 * drained by SIGTERM, and the table. Speeds are printed by the bench, never asserted here.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, test } from 'vitest';
import { SuiteStore } from '../serve/suites';
import {
  formatServeBench,
  metricSum,
  mixPrograms,
  mixRequests,
  type LoadRequest,
  type MixProgram,
  type ServeBenchResult,
} from '../../bench/serve-load';
import { main } from './main';

const bin = join(import.meta.dirname, '../../bin/coderl.mjs');
let programs: MixProgram[];
let round: LoadRequest[];

beforeAll(async () => {
  const store = new SuiteStore(1);
  const js = (await store.byName('humaneval-x-js', 'suite')).tasks;
  const py = (await store.byName('humaneval-python', 'suite')).tasks;
  programs = mixPrograms(js.slice(0, 4), py.slice(0, 3));
  const prompts = new Map<string, string>();
  for (const t of js.slice(0, 4)) prompts.set(`humaneval-x-js:${t.task_id}`, t.prompt);
  for (const t of py.slice(0, 4)) prompts.set(`humaneval-python:${t.task_id}`, t.prompt);
  round = mixRequests(programs, prompts);
});

/** The answer a server gives when every program gets `verdict(p)`. */
function answer(r: LoadRequest, verdict: (p: MixProgram) => string): string {
  if (r.path === '/get_reward') {
    const pass = verdict(r.programs[0]!) === 'passed' ? 1 : 0;
    return JSON.stringify({ rewards: [pass * 2], scores: [pass], extra_logs: { pass: [pass] } });
  }
  return JSON.stringify({
    records: r.programs.map((p) => ({ task_id: p.task_id, verdict: verdict(p), passed: verdict(p) === 'passed', reward: { total: 0 } })),
  });
}

describe('the checker', () => {
  test('the mix: honest, failing and hostile programs in both languages over /v1/score and /get_reward', () => {
    expect(programs.map((p) => p.kind).filter((k) => k === 'hostile')).toHaveLength(10);
    expect(new Set(programs.map((p) => p.suite))).toEqual(new Set(['humaneval-x-js', 'humaneval-python']));
    expect(round.filter((r) => r.path === '/get_reward').length).toBeGreaterThan(0);
    expect(round.filter((r) => r.programs.length > 1).length).toBe(2);
    // every body is valid JSON and tags each program with the text it is given, so no two requests share a completion
    const a = round.map((r) => r.body('a'));
    const b = round.map((r) => r.body('b'));
    for (const [i, body] of a.entries()) {
      expect(() => JSON.parse(body) as unknown).not.toThrow();
      expect(body).not.toBe(b[i]);
    }
  });

  test('a right answer passes; a hostile pass and a wrong verdict are caught', () => {
    for (const r of round) expect(r.check(answer(r, (p) => p.verdict))).toEqual({ problems: [], hostilePasses: 0 });
    let hostile = 0;
    let wrong = 0;
    for (const r of round) {
      const c = r.check(answer(r, () => 'passed'));
      hostile += c.hostilePasses;
      if (c.problems.length) wrong++;
    }
    expect(hostile).toBe(programs.filter((p) => p.kind === 'hostile').length);
    expect(wrong).toBe(round.filter((r) => r.programs.some((p) => p.verdict !== 'passed')).length);
    // an honest program answered 'error' (what a worker that fails gives): wrong, not a hostile pass
    const honest = round.find((r) => r.path === '/v1/score' && r.programs.length === 1 && r.programs[0]!.kind === 'honest')!;
    expect(honest.check(answer(honest, () => 'error'))).toMatchObject({
      problems: [expect.stringContaining('expected passed, got error')],
    });
    expect(round[0]!.check('not json').problems).toHaveLength(1);
  });

  test('metricSum adds the samples whose labels match', () => {
    const text = [
      '# TYPE coderl_serve_requests_total counter',
      'coderl_serve_requests_total{endpoint="/v1/score",code="200"} 5',
      'coderl_serve_requests_total{endpoint="/v1/score",code="429"} 2',
      'coderl_serve_requests_total{endpoint="/get_reward",code="200"} 3',
    ].join('\n');
    expect(metricSum(text, 'coderl_serve_requests_total', { code: '200' })).toBe(8);
    expect(metricSum(text, 'coderl_serve_requests_total', { endpoint: '/v1/score' })).toBe(7);
    expect(metricSum(text, 'coderl_serve_queue_depth')).toBe(0);
  });
});

describe('coderl bench serve', () => {
  test('usage errors: --workers below 2, --soak on another suite', async () => {
    const err: string[] = [];
    const io = { out: () => {}, err: (t: string) => void err.push(t) };
    expect(await main(['bench', 'serve', '--workers', '1'], io)).toBe(2);
    expect(await main(['bench', 'runtime', '--soak', '5'], io)).toBe(2);
    expect(err.join('\n')).toMatch(/--workers is the N compared with 1 worker: at least 2[\s\S]*--soak applies to the serve suite only/);
  });

  test('--quick --soak 2 --json for real: 1 and N workers, every answer right, nothing lost, the servers drained', async () => {
    const run = promisify(execFile)(process.execPath, [bin, 'bench', 'serve', '--quick', '--soak', '2', '--json'], {
      timeout: 280_000,
      maxBuffer: 1 << 24,
    });
    // exit 1 (a fault found) still prints the JSON: read it either way, so the checks below say what went wrong
    const { stdout, stderr, code } = await run.then(
      (o) => ({ ...o, code: 0 }),
      (e: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: e.code ?? -1 }),
    );
    const r = JSON.parse(stdout) as ServeBenchResult;
    const n = r.phases[1]?.workers ?? 0;
    expect(Object.keys(r).sort()).toEqual(
      ['connections', 'cores', 'correct', 'load_average', 'mix', 'phases', 'scaling', 'soak', 'timeout_ms'].sort(),
    );
    expect(r.phases.map((p) => p.workers)).toEqual([1, n]);
    expect(n).toBeGreaterThanOrEqual(2);
    expect(r.mix).toEqual({
      programs: 21,
      requests: 23,
      kinds: { honest: 7, failing: 4, hostile: 10 },
      endpoints: { '/v1/score': 13, '/get_reward': 10 },
    });
    for (const p of r.phases) {
      const where = `${p.workers} worker(s): ${JSON.stringify(p.wrong_examples)}\n${stderr.slice(-2000)}`;
      expect({ lost: p.lost, wrong: p.wrong, hostile_passes: p.hostile_passes, non200: p.non200 }, where).toEqual({
        lost: 0,
        wrong: 0,
        hostile_passes: 0,
        non200: {},
      });
      expect(p.requests).toBe(23);
      expect(p.programs).toBe(32);
      expect(p.ok).toBe(23);
      // the warm-up round, the timed one and (on the N-worker server) the soak: the server counted every answer the client did
      const soaked = p.workers === n ? (r.soak?.requests ?? -1) : 0;
      expect(p.client_answered_200).toBe(46 + soaked);
      expect(p.server_answered_200).toBe(46 + soaked);
      expect(p.queue_depth_after).toBe(0);
      expect(p.workers_replaced).toBeGreaterThanOrEqual(0); // read from the server's /metrics
      expect(p.exit_code).toBe(0);
      for (const v of [p.seconds, p.requests_per_s, p.programs_per_s, p.latency_ms.p50, p.latency_ms.p99]) expect(v).toBeGreaterThan(0);
      expect(p.latency_ms.p99).toBeGreaterThanOrEqual(p.latency_ms.p50);
      expect(p.memory.samples).toBeGreaterThan(0);
      expect(p.memory.rss_mib.peak).toBeGreaterThanOrEqual(p.memory.rss_mib.last);
      expect(p.memory.heap_mib.peak).toBeGreaterThan(0);
      expect(p.memory.external_mib.peak).toBeGreaterThan(0);
    }
    const [one, many] = r.phases;
    expect(r.scaling.workers).toBe(n);
    expect(r.scaling.goal).toBeCloseTo(0.8 * n, 5);
    expect(r.scaling.ratio).toBeCloseTo(many!.requests_per_s / one!.requests_per_s, 1);
    expect(r.scaling.met).toBe(r.scaling.ratio >= r.scaling.goal);
    const k = r.soak!;
    expect({ workers: k.workers, lost: k.lost, wrong: k.wrong, hostile_passes: k.hostile_passes, non200: k.non200 }).toEqual({
      workers: n,
      lost: 0,
      wrong: 0,
      hostile_passes: 0,
      non200: {},
    });
    expect(k.seconds).toBeGreaterThanOrEqual(2);
    expect(k.requests % 23).toBe(0); // whole rounds only
    expect(k.ok).toBe(k.requests);
    expect(k.memory.samples).toBeGreaterThan(0);
    for (const v of [k.memory.rss_first_tenth_mib, k.memory.rss_last_tenth_mib, k.memory.heap_first_tenth_mib])
      expect(v).toBeGreaterThan(0);
    expect(Number.isFinite(k.memory.rss_slope_mib_per_min)).toBe(true);
    // the heap after a full collection: one at the soak's start at least (--expose-gc reached the server)
    expect(k.memory.retained_heap_mib.samples).toBeGreaterThanOrEqual(1);
    expect(k.memory.retained_heap_mib.first).toBeGreaterThan(0);
    expect(Number.isFinite(k.memory.retained_heap_slope_mib_per_min)).toBe(true);
    // the 15 s series: a point for each collected sample, the replacements counted so far never falling
    const series = k.memory.series;
    expect(series.length).toBeGreaterThanOrEqual(1);
    expect(series.length).toBeLessThanOrEqual(k.memory.retained_heap_mib.samples);
    series.forEach((p, i) => {
      expect(p.t_s).toBeGreaterThanOrEqual(0);
      expect(p.rss_mib).toBeGreaterThan(0);
      expect(p.retained_heap_mib).toBeGreaterThan(0);
      expect(Number.isInteger(p.replaced) && p.replaced >= (series[i - 1]?.replaced ?? 0)).toBe(true);
    });
    expect(series.at(-1)!.replaced).toBeLessThanOrEqual(many!.workers_replaced);
    expect(r.correct).toBe(true);
    expect(code).toBe(0);
    const table = formatServeBench(r);
    expect(table).toMatch(/^workers +requests +req\/s/m);
    expect(table).toMatch(new RegExp(`^ +${n} +23 `, 'm'));
    expect(table).toMatch(/^soak \(\d+ workers, \d+ s\): \d+ requests/m);
    expect(table).toMatch(/^ {2}every 15 s \(s: RSS MiB, workers replaced so far\): \d+: [\d.]+, \d+/m);
    expect(table).toContain('every answer right, nothing lost, every server drained');
  }, 300_000);
});
