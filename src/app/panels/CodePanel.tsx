import { lazy, Suspense, useEffect, useMemo } from 'react';
import { reduceSumPass } from '../../kernels/reduce_sum';
import { saxpy } from '../../kernels/saxpy';
import { matmulCheckStrategy, selfCheckMatmulSpec } from '../../kernels/selfcheck';
import { useLab } from '../../store';
import { sideKey } from '../../lab/compare';
import { RolloutCompare } from './RolloutCompare';
import { RolloutView } from './RolloutView';

const CodeEditor = lazy(() => import('./CodeEditor'));

/** The WGSL the self-check runs, viewable in the editor. */
const KERNELS: Record<string, { file: string; wgsl: string }> = {
  saxpy: { file: 'shaders/saxpy.wgsl', wgsl: saxpy.wgsl },
  reduce_sum: { file: 'shaders/reduce_sum.wgsl', wgsl: reduceSumPass.wgsl },
};

/** KERNELS and the matmul the device's self-check ran (its strategy's kernel, as compiled: a subgroup one is generated). */
function checkKernels(names: readonly string[]): Record<string, { file: string; wgsl: string }> {
  const out = { ...KERNELS };
  for (const name of names) {
    const strategy = matmulCheckStrategy(name);
    if (!strategy) continue;
    const spec = selfCheckMatmulSpec(strategy);
    out[name] = { file: `${spec.name} (as compiled)`, wgsl: spec.wgsl };
  }
  return out;
}

export function CodePanel() {
  const tab = useLab((s) => s.ui.codeTab);
  const kernel = useLab((s) => s.ui.kernel);
  const setTab = useLab((s) => s.setCodeTab);
  const showKernel = useLab((s) => s.showKernel);
  const selfCheck = useLab((s) => s.gpu.selfCheck);
  const kernels = useMemo(() => checkKernels(selfCheck?.checks.map((c) => c.name) ?? []), [selfCheck]);
  const k = kernels[kernel] ?? KERNELS.saxpy!;
  // selecting a rollout (in the rollout browser) brings its view forward
  const selected = useLab((s) =>
    s.rollouts.selected === null ? null : `${s.rollouts.run}/${s.rollouts.iteration}/${s.rollouts.selected}`,
  );
  useEffect(() => {
    if (selected !== null) setTab('rollout');
  }, [selected, setTab]);
  // and a complete pair to compare (a new one, or swapped) brings the Compare tab forward
  const pair = useLab(({ rollouts: { compare: c } }) => (c.a && c.b ? `${sideKey(c.a)}|${sideKey(c.b)}` : null));
  useEffect(() => {
    if (pair !== null) setTab('compare');
  }, [pair, setTab]);

  return (
    <div className="code-panel">
      <div role="tablist" aria-label="Code view" className="tabs">
        <button role="tab" type="button" aria-selected={tab === 'rollout'} onClick={() => setTab('rollout')}>
          Rollout
        </button>
        <button role="tab" type="button" aria-selected={tab === 'compare'} onClick={() => setTab('compare')} data-testid="code-tab-compare">
          Compare
        </button>
        <button role="tab" type="button" aria-selected={tab === 'kernels'} onClick={() => setTab('kernels')}>
          Kernels
        </button>
        {tab === 'kernels' && (
          <select aria-label="Kernel" value={kernel} onChange={(e) => showKernel(e.target.value)}>
            {Object.entries(kernels).map(([name, v]) => (
              <option key={name} value={name}>
                {v.file}
              </option>
            ))}
          </select>
        )}
      </div>
      {tab === 'rollout' ? (
        <RolloutView />
      ) : tab === 'compare' ? (
        <RolloutCompare />
      ) : (
        <Suspense fallback={<p className="empty">Loading the editor…</p>}>
          <CodeEditor value={k.wgsl} language="wgsl" readOnly label={`${k.file} (read-only)`} />
        </Suspense>
      )}
    </div>
  );
}
