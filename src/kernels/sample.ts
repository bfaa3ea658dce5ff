/**
 * Token sampling on the GPU (shaders/sample.wgsl): temperature (0 = greedy), top-k, top-p, an
 * additive logit bias and a hard allow-mask, one workgroup per row; u comes from a buffer (for
 * example filled by the rand kernel, src/kernels/rand.ts).
 * Shape legend: B rows, V vocab, W = ceil(V / 32) mask words per row. Row-major f32; ids u32.
 *
 * Semantics (sampleRef is the definition; the GPU makes the same choice given the same u):
 *   s_i = f32(f32(logit_i + bias_i) * f32(1 / T))      scaled logits, f32 rounding on both sides
 *                                                      (f32 add and multiply are correctly rounded
 *                                                      in WGSL, so GPU and CPU agree bit for bit)
 *   A   = allowed ids: allowMask bit 1 (all ids without a mask)
 *   m = max_A s,  w_i = exp(s_i - m)
 *   greedy (T = 0): token = the lowest id with the largest z_i = f32(logit_i + bias_i) over A
 *   K   = {i in A : s_i >= v_k}, v_k = the k-th largest s over A counted with multiplicity
 *         (K = A when topK = 0 or topK >= |A|); every token tied with v_k is kept, so |K| >= k
 *   S   = {i in K : s_i >= tau}, tau = the largest value such that sum_{j in K, s_j >= tau} w_j
 *         >= topP * sum_K w  (the smallest nucleus by descending value, ties at tau all kept;
 *         S = K when topP >= 1). top-p acts on the top-k set renormalised, as in HF transformers.
 *   token = the first i in S in increasing id order with u * sum_S w < sum_{j in S, j <= i} w_j;
 *         if none (u * sum rounds up to the total) the last id in S with w > 0
 *   logp  = log softmax_A(s)[token] = (s_token - m) - log sum_A w: the log-probability under the
 *         full distribution softmax((logits + bias) / T) restricted to allowed tokens (masked
 *         tokens get -inf), BEFORE top-k/top-p truncation, which is what PPO recomputes. For
 *         greedy it is taken at temperature 1.
 *   no allowed token: token = 0xFFFFFFFF (NO_TOKEN), logp = NaN.
 * Logits and bias must be finite: ban tokens with the allow-mask, not with -Infinity.
 * The GPU sums in f32 where the reference sums in f64, so the two can disagree only when u * sum
 * or the top-p mass lands within f32 rounding (~1e-6 relative) of a boundary.
 */
import wgsl from '../../shaders/sample.wgsl';
import { linearWorkgroups, type KernelSpec } from '../gpu/kernel';

export const NO_TOKEN = 0xffffffff;

export interface SampleProblem {
  B: number;
  V: number;
  /** 0 = greedy argmax (ties to the lowest id) */
  temperature: number;
  /** 0 = off */
  topK: number;
  /** 1 = off */
  topP: number;
  /** add the bias binding (else it may be any dummy storage buffer) */
  useBias: boolean;
  /** apply the allowMask binding (else it may be any dummy storage buffer) */
  useMask: boolean;
}

const WG = 256;

export const sample: KernelSpec<SampleProblem> = {
  name: 'sample',
  wgsl,
  bindings: [
    { name: 'logits', kind: 'read-only-storage' }, // (B, V) f32
    { name: 'u', kind: 'read-only-storage' }, // (B) f32 in [0, 1)
    { name: 'bias', kind: 'read-only-storage' }, // (B, V) f32, or a dummy when !useBias
    { name: 'allowMask', kind: 'read-only-storage' }, // (B, W) u32 bitset, 1 = allowed; or a dummy when !useMask
    { name: 'tokens', kind: 'storage' }, // (B) u32
    { name: 'logp', kind: 'storage' }, // (B) f32
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [WG],
  dispatch: (p, limits) => linearWorkgroups(p.B, 1, limits),
  uniforms: (p) => {
    checkSample(p);
    const u = new DataView(new ArrayBuffer(32));
    u.setUint32(0, p.B, true);
    u.setUint32(4, p.V, true);
    u.setFloat32(8, invTemperature(p.temperature), true);
    u.setUint32(12, p.temperature === 0 ? 1 : 0, true);
    u.setUint32(16, p.topK, true);
    u.setFloat32(20, p.topP, true);
    u.setUint32(24, (p.useBias ? 1 : 0) | (p.useMask ? 2 : 0), true);
    return new Uint8Array(u.buffer);
  },
};

function checkSample(p: { B: number; V: number; temperature: number; topK: number; topP: number }): void {
  if (!Number.isInteger(p.B) || p.B < 0 || !Number.isInteger(p.V) || p.V < 1 || p.B * p.V > 2 ** 32 - 1)
    throw new Error(`sample: bad shape B=${p.B}, V=${p.V}`);
  if (!(p.temperature >= 0) || !Number.isFinite(p.temperature))
    throw new Error(`sample: temperature must be finite and >= 0, got ${p.temperature}`);
  if (!Number.isInteger(p.topK) || p.topK < 0 || p.topK > 2 ** 32 - 1)
    throw new Error(`sample: topK must be a non-negative integer, got ${p.topK}`);
  if (!(p.topP >= 0 && p.topP <= 1)) throw new Error(`sample: topP must be in [0, 1], got ${p.topP}`);
}

/** f32(1 / T), the factor both sides scale logits by; 1 for greedy. */
function invTemperature(temperature: number): number {
  return temperature === 0 ? 1 : Math.fround(1 / temperature);
}

type SampleOpts = {
  temperature: number;
  topK: number;
  topP: number;
  bias?: ArrayLike<number> | null;
  allowMask?: ArrayLike<number> | null;
};

/** Row r's scaled logits s (V) with the f32 roundings of the kernel, its allowed ids (ascending), m and w. */
function rowSetup(logits: ArrayLike<number>, r: number, V: number, opts: SampleOpts) {
  const invT = invTemperature(opts.temperature);
  const W = Math.ceil(V / 32);
  const s = new Float64Array(V);
  const allowed: number[] = [];
  for (let i = 0; i < V; i++) {
    const x = Math.fround(logits[r * V + i]!);
    const z = opts.bias ? Math.fround(x + Math.fround(opts.bias[r * V + i]!)) : x;
    s[i] = Math.fround(z * invT);
    if (!opts.allowMask || (opts.allowMask[r * W + (i >>> 5)]! >>> (i & 31)) & 1) allowed.push(i);
  }
  let m = -Infinity;
  for (const i of allowed) m = Math.max(m, s[i]!);
  const w = (i: number): number => Math.exp(s[i]! - m);
  return { s, allowed, m, w };
}

/** float64 reference with the kernel's exact choice rule (see the file comment). */
export function sampleRef(
  logits: ArrayLike<number>,
  B: number,
  V: number,
  u: ArrayLike<number>,
  opts: SampleOpts,
): { tokens: Uint32Array; logp: Float64Array } {
  checkSample({ B, V, ...opts });
  const tokens = new Uint32Array(B);
  const logp = new Float64Array(B);
  for (let r = 0; r < B; r++) {
    const { s, allowed, m, w } = rowSetup(logits, r, V, opts);
    if (!allowed.length) {
      tokens[r] = NO_TOKEN;
      logp[r] = NaN;
      continue;
    }
    let tok = allowed.find((i) => s[i] === m)!; // greedy: the lowest id of the max
    if (opts.temperature > 0) {
      const kept = keptSet(allowed, s, w, opts.topK, opts.topP);
      let zS = 0;
      for (const i of kept) zS += w(i);
      const target = Math.fround(u[r]!) * zS;
      let acc = 0;
      tok = -1;
      for (const i of kept) {
        acc += w(i);
        if (target < acc) {
          tok = i;
          break;
        }
      }
      if (tok < 0) tok = kept.filter((i) => w(i) > 0).pop()!; // target rounded up to the total
    }
    let zAll = 0;
    for (const i of allowed) zAll += w(i);
    tokens[r] = tok;
    logp[r] = s[tok]! - m - Math.log(zAll);
  }
  return { tokens, logp };
}

/** The kept set S in ascending id order: top-k over `allowed` (ascending), then top-p over the top-k set. */
function keptSet(allowed: number[], s: Float64Array, w: (i: number) => number, topK: number, topP: number): number[] {
  // no top-k or top-p (the RL presets' sampling): tau is -Infinity, so the sort below would keep
  // every allowed token; skipping it saves sorting the vocabulary for every sampled token
  if (!(topK > 0 && topK < allowed.length) && !(topP < 1)) return allowed.filter((i) => s[i]! >= -Infinity);
  const desc = allowed.slice().sort((a, b) => s[b]! - s[a]!);
  const vk = topK > 0 && topK < allowed.length ? s[desc[topK - 1]!]! : -Infinity;
  const inK = desc.filter((i) => s[i]! >= vk);
  let tau = vk;
  if (topP < 1) {
    let zK = 0;
    for (const i of inK) zK += w(i);
    const need = Math.fround(topP) * zK; // topP is an f32 uniform on the GPU
    let cum = 0;
    for (const i of inK) {
      cum += w(i);
      if (cum >= need) {
        tau = s[i]!;
        break;
      }
    }
  }
  return allowed.filter((i) => s[i]! >= tau);
}

/**
 * The distribution a token is drawn from (B, V): w / sum_S w on the kept set S, 0 elsewhere
 * (one-hot at the argmax for greedy; a zero row when nothing is allowed).
 */
export function sampleDistributionRef(logits: ArrayLike<number>, B: number, V: number, opts: SampleOpts): Float64Array {
  checkSample({ B, V, ...opts });
  const out = new Float64Array(B * V);
  for (let r = 0; r < B; r++) {
    const { s, allowed, m, w } = rowSetup(logits, r, V, opts);
    if (!allowed.length) continue;
    if (opts.temperature === 0) {
      out[r * V + allowed.find((i) => s[i] === m)!] = 1;
      continue;
    }
    const kept = keptSet(allowed, s, w, opts.topK, opts.topP);
    let z = 0;
    for (const i of kept) z += w(i);
    for (const i of kept) out[r * V + i] = w(i) / z;
  }
  return out;
}
