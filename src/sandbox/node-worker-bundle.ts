/**
 * Where the Node sandbox worker's JavaScript comes from. worker_threads cannot run TypeScript,
 * and the same pool runs under the bundled CLI and under vitest (which runs TypeScript in the
 * main thread only), so the worker entry (node.worker.ts) is always run as an esbuild bundle:
 *
 * 1. Under the CLI, bin/coderl.mjs emits `sandbox-worker.mjs` next to the CLI bundle, and this
 *    module (bundled into the CLI) finds it beside its own file. A prebuilt CLI (CODERL_BUNDLE)
 *    carries it the same way.
 * 2. Anywhere else (vitest, scripts), the entry is bundled here with esbuild into
 *    node_modules/.cache/coderl/dev/sandbox-worker.mjs whenever a file under src/sandbox or
 *    src/tasks is newer than the bundle (about 0.1 s), written to a temporary name and renamed,
 *    so concurrent test processes never load a half-written file.
 * npm packages stay external: the bundle imports quickjs-emscripten and pyodide from node_modules.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WORKER_BUNDLE_NAME = 'sandbox-worker.mjs';

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
    if (existsSync(pkg) && existsSync(join(d, 'src/sandbox/node.worker.ts'))) {
      const name = (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name;
      if (name === 'code-rl-lab') return d;
    }
    if (dirname(d) === d) return undefined;
  }
}

async function build(root: string, outfile: string): Promise<void> {
  const esbuild = await import('esbuild');
  const tmp = `${outfile}.${process.pid}.${Date.now()}.tmp`;
  await esbuild.build({
    entryPoints: [join(root, 'src/sandbox/node.worker.ts')],
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

/** The path of the bundled worker entry, building it if needed. */
export async function nodeWorkerFile(): Promise<string> {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, WORKER_BUNDLE_NAME);
  if (existsSync(beside)) return beside;
  const root = repoRoot(here);
  if (!root) throw new Error(`cannot find ${WORKER_BUNDLE_NAME} next to ${here}, nor the project sources to build it from`);
  const out = join(root, 'node_modules/.cache/coderl/dev', WORKER_BUNDLE_NAME);
  const newest = Math.max(newestMtime(join(root, 'src/sandbox')), newestMtime(join(root, 'src/tasks')));
  if (!existsSync(out) || statSync(out).mtimeMs < newest) {
    mkdirSync(dirname(out), { recursive: true });
    await build(root, out);
  }
  return out;
}
