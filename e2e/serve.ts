/** Global setup: serve the built app (dist/) with Vite's preview server on 127.0.0.1, as `npm start` does. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { preview } from 'vite';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = join(import.meta.dirname, '..');
  if (!existsSync(join(root, 'dist/index.html'))) {
    throw new Error('dist/index.html is missing: build the app first (npm run build), or run the whole suite with npm test');
  }
  const server = await preview({ root, logLevel: 'warn', preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false } });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a local URL');
  project.provide('baseUrl', url);
  return async () => {
    await server.close();
  };
}
