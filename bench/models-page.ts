/**
 * The page of `coderl bench models --ort webgpu` (bench/models-browser.ts bundles it with esbuild
 * and serves it): our engine and onnxruntime-web's webgpu provider in one page, on the page's
 * WebGPU adapter, one engine at a time. The driver calls window.coderlModelsBench(options) and
 * reads the result; progress goes to the console.
 */
import * as ortModule from 'onnxruntime-web';
import { browserProvider } from '../src/gpu/provider';
import { GpuRuntime } from '../src/gpu/runtime';
import { configureOrt, type Ort } from '../src/onnx/runtime';
import { benchModels, gpuCounters, type ModelsBenchOptions, type ModelsBenchResult } from '../src/perf/models';

declare global {
  interface Window {
    coderlModelsBench?: (o: ModelsBenchOptions) => Promise<ModelsBenchResult>;
  }
}

window.coderlModelsBench = async (o) => {
  const rt = await GpuRuntime.create(browserProvider());
  try {
    // counts every device of the page from here on: ours (rt.stats agrees) and ORT's own device
    const counters = gpuCounters(rt.device);
    const ort = configureOrt(ortModule as unknown as Ort, {
      numThreads: 1,
      wasmPaths: new URL('/ort/', location.href).href,
      executionProviders: ['webgpu'],
    });
    ort.env.logLevel = 'error';
    const r = await benchModels(rt, [{ name: 'ORT webgpu', ort, gpuKv: true, counters }], o, (m) => console.log(`[bench] ${m}`));
    return { ...r, adapter: `${r.adapter} (Chromium)` };
  } finally {
    rt.dispose();
  }
};
