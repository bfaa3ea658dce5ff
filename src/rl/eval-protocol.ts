/**
 * The messages between the page's eval slice (store/evalSlice.ts) and the eval worker
 * (rl/eval-worker.ts), which runs `coderl eval`'s core (eval-suite.ts) off the page's main
 * thread. Types and EVAL_WORKER only: the slice imports this without loading the model.
 *
 * One evaluation per worker: the page posts `start` once; `done` or `error` is the worker's last
 * message, after which it closes itself (worker-protocol.ts). Stop is the page terminating the
 * worker (an evaluation saves nothing, so there is nothing to finish first).
 */
import type { StorageKind } from '../storage/browser';
import type { Task } from '../tasks/types';
import type { EvalProgress, EvalSettings, TaskRow } from './eval-suite';
import type { PromptFormatKind } from './prompt-format';
import type { RunBackend } from './run-protocol';
import type { WorkerKind } from './worker-protocol';

/**
 * An ONNX causal LM imported in the Checkpoints panel (src/onnx/import.ts checks it again in the
 * worker): the model file's bytes, its tokenizer file's text, and the context length it was loaded with.
 */
export interface OnnxEvalModel {
  kind: 'onnx';
  bytes: Uint8Array;
  tokenizerText: string;
  /** the model file's name, for messages */
  file: string;
  contextLength: number;
}

/** A Hugging Face model stored in the Models panel (hf/browser.ts HfModelStore): the worker loads it from there. */
export interface HfEvalModel {
  kind: 'hf';
  /** its id in the model store */
  id: string;
  /** its folder's name, for messages */
  name: string;
  /** where the page keeps models; the worker reads them from there */
  storage: StorageKind;
}

/** page -> worker */
export type ToEvalWorker = {
  type: 'start';
  /**
   * the checkpoint file's bytes (a policy with its tokenizer), an imported ONNX model (run in
   * onnxruntime-web's wasm provider), or a stored Hugging Face model (run on our engine)
   */
  checkpoint: Uint8Array | OnnxEvalModel | HfEvalModel;
  /** the suite, as loadSuite parsed it on the page */
  tasks: Task[];
  settings: EvalSettings;
  /** what the page asks for; the worker falls back to cpu when it has no usable WebGPU */
  backend: RunBackend;
  /** the Web Lock the worker holds while it lives (life-lock.ts) */
  lifeLock?: string;
};

/** What the page shows of a finished evaluation (the samples themselves stay in the worker). */
export interface EvalReport {
  /** `pass@k` -> unbiased estimate, averaged over the tasks that fit */
  passAtK: Record<string, number>;
  /** pass@1 per task family, when tasks carry one */
  byFamily: Record<string, number>;
  /** tasks sampled (their prompts fit the context) */
  tasks: number;
  /** samples scored */
  samples: number;
  /** the completion length used (the asked one capped by the context) */
  maxNewTokens: number;
  /** the model's context, in tokens */
  contextLength: number;
  /** one per task of the suite (after the limit), unfit ones included */
  rows: TaskRow[];
  /** how the prompts reached the model (the settings' format resolved for its tokenizer) */
  format: PromptFormatKind;
  backend: RunBackend;
  seconds: number;
}

/** worker -> page */
export type FromEvalWorker =
  /** the backend the evaluation uses, sent once before sampling; `note` says why it differs from the one asked for */
  | { type: 'backend'; backend: RunBackend; note: string | null }
  | { type: 'progress'; progress: EvalProgress }
  | { type: 'done'; report: EvalReport }
  /** the evaluation failed, or something in the worker threw or rejected unhandled; `message` names what */
  | { type: 'error'; message: string };

/** The eval worker, as its host (eval-worker.ts) and the eval slice know it. */
export const EVAL_WORKER: WorkerKind<ToEvalWorker, FromEvalWorker, 'done' | 'error'> = {
  name: 'eval worker',
  job: 'evaluation',
  lock: 'eval',
  last: ['done', 'error'],
};
