/**
 * Node only: what TF.js needs to train in Node on Dawn. Its gradients ship only as ES modules
 * with extensionless relative imports (`./gradients/Abs_grad`), which bundlers resolve and
 * Node's loader does not; its CommonJS bundle (the package's `main`) has no gradients at all.
 * This resolve hook adds `.js` (or `/index.js`) to such imports inside @tensorflow packages,
 * and nothing else. Gradients register in TF.js's global registry, shared by both copies.
 */
import { register } from 'node:module';
import type { GpuProvider } from '../src/gpu/provider';

const HOOK = `
export async function resolve(specifier, context, next) {
  const relative = specifier.startsWith('./') || specifier.startsWith('../');
  if (relative && !/\\.[cm]?js$/.test(specifier) && context.parentURL && context.parentURL.includes('/node_modules/@tensorflow/')) {
    for (const candidate of [specifier + '.js', specifier + '/index.js']) {
      try {
        return await next(candidate, context);
      } catch {}
    }
  }
  return next(specifier, context);
}`;

let installed = false;

/** Installs the resolve hook once per process; call before loadTfjs() in Node. */
export function installTfjsNodeResolver(): void {
  if (installed) return;
  register(`data:text/javascript,${encodeURIComponent(HOOK)}`);
  installed = true;
}

/**
 * A GPU object for TF.js backed by our provider: TF.js's device comes from the same Dawn
 * instance and the same adapter choice (our power preference, SwiftShader fallback included).
 */
export function providerGpu(provider: GpuProvider): GPU {
  const gpu = {
    requestAdapter: () => provider.requestAdapter(),
    getPreferredCanvasFormat: (): GPUTextureFormat => 'rgba8unorm',
    wgslLanguageFeatures: new Set<string>(),
  };
  return gpu as unknown as GPU;
}
