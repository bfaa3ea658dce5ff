/**
 * Grouped-query attention (GQA) over a KV cache, for the Hugging Face decoders (Llama/SmolLM2,
 * Qwen2): kvWriteGqa copies the new rows' k and v into the per-layer caches, attentionGqa
 * attends the new query rows over the cache (Tnew = 1 for a decode step, Tnew > 1 for a
 * prefill), and a flash-decoding pair (attentionGqaSplit + attentionGqaCombine) does the same
 * with the keys of each row split into S ranges, for few rows over a long cache.
 * Shaders: shaders/kv_write_gqa.wgsl, shaders/attention_gqa.wgsl (entry points `main`, `split`),
 * shaders/attention_gqa_combine.wgsl. float64 references: kvWriteGqaRef, attentionGqaRef.
 *
 * Shape legend: B batch, Tnew new rows, NH query heads, NKV kv heads (NKV divides NH; query head
 * h reads kv head h / (NH / NKV)), HS head size (<= 256), W = (NH + 2 NKV) HS the packed qkv row
 * [q NH*HS | k NKV*HS | v NKV*HS], Tmax the KV-cache capacity, pos the absolute position of the
 * first new row (the same for every b), S splits. Row-major f32; start u32.
 *
 * Cache layout: kcache, vcache (B, NKV, Tmax, HS), each kv head's rows contiguous over time,
 * so a decode step reads one contiguous block per (b, kv head).
 *
 * Masking, as attention_decode / attentionDecodeRef: row i of the new rows is at absolute
 * position p = pos + i and sees cache rows j with j == p || start[b] <= j <= p (start (B) u32 is
 * the left padding; a padding query sees only itself). Scores are scaled by 1/sqrt(HS).
 */
import gqaWgsl from '../../shaders/attention_gqa.wgsl';
import combineWgsl from '../../shaders/attention_gqa_combine.wgsl';
import kvWriteWgsl from '../../shaders/kv_write_gqa.wgsl';
import { GpuError } from '../gpu/errors';
import { linearWorkgroups, type KernelSpec, type WorkgroupCount } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { attends, checkCacheRange } from './attention_ref';
import { errorText } from '../util/errors';

/** One attention step of a layer: B sequences, Tnew new rows each at positions pos .. pos + Tnew - 1. */
export interface AttentionGqaProblem {
  B: number;
  Tnew: number;
  NH: number;
  NKV: number;
  HS: number;
  Tmax: number;
  pos: number;
}

/** The flash-decoding kernels' problem: the keys of each row in `splits` ranges. */
export interface AttentionGqaSplitProblem extends AttentionGqaProblem {
  splits: number;
}

/** Largest head size the default pipelines serve (the q row and accumulator live in shared memory). */
export const GQA_MAX_HS = 256;
/** Most splits selectAttentionGqa picks. */
export const GQA_MAX_SPLITS = 32;
const GQA_WG = 64;

/** W = (NH + 2 NKV) HS, the width of a packed qkv row. */
export function gqaRowWidth(p: AttentionGqaProblem): number {
  return (p.NH + 2 * p.NKV) * p.HS;
}

/** Throws unless the sizes describe a valid GQA problem whose new rows fit in the cache. */
export function checkGqaProblem(p: AttentionGqaProblem, what: string, maxHS = GQA_MAX_HS): void {
  for (const k of ['B', 'Tnew', 'NH', 'NKV', 'HS', 'Tmax'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
  if (p.NH % p.NKV !== 0) throw new Error(`${what}: NKV=${p.NKV} does not divide NH=${p.NH}`);
  if (p.HS > maxHS) throw new Error(`${what}: head size ${p.HS} exceeds MAX_HS=${maxHS}`);
  checkCacheRange(what, p.Tnew, p.Tmax, p.pos);
}

function usage(name: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    throw new GpuError('usage', errorText(e), `kernel "${name}"`);
  }
}

/** 28 bytes: B, Tnew, NH, NKV, HS, Tmax, pos as u32 (kv_write_gqa's Params). */
function kvUniforms(p: AttentionGqaProblem): Uint32Array<ArrayBuffer> {
  return new Uint32Array([p.B, p.Tnew, p.NH, p.NKV, p.HS, p.Tmax, p.pos]);
}

/** 36 bytes: B, Tnew, NH, NKV, HS, Tmax, pos, S as u32, scale = 1/sqrt(HS) as f32 (attention_gqa's Params). */
function attentionUniforms(p: AttentionGqaProblem & { splits?: number }): Uint8Array<ArrayBuffer> {
  const u = new DataView(new ArrayBuffer(36));
  [p.B, p.Tnew, p.NH, p.NKV, p.HS, p.Tmax, p.pos, p.splits ?? 1].forEach((v, i) => u.setUint32(4 * i, v, true));
  u.setFloat32(32, 1 / Math.sqrt(p.HS), true);
  return new Uint8Array(u.buffer);
}

/** kcache, vcache (B, NKV, Tmax, HS) rows [pos, pos + Tnew) = the k, v parts of qkv (B, Tnew, W). */
export const kvWriteGqa: KernelSpec<AttentionGqaProblem> = {
  name: 'kv_write_gqa',
  wgsl: kvWriteWgsl,
  bindings: [
    { name: 'qkv', kind: 'read-only-storage' }, // (B, Tnew, W)
    { name: 'kcache', kind: 'storage' }, // (B, NKV, Tmax, HS)
    { name: 'vcache', kind: 'storage' }, // (B, NKV, Tmax, HS)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [64],
  dispatch: (p, limits) => {
    usage('kv_write_gqa', () => checkGqaProblem(p, 'kv_write_gqa', Infinity));
    return linearWorkgroups(p.B * p.Tnew * p.NKV * p.HS, 64, limits);
  },
  uniforms: kvUniforms,
};

function checkPow2(wg: number, what: string): void {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`${what}: workgroup size must be a power of two, got ${wg}`);
}

/**
 * out (B, Tnew, NH*HS): the queries of qkv (B, Tnew, W) over the cache rows they see, one
 * workgroup of `wg` threads (a power of two) per (row, query head, b); head sizes up to maxHS.
 * Run kvWriteGqa for the same rows first.
 */
export function attentionGqaVariant(wg = GQA_WG, maxHS = GQA_MAX_HS): KernelSpec<AttentionGqaProblem> {
  checkPow2(wg, 'attention_gqa');
  return {
    name: 'attention_gqa',
    wgsl: gqaWgsl,
    entryPoint: 'main',
    bindings: [
      { name: 'qkv', kind: 'read-only-storage' }, // (B, Tnew, W)
      { name: 'kcache', kind: 'read-only-storage' }, // (B, NKV, Tmax, HS)
      { name: 'vcache', kind: 'read-only-storage' }, // (B, NKV, Tmax, HS)
      { name: 'start', kind: 'read-only-storage' }, // (B) u32
      { name: 'out', kind: 'storage' }, // (B, Tnew, NH*HS)
      { name: 'params', kind: 'uniform' },
    ],
    workgroupSize: [wg],
    constants: { MAX_HS: maxHS },
    dispatch: (p): WorkgroupCount => {
      usage('attention_gqa', () => checkGqaProblem(p, 'attention_gqa', maxHS));
      return [p.Tnew, p.NH, p.B];
    },
    uniforms: attentionUniforms,
  };
}

/** The default single-pass kernel: 64 threads, HS <= 256. */
export const attentionGqa = attentionGqaVariant();

function checkSplits(p: AttentionGqaSplitProblem, what: string): void {
  if (!Number.isInteger(p.splits) || p.splits < 1) throw new Error(`${what}: splits must be a positive integer, got ${p.splits}`);
}

/**
 * Flash-decoding, kernel 1: scratch (B, Tnew, NH, S, HS + 2) = per split s of the visible keys
 * of each (b, row, head) the partial [m, l, acc (HS)] (running max, sum of exp(score - m),
 * unnormalised output). One workgroup of `wg` threads per (split, row, head, b).
 */
export function attentionGqaSplitVariant(wg = GQA_WG, maxHS = GQA_MAX_HS): KernelSpec<AttentionGqaSplitProblem> {
  checkPow2(wg, 'attention_gqa_split');
  return {
    name: 'attention_gqa_split',
    wgsl: gqaWgsl,
    entryPoint: 'split',
    bindings: [
      { name: 'qkv', kind: 'read-only-storage' }, // (B, Tnew, W)
      { name: 'kcache', kind: 'read-only-storage' }, // (B, NKV, Tmax, HS)
      { name: 'vcache', kind: 'read-only-storage' }, // (B, NKV, Tmax, HS)
      { name: 'start', kind: 'read-only-storage' }, // (B) u32
      { name: 'scratch', kind: 'storage' }, // (B, Tnew, NH, S, HS + 2)
      { name: 'params', kind: 'uniform' },
    ],
    workgroupSize: [wg],
    constants: { MAX_HS: maxHS },
    dispatch: (p): WorkgroupCount => {
      usage('attention_gqa_split', () => {
        checkGqaProblem(p, 'attention_gqa_split', maxHS);
        checkSplits(p, 'attention_gqa_split');
      });
      return [p.splits * p.Tnew, p.NH, p.B];
    },
    uniforms: attentionUniforms,
  };
}

/** The default split kernel: 64 threads, HS <= 256. */
export const attentionGqaSplit = attentionGqaSplitVariant();

/** Flash-decoding, kernel 2: out (B, Tnew, NH*HS) from the S partials of each row in scratch. */
export const attentionGqaCombine: KernelSpec<AttentionGqaSplitProblem> = {
  name: 'attention_gqa_combine',
  wgsl: combineWgsl,
  bindings: [
    { name: 'scratch', kind: 'read-only-storage' }, // (B, Tnew, NH, S, HS + 2)
    { name: 'out', kind: 'storage' }, // (B, Tnew, NH*HS)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [64],
  dispatch: (p, limits) => {
    usage('attention_gqa_combine', () => {
      checkGqaProblem(p, 'attention_gqa_combine', Infinity);
      checkSplits(p, 'attention_gqa_combine');
    });
    return linearWorkgroups(p.B * p.Tnew * p.NH * p.HS, 64, limits);
  },
  uniforms: attentionUniforms,
};

/** Floats of the split kernels' scratch: B * Tnew * NH * splits * (HS + 2). */
export function attentionGqaScratchFloats(p: AttentionGqaProblem, splits: number): number {
  return p.B * p.Tnew * p.NH * splits * (p.HS + 2);
}

export type AttentionGqaChoice = { kind: 'single' } | { kind: 'split'; splits: number };

/**
 * A guess at a GPU's compute units (WebGPU does not tell): 64 sits between integrated GPUs
 * (8 to 32) and large discrete ones (an H200 has 132 SMs).
 */
export const GQA_COMPUTE_UNITS_GUESS = 64;
/** Fewest keys (the longest row's visible keys) worth splitting. */
export const GQA_SPLIT_MIN_KEYS = 256;
/** Fewest keys a split should get (one chunk of the default workgroup). */
const GQA_KEYS_PER_SPLIT = 64;

/**
 * Kernel selection. The single kernel runs one workgroup per (b, row, query head): B*NH*Tnew
 * workgroups. When those are few, fewer than 4 per compute unit (4 * computeUnits, with
 * GQA_COMPUTE_UNITS_GUESS = 64 by default), and the longest row sees at least
 * GQA_SPLIT_MIN_KEYS = 256 keys (pos + Tnew, before left padding), the GPU would idle while
 * a few workgroups walk a long cache: then split the keys of each row into
 * S = min(ceil(4 * computeUnits / workgroups), floor(keys / 64), GQA_MAX_SPLITS) ranges (each
 * of at least one 64-key chunk), and S * Tnew must fit the dispatch's x dimension. Otherwise,
 * or when S < 2, the single kernel.
 * Example: a decode step of B = 1 with NH = 9 (SmolLM2-135M) over 1000 cached rows: 9
 * workgroups, S = min(29, 15, 32) = 15.
 */
export function selectAttentionGqa(
  p: AttentionGqaProblem,
  limits: GPUSupportedLimits,
  opts: { computeUnits?: number } = {},
): AttentionGqaChoice {
  const target = 4 * (opts.computeUnits ?? GQA_COMPUTE_UNITS_GUESS);
  const workgroups = p.B * p.NH * p.Tnew;
  const keys = p.pos + p.Tnew;
  if (workgroups >= target || keys < GQA_SPLIT_MIN_KEYS) return { kind: 'single' };
  const splits = Math.min(
    Math.ceil(target / workgroups),
    Math.floor(keys / GQA_KEYS_PER_SPLIT),
    GQA_MAX_SPLITS,
    Math.floor(limits.maxComputeWorkgroupsPerDimension / p.Tnew),
  );
  return splits >= 2 ? { kind: 'split', splits } : { kind: 'single' };
}

/** The GPU buffers of one attention step; scratch is needed only for the split kernels. */
export interface AttentionGqaBuffers {
  qkv: BufferBinding; // (B, Tnew, W)
  kcache: BufferBinding; // (B, NKV, Tmax, HS)
  vcache: BufferBinding; // (B, NKV, Tmax, HS)
  start: BufferBinding; // (B) u32
  out: BufferBinding; // (B, Tnew, NH*HS)
  scratch?: BufferBinding | null; // (B, Tnew, NH, S, HS + 2), attentionGqaScratchFloats(p, S) floats
}

/** Bytes a binding covers: a whole buffer, or a range of one. */
function bindingBytes(b: BufferBinding): number {
  if ('buffer' in b) return b.size ?? b.buffer.size - (b.offset ?? 0);
  return b.size;
}

/**
 * Records attention for one step: the kernel `opts.force` names, else selectAttentionGqa's
 * choice; compiles (cached by rt.compile) and dispatches. A split choice needs b.scratch: when
 * it is missing or holds fewer splits than chosen, the splits shrink to what it holds (the
 * single kernel below 2), unless forced, which throws. `opts.wg` changes the workgroup size (a
 * power of two; tests use small ones to cross many chunks). Returns what ran.
 */
export async function recordAttentionGqa(
  rt: GpuRuntime,
  rec: Recorder,
  b: AttentionGqaBuffers,
  p: AttentionGqaProblem,
  opts: { force?: AttentionGqaChoice; wg?: number; computeUnits?: number } = {},
): Promise<AttentionGqaChoice> {
  usage('attention_gqa', () => checkGqaProblem(p, 'attention_gqa'));
  let choice = opts.force ?? selectAttentionGqa(p, rt.limits, { computeUnits: opts.computeUnits });
  if (choice.kind === 'split') {
    const fits = b.scratch ? Math.floor(bindingBytes(b.scratch) / (4 * attentionGqaScratchFloats(p, 1))) : 0;
    if (fits < choice.splits) {
      if (opts.force) {
        throw new GpuError(
          'usage',
          `${choice.splits} splits need a scratch of ${4 * attentionGqaScratchFloats(p, choice.splits)} bytes; it holds ${fits} splits`,
          'kernel "attention_gqa_split"',
        );
      }
      choice = fits >= 2 ? { kind: 'split', splits: fits } : { kind: 'single' };
    }
  }
  const wg = opts.wg ?? GQA_WG;
  const attention = { qkv: b.qkv, kcache: b.kcache, vcache: b.vcache, start: b.start };
  if (choice.kind === 'single') {
    rec.dispatch(await rt.compile(wg === GQA_WG ? attentionGqa : attentionGqaVariant(wg)), { ...attention, out: b.out }, p);
  } else {
    const sp: AttentionGqaSplitProblem = { ...p, splits: choice.splits };
    const [split, combine] = await Promise.all([
      rt.compile(wg === GQA_WG ? attentionGqaSplit : attentionGqaSplitVariant(wg)),
      rt.compile(attentionGqaCombine),
    ]);
    rec.dispatch(split, { ...attention, scratch: b.scratch! }, sp);
    rec.dispatch(combine, { scratch: b.scratch!, out: b.out }, sp);
  }
  return choice;
}

/** float64 reference: kcache, vcache (B, NKV, Tmax, HS) rows [pos, pos + Tnew) = the k, v parts of qkv (B, Tnew, W). */
export function kvWriteGqaRef(kcache: Float64Array, vcache: Float64Array, qkv: ArrayLike<number>, p: AttentionGqaProblem): void {
  checkGqaProblem(p, 'kvWriteGqaRef', Infinity);
  const { B, Tnew, NH, NKV, HS, Tmax, pos } = p;
  const W = gqaRowWidth(p);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < Tnew; t++) {
      const k = (b * Tnew + t) * W + NH * HS;
      for (let g = 0; g < NKV; g++) {
        const dst = ((b * NKV + g) * Tmax + pos + t) * HS;
        for (let d = 0; d < HS; d++) {
          kcache[dst + d] = qkv[k + g * HS + d]!;
          vcache[dst + d] = qkv[k + (NKV + g) * HS + d]!;
        }
      }
    }
  }
}

/**
 * float64 reference: out (B, Tnew, NH*HS), the queries of qkv (B, Tnew, W) at absolute positions
 * pos .. pos+Tnew-1, query head h attending over kv head h / (NH / NKV) of kcache, vcache
 * (B, NKV, Tmax, HS), rows j with attends(pos + i, j, start[b]); start (B) optional left padding.
 * The caller has already written the new rows' k and v into the cache (kvWriteGqaRef).
 */
export function attentionGqaRef(
  out: Float64Array,
  qkv: ArrayLike<number>,
  kcache: ArrayLike<number>,
  vcache: ArrayLike<number>,
  start: ArrayLike<number> | null | undefined,
  p: AttentionGqaProblem,
): void {
  checkGqaProblem(p, 'attentionGqaRef', Infinity);
  const { B, Tnew, NH, NKV, HS, Tmax, pos } = p;
  const W = gqaRowWidth(p);
  const group = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  const e = new Float64Array(Tmax);
  for (let b = 0; b < B; b++) {
    const s = start ? start[b]! : 0;
    for (let i = 0; i < Tnew; i++) {
      const t = pos + i;
      for (let h = 0; h < NH; h++) {
        const q = (b * Tnew + i) * W + h * HS;
        const cache = (b * NKV + Math.floor(h / group)) * Tmax * HS;
        let max = -Infinity;
        for (let j = 0; j <= t; j++) {
          if (!attends(t, j, s)) continue;
          let dot = 0;
          for (let d = 0; d < HS; d++) dot += qkv[q + d]! * kcache[cache + j * HS + d]!;
          e[j] = dot * scale;
          if (e[j]! > max) max = e[j]!;
        }
        let sum = 0;
        for (let j = 0; j <= t; j++) if (attends(t, j, s)) sum += e[j] = Math.exp(e[j]! - max);
        const o = (b * Tnew + i) * NH * HS + h * HS;
        for (let d = 0; d < HS; d++) out[o + d] = 0;
        for (let j = 0; j <= t; j++) {
          if (!attends(t, j, s)) continue;
          const a = e[j]! / sum;
          for (let d = 0; d < HS; d++) out[o + d]! += a * vcache[cache + j * HS + d]!;
        }
      }
    }
  }
}
