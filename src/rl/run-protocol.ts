/**
 * The messages between the page's run slice (store/runSlice.ts) and the run worker
 * (rl/run-worker.ts), which runs the pipeline off the page's main thread. Types and RUN_WORKER
 * only: the slice imports this without loading the pipeline.
 *
 * One run per worker: the page posts `start` once, maybe `pause`/`resume` and `stop`; the first of
 * `done`, `stopped` or `error` is the worker's last message, after which it closes itself
 * (worker-protocol.ts).
 */
import type { RlConfig } from './config';
import type { PipelineEvent, Summary } from './pipeline';
import type { Metrics } from './ppo-loop';
import type { ReferenceFiles } from './reference';
import type { WorkerKind } from './worker-protocol';

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
      /** the text of the suite file cfg.tasks.suite names, when the page has it (a new run) */
      suiteText?: string;
      /**
       * the ONNX model cfg.rl.reference names and its tokenizer, when the page has it imported (a
       * new run); the worker keeps them in the run directory, which it reads on every later start
       */
      reference?: ReferenceFiles;
      /**
       * the stored Hugging Face model (hf/browser.ts HfModelStore id) cfg.rl.reference names, when
       * the page has it (a new run); the worker copies it into the run directory (reference-hf.ts)
       */
      hfReference?: { id: string };
      /**
       * the stored Hugging Face model cfg.pretrained names (the model the run trains), when the page
       * has it (a new run); the worker copies it into the run directory's pretrained/hf (reference-hf.ts)
       */
      hfPolicy?: { id: string };
      /** a Web Lock the worker holds while it lives; the page gets it when the worker has died */
      lifeLock?: string;
    }
  /** stop after the step in flight, saving what is finished (the run resumes from there) */
  | { type: 'stop' }
  /** wait after the step in flight, keeping everything loaded, until `resume` (or `stop`) */
  | { type: 'pause' }
  | { type: 'resume' };

/** worker -> page */
export type FromRunWorker =
  | { type: 'event'; event: PipelineEvent }
  | { type: 'metrics'; stage: string; metrics: Metrics }
  /** the backend the run uses, sent once before the pipeline starts; `note` says why it differs from the one asked for */
  | { type: 'backend'; backend: RunBackend; note: string | null }
  /** the run now waits between steps (after `pause`) */
  | { type: 'paused' }
  /** a paused run carries on (after `resume`) */
  | { type: 'resumed' }
  | { type: 'done'; summary: Summary }
  /** stopped on request; `message` is the StoppedError's */
  | { type: 'stopped'; message: string }
  /** the run failed, or something in the worker threw or rejected unhandled; `message` names what */
  | { type: 'error'; message: string };

/** The run worker, as its host (run-worker.ts) and the run slice know it. */
export const RUN_WORKER: WorkerKind<ToRunWorker, FromRunWorker, 'done' | 'stopped' | 'error'> = {
  name: 'run worker',
  job: 'run',
  lock: 'run',
  last: ['done', 'stopped', 'error'],
};
