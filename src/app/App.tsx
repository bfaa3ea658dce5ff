import { useEffect, type ReactNode } from 'react';
import { useLab } from '../store';
import { BenchPanel } from './panels/BenchPanel';
import { CheckpointPanel } from './panels/CheckpointPanel';
import { CodePanel } from './panels/CodePanel';
import { EvalPanel } from './panels/EvalPanel';
import { TrainingCurves } from './panels/TrainingCurves';
import { ExperimentPanel } from './panels/ExperimentPanel';
import { GpuPanel, GpuStatusBadge } from './panels/GpuPanel';
import { RolloutBrowser } from './panels/RolloutBrowser';
import { ScratchScorer } from './panels/ScratchScorer';

function Panel({ id, title, children, className }: { id: string; title: string; children: ReactNode; className?: string }) {
  return (
    <section className={`panel ${className ?? ''}`} aria-labelledby={`${id}-title`} data-testid={`panel-${id}`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
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
