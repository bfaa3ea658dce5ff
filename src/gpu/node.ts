/**
 * WebGPU in Node through Dawn (the `webgpu` package). On a machine without a GPU the Vulkan
 * loader finds no usable driver; we then point it at SwiftShader's ICD (shipped by Debian's
 * chromium package) and say so in the provider's notes.
 */
import { existsSync } from 'node:fs';
import { GpuError } from './errors';
import type { GpuProvider } from './provider';

/** SwiftShader Vulkan ICDs we know of, in order of preference. */
export const SWIFTSHADER_ICDS = [
  '/usr/lib/chromium/vk_swiftshader_icd.json',
  '/usr/lib64/chromium/vk_swiftshader_icd.json',
  '/usr/lib/chromium-browser/vk_swiftshader_icd.json',
  '/opt/google/chrome/vk_swiftshader_icd.json',
];

const VULKAN_LOADERS = [
  '/lib/x86_64-linux-gnu/libvulkan.so.1',
  '/usr/lib/x86_64-linux-gnu/libvulkan.so.1',
  '/lib/aarch64-linux-gnu/libvulkan.so.1',
  '/usr/lib/aarch64-linux-gnu/libvulkan.so.1',
  '/usr/lib64/libvulkan.so.1',
  '/usr/lib/libvulkan.so.1',
];

export const INSTALL_HINT = 'apt-get install -y chromium libvulkan1';

interface DawnModule {
  create(options: string[]): GPU;
  globals: Record<string, unknown>;
}

/**
 * Dawn's GPU objects must stay strongly referenced for as long as any device made from them
 * lives: if the instance is collected the process crashes. We keep every instance for the
 * life of the process.
 */
const instances: GPU[] = [];

let dawn: Promise<DawnModule> | null = null;

async function loadDawn(): Promise<DawnModule> {
  dawn ??= import('webgpu').then((m) => {
    const mod = m as unknown as DawnModule;
    // GPUBufferUsage, GPUMapMode, GPUShaderStage, ... as in a browser.
    for (const [k, v] of Object.entries(mod.globals)) {
      if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    }
    return mod;
  });
  return dawn;
}

function newInstance(mod: DawnModule): GPU {
  // Silences the Vulkan loader's "XDG_RUNTIME_DIR is invalid" complaint on headless machines.
  process.env.XDG_RUNTIME_DIR ??= '/tmp';
  const gpu = mod.create([]);
  instances.push(gpu);
  return gpu;
}

export interface NodeProviderOptions {
  /** Skip the system's drivers and use SwiftShader directly. */
  forceSwiftShader?: boolean;
}

/** Dawn in Node, with the SwiftShader fallback described above. */
export async function nodeProvider(options: NodeProviderOptions = {}): Promise<GpuProvider> {
  const mod = await loadDawn();
  const notes: string[] = [];
  let gpu: GPU | null = null;

  const useSwiftShader = (why: string): boolean => {
    const icd = SWIFTSHADER_ICDS.find((p) => existsSync(p));
    if (!icd) return false;
    process.env.VK_ICD_FILENAMES = icd;
    gpu = newInstance(mod);
    notes.push(`${why}; using SwiftShader (software Vulkan) from ${icd}`);
    return true;
  };

  async function pick(opts?: GPURequestAdapterOptions): Promise<GPUAdapter | null> {
    if (gpu) return gpu.requestAdapter(opts);
    if (options.forceSwiftShader && useSwiftShader('SwiftShader requested')) return gpu!.requestAdapter(opts);
    gpu = newInstance(mod);
    const adapter = await gpu.requestAdapter(opts);
    if (adapter || process.env.VK_ICD_FILENAMES) return adapter;
    if (!useSwiftShader('no GPU adapter found')) return null;
    return gpu!.requestAdapter(opts);
  }

  return {
    platform: 'node',
    notes,
    async requestAdapter(opts) {
      const adapter = await pick(opts);
      if (adapter) return adapter;
      const loader = VULKAN_LOADERS.find((p) => existsSync(p));
      const icd = SWIFTSHADER_ICDS.find((p) => existsSync(p));
      const tried = [
        loader ? `Vulkan loader ${loader}` : 'no Vulkan loader (libvulkan.so.1) found',
        process.env.VK_ICD_FILENAMES
          ? `VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES}`
          : icd
            ? `SwiftShader ICD ${icd}`
            : 'no SwiftShader ICD (Debian package chromium ships it)',
      ];
      throw new GpuError(
        'unavailable',
        `Dawn found no WebGPU adapter (tried: ${tried.join('; ')}). Install a Vulkan driver, or for ` +
          `software rendering run: ${INSTALL_HINT}`,
      );
    },
  };
}
