/**
 * Parity of an exported model: our engine (the float64 CPU model always, the WebGPU model when a
 * runtime is given) against the ONNX export run in onnxruntime, on random tokens with one
 * left-padded row. Both graphs are checked: the plain graph over the whole batch, and the
 * KV-cache graph as a prefill of T-1 tokens (empty past) then a one-token step fed the prefill's
 * present, each against the engine's full forward (causal: row t depends on tokens <= t only).
 *
 * Relative difference of a tensor a against the reference b (elementwise max):
 *   rel = |a_i - b_i| / max(|b_i|, rms(b))
 * rms(b), the reference's root mean square, is the scale below which an element counts as
 * "near zero": a logit of 1e-7 is compared against the typical logit, not against itself.
 */
import type { GpuRuntime } from '../gpu/runtime';
import type { ModelSnapshot } from '../model/model-file';
import { CpuModel, type ForwardInput } from '../model/cpu';
import { GpuModel } from '../model/gpu';
import { Rng } from '../util/random';
import { exportOnnx, kvNames } from './export';
import { createSession, floats, floatTensor, int64Tensor, runSession, type Ort, type OrtSession, type OrtTensor } from './runtime';

export interface ParityOptions {
  /** rows (default 2; row 1 is left-padded) */
  B?: number;
  /** tokens per row (default min(12, contextLength)); at least 2 */
  T?: number;
  seed?: number;
  /** also compare against the WebGPU model on this runtime */
  gpu?: GpuRuntime | null;
}

export interface ParityCheck {
  /** plain: the graph without a cache; kv-prefill / kv-step: the KV-cache graph */
  graph: 'plain' | 'kv-prefill' | 'kv-step';
  engine: 'cpu' | 'webgpu';
  logits: number;
  values: number;
}

export interface ParityReport {
  /** the largest relative difference of any check, logits or values */
  max_rel_diff: number;
  max_rel_diff_logits: number;
  max_rel_diff_values: number;
  checks: ParityCheck[];
  B: number;
  T: number;
}

/** max_i |a_i - b_i| / max(|b_i|, rms(b)); see the file comment. */
export function maxRelDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) throw new Error(`maxRelDiff: ${actual.length} values vs ${expected.length} expected`);
  let ss = 0;
  for (let i = 0; i < expected.length; i++) ss += expected[i]! * expected[i]!;
  const scale = Math.max(Math.sqrt(ss / Math.max(1, expected.length)), Number.MIN_VALUE);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i]! - expected[i]!) / Math.max(Math.abs(expected[i]!), scale);
    if (Number.isNaN(d)) return NaN; // a NaN anywhere fails every threshold
    if (d > worst) worst = d;
  }
  return worst;
}

/** Random ids (B, T), row b left-padded by b * T/3 (positions restart at its first real token). */
export function parityInput(
  V: number,
  B: number,
  T: number,
  seed: number,
): Required<Omit<ForwardInput, 'start' | 'logitRows' | 'readRows'>> & { start: Uint32Array } {
  const rng = new Rng(seed);
  const tokens = Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * V));
  const start = Uint32Array.from({ length: B }, (_, b) => Math.min(T - 2, Math.floor((b * T) / 3)));
  const positions = Uint32Array.from({ length: B * T }, (_, i) => Math.max(0, (i % T) - start[Math.floor(i / T)]!));
  return { tokens, positions, start, B, T };
}

export async function onnxParity(
  ort: Ort,
  snap: Pick<ModelSnapshot, 'config' | 'params'>,
  opts: ParityOptions = {},
): Promise<ParityReport> {
  const { config } = snap;
  const B = opts.B ?? 2;
  const T = opts.T ?? Math.min(12, config.contextLength);
  if (T < 2 || T > config.contextLength) throw new Error(`onnxParity: T must be in 2..${config.contextLength}, got ${T}`);
  const input = parityInput(config.vocabSize, B, T, opts.seed ?? 1);

  const refs: { engine: ParityCheck['engine']; logits: ArrayLike<number>; values: ArrayLike<number> }[] = [];
  const cpu = new CpuModel(config, snap.params).forward(input);
  refs.push({ engine: 'cpu', ...cpu });
  if (opts.gpu) {
    const gpu = new GpuModel(opts.gpu, config, snap.params);
    try {
      refs.push({ engine: 'webgpu', ...(await gpu.forward(input)) });
    } finally {
      gpu.dispose();
    }
  }

  const [plain, kv] = await Promise.all([
    createSession(ort, exportOnnx(snap), 'exported model'),
    createSession(ort, exportOnnx(snap, { kvCache: true }), 'exported model (kv cache)'),
  ]);
  try {
    const ortPlain = await runRows(ort, plain, input, 0, T, []);
    const prefill = await runRows(ort, kv, input, 0, T - 1, emptyPast(ort, config, B));
    const step = await runRows(ort, kv, input, T - 1, T, prefill.present);
    const checks: ParityCheck[] = [];
    for (const r of refs) {
      const rows = (x: ArrayLike<number>, width: number, t0: number, t1: number) => pickRows(x, B, T, width, t0, t1);
      const V = config.vocabSize;
      checks.push(
        { graph: 'plain', engine: r.engine, logits: maxRelDiff(ortPlain.logits, r.logits), values: maxRelDiff(ortPlain.values, r.values) },
        {
          graph: 'kv-prefill',
          engine: r.engine,
          logits: maxRelDiff(prefill.logits, rows(r.logits, V, 0, T - 1)),
          values: maxRelDiff(prefill.values, rows(r.values, 1, 0, T - 1)),
        },
        {
          graph: 'kv-step',
          engine: r.engine,
          logits: maxRelDiff(step.logits, rows(r.logits, V, T - 1, T)),
          values: maxRelDiff(step.values, rows(r.values, 1, T - 1, T)),
        },
      );
    }
    const ml = Math.max(...checks.map((c) => c.logits));
    const mv = Math.max(...checks.map((c) => c.values));
    return { max_rel_diff: Math.max(ml, mv), max_rel_diff_logits: ml, max_rel_diff_values: mv, checks, B, T };
  } finally {
    await Promise.all([plain.release(), kv.release()]);
  }
}

/** Rows [t0, t1) of every sequence of a (B, T, width) tensor. */
function pickRows(x: ArrayLike<number>, B: number, T: number, width: number, t0: number, t1: number): Float64Array {
  const out = new Float64Array(B * (t1 - t0) * width);
  for (let b = 0; b < B; b++)
    for (let t = t0; t < t1; t++) for (let k = 0; k < width; k++) out[(b * (t1 - t0) + t - t0) * width + k] = x[(b * T + t) * width + k]!;
  return out;
}

function emptyPast(ort: Ort, cfg: ModelSnapshot['config'], B: number): OrtTensor[] {
  const dims = [B, cfg.nHead, 0, cfg.dModel / cfg.nHead];
  return Array.from({ length: 2 * cfg.nLayer }, () => floatTensor(ort, new Float32Array(0), dims));
}

/** Runs tokens [t0, t1) of every row; `past` (key, value per layer, in order) holds rows [0, t0). */
async function runRows(ort: Ort, s: OrtSession, x: ReturnType<typeof parityInput>, t0: number, t1: number, past: OrtTensor[]) {
  const { B, T } = x;
  const n = t1 - t0;
  const slice = (a: ArrayLike<number>) => Array.from({ length: B * n }, (_, i) => a[Math.floor(i / n) * T + t0 + (i % n)]!);
  const mask = Array.from({ length: B * t1 }, (_, i) => (i % t1 >= x.start[Math.floor(i / t1)]! ? 1 : 0));
  const feeds: Record<string, OrtTensor> = {
    input_ids: int64Tensor(ort, slice(x.tokens), [B, n]),
    attention_mask: int64Tensor(ort, mask, [B, t1]),
    position_ids: int64Tensor(ort, slice(x.positions), [B, n]),
  };
  const L = past.length / 2;
  for (let i = 0; i < L; i++) {
    feeds[kvNames(i).pastKey] = past[2 * i]!;
    feeds[kvNames(i).pastValue] = past[2 * i + 1]!;
  }
  const out = await runSession(s, feeds, 'exported model');
  const present: OrtTensor[] = [];
  for (let i = 0; i < L; i++) present.push(out[kvNames(i).presentKey]!, out[kvNames(i).presentValue]!);
  return { logits: floats(out.logits, 'logits'), values: floats(out.values, 'values'), present };
}
