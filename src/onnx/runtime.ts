/**
 * onnxruntime-web plumbing shared by Node and the browser. Nothing here imports the package at
 * run time: callers pass the module they loaded (Node: node.ts `loadNodeOrt`; the app: its own
 * `import('onnxruntime-web')` or `'onnxruntime-web/webgpu'`), so this file and everything that
 * takes an `Ort` (parity.ts, import.ts) stay usable in both.
 */
import type * as OrtModule from 'onnxruntime-web';
import { errorText } from '../util/errors';

export type Ort = typeof OrtModule;
export type OrtSession = OrtModule.InferenceSession;
export type OrtTensor = OrtModule.Tensor;

export interface OrtSettings {
  /** wasm threads (1: no worker threads; the reliable choice in Node and in tests) */
  numThreads?: number;
  /** browser: where the .wasm / .mjs files of onnxruntime-web are served (a prefix, or the files' URLs) */
  wasmPaths?: OrtModule.Env.WasmPrefixOrFilePaths;
  /** execution providers, in order of preference (default ['wasm']) */
  executionProviders?: string[];
}

const providers = new WeakMap<Ort, string[]>();

/** Applies the settings to `ort.env` (before the first session) and returns the module. */
export function configureOrt(ort: Ort, s: OrtSettings = {}): Ort {
  if (s.numThreads !== undefined) ort.env.wasm.numThreads = s.numThreads;
  if (s.wasmPaths !== undefined) ort.env.wasm.wasmPaths = s.wasmPaths;
  providers.set(ort, s.executionProviders ?? ['wasm']);
  return ort;
}

/**
 * The same module with other execution providers: a distinct handle (sharing `ort.env`, the
 * classes and the loaded wasm), so one page can hold a webgpu and a wasm session side by side.
 */
export function withProviders(ort: Ort, executionProviders: string[]): Ort {
  const view = Object.create(ort) as Ort;
  providers.set(view, executionProviders);
  return view;
}

/** The execution providers createSession uses for this handle. */
export function providersOf(ort: Ort): string[] {
  return providers.get(ort) ?? ['wasm'];
}

/** The model could not be loaded or run by onnxruntime; the message names the file and ORT's reason. */
export class OrtError extends Error {
  override readonly name = 'OrtError';
}

/** A session on the model bytes; ORT's load errors (unsupported op, bad graph) become OrtError naming `what`. */
export async function createSession(ort: Ort, bytes: Uint8Array, what: string): Promise<OrtSession> {
  try {
    // logSeverityLevel 3: errors only (ORT's warnings go to console.error in a browser; its errors still throw)
    return await ort.InferenceSession.create(bytes, {
      executionProviders: providers.get(ort) ?? ['wasm'],
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3,
    });
  } catch (e) {
    throw new OrtError(`${what}: onnxruntime cannot load the model: ${oneLine(e)}`);
  }
}

/** session.run with errors naming `what`. */
export async function runSession(session: OrtSession, feeds: Record<string, OrtTensor>, what: string): Promise<Record<string, OrtTensor>> {
  try {
    return await session.run(feeds);
  } catch (e) {
    throw new OrtError(`${what}: onnxruntime failed to run the model: ${oneLine(e)}`);
  }
}

export function int64Tensor(ort: Ort, data: ArrayLike<number>, dims: number[]): OrtTensor {
  return new ort.Tensor('int64', BigInt64Array.from(Array.from(data, (x) => BigInt(x))), dims);
}

export function floatTensor(ort: Ort, data: Float32Array, dims: number[]): OrtTensor {
  return new ort.Tensor('float32', data, dims);
}

/** A float32 output's data (the wasm backend returns CPU tensors). */
export function floats(t: OrtTensor | undefined, what: string): Float32Array {
  if (!t) throw new OrtError(`${what}: missing from the model's outputs`);
  if (t.type !== 'float32') throw new OrtError(`${what}: expected float32, got ${t.type}`);
  return t.data as Float32Array;
}

function oneLine(e: unknown): string {
  const m = errorText(e);
  return m.replace(/\s+/g, ' ').trim();
}
