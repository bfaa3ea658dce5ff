import { useLab } from '../../store';
import type { GpuStatus } from '../../store/gpuSlice';

const STATUS_TEXT: Record<GpuStatus, string> = {
  idle: 'Not started',
  starting: 'Opening the GPU device…',
  checking: 'Running the self-check…',
  ready: 'Self-check passed',
  'check-failed': 'Self-check FAILED',
  unavailable: 'WebGPU unavailable',
  lost: 'GPU device lost',
};

export function GpuStatusBadge() {
  const status = useLab((s) => s.gpu.status);
  const adapter = useLab((s) => s.gpu.info?.adapter);
  return (
    <span className={`badge badge-${status}`} data-testid="gpu-badge" role="status">
      GPU: {adapter ? `${adapter.vendor} ${adapter.architecture}`.trim() : STATUS_TEXT[status]}
    </span>
  );
}

export function GpuPanel() {
  const gpu = useLab((s) => s.gpu);
  const rerun = useLab((s) => s.runGpuSelfCheck);
  const recover = useLab((s) => s.recoverGpu);
  const simulateLoss = useLab((s) => s.simulateGpuLoss);
  const info = gpu.info;

  return (
    <div className="gpu-panel">
      <p className={`gpu-status status-${gpu.status}`} data-testid="gpu-status" data-state={gpu.status} aria-live="polite">
        {STATUS_TEXT[gpu.status]}
      </p>

      {gpu.problem && (
        <div className="alert" role="alert" data-testid="gpu-problem">
          <strong>{gpu.status === 'unavailable' ? 'WebGPU is not available.' : 'GPU problem.'}</strong> {gpu.problem}
          {gpu.status === 'unavailable' && (
            <p>
              The lab runs its model as WebGPU compute shaders. Without WebGPU you can still browse; training and the self-check need it.
            </p>
          )}
        </div>
      )}

      {gpu.status === 'lost' && gpu.lost && (
        <div className="alert" role="alert" data-testid="gpu-lost">
          <strong>The GPU device was lost</strong> (reason: <code>{gpu.lost.reason}</code>; {gpu.lost.message}). GPU work in flight is gone;
          the page and everything you entered are kept.
          <div>
            <button type="button" onClick={() => void recover()} data-testid="gpu-recover">
              Re-create the device
            </button>
          </div>
        </div>
      )}

      {info && (
        <>
          <dl className="kv" data-testid="gpu-adapter">
            <dt>Vendor</dt>
            <dd>{info.adapter.vendor || '—'}</dd>
            <dt>Architecture</dt>
            <dd data-testid="gpu-architecture">{info.adapter.architecture || '—'}</dd>
            <dt>Description</dt>
            <dd>{info.adapter.description || info.adapter.device || '—'}</dd>
            <dt>Kind</dt>
            <dd>{info.adapter.software ? 'software (CPU emulation: expect low speed)' : 'hardware'}</dd>
          </dl>
          <ul className="chips" aria-label="Optional features" data-testid="gpu-features">
            {Object.entries(info.features).map(([f, on]) => (
              <li key={f} className={on ? 'chip on' : 'chip off'}>
                {f}: {on ? 'yes' : 'no'}
              </li>
            ))}
          </ul>
          <details>
            <summary>Negotiated limits</summary>
            <table className="limits" data-testid="gpu-limits">
              <tbody>
                {Object.entries(info.deviceLimits).map(([k, v]) => (
                  <tr key={k}>
                    <th scope="row">{k}</th>
                    <td>{v.toLocaleString('en-US')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        </>
      )}

      {gpu.selfCheck && <SelfCheckView />}

      {(gpu.status === 'ready' || gpu.status === 'check-failed') && (
        <details className="diagnostics">
          <summary>Diagnostics</summary>
          <button type="button" onClick={() => void rerun()} data-testid="gpu-rerun">
            Run the self-check again
          </button>{' '}
          <button type="button" onClick={simulateLoss} data-testid="gpu-simulate-loss">
            Simulate device loss
          </button>
          <p className="hint">Devices created this session: {gpu.devices}</p>
        </details>
      )}
    </div>
  );
}

function SelfCheckView() {
  const check = useLab((s) => s.gpu.selfCheck)!;
  const showKernel = useLab((s) => s.showKernel);
  return (
    <div className="selfcheck" data-testid="gpu-selfcheck" data-ok={String(check.ok)}>
      <h3>Self-check</h3>
      {check.error && <p className="alert">{check.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Kernel</th>
            <th>N</th>
            <th>Max |Δ| vs float64</th>
            <th>Result</th>
          </tr>
        </thead>
        <tbody>
          {check.checks.map((c) => (
            <tr key={c.name}>
              <td>
                <button type="button" className="link" onClick={() => showKernel(c.name)}>
                  {c.name}
                </button>
              </td>
              <td>{c.n}</td>
              <td title={`tolerance atol=${c.tolerance.atol.toExponential(2)} rtol=${c.tolerance.rtol}`}>
                {c.maxAbsDiff.toExponential(2)}
              </td>
              <td className={c.ok ? 'ok' : 'bad'}>{c.ok ? 'pass' : 'FAIL'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="hint">
        {check.dispatches} dispatches in {check.submits} submit, {check.wallMs.toFixed(0)} ms
        {check.gpuTimings && `; GPU time ${check.gpuTimings.map((t) => `${t.kernel} ${(t.ns / 1e3).toFixed(0)} µs`).join(', ')}`}
      </p>
    </div>
  );
}
