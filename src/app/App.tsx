import { useEffect, useState, type ReactNode } from 'react';
import { useLab } from '../store';
import { PanelBoundary } from './PanelBoundary';
import { BenchPanel } from './panels/BenchPanel';
import { CheckpointPanel } from './panels/CheckpointPanel';
import { CodePanel } from './panels/CodePanel';
import { EvalPanel } from './panels/EvalPanel';
import { TrainingCurves } from './panels/TrainingCurves';
import { ExperimentPanel } from './panels/ExperimentPanel';
import { GpuPanel, GpuStatusBadge } from './panels/GpuPanel';
import { RolloutBrowser } from './panels/RolloutBrowser';
import { ScratchScorer } from './panels/ScratchScorer';

const COLLAPSED_KEY = 'coderl.collapsedPanels';

function readCollapsed(): Set<string> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(COLLAPSED_KEY) ?? '[]');
    return new Set(Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  } catch {
    return new Set();
  }
}

/**
 * A titled panel whose heading button folds it away (kept mounted, so a run or an editor in it
 * carries on); which panels are folded is remembered in localStorage. Its body renders inside an
 * error boundary: a panel that fails shows why, with a Retry, and the rest of the page carries on.
 */
function Panel({ id, title, children, className }: { id: string; title: string; children: ReactNode; className?: string }) {
  const [open, setOpen] = useState(() => !readCollapsed().has(id));
  const toggle = (): void => {
    const next = !open;
    setOpen(next);
    const c = readCollapsed();
    if (next) c.delete(id);
    else c.add(id);
    try {
      localStorage.setItem(COLLAPSED_KEY, JSON.stringify([...c]));
    } catch {
      // storage unavailable: folding still works for this page
    }
  };
  return (
    <section
      className={`panel ${className ?? ''}${open ? '' : ' folded'}`}
      aria-labelledby={`${id}-title`}
      data-testid={`panel-${id}`}
      data-open={open}
    >
      <h2 id={`${id}-title`}>
        <button
          type="button"
          className="panel-toggle"
          aria-expanded={open}
          aria-controls={`${id}-body`}
          onClick={toggle}
          data-testid={`panel-toggle-${id}`}
        >
          <span aria-hidden className="panel-chevron">
            {open ? '▾' : '▸'}
          </span>{' '}
          {title}
        </button>
      </h2>
      <div id={`${id}-body`} className="panel-body" hidden={!open}>
        <PanelBoundary id={id} title={title}>
          {children}
        </PanelBoundary>
      </div>
    </section>
  );
}

export function App() {
  const startGpu = useLab((s) => s.startGpu);
  useEffect(() => {
    void startGpu();
  }, [startGpu]);

  return (
    <div className="app">
      <header className="topbar">
        <h1>Code RL Lab</h1>
        <GpuStatusBadge />
      </header>
      <main className="layout">
        <div className="col setup">
          <Panel id="gpu" title="GPU">
            <GpuPanel />
          </Panel>
          <Panel id="experiment" title="Experiment setup">
            <ExperimentPanel />
          </Panel>
          <Panel id="checkpoints" title="Checkpoints">
            <CheckpointPanel />
          </Panel>
          <Panel id="eval" title="Evaluate">
            <EvalPanel />
          </Panel>
          <Panel id="bench" title="Benchmarks">
            <BenchPanel />
          </Panel>
        </div>
        <div className="col middle">
          <Panel id="curves" title="Training curves">
            <TrainingCurves />
          </Panel>
          <Panel id="rollouts" title="Rollouts">
            <RolloutBrowser />
          </Panel>
        </div>
        <div className="col code">
          <Panel id="code" title="Code" className="grow">
            <CodePanel />
          </Panel>
          <Panel id="reward" title="Reward">
            <ScratchScorer />
          </Panel>
        </div>
      </main>
    </div>
  );
}
