import type { Plugin } from 'vite';
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

export default defineConfig({
  plugins: [react(), wgsl()],
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
  worker: { format: 'es' },
  server: { host: '127.0.0.1', port: 5173 },
  preview: { host: '127.0.0.1', port: 4173 },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'bin/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
