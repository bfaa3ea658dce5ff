/**
 * Per stored checkpoint: "Export ONNX" (downloads M.onnx and M.tokenizer.json, with or without
 * the KV cache) and "Check ONNX parity" (the export in onnxruntime-web, webgpu and wasm, against
 * our WebGPU engine in this browser; max_rel_diff shown). Failures show inline, in the item.
 */
import { useId, useState } from 'react';
import { loadCheckpointBrowser } from '../../container/browser';
import { useLab } from '../../store';
import { currentRuntime } from '../../store/gpuSlice';
import { browserParity, exportCheckpointOnnx, PARITY_TOLERANCE, type BrowserParity } from './actions';
import { downloadBytes } from '../download';
import { errorText } from '../../util/errors';

type State =
  | { phase: 'idle' }
  | { phase: 'exporting' | 'checking' }
  | { phase: 'exported'; files: string[]; note: string | null }
  | { phase: 'parity'; result: BrowserParity }
  | { phase: 'error'; message: string };

export function OnnxCheckpointActions({ name, disabled }: { name: string; disabled: boolean }) {
  const gpuReady = useLab((s) => s.gpu.status === 'ready');
  const [kv, setKv] = useState(false);
  const [state, setState] = useState<State>({ phase: 'idle' });
  const id = useId();
  const working = state.phase === 'exporting' || state.phase === 'checking';

  async function exportFiles(): Promise<void> {
    setState({ phase: 'exporting' });
    try {
      const out = exportCheckpointOnnx(name, await loadCheckpointBrowser(name), kv);
      downloadBytes(out.model.name, out.model.bytes);
      if (out.tokenizer) downloadBytes(out.tokenizer.name, out.tokenizer.text, 'application/json');
      const files = [out.model.name, ...(out.tokenizer ? [out.tokenizer.name] : [])];
      setState({
        phase: 'exported',
        files,
        note: out.tokenizer ? null : 'this checkpoint carries no tokenizer, so no tokenizer file was written',
      });
    } catch (e) {
      setState({ phase: 'error', message: `Could not export "${name}" to ONNX: ${errorText(e)}` });
    }
  }

  async function checkParity(): Promise<void> {
    const rt = currentRuntime();
    if (!rt) {
      setState({ phase: 'error', message: 'The GPU device is not ready: parity compares with our WebGPU engine.' });
      return;
    }
    setState({ phase: 'checking' });
    try {
      setState({ phase: 'parity', result: await browserParity(await loadCheckpointBrowser(name), rt) });
    } catch (e) {
      setState({ phase: 'error', message: `ONNX parity of "${name}" failed: ${errorText(e)}` });
    }
  }

  return (
    <div className="onnx-actions" data-testid="onnx-actions" data-state={state.phase}>
      <label htmlFor={`${id}-kv`}>
        <input id={`${id}-kv`} type="checkbox" checked={kv} onChange={(e) => setKv(e.target.checked)} data-testid="onnx-kv" /> KV cache
      </label>{' '}
      <button
        type="button"
        disabled={disabled || working}
        onClick={() => void exportFiles()}
        data-testid="onnx-export"
        aria-label={`Export ${name} to ONNX`}
      >
        Export ONNX
      </button>{' '}
      <button
        type="button"
        disabled={disabled || working || !gpuReady}
        onClick={() => void checkParity()}
        data-testid="onnx-parity"
        aria-label={`Check ONNX parity of ${name}`}
      >
        Check ONNX parity
      </button>
      {working && (
        <p className="hint" role="status">
          {state.phase === 'exporting' ? 'Exporting…' : 'Running the export in onnxruntime-web (webgpu, then wasm)…'}
        </p>
      )}
      {state.phase === 'exported' && (
        <p className="hint" role="status" data-testid="onnx-exported">
          Downloaded {state.files.join(' and ')}.{state.note && ` Note: ${state.note}.`}
        </p>
      )}
      {state.phase === 'error' && (
        <div className="alert" role="alert" data-testid="onnx-action-error">
          {state.message}
        </div>
      )}
      {state.phase === 'parity' && <ParityTable result={state.result} />}
    </div>
  );
}

function ParityTable({ result: r }: { result: BrowserParity }) {
  const ok = r.max_rel_diff < PARITY_TOLERANCE;
  return (
    <div data-testid="onnx-parity-result" data-ok={String(ok)}>
      <table>
        <caption>
          max relative difference |a−b| / max(|b|, rms(b)), B={r.B} T={r.T}, plain and KV-cache graphs
        </caption>
        <thead>
          <tr>
            <th scope="col">onnxruntime-web</th>
            <th scope="col">vs our WebGPU engine</th>
            <th scope="col">vs float64 CPU</th>
          </tr>
        </thead>
        <tbody>
          {r.rows.map((x) => (
            <tr key={x.ep}>
              <th scope="row">{x.ep}</th>
              <td data-testid={`onnx-parity-${x.ep}`}>{x.vs_webgpu.toExponential(2)}</td>
              <td>{x.vs_cpu.toExponential(2)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className={ok ? 'hint' : 'bad'} data-testid="onnx-parity-max">
        max_rel_diff {r.max_rel_diff.toExponential(2)}: {ok ? 'within' : 'ABOVE'} the tolerance {PARITY_TOLERANCE}
      </p>
    </div>
  );
}
