/**
 * What the run and eval workers' protocols (run-protocol.ts, eval-protocol.ts) have in common,
 * for the generic pair that hosts and starts them: rl/worker-host.ts in the worker,
 * store/worker-client.ts on the page. Types only.
 *
 * A protocol is two discriminated unions on `type`: page -> worker (`In`, whose `start` carries
 * the worker's life lock) and worker -> page (`Out`, with an `error` member). One job per worker:
 * the page posts `start` once; the worker's last message is the first of the kind's `last`
 * types, after which it posts nothing and closes itself.
 */
import type { LIFE_LOCK_PREFIX } from './life-lock';

/** A protocol's message: a member of a union discriminated by `type`. */
export interface Message {
  type: string;
}

/** The failure message every protocol has (worker -> page), and the one the page makes of a failed worker. */
export interface WorkerError {
  type: 'error';
  message: string;
}

/** A protocol's start message (page -> worker). */
export type StartOf<In extends Message> = Extract<In, { type: 'start' }>;

/**
 * A kind of worker, as both sides know it. `L`: the types of its last messages. The type
 * parameters travel with the value (`protocol`, never set), so hostWorker and startWorker infer
 * them from it.
 */
export interface WorkerKind<In extends Message & { lifeLock?: string }, Out extends Message, L extends Out['type']> {
  /** what messages call it: "the run worker failed: …" */
  name: string;
  /** what it runs one of: "the run worker runs one run" */
  job: string;
  /** its life locks' prefix (life-lock.ts) */
  lock: keyof typeof LIFE_LOCK_PREFIX;
  /** the types of its last messages */
  last: readonly L[];
  /** types only: never set */
  protocol?: { in: In; out: Out };
}

/** The last messages among `Out`: those of the types `L`. */
export type LastOf<Out extends Message, L extends Out['type']> = Extract<Out, { type: L }>;
