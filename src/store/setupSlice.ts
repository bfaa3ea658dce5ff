/**
 * The Experiment panel's setup as the user types it (preset, seed, run name, overrides, the suite
 * file's text): kept in the store rather than in the panel, so a panel that fails and is mounted
 * again (its error boundary's Retry) finds everything the user had entered.
 */
import type { StateCreator } from 'zustand';
import type { LabState } from './index';
import type { BackendChoice } from './worker-client';

export interface SetupDraft {
  preset: string;
  /** the seed field's text (validated by the panel) */
  seed: string;
  /** the run name; null follows preset and seed (`<preset>-seed<seed>`) */
  name: string | null;
  /** the JSON overrides' text */
  overrides: string;
  /** the text of the suite file the user opened, when the tasks come from one */
  suiteText: string | null;
  /** bumped when the overrides are edited by hand: the settings form drops its drafts */
  formKey: number;
  /** where the run's model runs (worker-client.ts autoBackend: cpu on a software GPU) */
  backend: BackendChoice;
}

export interface SetupSlice {
  setup: SetupDraft;
  patchSetup(p: Partial<SetupDraft>): void;
  /** sets the overrides from outside the settings form (the JSON text, a stored run's settings) */
  setOverridesByHand(text: string): void;
}

/** A newcomer's first run: the `quick` preset (every stage in a few minutes), on the backend that is fastest here. */
export const INITIAL_SETUP: SetupDraft = {
  preset: 'quick',
  seed: '1',
  name: null,
  overrides: '{}',
  suiteText: null,
  formKey: 0,
  backend: 'auto',
};

export const createSetupSlice: StateCreator<LabState, [], [], SetupSlice> = (set) => ({
  setup: INITIAL_SETUP,
  patchSetup: (p) => set((s) => ({ setup: { ...s.setup, ...p } })),
  setOverridesByHand: (text) => set((s) => ({ setup: { ...s.setup, overrides: text, formKey: s.setup.formKey + 1 } })),
});
