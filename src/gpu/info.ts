/** A JSON description of a runtime: what `coderl gpu-info` prints and what the app shows. */
import type { Tolerance } from '../util/compare';
import { limitsObject, summarizeAdapter, NEGOTIATED_LIMITS, OPTIONAL_FEATURES, type AdapterSummary } from './adapter';
import type { GpuRuntime } from './runtime';

/** One check of the built-in self-check (src/kernels/selfcheck.ts runSelfCheck). */
export interface CheckResult {
  name: string;
  n: number;
  ok: boolean;
  maxAbsDiff: number;
  tolerance: Tolerance;
  /** why it failed (first values, worst element) */
  detail?: string;
}

/** The built-in self-check's report (src/kernels/selfcheck.ts), shown with the runtime's description. */
export interface SelfCheckResult {
  ok: boolean;
  checks: CheckResult[];
  /** dispatches, submits and readbacks the check used */
  dispatches: number;
  submits: number;
  /** GPU time per dispatch in ns, when the adapter has timestamp-query */
  gpuTimings: { kernel: string; ns: number }[] | null;
  wallMs: number;
  /** set when the check could not run at all */
  error?: string;
}

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
