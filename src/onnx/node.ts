/**
 * Node: onnxruntime-web's wasm backend (the package's `node` export), single-threaded (no
 * worker threads: reliable under vitest and in the CLI). Loaded on first use, once.
 */
import { configureOrt, type Ort } from './runtime';

let loaded: Promise<Ort> | null = null;

export function loadNodeOrt(): Promise<Ort> {
  loaded ??= import('onnxruntime-web').then((m) => configureOrt(m as Ort, { numThreads: 1, executionProviders: ['wasm'] }));
  return loaded;
}
