/**
 * The browser: onnxruntime-web loaded on first use (a dynamic import, so the app's first load
 * does not carry it). Its wasm runtime ships with the app, never from a CDN: the `?url` import
 * below makes Vite serve the file from node_modules in dev and emit it as a hashed asset at
 * build (the same file ORT's bundle references, so it is emitted once), and `wasmPaths` points
 * ORT at it. The default build (`ort.bundle.min.mjs`: JSEP, its glue inlined) has both the
 * `webgpu` execution provider (ORT's own WebGPU device) and `wasm` (CPU). One module, two
 * handles; wasm single-threaded (no cross-origin isolation, so no SharedArrayBuffer threads).
 */
import jsepWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.jsep.wasm?url';
import { configureOrt, withProviders, type Ort } from './runtime';

export type BrowserEp = 'webgpu' | 'wasm';

export interface BrowserOrt {
  /** sessions on ORT's webgpu provider; null where the browser has no WebGPU */
  webgpu: Ort | null;
  wasm: Ort;
}

let loaded: Promise<BrowserOrt> | null = null;

export function loadBrowserOrt(): Promise<BrowserOrt> {
  loaded ??= import('onnxruntime-web')
    .then((m) => {
      const ort = configureOrt(m as unknown as Ort, {
        numThreads: 1,
        wasmPaths: { wasm: new URL(jsepWasmUrl, location.href).href },
        executionProviders: ['wasm'],
      });
      // ORT writes its warnings (e.g. "some nodes were not assigned to the preferred execution
      // providers": shape ops kept on the CPU, by design) through console.error; errors still show
      ort.env.logLevel = 'error';
      return { webgpu: 'gpu' in navigator ? withProviders(ort, ['webgpu']) : null, wasm: ort };
    })
    .catch((e: unknown) => {
      loaded = null; // a later attempt may succeed (a transient fetch failure)
      throw e;
    });
  return loaded;
}

/** The handle for one execution provider; throws a clear error for webgpu without WebGPU. */
export async function browserOrt(ep: BrowserEp): Promise<Ort> {
  const o = await loadBrowserOrt();
  if (ep === 'wasm') return o.wasm;
  if (!o.webgpu)
    throw new Error('onnxruntime-web: this browser has no WebGPU (navigator.gpu), so the webgpu execution provider is unavailable');
  return o.webgpu;
}
