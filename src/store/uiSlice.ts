import type { StateCreator } from 'zustand';
import type { LabState } from './index';

/** The Code panel's tabs: the selected rollout, two rollouts compared, the self-check kernels' WGSL. */
export type CodeTab = 'rollout' | 'compare' | 'kernels';

export interface UiSlice {
  ui: {
    codeTab: CodeTab;
    /** which self-check kernel the Kernels tab shows */
    kernel: string;
  };
  setCodeTab(tab: CodeTab): void;
  showKernel(name: string): void;
}

export const createUiSlice: StateCreator<LabState, [], [], UiSlice> = (set) => ({
  ui: { codeTab: 'rollout', kernel: 'saxpy' },
  setCodeTab: (codeTab) => set((s) => ({ ui: { ...s.ui, codeTab } })),
  showKernel: (kernel) => set((s) => ({ ui: { ...s.ui, codeTab: 'kernels', kernel } })),
});
