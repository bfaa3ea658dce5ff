/**
 * GPU state for the app: the adapter description, the self-check, and device loss. The live
 * GpuRuntime is not serialisable UI state, so it stays in this module, outside the store.
 */
import type { StateCreator } from 'zustand';
import { GpuError } from '../gpu/errors';
import { gpuInfo, type GpuInfo, type SelfCheckResult } from '../gpu/info';
import { browserProvider } from '../gpu/provider';
import { GpuRuntime, type DeviceLossReport } from '../gpu/runtime';
import { runSelfCheck } from '../kernels/selfcheck';
import type { LabState } from './index';
import { errorText } from '../util/errors';

export type GpuStatus =
  /** not started */
  | 'idle'
  /** requesting adapter and device */
  | 'starting'
  /** running the self-check */
  | 'checking'
  /** device ready, self-check passed */
  | 'ready'
  /** device ready, self-check failed */
  | 'check-failed'
  /** no WebGPU or no adapter */
  | 'unavailable'
  /** device lost; recoverGpu() re-creates it */
  | 'lost';

export interface GpuSlice {
  gpu: {
    status: GpuStatus;
    info: GpuInfo | null;
    selfCheck: SelfCheckResult | null;
    /** what went wrong and what to do, for 'unavailable' and failures to start */
    problem: string | null;
    lost: DeviceLossReport | null;
    /** how many devices this session has created (1 + recoveries) */
    devices: number;
  };
  startGpu(): Promise<void>;
  runGpuSelfCheck(): Promise<void>;
  recoverGpu(): Promise<void>;
  simulateGpuLoss(): void;
}

let runtime: GpuRuntime | null = null;

/** The app's runtime, for later capabilities (training, benchmarks); null until the device is ready. */
export function currentRuntime(): GpuRuntime | null {
  return runtime && runtime.state === 'ready' ? runtime : null;
}

export const createGpuSlice: StateCreator<LabState, [], [], GpuSlice> = (set, get) => {
  const patch = (p: Partial<GpuSlice['gpu']>): void => set((s) => ({ gpu: { ...s.gpu, ...p } }));

  return {
    gpu: { status: 'idle', info: null, selfCheck: null, problem: null, lost: null, devices: 0 },

    async startGpu() {
      if (get().gpu.status !== 'idle') return;
      patch({ status: 'starting', problem: null });
      try {
        runtime = await GpuRuntime.create(browserProvider(), {
          onLost: (report) => patch({ status: 'lost', lost: report }),
          onUncapturedError: (e) => console.warn(`WebGPU: ${e.message}`),
        });
        patch({ devices: 1 });
        await get().runGpuSelfCheck();
      } catch (e) {
        const unavailable = e instanceof GpuError && e.kind === 'unavailable';
        patch({ status: 'unavailable', problem: unavailable ? e.message : `Could not start WebGPU: ${errorText(e)}` });
      }
    },

    async runGpuSelfCheck() {
      const rt = currentRuntime();
      if (!rt) return;
      patch({ status: 'checking' });
      const check = await runSelfCheck(rt);
      if (rt.state !== 'ready') return; // lost during the check: the loss handler has set the state
      patch({ status: check.ok ? 'ready' : 'check-failed', selfCheck: check, info: gpuInfo(rt, check) });
    },

    async recoverGpu() {
      if (!runtime || get().gpu.status !== 'lost') return;
      patch({ status: 'starting' });
      try {
        await runtime.recover();
        patch({ lost: null, devices: get().gpu.devices + 1 });
        await get().runGpuSelfCheck();
      } catch (e) {
        patch({ status: 'lost', problem: `Re-creating the device failed: ${errorText(e)}. Reload the page.` });
      }
    },

    simulateGpuLoss() {
      currentRuntime()?.simulateLoss();
    },
  };
};
