/**
 * How the run and eval workers' lives end, both sides. A worker's life lock: the worker requests
 * a Web Lock of a name the page chose and never lets it go, so the browser releases it exactly
 * when the worker's global is gone, however it ended (closed itself, terminated, crashed). The
 * page learns of a worker that died without a word by asking for the same lock
 * (store/worker-client.ts), and a test learns that a finished worker is really gone from
 * `navigator.locks.query()`, whatever the devtools protocol's list of workers still says.
 * A worker closes itself after its last message (rl/worker-host.ts); endWorker is the page's side
 * of that.
 */

/** Names of the locks: a prefix per kind of worker, then a random id. */
export const LIFE_LOCK_PREFIX = { run: 'coderl-run-worker-', eval: 'coderl-eval-worker-', model: 'coderl-model-worker-' } as const;

/** A fresh life-lock name for a worker of `kind`, or undefined where Web Locks are missing. */
export function newLifeLock(kind: keyof typeof LIFE_LOCK_PREFIX): string | undefined {
  return typeof navigator !== 'undefined' && navigator.locks ? `${LIFE_LOCK_PREFIX[kind]}${crypto.randomUUID()}` : undefined;
}

/** In the worker: takes the lock `name` and holds it for as long as this worker lives; resolves once held. */
export function holdLifeLock(name: string | undefined): Promise<void> {
  const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined;
  if (!name || !locks) return Promise.resolve();
  return new Promise((held) => {
    void locks.request(name, () => {
      held();
      return new Promise<never>(() => {}); // released only when this worker ends
    });
  });
}

/** How long a worker that sent its last message has to close itself before the page terminates it, ms. */
export const SELF_CLOSE_MS = 5000;

/**
 * The page's side of a worker's end: one that sent its last message (`closing`) is closing itself,
 * and is terminated only as a backstop after SELF_CLOSE_MS (a terminated worker was seen to linger
 * in the devtools worker list); any other end (Stop, an error event, a lost worker) terminates it at once.
 */
export function endWorker(w: { terminate(): void }, closing: boolean): void {
  if (closing) setTimeout(() => w.terminate(), SELF_CLOSE_MS);
  else w.terminate();
}
