/**
 * The pool of plain-program workers in Node (program.worker.ts), a SandboxPool like the test
 * pool with another worker entry. worker_threads cannot run TypeScript, so the entry runs as an
 * esbuild bundle, found as node-worker-bundle.ts finds the test worker's: `program-worker.mjs`
 * beside this module's file when a prebuilt CLI ships one, else bundled from the project's
 * sources into node_modules/.cache/coderl/dev/ whenever a file under src/sandbox or src/tasks
 * is newer (written to a temporary name and renamed, so concurrent processes never load half a
 * file). npm packages stay external.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeSpawner } from './pool.node';
import { SandboxPool, type PoolOptions } from './pool';

export const PROGRAM_WORKER_BUNDLE_NAME = 'program-worker.mjs';
const ENTRY = 'src/sandbox/program.worker.ts';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function repoRoot(from: string): string | undefined {
  for (let d = from; ; d = dirname(d)) {
    const pkg = join(d, 'package.json');
    if (existsSync(pkg) && existsSync(join(d, ENTRY))) {
      if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'code-rl-lab') return d;
    }
    if (dirname(d) === d) return undefined;
  }
}

async function build(root: string, outfile: string): Promise<void> {
  const esbuild = await import('esbuild');
  const tmp = `${outfile}.${process.pid}.${Date.now()}.tmp`;
  await esbuild.build({
    entryPoints: [join(root, ENTRY)],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    logLevel: 'error',
  });
  renameSync(tmp, outfile);
}

/** The path of the bundled program worker, building it if needed. */
export async function programWorkerFile(): Promise<string> {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, PROGRAM_WORKER_BUNDLE_NAME);
  if (existsSync(beside)) return beside;
  const root = repoRoot(here);
  if (!root) throw new Error(`cannot find ${PROGRAM_WORKER_BUNDLE_NAME} next to ${here}, nor the project sources to build it from`);
  const out = join(root, 'node_modules/.cache/coderl/dev', PROGRAM_WORKER_BUNDLE_NAME);
  const newest = Math.max(newestMtime(join(root, 'src/sandbox')), newestMtime(join(root, 'src/tasks')));
  if (!existsSync(out) || statSync(out).mtimeMs < newest) {
    mkdirSync(dirname(out), { recursive: true });
    await build(root, out);
  }
  return out;
}

export async function createProgramPool(opts: Partial<Omit<PoolOptions, 'spawn'>> & { size: number }): Promise<SandboxPool> {
  return new SandboxPool({ ...opts, spawn: nodeSpawner(await programWorkerFile()) });
}
