/**
 * Sandbox throughput: programs per second through the worker pool with 1 worker, with N
 * (cores - 1, the pool's default) and with as many workers as cores, for HumanEval-X JavaScript (QuickJS) and HumanEval Python (Pyodide) canonical
 * solutions. Each configuration first runs a warm-up pass (engines load, Pyodide included) and
 * is validated (the known pass counts, 161/164 and 164/164) before the timed pass counts.
 * `coderl bench score [--json] [--quick]`; data from the repository's data/benchmarks (or $CODERL_DATA).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createAnalyzer } from '../src/analysis';
import { nodeWasmLoader } from '../src/analysis/wasm-node';
import { computeReward } from '../src/reward/reward';
import { createNodePool, defaultPoolSize } from '../src/sandbox/pool.node';
import { DEFAULT_LIMITS } from '../src/sandbox/result';
import { scoreCompletions } from '../src/sandbox/score';
import { benchmarkPath } from '../src/tasks/benchmarks';
import { canonicalCompletions, loadSuite } from '../src/tasks/suite';

export interface ScoreBenchRow {
  suite: string;
  workers: number;
  programs: number;
  seconds: number;
  programs_per_s: number;
}

export interface AnalysisBenchRow {
  /** lint + tree-sitter + metrics + reward per program, fresh cache */
  cold_programs_per_s: number;
  /** the same programs again: served from the analysis cache */
  cached_programs_per_s: number;
  hit_rate: number;
}

export interface ScoreBenchResult {
  cores_minus_one: number;
  rows: ScoreBenchRow[];
  analysis: AnalysisBenchRow;
}

const SUITES = [
  { file: 'humaneval-x-js.jsonl.gz', name: 'HumanEval-X JS (QuickJS)', expectPassed: 161 },
  { file: 'humaneval-python.jsonl.gz', name: 'HumanEval Python (Pyodide)', expectPassed: 164 },
];

async function timeSuite(file: string, name: string, expectPassed: number, workers: number, quick: boolean): Promise<ScoreBenchRow> {
  const tasks = (await loadSuite(new Uint8Array(readFileSync(benchmarkPath(file))), file)).items;
  const completions = canonicalCompletions(tasks);
  const pool = await createNodePool({ size: workers });
  try {
    const limits = { ...DEFAULT_LIMITS, timeoutMs: 10_000 };
    // warm-up on every worker, and validation: the canonical solutions must score as known
    const warm = await scoreCompletions(pool, tasks, quick ? completions.slice(0, 4 * workers) : completions, { limits });
    const passed = warm.filter((r) => r.passed).length;
    if (!quick && passed !== expectPassed) throw new Error(`bench score: ${name}: ${passed} passed, expected ${expectPassed}`);
    const t0 = performance.now();
    const timed = await scoreCompletions(pool, tasks, completions, { limits });
    const seconds = (performance.now() - t0) / 1000;
    if (timed.filter((r) => r.passed).length !== expectPassed)
      throw new Error(`bench score: ${name}: timed pass differs from the expected ${expectPassed}`);
    return {
      suite: name,
      workers,
      programs: completions.length,
      seconds: Math.round(seconds * 100) / 100,
      programs_per_s: Math.round((completions.length / seconds) * 10) / 10,
    };
  } finally {
    pool.close();
  }
}

export async function benchScore(opts: { quick?: boolean } = {}): Promise<ScoreBenchResult> {
  const n = defaultPoolSize();
  const rows: ScoreBenchRow[] = [];
  for (const s of SUITES) {
    for (const workers of [...new Set([1, n, availableParallelism()])])
      rows.push(await timeSuite(s.file, s.name, s.expectPassed, workers, opts.quick === true));
  }
  return { cores_minus_one: n, rows, analysis: await benchAnalysis() };
}

/** Static analysis and reward of the HumanEval-X JS canonical programs: a cold pass, then a cached one. */
async function benchAnalysis(): Promise<AnalysisBenchRow> {
  const tasks = (await loadSuite(new Uint8Array(readFileSync(benchmarkPath(SUITES[0]!.file))), SUITES[0]!.file)).items;
  const analyzer = await createAnalyzer(nodeWasmLoader, { cacheSize: 4096 });
  analyzer.analyze('const warm = 1;\n'); // ESLint's and tree-sitter's first-use costs are not per program
  const pass = (): number => {
    const t0 = performance.now();
    for (const t of tasks) {
      const code = t.canonical_solution ?? '';
      computeReward(code, { verdict: 'passed', tests_passed: 1, tests_total: 1 }, analyzer.analyze(code, { prompt: t.prompt }));
    }
    return Math.round((tasks.length / ((performance.now() - t0) / 1000)) * 10) / 10;
  };
  const cold = pass();
  const cached = pass();
  return { cold_programs_per_s: cold, cached_programs_per_s: cached, hit_rate: analyzer.stats().hitRate };
}

export function formatScoreBench(r: ScoreBenchResult): string {
  const a = r.analysis;
  return [
    ...r.rows.map(
      (x) =>
        `${x.suite.padEnd(28)} ${String(x.workers).padStart(2)} worker(s): ${String(x.programs_per_s).padStart(7)} programs/s (${x.programs} programs in ${x.seconds} s)`,
    ),
    `analysis + reward (JS, main thread): cold ${a.cold_programs_per_s} programs/s, cached ${a.cached_programs_per_s} programs/s (hit rate ${(a.hit_rate * 100).toFixed(0)}%)`,
  ].join('\n');
}
