import { copyFileSync, createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type { Plugin, ResolvedConfig } from 'vite';
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

/** Imports `shaders/*.wgsl` as a string, the same way the CLI's esbuild bundle does (text loader). */
export function wgsl(): Plugin {
  return {
    name: 'coderl-wgsl',
    transform(code, id) {
      if (!id.endsWith('.wgsl')) return null;
      return { code: `export default ${JSON.stringify(code)};`, map: null };
    },
  };
}

/** The files loadPyodide fetches from its indexURL (pyodide 314), with their content types. */
export const PYODIDE_FILES: Record<string, string> = {
  'pyodide.asm.mjs': 'text/javascript',
  'pyodide.asm.wasm': 'application/wasm',
  'python_stdlib.zip': 'application/zip',
  'pyodide-lock.json': 'application/json',
};

/**
 * Serves Pyodide's runtime (wasm, stdlib, lock file) with the app, never from a CDN: copied from
 * node_modules/pyodide into `<outDir>/pyodide/` at build, and served at `<base>pyodide/` in dev.
 * The sandbox worker loads it from there (pool.browser.ts passes the URL).
 */
export function pyodideRuntime(): Plugin {
  const dir = dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));
  let config: ResolvedConfig;
  return {
    name: 'coderl-pyodide-runtime',
    configResolved(c) {
      config = c;
    },
    configureServer(server) {
      const prefix = `${server.config.base.replace(/\/?$/, '/')}pyodide/`;
      server.middlewares.use((req, res, next) => {
        const path = (req.url ?? '').split('?')[0]!;
        if (!path.startsWith(prefix)) return next();
        const name = path.slice(prefix.length);
        const type = PYODIDE_FILES[name];
        if (!type) return next();
        const file = join(dir, name);
        res.setHeader('Content-Type', type);
        res.setHeader('Content-Length', statSync(file).size);
        createReadStream(file).pipe(res);
      });
    },
    writeBundle() {
      const out = join(config.root, config.build.outDir, 'pyodide');
      mkdirSync(out, { recursive: true });
      for (const name of Object.keys(PYODIDE_FILES)) {
        const src = join(dir, name);
        if (!existsSync(src)) throw new Error(`pyodide: ${src} is missing`);
        copyFileSync(src, join(out, name));
      }
    },
  };
}

/**
 * The page and every worker it starts may connect to their own origin only (fetching the app's
 * files), never elsewhere: sent as a header with every response, since a worker's policy comes
 * with its own script's response. For the sandbox this is the browser's own network switch, under
 * the in-worker defences (no sockets, no JavaScript bridge from Python, no network globals).
 * index.html carries the same policy in a meta tag for hosts that send no header.
 */
export const CONTENT_SECURITY_POLICY = "connect-src 'self' data: blob:";
const securityHeaders = { 'Content-Security-Policy': CONTENT_SECURITY_POLICY };

export default defineConfig({
  plugins: [react(), wgsl(), pyodideRuntime()],
  // Pyodide finds its runtime files relative to its indexURL; pre-bundling it would not change that
  optimizeDeps: { exclude: ['pyodide'] },
  // ESLint's CommonJS require("esquery") must get esquery's UMD build; the ESM one breaks
  // ESLint's Linter in the browser ("parse is not a function").
  resolve: { alias: [{ find: /^esquery$/, replacement: 'esquery/dist/esquery.min.js' }] },
  // The app loads nothing from the network: every asset is bundled or served from public/.
  build: {
    target: 'es2022',
    chunkSizeWarningLimit: 8000, // Monaco's editor core is one ~2.7 MB chunk, loaded lazily
    sourcemap: false,
    rolldownOptions: { checks: { pluginTimings: false } },
  },
  // worker bundles get only these plugins: the run worker (rl/run-worker.ts) carries the model's shaders
  worker: { format: 'es', plugins: () => [wgsl()] },
  server: { host: '127.0.0.1', port: 5173, headers: securityHeaders },
  preview: { host: '127.0.0.1', port: 4173, headers: securityHeaders },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'bin/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    // a fork per core (vitest's default leaves one core to its own process, which idles): the unit
    // tier on the 2-core build machine in 7.4 min against 10.4 with one fork, every test passing
    maxWorkers: Math.max(1, availableParallelism()),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
