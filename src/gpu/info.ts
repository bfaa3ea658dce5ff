/** A JSON description of a runtime: what `coderl gpu-info` prints and what the app shows. */
import { limitsObject, summarizeAdapter, NEGOTIATED_LIMITS, OPTIONAL_FEATURES, type AdapterSummary } from './adapter';
import type { GpuRuntime } from './runtime';
import type { SelfCheckResult } from './selfcheck';

export interface GpuInfo {
  platform: 'browser' | 'node';
  adapter: AdapterSummary;
  /** how the adapter was chosen (e.g. the SwiftShader fallback) */
  notes: string[];
  /** every feature the adapter offers */
  adapterFeatures: string[];
  /** the features the lab uses, and whether the device has them */
  features: Record<(typeof OPTIONAL_FEATURES)[number], boolean>;
  /** the adapter's limits */
  adapterLimits: Record<string, number>;
  /** the limits negotiated for the device (the adapter's maxima for the compute-relevant ones) */
  deviceLimits: Record<string, number>;
  selfCheck?: SelfCheckResult;
}

export function gpuInfo(rt: GpuRuntime, selfCheck?: SelfCheckResult): GpuInfo {
  const adapterLimits = limitsObject(rt.adapter.limits);
  const device = limitsObject(rt.limits);
  const deviceLimits = Object.fromEntries(NEGOTIATED_LIMITS.map((k) => [k, device[k] ?? 0]));
  const info: GpuInfo = {
    platform: rt.provider.platform,
    adapter: summarizeAdapter(rt.adapter),
    notes: [...rt.provider.notes],
    adapterFeatures: [...(rt.adapter.features as unknown as Set<string>)].sort(),
    features: Object.fromEntries(OPTIONAL_FEATURES.map((f) => [f, rt.hasFeature(f)])) as GpuInfo['features'],
    adapterLimits,
    deviceLimits,
  };
  if (selfCheck) info.selfCheck = selfCheck;
  return info;
}
