/** The sandbox pool in Node: workers are worker_threads running the bundled node.worker.ts. */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { nodeWorkerFile } from './node-worker-bundle';
import { SandboxPool, type PoolOptions, type SpawnWorker } from './pool';

/** Cores minus one, at least 1: for scoring while the main thread works too (coderl score's analysis). */
export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism() - 1);
}

/**
 * Every core: for train and eval, whose main thread samples and then waits while the pool runs
 * the samples' tests, so no core is left for it during scoring (on 2 cores, 2 workers take a
 * 16 x 8 PPO iteration's scoring from 2.5 to 1.7 s).
 */
export function phasedPoolSize(): number {
  return Math.max(1, availableParallelism());
}

export function nodeSpawner(file: string): SpawnWorker {
  return (events) => {
    // a 4 MB thread stack leaves room above QuickJS's own 256 KB stack limit
    const w = new Worker(file, { resourceLimits: { stackSizeMb: 4 }, stdout: false, stderr: false });
    w.on('message', (m: unknown) => events.message(m));
    w.on('error', (e) => events.exit(String(e?.message ?? e)));
    w.on('exit', (code) => events.exit(`exit code ${code}`));
    return { post: (m) => w.postMessage(m), terminate: () => void w.terminate() };
  };
}

export async function createNodePool(opts: Partial<Omit<PoolOptions, 'spawn'>> = {}): Promise<SandboxPool> {
  const file = await nodeWorkerFile();
  return new SandboxPool({ ...opts, size: opts.size ?? defaultPoolSize(), spawn: nodeSpawner(file) });
}
