/**
 * The messages between the page's models slice (store/modelsSlice.ts) and the model worker
 * (rl/model-worker.ts), which does the heavy work on Hugging Face models off the page's main
 * thread. Types and MODEL_WORKER only: the slice imports this without loading any model code.
 *
 * One job per worker (worker-protocol.ts), either
 * - `import`: check a picked, dropped or chosen folder with the loader (hf/load.ts; its message on
 *   a refusal), copy its model files into this browser's storage (hf/browser.ts HfModelStore) and
 *   end with `imported`; or
 * - `open`: load a stored model on a backend and keep it: every `sample` the page posts is
 *   answered with `sampled` (or `sample-error`, after which the model stays open) until the page
 *   posts `close`; the last message is `closed`.
 */
import type { HfManifest } from '../hf/browser';
import type { PromptFormatKind, PromptFormatSetting } from './prompt-format';
import type { RunBackend } from './run-protocol';
import type { StorageKind } from '../storage/browser';
import type { WorkerKind } from './worker-protocol';

/** A folder to import: picked or dropped files (named after their folder, or loose: `label` names them), or a directory handle. */
export type ModelSource =
  { kind: 'files'; name: string | null; label: string; files: File[] } | { kind: 'directory'; handle: FileSystemDirectoryHandle };

export type ModelJob = { kind: 'import'; source: ModelSource } | { kind: 'open'; id: string; backend: RunBackend };

/** One prompt box sample. */
export interface SampleRequest {
  /** the page's number for it, echoed in the answer */
  id: number;
  prompt: string;
  format: PromptFormatSetting;
  maxNewTokens: number;
  /** 0 is greedy */
  temperature: number;
  seed: number;
}

export interface SampleResult {
  id: number;
  /** the completion, the end-of-sequence token left out */
  text: string;
  /** tokens generated (an end-of-sequence id included) */
  tokens: number;
  promptTokens: number;
  /** why it stopped: 'eos', 'stop' or 'length' */
  finish: string;
  format: PromptFormatKind;
  tokensPerSecond: number;
  ms: number;
  backend: RunBackend;
}

/** page -> worker */
export type ToModelWorker =
  | {
      type: 'start';
      job: ModelJob;
      /** where the page keeps models (it lists them from there); the worker uses the same storage */
      storage: StorageKind;
      lifeLock?: string;
    }
  | { type: 'sample'; request: SampleRequest }
  /** ends an `open` job: the model is released and the worker closes */
  | { type: 'close' };

/** worker -> page */
export type FromModelWorker =
  /** how an import or a load goes: `done` of `total` (bytes when copying, else steps) */
  | { type: 'progress'; message: string; done: number; total: number }
  /** the import's end: the stored copy, with its manifest */
  | { type: 'imported'; id: string; manifest: HfManifest; bytes: number }
  /** the model of an `open` job is loaded; `note` says why the backend is not the one asked for */
  | { type: 'opened'; backend: RunBackend; note: string | null; contextLength: number; loadMs: number }
  | { type: 'sampled'; result: SampleResult }
  | { type: 'sample-error'; id: number; message: string }
  | { type: 'closed' }
  | { type: 'error'; message: string };

/** The model worker, as its host (model-worker.ts) and the models slice know it. */
export const MODEL_WORKER: WorkerKind<ToModelWorker, FromModelWorker, 'imported' | 'closed'> = {
  name: 'model worker',
  job: 'model job',
  lock: 'model',
  last: ['imported', 'closed'],
};
