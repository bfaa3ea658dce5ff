/**
 * Checkpoints stored in this browser (OPFS, or IndexedDB where OPFS is missing): the list with
 * what each one holds, and the actions on it. One action runs at a time (`busy`); a failure sets
 * `error` and leaves the list as it was, and a rejected import stores nothing.
 */
import type { StateCreator } from 'zustand';
import {
  newModelCheckpoint,
  sanitiseName,
  summarise,
  uniqueName,
  validateImport,
  type CheckpointInfo,
  type PresetName,
} from '../lab/saved-models';
import {
  browserCheckpointStore,
  deleteCheckpointBrowser,
  listCheckpointsBrowser,
  loadCheckpointBrowser,
  saveCheckpointBrowser,
  type CheckpointStore,
  type StoredCheckpoint,
} from '../container/browser';
import type { LabState } from './index';
import { errorText } from '../util/errors';

export interface CheckpointSummary extends StoredCheckpoint {
  /** what the header says; null when the checkpoint could not be read */
  info: CheckpointInfo | null;
  /** why it could not be read (info is null then) */
  problem: string | null;
}

export interface CheckpointSlice {
  checkpoints: {
    /** the store in use; null until opened, or when the browser has neither */
    store: CheckpointStore['kind'] | null;
    /** sorted by name, as last read; kept when something fails */
    items: CheckpointSummary[];
    /** the list has been read at least once */
    loaded: boolean;
    /** what is running ("Importing …"), or null; actions are refused while set */
    busy: string | null;
    /** the last failure, until the next action or dismissal */
    error: string | null;
    /** the last success, e.g. which name an import was saved under */
    notice: string | null;
  };
  refreshCheckpoints(): Promise<void>;
  /** a fresh model from a preset and seed; resolves with its stored name, or null on failure */
  createCheckpoint(preset: PresetName, seed: number): Promise<string | null>;
  /** validates `file` with loadModel, then stores it under its (sanitised, de-clashed) name */
  importCheckpoint(file: File): Promise<string | null>;
  /** the stored bytes, for a download; null on failure */
  exportCheckpoint(name: string): Promise<Uint8Array | null>;
  deleteCheckpoint(name: string): Promise<boolean>;
  dismissCheckpointError(): void;
}

/** Summaries by name, valid while size and save time are unchanged: each checkpoint is decoded once. */
const summaries = new Map<string, CheckpointSummary>();

async function summary(s: StoredCheckpoint): Promise<CheckpointSummary> {
  const cached = summaries.get(s.name);
  if (cached && cached.byteLength === s.byteLength && cached.savedAt === s.savedAt) return cached;
  let out: CheckpointSummary;
  try {
    out = { ...s, info: summarise(await loadCheckpointBrowser(s.name)), problem: null };
  } catch (e) {
    out = { ...s, info: null, problem: message(e) };
  }
  summaries.set(s.name, out);
  return out;
}

const message = (e: unknown): string => errorText(e);

/** Lets the browser paint the busy state before synchronous work (model init) holds the thread. */
const paint = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

export const createCheckpointSlice: StateCreator<LabState, [], [], CheckpointSlice> = (set, get) => {
  const patch = (p: Partial<CheckpointSlice['checkpoints']>): void => set((s) => ({ checkpoints: { ...s.checkpoints, ...p } }));

  /** Reads the store and the list; throws on failure (the caller keeps the old list). */
  async function readList(): Promise<void> {
    const store = await browserCheckpointStore();
    if (get().checkpoints.store !== store.kind) patch({ store: store.kind });
    const listed = await listCheckpointsBrowser();
    const items: CheckpointSummary[] = [];
    for (const s of listed) items.push(await summary(s));
    for (const name of summaries.keys()) if (!listed.some((s) => s.name === name)) summaries.delete(name);
    patch({ items, loaded: true });
  }

  /** Runs one action: refused while another runs; any failure becomes `error`, prefixed by `what`. */
  async function run<T>(label: string, what: string, action: () => Promise<T>): Promise<T | null> {
    if (get().checkpoints.busy) return null;
    patch({ busy: label, error: null, notice: null });
    try {
      return await action();
    } catch (e) {
      patch({ error: `${what}: ${message(e)}` });
      return null;
    } finally {
      patch({ busy: null });
    }
  }

  async function takenNames(): Promise<string[]> {
    return (await listCheckpointsBrowser()).map((s) => s.name);
  }

  return {
    checkpoints: { store: null, items: [], loaded: false, busy: null, error: null, notice: null },

    async refreshCheckpoints() {
      await run('Reading the stored checkpoints', 'Could not read the stored checkpoints', readList);
    },

    createCheckpoint(preset, seed) {
      return run(`Creating a new ${preset} model`, 'Could not create the model', async () => {
        await paint();
        const made = newModelCheckpoint(preset, seed);
        const name = uniqueName(made.name, await takenNames());
        await saveCheckpointBrowser(name, made.bytes);
        await readList();
        patch({ notice: `Created "${name}" (${preset}, seed ${seed}).` });
        return name;
      });
    },

    importCheckpoint(file) {
      return run(`Importing "${file.name}"`, `Rejected "${file.name}"`, async () => {
        const bytes = new Uint8Array(await file.arrayBuffer());
        validateImport(bytes); // throws before anything is stored
        const name = uniqueName(sanitiseName(file.name), await takenNames());
        await saveCheckpointBrowser(name, bytes);
        await readList();
        patch({ notice: name === file.name ? `Imported "${name}".` : `Imported "${file.name}" as "${name}".` });
        return name;
      });
    },

    exportCheckpoint(name) {
      return run(`Exporting "${name}"`, `Could not export "${name}"`, () => loadCheckpointBrowser(name));
    },

    async deleteCheckpoint(name) {
      const ok = await run(`Deleting "${name}"`, `Could not delete "${name}"`, async () => {
        const existed = await deleteCheckpointBrowser(name);
        await readList();
        if (!existed) throw new Error('it was no longer stored');
        patch({ notice: `Deleted "${name}".` });
        return true;
      });
      return ok === true;
    },

    dismissCheckpointError() {
      patch({ error: null });
    },
  };
};
