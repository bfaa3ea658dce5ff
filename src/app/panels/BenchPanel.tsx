/**
 * The engine benchmark in the browser: the same bench as `coderl bench engine` (perf/engine.ts)
 * on the app's runtime, against TF.js's WebGPU backend on the same adapter, at small sizes.
 * The bench and TF.js load only when the button is pressed.
 */
import { useRef, useState } from 'react';
import type { EngineBenchResult } from '../../perf/engine';
import { useLab } from '../../store';
import { currentRuntime } from '../../store/gpuSlice';
import { OnnxRace } from '../onnx/OnnxRace';
import { ratioColumn, ResultTable, type ResultColumn } from '../ResultTable';
import { errorText } from '../../util/errors';

type BenchState =
  | { phase: 'idle' }
  | { phase: 'running'; step: string; at: number }
  | { phase: 'done'; result: EngineBenchResult; seconds: number }
  | { phase: 'error'; message: string };

export function BenchPanel() {
  const gpuReady = useLab((s) => s.gpu.status === 'ready');
  const [state, setState] = useState<BenchState>({ phase: 'idle' });
  const started = useRef(0);
  const running = state.phase === 'running';

  async function run(): Promise<void> {
    const rt = currentRuntime();
    if (!rt) {
      setState({ phase: 'error', message: 'The GPU device is not ready: wait for the self-check, or re-create the device.' });
      return;
    }
    started.current = performance.now();
    const step = (s: string): void => setState({ phase: 'running', step: s, at: (performance.now() - started.current) / 1000 });
    step('loading the benchmark and TF.js');
    try {
      const [{ benchEngine, ENGINE_BENCH_BROWSER }, { loadTfjs }] = await Promise.all([
        import('../../perf/engine'),
        import('../../perf/tfjs'),
      ]);
      const tf = await loadTfjs(navigator.gpu);
      const result = await benchEngine(rt, tf, ENGINE_BENCH_BROWSER, step);
      setState({ phase: 'done', result, seconds: (performance.now() - started.current) / 1000 });
    } catch (e) {
      setState({ phase: 'error', message: errorText(e) || String(e) });
    }
  }

  return (
    <div className="bench-panel" data-testid="bench" data-state={state.phase}>
      <p className="hint">
        Our WGSL kernels against TensorFlow.js (WebGPU backend) on this adapter: matmul GFLOP/s, training and generation tokens/s. The same
        bench as <code>npx coderl bench engine</code>, at small sizes.
      </p>
      <button type="button" onClick={() => void run()} disabled={!gpuReady || running} data-testid="bench-run">
        {running ? 'Running…' : 'Run benchmark'}
      </button>
      {state.phase === 'running' && (
        <p className="hint" role="status" data-testid="bench-progress">
          {state.step}… ({state.at.toFixed(0)} s)
        </p>
      )}
      {state.phase === 'error' && (
        <div className="alert" role="alert" data-testid="bench-error">
          <strong>The benchmark failed.</strong> {state.message}
        </div>
      )}
      {state.phase === 'done' && <BenchResults result={state.result} seconds={state.seconds} />}
      <OnnxRace />
    </div>
  );
}

type MatmulRow = EngineBenchResult['matmul'][number];
type TrainRow = EngineBenchResult['train_step'];

const MATMUL_COLUMNS: ResultColumn<MatmulRow>[] = [
  { header: 'n', cell: (m) => m.n, rowHeader: true },
  { header: 'ours', cell: (m) => m.ours_gflops, testId: (m) => `bench-matmul-ours-${m.n}` },
  { header: 'tiled', cell: (m) => m.variants.tiled },
  { header: 'naive', cell: (m) => m.variants.naive },
  { header: 'TF.js', cell: (m) => m.tfjs_gflops, testId: (m) => `bench-matmul-tfjs-${m.n}` },
  ratioColumn<MatmulRow>(
    'ours/TF.js',
    (m) => m.ours_gflops,
    (m) => m.tfjs_gflops,
  ),
];

const TRAIN_COLUMNS: ResultColumn<TrainRow>[] = [
  { header: 'ours', cell: (t) => t.ours_tokens_per_s, testId: () => 'bench-train-ours' },
  { header: 'TF.js', cell: (t) => t.tfjs_tokens_per_s, testId: () => 'bench-train-tfjs' },
  ratioColumn<TrainRow>(
    'ours/TF.js',
    (t) => t.ours_tokens_per_s,
    (t) => t.tfjs_tokens_per_s,
  ),
];

function BenchResults({ result: r, seconds }: { result: EngineBenchResult; seconds: number }) {
  const t = r.train_step;
  const c = t.config;
  return (
    <div data-testid="bench-results">
      <h3>Matmul, GFLOP/s (median)</h3>
      <ResultTable columns={MATMUL_COLUMNS} rows={r.matmul} rowKey={(m) => m.n} />
      <h3>
        Training step, tokens/s ({c.preset}: L={c.nLayer} C={c.dModel}, B={t.B} T={t.T})
      </h3>
      <ResultTable columns={TRAIN_COLUMNS} rows={[t]} rowKey={() => 'train'} />
      <dl className="kv">
        <dt>Per training step</dt>
        <dd data-testid="bench-per-step">
          {r.per_step.dispatches} dispatches, {r.per_step.submits} submit, {r.per_step.readbacks} readbacks
        </dd>
        <dt>Generation</dt>
        <dd data-testid="bench-generate">
          {r.generate.ours_tokens_per_s} tokens/s (B={r.generate.B}, {r.generate.new_tokens} new tokens each)
        </dd>
        <dt>Adapter</dt>
        <dd>{r.adapter}</dd>
        <dt>Took</dt>
        <dd>{seconds.toFixed(0)} s</dd>
      </dl>
    </div>
  );
}
