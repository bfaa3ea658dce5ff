/** The lab's one store, built from slices; components read it through narrow selectors. */
import { create } from 'zustand';
import { createCheckpointSlice, type CheckpointSlice } from './checkpointSlice';
import { createEvalSlice, type EvalSlice } from './evalSlice';
import { createGpuSlice, type GpuSlice } from './gpuSlice';
import { createModelsSlice, type ModelsSlice } from './modelsSlice';
import { createRolloutSlice, type RolloutSlice } from './rolloutSlice';
import { createRunSlice, type RunSlice } from './runSlice';
import { createScorerSlice, type ScorerSlice } from './scorerSlice';
import { createSetupSlice, type SetupSlice } from './setupSlice';
import { createUiSlice, type UiSlice } from './uiSlice';

export type LabState = GpuSlice & UiSlice & CheckpointSlice & ScorerSlice & RunSlice & SetupSlice & RolloutSlice & EvalSlice & ModelsSlice;

export const useLab = create<LabState>()((...a) => ({
  ...createGpuSlice(...a),
  ...createUiSlice(...a),
  ...createCheckpointSlice(...a),
  ...createScorerSlice(...a),
  ...createRunSlice(...a),
  ...createSetupSlice(...a),
  ...createRolloutSlice(...a),
  ...createEvalSlice(...a),
  ...createModelsSlice(...a),
}));
