/** Adapter description, limit negotiation and feature detection. */

/** Features the lab uses when present; none is required. */
export const OPTIONAL_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query'] as const satisfies readonly GPUFeatureName[];

/**
 * Limits we ask for at the adapter's own maximum (the spec's defaults are far below what
 * real GPUs allow: 128 MiB bindings, 16 KiB workgroup storage).
 */
export const NEGOTIATED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxUniformBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
] as const;

export type NegotiatedLimit = (typeof NEGOTIATED_LIMITS)[number];

export function requiredLimits(adapter: GPUAdapter): Record<NegotiatedLimit, number> {
  const out = {} as Record<NegotiatedLimit, number>;
  for (const k of NEGOTIATED_LIMITS) out[k] = adapter.limits[k];
  return out;
}

export function requestedFeatures(adapter: GPUAdapter): GPUFeatureName[] {
  return OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
}

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** true for software adapters (SwiftShader) when the implementation says so */
  isFallbackAdapter: boolean;
  /** best guess at "this is a CPU emulation": fallback flag, or SwiftShader/llvmpipe/lavapipe names */
  software: boolean;
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
}

export function summarizeAdapter(adapter: GPUAdapter): AdapterSummary {
  const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean; subgroupMinSize?: number; subgroupMaxSize?: number };
  const isFallbackAdapter = Boolean(info.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter);
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  const summary: AdapterSummary = {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    isFallbackAdapter,
    software: isFallbackAdapter || /swiftshader|llvmpipe|lavapipe|software|warp/.test(text),
  };
  if (typeof info.subgroupMinSize === 'number') summary.subgroupMinSize = info.subgroupMinSize;
  if (typeof info.subgroupMaxSize === 'number') summary.subgroupMaxSize = info.subgroupMaxSize;
  return summary;
}

/** All numeric limits as a plain object (GPUSupportedLimits' fields are getters on the prototype). */
export function limitsObject(limits: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  let proto: object | null = limits;
  while (proto && proto !== Object.prototype) {
    for (const k of Object.getOwnPropertyNames(proto)) {
      const v = (limits as unknown as Record<string, unknown>)[k];
      if (typeof v === 'number' && !(k in out)) out[k] = v;
    }
    proto = Object.getPrototypeOf(proto);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}
