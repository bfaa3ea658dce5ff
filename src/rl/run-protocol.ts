/**
 * The messages between the page's run slice (store/runSlice.ts) and the run worker
 * (rl/run-worker.ts), which runs the pipeline off the page's main thread. Types only: the
 * slice imports this without loading the pipeline.
 *
 * One run per worker: the page posts `start` once, maybe `stop`, and terminates the worker after
 * the first of `done`, `stopped` or `error`, the worker's last message.
 */
import type { RlConfig } from './config';
import type { PipelineEvent, Summary } from './pipeline';
import type { Metrics } from './ppo-loop';

export type RunBackend = 'webgpu' | 'cpu';
export type RunStorageKind = 'opfs' | 'indexeddb';

/** page -> worker */
export type ToRunWorker =
  | {
      type: 'start';
      cfg: RlConfig;
      seed: number;
      /** the run directory's name */
      run: string;
      /** what the page asks for; the worker falls back to cpu when it has no usable WebGPU */
      backend: RunBackend;
      /** where the page keeps runs (it reads them back from there); the worker writes there too */
      storage: RunStorageKind;
    }
  /** stop after the step in flight, saving what is finished (the run resumes from there) */
  | { type: 'stop' };

/** worker -> page */
export type FromRunWorker =
  | { type: 'event'; event: PipelineEvent }
  | { type: 'metrics'; stage: string; metrics: Metrics }
  /** the backend the run uses, sent once before the pipeline starts; `note` says why it differs from the one asked for */
  | { type: 'backend'; backend: RunBackend; note: string | null }
  | { type: 'done'; summary: Summary }
  /** stopped on request; `message` is the StoppedError's */
  | { type: 'stopped'; message: string }
  /** the run failed, or something in the worker threw or rejected unhandled; `message` names what */
  | { type: 'error'; message: string };
