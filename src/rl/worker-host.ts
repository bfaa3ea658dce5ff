/**
 * The worker side of a run or eval worker (run-worker.ts, eval-worker.ts): the worker's global,
 * its one job, and its end. hostWorker listens for the page's messages, starts the job on the
 * first `start` (a second one is an error), holds the worker's life lock (life-lock.ts) before
 * the job speaks, and posts what it returns as the last message.
 *
 * After its last message (the first of the kind's `last` types) the worker posts nothing more and
 * closes itself; the message still arrives, and the page's terminate() is only the backstop (a
 * terminated worker was seen to linger in the page's worker list). Every failure ends in one
 * `error` message: the job's rejection, and any error or promise rejection nothing handled (a
 * dropped promise must not leave the page waiting forever).
 */
import { errorText } from '../util/errors';
import { holdLifeLock } from './life-lock';
import type { LastOf, Message, StartOf, WorkerError, WorkerKind } from './worker-protocol';

/** The parts of a dedicated worker's global a host uses. */
export interface WorkerScope<In, Out> {
  close(): void;
  postMessage(message: Out): void;
  addEventListener(type: 'message', listener: (e: MessageEvent<In>) => void): void;
  addEventListener(type: 'error', listener: (e: ErrorEvent) => void): void;
  addEventListener(type: 'unhandledrejection', listener: (e: PromiseRejectionEvent) => void): void;
}

export interface HostOptions<In extends Message, Out extends Message, L extends Out['type'], Loaded> {
  /**
   * What the job needs before it runs, e.g. its code by a dynamic import; run once the life lock
   * is held. A failure here is posted as "the <name> failed to start: …", with where it was raised.
   */
  load?(start: StartOf<In>): Promise<Loaded>;
  /**
   * The job: resolves with the last message (posted once it resolves: release what must be gone
   * before the page hears of the end, such as the GPU device, first); a rejection is posted as an
   * `error` with the thrown value's text (and where it was raised, for a programming error).
   */
  run(start: StartOf<In>, loaded: Loaded): Promise<LastOf<Out, L>>;
  /** every message from the page but `start` */
  onMessage?(m: Exclude<In, { type: 'start' }>): void;
}

/** A programming error rather than a failure the code reports on purpose: where it was thrown helps. */
const isBug = (e: unknown): boolean =>
  e instanceof TypeError || e instanceof ReferenceError || e instanceof RangeError || e instanceof SyntaxError;

/** The text of a thrown value (errorText); with `where`, what raised it (the stack's first frame) when it has a stack. */
function describe(e: unknown, where = isBug(e)): string {
  const frame =
    where && e instanceof Error
      ? e.stack
          ?.split('\n')
          .find((l) => /^\s+at /.test(l))
          ?.trim()
      : undefined;
  return errorText(e) + (frame ? ` (${frame})` : '');
}

/**
 * Hosts the job of a worker of `kind` in `scope` (this worker's global). Returns `post`, for the
 * job's progress messages; it drops anything after the last message.
 */
export function hostWorker<In extends Message & { lifeLock?: string }, Out extends Message, L extends Out['type'], Loaded = void>(
  kind: WorkerKind<In, Out, L>,
  options: HostOptions<In, Out, L, Loaded>,
  scope: WorkerScope<In, Out | WorkerError> = self as unknown as WorkerScope<In, Out | WorkerError>,
): { post(m: Out | WorkerError): void } {
  const last = new Set<string>([...kind.last, 'error']); // an error always is the last
  let started = false;
  /** set once the last message is posted */
  let ended = false;

  function post(m: Out | WorkerError): void {
    if (ended) return;
    scope.postMessage(m); // a message that cannot be cloned throws here, unsent: its sender reports that instead
    if (!last.has(m.type)) return;
    ended = true;
    scope.close();
  }
  const fail = (message: string): void => post({ type: 'error', message });

  async function start(m: StartOf<In>): Promise<void> {
    let loaded: Loaded;
    try {
      await holdLifeLock(m.lifeLock);
      loaded = options.load ? await options.load(m) : (undefined as Loaded);
    } catch (e) {
      return fail(`the ${kind.name} failed to start: ${describe(e, true)}`);
    }
    try {
      post(await options.run(m, loaded));
    } catch (e) {
      fail(describe(e));
    }
  }

  scope.addEventListener('error', (e) => {
    e.preventDefault(); // reported here, not again as the Worker's error event on the page
    const at = e.filename ? ` (at ${e.filename}:${e.lineno}:${e.colno})` : '';
    fail(`uncaught error in the ${kind.name}: ${e.error instanceof Error ? describe(e.error) : e.message}${at}`);
  });
  scope.addEventListener('unhandledrejection', (e) => {
    e.preventDefault();
    fail(`unhandled rejection in the ${kind.name}: ${describe(e.reason, true)}`);
  });
  scope.addEventListener('message', (e) => {
    const m = e.data;
    if (m.type !== 'start') return options.onMessage?.(m as Exclude<In, { type: 'start' }>);
    if (started) return fail(`the ${kind.name} runs one ${kind.job}; this one has started already`);
    started = true;
    void start(m as StartOf<In>);
  });
  return { post };
}
