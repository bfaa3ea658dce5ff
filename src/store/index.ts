/** The lab's one store, built from slices; components read it through narrow selectors. */
import { create } from 'zustand';
import { createGpuSlice, type GpuSlice } from './gpuSlice';
import { createUiSlice, type UiSlice } from './uiSlice';

export type LabState = GpuSlice & UiSlice;

export const useLab = create<LabState>()((...a) => ({
  ...createGpuSlice(...a),
  ...createUiSlice(...a),
}));
