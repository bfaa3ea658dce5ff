/**
 * The page's run estimates: rl/estimate.ts's cost model for a config on this page's backend,
 * scaled by what the last finished run on the same backend and adapter measured (kept in
 * localStorage), and the counts of the tasks the run will have.
 */
import type { RlConfig } from '../rl/config';
import {
  elapsedOverEstimate,
  estimateKind,
  estimateRun,
  taskCounts,
  type EstimateBackend,
  type RunEstimate,
  type WorkPhase,
} from '../rl/estimate';
import { phasedPoolSize } from '../sandbox/pool.browser';
import type { RunBackend } from '../rl/run-protocol';
import type { LabState } from './index';

const KEY = 'coderl.estimateScale';

/** The estimate's backend kind for a run backend on this page's adapter, and the key its calibration is kept under. */
export function estimateBackend(backend: RunBackend, gpu: LabState['gpu']): { kind: EstimateBackend; key: string } {
  if (backend === 'cpu') return { kind: 'cpu', key: 'cpu' };
  const a = gpu.info?.adapter;
  const kind = estimateKind(backend, a?.software === true);
  return { kind, key: `${kind}:${a ? `${a.vendor} ${a.architecture} ${a.description}`.trim() : 'unknown'}` };
}

function readScales(): Record<string, number> {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(KEY) ?? '{}');
    return typeof v === 'object' && v !== null ? (v as Record<string, number>) : {};
  } catch {
    return {};
  }
}

export interface PageEstimate extends RunEstimate {
  /** true when no run on this backend has measured it yet and there is no built-in figure (a hardware GPU) */
  uncalibrated: boolean;
  /** the calibration it was scaled by is kept under this key (estimateBackend) */
  key: string;
}

/** The estimate for `cfg` on `backend` here; null when the config cannot be counted. */
export function estimateFor(cfg: RlConfig, seed: number, backend: RunBackend, gpu: LabState['gpu']): PageEstimate | null {
  try {
    const { kind, key } = estimateBackend(backend, gpu);
    const scale = readScales()[key];
    const est = estimateRun(cfg, taskCounts(cfg, seed), kind, phasedPoolSize(), scale ?? 1); // the run worker's pool
    return { ...est, uncalibrated: kind === 'webgpu' && scale === undefined, key };
  } catch {
    return null;
  }
}

/** After a finished run: how its phases' times compared with its estimate, kept for the next estimate on the same backend. */
export function saveCalibration(run: {
  estimate: PageEstimate | null;
  took: Partial<Record<WorkPhase, number>>;
  backend: RunBackend | null;
}): void {
  const est = run.estimate;
  if (!est || !run.backend) return;
  const { actual, expected } = elapsedOverEstimate(est, run.took);
  if (expected < 5) return;
  try {
    const scales = readScales();
    // the estimate already carried the previous scale: the new one is relative to it
    scales[est.key] = Math.min(100, Math.max(0.01, (scales[est.key] ?? 1) * (actual / expected)));
    localStorage.setItem(KEY, JSON.stringify(scales));
  } catch {
    // storage unavailable: the next estimate uses the built-in figures
  }
}
