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
import { ModelsPanel } from './models/ModelsPanel';
import { RolloutBrowser } from './panels/RolloutBrowser';
import { ScratchScorer } from './panels/ScratchScorer';

const FOLDED_KEY = 'coderl.panelsOpen';

/** Panels the user opened or folded: id -> open (a panel not in it shows its default). */
function readOpen(): Record<string, boolean> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(FOLDED_KEY) ?? '{}');
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).filter((e): e is [string, boolean] => typeof e[1] === 'boolean'))
      : {};
  } catch {
    return {};
  }
}

/**
 * A titled panel whose heading button folds it away (kept mounted, so a run or an editor in it
 * carries on); `folded` panels start folded (the GPU details, the benchmarks), and what the user
 * opens or folds is remembered in localStorage. Its body renders inside an error boundary: a
 * panel that fails shows why, with a Retry, and the rest of the page carries on.
 */
function Panel({
  id,
  title,
  children,
  className,
  folded = false,
  attention = false,
}: {
  id: string;
  title: string;
  children: ReactNode;
  className?: string;
  folded?: boolean;
  /** opens the panel when it becomes true (a folded GPU panel with a problem to show) */
  attention?: boolean;
}) {
  const [open, setOpen] = useState(() => readOpen()[id] ?? !folded);
  useEffect(() => {
    if (attention) setOpen(true);
  }, [attention]);
  const toggle = (): void => {
    const next = !open;
    setOpen(next);
    try {
      localStorage.setItem(FOLDED_KEY, JSON.stringify({ ...readOpen(), [id]: next }));
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
  const gpuTrouble = useLab((s) => ['unavailable', 'check-failed', 'lost'].includes(s.gpu.status));
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
          <Panel id="experiment" title="Experiment">
            <ExperimentPanel />
          </Panel>
          <Panel id="checkpoints" title="Checkpoints">
            <CheckpointPanel />
          </Panel>
          <Panel id="models" title="Hugging Face models">
            <ModelsPanel />
          </Panel>
          <Panel id="eval" title="Evaluate">
            <EvalPanel />
          </Panel>
          <Panel id="gpu" title="GPU details and self-check" folded attention={gpuTrouble}>
            <GpuPanel />
          </Panel>
          <Panel id="bench" title="Benchmarks" folded>
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
