/** End-to-end tests: the built app (dist/) served on 127.0.0.1, driven in Debian's Chromium by playwright-core. */
import { defineConfig } from 'vitest/config';
import { wgsl } from './vite.config';

export default defineConfig({
  // e2e/run-fixture.ts runs the pipeline in Node, which imports shaders/*.wgsl as text
  plugins: [wgsl()],
  test: {
    include: ['e2e/**/*.e2e.ts'],
    environment: 'node',
    globalSetup: ['e2e/serve.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
