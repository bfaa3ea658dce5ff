/**
 * Hugging Face models kept in this browser (hf/browser.ts HfModelStore: OPFS, or IndexedDB where
 * OPFS is missing): the list with what each holds (read from the manifests, no weights loaded),
 * import, delete, and a prompt box's samples. Everything heavy runs in the model worker
 * (rl/model-worker.ts, started through store/worker-client.ts like the eval worker):
 * - an import is one worker: the loader checks the folder (a refusal is its message, and nothing
 *   is written), then the model files are streamed into the store;
 * - sampling opens a worker holding the model on one backend (a session) and keeps it for the
 *   next samples; choosing another model or backend, or deleting the model, closes it.
 * The live workers stay in this module, outside the store.
 */
import type { StateCreator } from 'zustand';
import { hfModelStore, type StoredHfModel } from '../hf/browser';
import { formatBytes } from '../lab/saved-models';
import { MODEL_WORKER, type ModelSource, type SampleRequest, type SampleResult, type ToModelWorker } from '../rl/model-protocol';
import type { ReferenceRef } from '../rl/reference';
import type { RunBackend } from '../rl/run-protocol';
import type { StorageKind } from '../storage/browser';
import { errorText } from '../util/errors';
import type { LabState } from './index';
import { askedBackend, startWorker, type BackendChoice, type WorkerHandle } from './worker-client';

/** A complete stored model (its manifest read). */
export type StoredModel = Extract<StoredHfModel, { complete: true }>;

export interface ImportState {
  /** the folder's name, or what the loose files are called */
  name: string;
  message: string;
  /** bytes copied of all (0 of 1 while checking) */
  done: number;
  total: number;
}

export interface SessionState {
  id: string;
  /** the backend asked for, then the one the worker uses */
  backend: RunBackend;
  status: 'opening' | 'ready' | 'error';
  /** why the backend differs from the choice (a software GPU, WebGPU failing in the worker) */
  note: string | null;
  contextLength: number | null;
  error: string | null;
}

export interface ModelsSlice {
  models: {
    /** where the models are kept; null until the store is opened */
    store: StorageKind | null;
    /** every stored model, complete or not, sorted by id, as last read */
    items: StoredHfModel[];
    /** the list has been read at least once */
    loaded: boolean;
    importing: ImportState | null;
    /** finished import attempts (the e2e tests wait for the next one) */
    attempts: number;
    /** the last import's or delete's failure, word for word */
    error: string | null;
    /** the last success */
    notice: string | null;
    /** the model the prompt box samples from */
    selected: string | null;
    session: SessionState | null;
    sampling: boolean;
    sample: SampleResult | null;
    sampleError: string | null;
  };
  refreshModels(): Promise<void>;
  /** checks and copies a folder in the model worker; a refused folder stores nothing */
  importModel(source: ModelSource): Promise<void>;
  /** deletes a stored model (or an unfinished copy); its open session is closed first */
  deleteModel(id: string): Promise<void>;
  selectModel(id: string | null): void;
  /** samples from the selected model, opening it on `backend` first (or again, when that changed) */
  sampleModel(request: Omit<SampleRequest, 'id'>, backend: BackendChoice): Promise<void>;
  dismissModelError(): void;
}

/** The complete models, for pickers (the Evaluate panel, the KL reference). */
export const completeModels = (items: readonly StoredHfModel[]): StoredModel[] => items.filter((m): m is StoredModel => m.complete);

/** The complete models with the record config.rl.reference keeps of each (rl/reference.ts importedReference matches it). */
export const hfReferenceModels = (items: readonly StoredHfModel[]): (StoredModel & { ref: ReferenceRef })[] =>
  completeModels(items).map((m) => ({ ...m, ref: m.manifest.summary.ref }));

let session: { id: string; backend: RunBackend; worker: WorkerHandle<ToModelWorker>; ready: Promise<boolean> } | null = null;
let sampleSeq = 0;
let listSeq = 0;
/** answers to samples in flight, by request id */
const waiting = new Map<number, (m: { result: SampleResult } | { error: string }) => void>();

const newWorker = (name: string) => () =>
  new Worker(new URL('../rl/model-worker.ts', import.meta.url), { type: 'module', name: `coderl model ${name}` });

const modelStore = hfModelStore;

export const createModelsSlice: StateCreator<LabState, [], [], ModelsSlice> = (set, get) => {
  const patch = (p: Partial<ModelsSlice['models']>): void => set((s) => ({ models: { ...s.models, ...p } }));
  const patchSession = (p: Partial<SessionState>): void => {
    const s = get().models.session;
    if (s) patch({ session: { ...s, ...p } });
  };

  function closeSession(): void {
    if (!session) return;
    session.worker.post({ type: 'close' });
    session = null;
    for (const answer of waiting.values()) answer({ error: 'the model was closed' });
    waiting.clear();
    patch({ session: null });
  }

  /** Opens `id` on `backend` in a model worker; resolves false when it failed to load (its message is in the session). */
  function openSession(id: string, backend: RunBackend, note: string | null, storage: StorageKind): Promise<boolean> {
    closeSession();
    let opened!: (ok: boolean) => void;
    const ready = new Promise<boolean>((r) => (opened = r));
    patch({ session: { id, backend, status: 'opening', note, contextLength: null, error: null } });
    const worker = startWorker(newWorker(id), MODEL_WORKER, {
      start: { type: 'start', job: { kind: 'open', id, backend }, storage },
      lost: 'the model worker stopped without a word (it crashed, or the browser ended it, e.g. out of memory)',
      onMessage: (m) => {
        if (session?.worker !== worker) return;
        if (m.type === 'opened') {
          patchSession({ status: 'ready', backend: m.backend, note: m.note ?? note, contextLength: m.contextLength });
          opened(true);
        } else if (m.type === 'sampled') waiting.get(m.result.id)?.({ result: m.result });
        else if (m.type === 'sample-error') waiting.get(m.id)?.({ error: m.message });
      },
    });
    const mine = { id, backend, worker, ready };
    session = mine;
    void worker.done.then((last) => {
      opened(false);
      if (session !== mine) return;
      session = null;
      const error = last.type === 'error' ? last.message : null;
      for (const answer of waiting.values()) answer({ error: error ?? 'the model was closed' });
      waiting.clear();
      if (error) patchSession({ status: 'error', error });
      else patch({ session: null });
    });
    return ready;
  }

  return {
    models: {
      store: null,
      items: [],
      loaded: false,
      importing: null,
      attempts: 0,
      error: null,
      notice: null,
      selected: null,
      session: null,
      sampling: false,
      sample: null,
      sampleError: null,
    },

    async refreshModels() {
      const seq = ++listSeq;
      try {
        const store = await modelStore();
        const items = await store.list();
        if (seq !== listSeq) return;
        const selected = get().models.selected;
        const complete = completeModels(items);
        patch({
          store: store.kind,
          items,
          loaded: true,
          selected: selected && complete.some((m) => m.id === selected) ? selected : (complete[0]?.id ?? null),
        });
      } catch (e) {
        if (seq === listSeq) patch({ loaded: true, error: `Could not read the stored models: ${errorText(e)}` });
      }
    },

    async importModel(source) {
      if (get().models.importing) return;
      const name = source.kind === 'files' ? (source.name ?? source.label) : source.handle.name;
      patch({ importing: { name, message: `Starting the model worker for ${name}`, done: 0, total: 1 }, error: null, notice: null });
      try {
        const store = get().models.store ?? (await modelStore()).kind;
        const worker = startWorker(newWorker(name), MODEL_WORKER, {
          start: { type: 'start', job: { kind: 'import', source }, storage: store },
          lost: `the model worker stopped while importing ${name} (it crashed, or the browser ended it, e.g. out of memory); nothing complete was kept`,
          onMessage: (m) => {
            if (m.type === 'progress') patch({ importing: { name, message: m.message, done: m.done, total: m.total } });
          },
        });
        const last = await worker.done;
        if (last.type === 'imported') {
          await get().refreshModels();
          patch({
            selected: last.id,
            notice: `Imported ${last.manifest.name}${last.id !== last.manifest.name ? ` as ${last.id}` : ''}: ${last.manifest.files.length} files, ${formatBytes(last.bytes)}.`,
          });
        } else if (last.type === 'error') patch({ error: last.message });
      } catch (e) {
        patch({ error: errorText(e) });
      } finally {
        patch({ importing: null, attempts: get().models.attempts + 1 });
        await get().refreshModels(); // a copy that failed half-way is listed as unfinished
      }
    },

    async deleteModel(id) {
      if (session?.id === id) closeSession();
      try {
        const removed = await (await modelStore()).remove(id);
        patch({ notice: removed ? `Deleted ${id}.` : `${id} was already gone.`, error: null });
      } catch (e) {
        patch({ error: `Could not delete ${id}: ${errorText(e)}` });
      }
      if (get().models.selected === id) patch({ selected: null, sample: null, sampleError: null });
      await get().refreshModels();
    },

    selectModel(id) {
      if (id !== get().models.selected) patch({ selected: id, sample: null, sampleError: null });
    },

    async sampleModel(request, choice) {
      const id = get().models.selected;
      if (!id || get().models.sampling) return;
      const my = ++sampleSeq;
      patch({ sampling: true, sampleError: null });
      try {
        const { backend, note } = await askedBackend(get, 'sampling', choice);
        if (!session || session.id !== id || session.backend !== backend || get().models.session?.status === 'error') {
          const storage = get().models.store ?? (await modelStore()).kind;
          if (!(await openSession(id, backend, note, storage)))
            throw new Error(get().models.session?.error ?? 'the model could not be opened');
        } else if (!(await session.ready)) throw new Error(get().models.session?.error ?? 'the model could not be opened');
        const live = session;
        if (!live) throw new Error('the model was closed');
        const answer = await new Promise<{ result: SampleResult } | { error: string }>((resolve) => {
          waiting.set(my, resolve);
          live.worker.post({ type: 'sample', request: { ...request, id: my } });
        });
        waiting.delete(my);
        if ('error' in answer) throw new Error(answer.error);
        patch({ sample: answer.result });
      } catch (e) {
        patch({ sampleError: errorText(e), sample: null });
      } finally {
        patch({ sampling: false });
      }
    },

    dismissModelError() {
      patch({ error: null });
    },
  };
};
