import { GpuError } from './errors';

/**
 * Where a GPU comes from. The runtime is one code path; only the provider differs:
 * the browser's `navigator.gpu`, or Dawn's `webgpu` package in Node (see ./node.ts).
 */
export interface GpuProvider {
  readonly platform: 'browser' | 'node';
  /** how the adapter was found, e.g. that SwiftShader was chosen because nothing else was */
  readonly notes: string[];
  /** resolves to an adapter, or throws GpuError('unavailable') saying what was tried and what to do */
  requestAdapter(options?: GPURequestAdapterOptions): Promise<GPUAdapter>;
}

/** Why WebGPU is missing in this browser, and what the user can do, or null when it is present. */
export function browserWebGpuProblem(): string | null {
  if (typeof navigator === 'undefined') return 'No browser environment (navigator is undefined).';
  if (!('gpu' in navigator) || !navigator.gpu) {
    const insecure = typeof isSecureContext !== 'undefined' && !isSecureContext;
    return insecure
      ? 'WebGPU needs a secure context: open the lab over https or on localhost / 127.0.0.1.'
      : 'This browser does not expose WebGPU (navigator.gpu is undefined). Use Chrome or Edge 113+; ' +
          'on Linux start Chrome with --enable-unsafe-webgpu (or enable chrome://flags/#enable-unsafe-webgpu).';
  }
  return null;
}

/** The browser's WebGPU. Throws GpuError('unavailable') with the reason when it is missing. */
export function browserProvider(): GpuProvider {
  const problem = browserWebGpuProblem();
  if (problem) throw new GpuError('unavailable', problem);
  const gpu = navigator.gpu;
  return {
    platform: 'browser',
    notes: [],
    async requestAdapter(options) {
      const adapter = await gpu.requestAdapter(options);
      if (!adapter) {
        throw new GpuError(
          'unavailable',
          'navigator.gpu.requestAdapter() returned no adapter. WebGPU may be blocked for this GPU or driver: ' +
            'check chrome://gpu, update the driver, or start Chrome with --enable-unsafe-webgpu.',
        );
      }
      return adapter;
    },
  };
}
