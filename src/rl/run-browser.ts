/**
 * `coderl train` in the page: the same runPipeline, wired the way commands/train.ts wires it,
 * with the browser's pieces: the run directory in OPFS or IndexedDB (store-browser.ts), the
 * sandbox pool on module Web Workers, the analyzer with the browser's wasm loader, and the app's
 * GPU runtime (the cpu backend when there is none). Loaded lazily by the run slice.
 */
import { createAnalyzer, type Analyzer } from '../analysis';
import { browserWasmLoader } from '../analysis/wasm-browser';
import type { GpuRuntime } from '../gpu/runtime';
import { createBackend } from '../model/backend';
import type { SandboxPool } from '../sandbox/pool';
import { createBrowserPool, defaultPoolSize } from '../sandbox/pool.browser';
import type { RlConfig } from './config';
import { exploreHook } from './explore-hook';
import { runPipeline, type PipelineOptions, type Summary } from './pipeline';
import type { Metrics } from './ppo-loop';
import { readJson } from './store';
import { runStorage } from './store-browser';

export { StoppedError, type Summary } from './pipeline';

export interface BrowserRunOptions {
  cfg: RlConfig;
  seed: number;
  /** the run directory's name */
  run: string;
  /** the app's runtime; null runs on the cpu backend */
  runtime: GpuRuntime | null;
  onEvent?: PipelineOptions['onEvent'];
  onMetrics?: (stage: string, m: Metrics) => void;
  shouldStop?: () => boolean;
}

/** What a run directory holds. */
export interface StoredRun {
  run: string;
  kind: 'opfs' | 'indexeddb';
  files: string[];
  /** config.json: null before a run has started there */
  config: { cfg: RlConfig; seed: number; backend: string } | null;
  /** summary.json: null until the run has finished */
  summary: Summary | null;
}

let pool: SandboxPool | null = null;
let analyzer: Promise<Analyzer> | null = null;

/** The scorer's pool and analyzer, created on the first run and kept for the next. */
async function scorer(): Promise<{ pool: SandboxPool; analyzer: Analyzer }> {
  pool ??= createBrowserPool({ size: defaultPoolSize() });
  analyzer ??= createAnalyzer(browserWasmLoader).catch((e: unknown) => {
    analyzer = null; // retried on the next run
    throw e;
  });
  return { pool, analyzer: await analyzer };
}

export async function runInBrowser(o: BrowserRunOptions): Promise<Summary> {
  const backend = o.runtime ? 'webgpu' : 'cpu';
  const runtime = o.runtime ?? undefined;
  const [storage, s] = await Promise.all([runStorage(), scorer()]);
  return runPipeline({
    cfg: o.cfg,
    seed: o.seed,
    backend,
    store: storage.open(o.run),
    scorer: s,
    makeBackend: (config, params, optim, optimizer) => createBackend(backend, { config, params, optim, optimizer, runtime }),
    exploreFor: (tok) => exploreHook(tok, o.cfg.explore),
    onEvent: o.onEvent,
    onMetrics: o.onMetrics,
    shouldStop: o.shouldStop,
  });
}

export async function readStoredRun(run: string): Promise<StoredRun> {
  const storage = await runStorage();
  const store = storage.open(run);
  const files = await store.files();
  return {
    run,
    kind: storage.kind,
    files,
    config: files.includes('config.json') ? await readJson<StoredRun['config']>(store, 'config.json') : null,
    summary: files.includes('summary.json') ? await readJson<Summary>(store, 'summary.json') : null,
  };
}

export async function listStoredRuns(): Promise<string[]> {
  return (await runStorage()).runs();
}
