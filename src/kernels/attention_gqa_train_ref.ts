/**
 * float64 references of grouped-query attention for training: the full-sequence forward over
 * packed qkv rows, saving the per-row logsumexp, and its backward producing packed d-qkv. Pure
 * CPU code; the GPU kernels in attention_gqa_train.ts are tested against these, and these against
 * finite differences and attentionGqaRef (the KV-cache attention at pos 0 over T cached rows).
 *
 * Shape legend: B batch, T time, NH query heads, NKV kv heads (NKV divides NH; query head h uses
 * kv head g = floor(h / (NH / NKV))), HS head size, W = (NH + 2 NKV) HS the packed qkv row
 * [q NH*HS | k NKV*HS | v NKV*HS]. Row-major; start (B) the left padding.
 *
 * Masking, as attentionGqaRef: query t sees keys j with attends(t, j, start[b]) (j == t or
 * start[b] <= j <= t; a padding query sees only itself, so no row is empty). Scores are scaled by
 * 1/sqrt(HS).
 */
import { attends } from './attention_ref';

/** B sequences of T rows; NH query heads over NKV kv heads of HS channels. */
export interface AttentionGqaTrainProblem {
  B: number;
  T: number;
  NH: number;
  NKV: number;
  HS: number;
}

/** Throws unless the sizes describe a valid GQA problem (NKV divides NH); returns W. */
export function checkGqaTrainProblem(p: AttentionGqaTrainProblem, what: string, maxHS = Infinity): number {
  for (const k of ['B', 'T', 'NH', 'NKV', 'HS'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 1) throw new Error(`${what}: ${k} must be a positive integer, got ${p[k]}`);
  }
  if (p.NH % p.NKV !== 0) throw new Error(`${what}: NKV=${p.NKV} does not divide NH=${p.NH}`);
  if (p.HS > maxHS) throw new Error(`${what}: head size ${p.HS} exceeds MAX_HS=${maxHS}`);
  return (p.NH + 2 * p.NKV) * p.HS;
}

function startOf(start: ArrayLike<number> | null | undefined, b: number): number {
  return start ? start[b]! : 0;
}

/**
 * out (B, T, NH*HS) and lse (B, NH, T) from qkv (B, T, W); start (B) optional left padding.
 *   pre[t, j] = scale q_t . k_j;  lse_t = log sum_{j seen} exp(pre[t, j]);
 *   out_t = sum_{j seen} exp(pre[t, j] - lse_t) v_j
 * with q from head h and k, v from kv head h / (NH / NKV).
 */
export function attentionGqaTrainForwardRef(
  out: Float64Array,
  lse: Float64Array,
  qkv: ArrayLike<number>,
  start: ArrayLike<number> | null | undefined,
  p: AttentionGqaTrainProblem,
): void {
  const W = checkGqaTrainProblem(p, 'attentionGqaTrainForwardRef');
  const { B, T, NH, NKV, HS } = p;
  const heads = headLayouts(W, NH, NKV, HS, T);
  const rows = new Int32Array(T); // sequence b's rows, b * T + j
  for (let b = 0; b < B; b++) {
    const s = startOf(start, b);
    for (let j = 0; j < T; j++) rows[j] = b * T + j;
    for (let t = 0; t < T; t++) {
      // the keys it sees, attends(t, j, s): s..t, or itself alone (a padding query)
      const k0 = t >= s ? s : t;
      for (let h = 0; h < NH; h++)
        lse[(b * NH + h) * T + t] = attendRow(
          out,
          (b * T + t) * NH * HS + h * HS,
          qkv,
          (b * T + t) * W + h * HS,
          rows,
          k0,
          t + 1,
          heads[h]!,
        );
    }
  }
}

/** Where attendRow finds a head's keys and values in a packed qkv row, and its scratch. */
interface AttendLayout {
  W: number;
  kOff: number;
  vOff: number;
  HS: number;
  scale: number;
  /** scratch, at least as long as the longest key list */
  pre: Float64Array;
}

/** Each query head's AttendLayout (query head h reads kv head h / (NH / NKV)), sharing one scratch of `longest`. */
function headLayouts(W: number, NH: number, NKV: number, HS: number, longest: number): AttendLayout[] {
  const pre = new Float64Array(longest);
  const scale = 1 / Math.sqrt(HS);
  return Array.from({ length: NH }, (_, h) => {
    const g = Math.floor(h / (NH / NKV));
    return { W, kOff: (NH + g) * HS, vOff: (NH + NKV + g) * HS, HS, scale, pre };
  });
}

/**
 * One query head's attention over the qkv rows keys[k0..k1), in that order:
 *   out[o, o + HS) = sum_j exp(pre_j - lse) v_j,  pre_j = scale q . k_j,  lse = log sum_j exp(pre_j)
 * with q at qkv[q, q + HS); returns lse. The full-sequence forward and the prefix-tree forward
 * both run it, so a row shared through a tree gets the very numbers it gets in its own sequence.
 */
function attendRow(
  out: Float64Array,
  o: number,
  qkv: ArrayLike<number>,
  q: number,
  keys: ArrayLike<number>,
  k0: number,
  k1: number,
  { W, kOff, vOff, HS, scale, pre }: AttendLayout,
): number {
  let max = -Infinity;
  for (let j = k0; j < k1; j++) {
    const k = keys[j]! * W + kOff;
    let dot = 0;
    for (let d = 0; d < HS; d++) dot += qkv[q + d]! * qkv[k + d]!;
    const x = dot * scale;
    pre[j - k0] = x;
    if (x > max) max = x;
  }
  let sum = 0;
  for (let j = 0; j < k1 - k0; j++) sum += Math.exp(pre[j]! - max);
  const l = max + Math.log(sum);
  for (let d = 0; d < HS; d++) out[o + d] = 0;
  for (let j = k0; j < k1; j++) {
    const a = Math.exp(pre[j - k0]! - l);
    const v = keys[j]! * W + vOff;
    for (let d = 0; d < HS; d++) out[o + d]! += a * qkv[v + d]!;
  }
  return l;
}

/**
 * Causal attention over a prefix tree of rows (model/prefix-tree.ts): out (N, NH*HS) from qkv
 * (N, W), where row u sees the rows chainNodes[chainStart[u] .. chainStart[u + 1]), its
 * ancestors from the root and then itself, in order. A tree whose chains are each sequence's rows
 * is attentionGqaTrainForwardRef without padding; one where sequences share a prompt computes the
 * prompt's rows once. Forward only (no logsumexp is kept).
 */
export function attentionGqaTreeRef(
  out: Float64Array,
  qkv: ArrayLike<number>,
  tree: { chainStart: ArrayLike<number>; chainNodes: ArrayLike<number> },
  p: { N: number; NH: number; NKV: number; HS: number },
): void {
  const { N, NH, NKV, HS } = p;
  const W = checkGqaTrainProblem({ B: 1, T: Math.max(N, 1), NH, NKV, HS }, 'attentionGqaTreeRef');
  if (qkv.length !== N * W) throw new Error(`attentionGqaTreeRef: qkv has ${qkv.length} values, (N, W) = (${N}, ${W}) needs ${N * W}`);
  if (tree.chainStart.length !== N + 1) throw new Error(`attentionGqaTreeRef: ${tree.chainStart.length} chain offsets for ${N} rows`);
  let longest = 0;
  for (let u = 0; u < N; u++) longest = Math.max(longest, tree.chainStart[u + 1]! - tree.chainStart[u]!);
  const heads = headLayouts(W, NH, NKV, HS, longest);
  for (let u = 0; u < N; u++)
    for (let h = 0; h < NH; h++)
      attendRow(out, u * NH * HS + h * HS, qkv, u * W + h * HS, tree.chainNodes, tree.chainStart[u]!, tree.chainStart[u + 1]!, heads[h]!);
}

/**
 * dqkv (B, T, W) += the gradient of attention, from dout (B, T, NH*HS), qkv (B, T, W) and what the
 * forward saved: out (B, T, NH*HS), lse (B, NH, T). Accumulates. Differentiates, per head h
 * (kv head g) and query t, with att[t, j] = exp(pre[t, j] - lse_t) recomputed from lse:
 *   out_t = sum_j att[t, j] v_j       ->  dv_j += att[t, j] dout_t;  datt[t, j] = dout_t . v_j
 *   att = softmax(pre)                 ->  dpre[t, j] = att[t, j] (datt[t, j] - D_t),
 *                                          D_t = sum_j att[t, j] datt[t, j] = dout_t . out_t
 *   pre[t, j] = scale q_t . k_j        ->  dq_t += scale dpre[t, j] k_j;  dk_j += scale dpre[t, j] q_t
 * dk and dv of kv head g sum over the NH / NKV query heads that read it.
 */
export function attentionGqaBackwardRef(
  dqkv: Float64Array,
  dout: ArrayLike<number>,
  qkv: ArrayLike<number>,
  out: ArrayLike<number>,
  lse: ArrayLike<number>,
  start: ArrayLike<number> | null | undefined,
  p: AttentionGqaTrainProblem,
): void {
  const W = checkGqaTrainProblem(p, 'attentionGqaBackwardRef');
  const { B, T, NH, NKV, HS } = p;
  const group = NH / NKV;
  const scale = 1 / Math.sqrt(HS);
  for (let b = 0; b < B; b++) {
    const s = startOf(start, b);
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < NH; h++) {
        const q = (b * T + t) * W + h * HS;
        const o = (b * T + t) * NH * HS + h * HS;
        const g = Math.floor(h / group);
        const kOff = (NH + g) * HS;
        const vOff = (NH + NKV + g) * HS;
        const l = lse[(b * NH + h) * T + t]!;
        let D = 0; // dout_t . out_t
        for (let d = 0; d < HS; d++) D += dout[o + d]! * out[o + d]!;
        for (let j = 0; j <= t; j++) {
          if (!attends(t, j, s)) continue;
          const k = (b * T + j) * W + kOff;
          const v = (b * T + j) * W + vOff;
          let dot = 0;
          let datt = 0;
          for (let d = 0; d < HS; d++) {
            dot += qkv[q + d]! * qkv[k + d]!;
            datt += dout[o + d]! * qkv[v + d]!;
          }
          const att = Math.exp(dot * scale - l);
          const dpre = att * (datt - D) * scale;
          for (let d = 0; d < HS; d++) {
            dqkv[v + d]! += att * dout[o + d]!;
            dqkv[q + d]! += dpre * qkv[k + d]!;
            dqkv[k + d]! += dpre * qkv[q + d]!;
          }
        }
      }
    }
  }
}
