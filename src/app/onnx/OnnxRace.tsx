/**
 * The Benchmarks panel's "ONNX race" (perf/onnx.ts): a fresh model of the chosen preset,
 * exported to ONNX, raced in our WGSL engine, ORT's webgpu provider and ORT wasm in this page on
 * the same inputs; forward ms, greedy generation tokens/s and ours/theirs ratios. The result is
 * also on the section as JSON (data-result) for `coderl bench onnx --browser` and the e2e test.
 */
import { useId, useState } from 'react';
import type { OnnxRaceResult, RacePreset } from '../../perf/onnx';
import { MODEL_PRESETS } from '../../model/config';
import { useLab } from '../../store';
import { loadBrowserOrt } from '../../onnx/browser';
import { currentRuntime } from '../../store/gpuSlice';
import { errorText } from '../../util/errors';
import { fmtRatio, ResultTable, type ResultColumn } from '../ResultTable';

type RaceState =
  | { phase: 'idle' }
  | { phase: 'running'; step: string }
  | { phase: 'done'; result: OnnxRaceResult; seconds: number }
  | { phase: 'error'; message: string };

const PRESETS = Object.keys(MODEL_PRESETS) as RacePreset[];
const slug = (engine: string) =>
  engine
    .toLowerCase()
    .replace(/^ort /, '')
    .replace(/[^a-z0-9]+/g, '-');

export function OnnxRace() {
  const gpuReady = useLab((s) => s.gpu.status === 'ready');
  const [preset, setPreset] = useState<RacePreset>('tiny');
  const [state, setState] = useState<RaceState>({ phase: 'idle' });
  const id = useId();
  const running = state.phase === 'running';

  async function run(): Promise<void> {
    const rt = currentRuntime();
    if (!rt) {
      setState({ phase: 'error', message: 'The GPU device is not ready: wait for the self-check, or re-create the device.' });
      return;
    }
    const t0 = performance.now();
    const step = (s: string): void => setState({ phase: 'running', step: s });
    step('loading onnxruntime-web');
    try {
      const { benchOnnxRace, ONNX_RACE_QUICK } = await import('../../perf/onnx');
      const ort = await loadBrowserOrt();
      const engines = [...(ort.webgpu ? [{ name: 'ORT webgpu', ort: ort.webgpu }] : []), { name: 'ORT wasm', ort: ort.wasm }];
      const result = await benchOnnxRace(rt, engines, { ...ONNX_RACE_QUICK, preset }, step);
      setState({ phase: 'done', result, seconds: (performance.now() - t0) / 1000 });
    } catch (e) {
      setState({ phase: 'error', message: errorText(e) });
    }
  }

  return (
    <section
      className="onnx-race"
      aria-label="ONNX race"
      data-testid="onnx-race"
      data-state={state.phase}
      data-result={state.phase === 'done' ? JSON.stringify(state.result) : undefined}
    >
      <h3>ONNX race</h3>
      <p className="hint">
        The same exported model in our WGSL engine and in onnxruntime-web (webgpu and wasm) in this page: a forward pass and greedy
        generation, warm-up excluded, medians. Goal: ours at least 1.5x faster.
      </p>
      <div className="ckpt-row">
        <label htmlFor={`${id}-preset`}>Preset</label>
        <select id={`${id}-preset`} value={preset} onChange={(e) => setPreset(e.target.value as RacePreset)} data-testid="onnx-race-preset">
          {PRESETS.map((p) => (
            <option key={p} value={p}>
              {p} (L={MODEL_PRESETS[p].nLayer}, C={MODEL_PRESETS[p].dModel})
            </option>
          ))}
        </select>
        <button type="button" disabled={!gpuReady || running} onClick={() => void run()} data-testid="onnx-race-run">
          {running ? 'Racing…' : 'Run the ONNX race'}
        </button>
      </div>
      {state.phase === 'running' && (
        <p className="hint" role="status">
          {state.step}…
        </p>
      )}
      {state.phase === 'error' && (
        <div className="alert" role="alert" data-testid="onnx-race-error">
          <strong>The race failed.</strong> {state.message}
        </div>
      )}
      {state.phase === 'done' && <RaceTable result={state.result} seconds={state.seconds} />}
    </section>
  );
}

type RaceRow = OnnxRaceResult['rows'][number];

const RACE_COLUMNS: ResultColumn<RaceRow>[] = [
  { header: 'engine', cell: (x) => x.engine, rowHeader: true },
  { header: 'forward ms', cell: (x) => x.forward_ms, testId: (x) => `onnx-race-forward-${slug(x.engine)}` },
  { header: 'generation tokens/s', cell: (x) => x.generate_tokens_per_s, testId: (x) => `onnx-race-generate-${slug(x.engine)}` },
  { header: 'max rel diff vs ours', cell: (x) => (x.max_rel_diff ? x.max_rel_diff.toExponential(2) : '—') },
  { header: 'same greedy tokens', cell: (x) => x.same_tokens },
];

function RaceTable({ result: r, seconds }: { result: OnnxRaceResult; seconds: number }) {
  return (
    <div data-testid="onnx-race-results">
      <ResultTable
        columns={RACE_COLUMNS}
        rows={r.rows}
        rowKey={(x) => x.engine}
        caption={
          <>
            {r.preset}: forward B={r.forward.B} T={r.forward.T}; generation B={r.generate.B}, prompt {r.generate.prompt_len},{' '}
            {r.generate.new_tokens} new tokens; medians of {r.reps} warm runs ({seconds.toFixed(0)} s in all)
          </>
        }
      />
      <ul>
        {r.ratios.map((x) => (
          <li key={x.engine} data-testid={`onnx-race-ratio-${slug(x.engine)}`}>
            ours / {x.engine}: forward {fmtRatio(x.forward)}, generation {fmtRatio(x.generate)} (goal {r.goal}x:{' '}
            {Math.min(x.forward, x.generate) >= r.goal ? 'met' : 'not met'})
          </li>
        ))}
      </ul>
    </div>
  );
}
