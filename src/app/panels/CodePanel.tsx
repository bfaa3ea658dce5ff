import { lazy, Suspense } from 'react';
import { reduceSumPass } from '../../kernels/reduce_sum';
import { saxpy } from '../../kernels/saxpy';
import { useLab } from '../../store';

const CodeEditor = lazy(() => import('./CodeEditor'));

/** The WGSL the self-check runs, viewable in the editor. */
const KERNELS: Record<string, { file: string; wgsl: string }> = {
  saxpy: { file: 'shaders/saxpy.wgsl', wgsl: saxpy.wgsl },
  reduce_sum: { file: 'shaders/reduce_sum.wgsl', wgsl: reduceSumPass.wgsl },
};

export function CodePanel() {
  const tab = useLab((s) => s.ui.codeTab);
  const kernel = useLab((s) => s.ui.kernel);
  const setTab = useLab((s) => s.setCodeTab);
  const showKernel = useLab((s) => s.showKernel);
  const k = KERNELS[kernel] ?? KERNELS.saxpy!;

  return (
    <div className="code-panel">
      <div role="tablist" aria-label="Code view" className="tabs">
        <button role="tab" type="button" aria-selected={tab === 'rollout'} onClick={() => setTab('rollout')}>
          Rollout
        </button>
        <button role="tab" type="button" aria-selected={tab === 'kernels'} onClick={() => setTab('kernels')}>
          Kernels
        </button>
        {tab === 'kernels' && (
          <select aria-label="Kernel" value={kernel} onChange={(e) => showKernel(e.target.value)}>
            {Object.entries(KERNELS).map(([name, v]) => (
              <option key={name} value={name}>
                {v.file}
              </option>
            ))}
          </select>
        )}
      </div>
      {tab === 'rollout' ? (
        <p className="empty" data-testid="rollout-empty">
          No rollout selected. Rollouts appear here, with per-token heatmaps and markers, once a run has produced them.
        </p>
      ) : (
        <Suspense fallback={<p className="empty">Loading the editor…</p>}>
          <CodeEditor value={k.wgsl} language="wgsl" readOnly label={`${k.file} (read-only)`} />
        </Suspense>
      )}
    </div>
  );
}
