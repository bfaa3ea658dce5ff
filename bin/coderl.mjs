#!/usr/bin/env node
// The `coderl` command. The CLI is TypeScript under src/cli; this launcher bundles it with
// esbuild (WGSL imported as text, npm packages left external) into node_modules/.cache/coderl
// when a source file is newer than the bundle, then runs it. A prebuilt bundle can be named
// with CODERL_BUNDLE (used where no sources or esbuild are present, e.g. the GPU machine).
import { existsSync, mkdirSync, readdirSync, realpathSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

export async function bundleCli(outfile, { external = true } = {}) {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(root, 'src/cli/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: external ? 'external' : undefined,
    // vite (the browser benches build the app with it) imports this optional package lazily; it is not installed
    external: external ? undefined : ['@vitejs/devtools/config'],
    loader: { '.wgsl': 'text' },
    sourcemap: 'inline',
    logLevel: 'error',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  // extra entry point: the sandbox worker (worker_threads cannot load TypeScript), emitted next to
  // the CLI bundle, where src/sandbox/node-worker-bundle.ts looks for it
  const worker = join(dirname(outfile), 'sandbox-worker.mjs');
  await esbuild.build({
    entryPoints: [join(root, 'src/sandbox/node.worker.ts')],
    outfile: `${worker}.${process.pid}.tmp`,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: external ? 'external' : undefined,
    sourcemap: 'inline',
    logLevel: 'error',
  });
  renameSync(`${worker}.${process.pid}.tmp`, worker);
}

async function main() {
  let bundle = process.env.CODERL_BUNDLE;
  if (!bundle) {
    bundle = join(root, 'node_modules/.cache/coderl/cli.mjs');
    const sources = Math.max(
      ...['src', 'shaders', 'bench'].map((d) => newestMtime(join(root, d))),
      statSync(fileURLToPath(import.meta.url)).mtimeMs,
    );
    if (!existsSync(bundle) || statSync(bundle).mtimeMs < sources) {
      mkdirSync(dirname(bundle), { recursive: true });
      const tmp = `${bundle}.${process.pid}.tmp`; // concurrent launches never see a half-written bundle
      await bundleCli(tmp);
      renameSync(tmp, bundle);
    }
  }
  const cli = await import(pathToFileURL(bundle).href);
  const code = await cli.main(process.argv.slice(2));
  process.exit(code);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  main().catch((e) => {
    console.error(`coderl: ${e?.stack ?? e}`);
    process.exit(1);
  });
}
