/**
 * float64 references of causal multi-head self-attention (llm.c layout), its backward, and the
 * KV-cache kernels. Pure CPU code: the CPU backend is built from these, and every GPU kernel in
 * attention.ts / attention_kv.ts is tested against them.
 *
 * Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size, Tnew new rows of
 * a generation step, Tmax the KV-cache capacity. Row-major; qkv rows are [q (C) | k (C) | v (C)]
 * and head h uses channels h*HS .. (h+1)*HS of each part.
 *
 * Masking: query t attends to keys j with start[b] <= j <= t (causal, left padding masked); a
 * query that is itself padding (t < start[b]) attends only to itself, so no row is all-masked.
 */

/** Whether query position t sees key position j when the sequence starts at s (left padding). */
export function attends(t: number, j: number, s: number): boolean {
  return j === t || (s <= j && j <= t);
}

/** Throws unless the sizes describe a valid attention problem. */
export function checkAttentionShape(what: string, B: number, T: number, C: number, NH: number): number {
  for (const [name, v] of [
    ['B', B],
    ['T', T],
    ['C', C],
    ['NH', NH],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`${what}: ${name} must be a positive integer, got ${v}`);
  }
  if (C % NH !== 0) throw new Error(`${what}: C=${C} is not divisible by NH=${NH}`);
  return C / NH;
}

function startOf(start: ArrayLike<number> | null | undefined, b: number): number {
  return start ? start[b]! : 0;
}

/**
 * out (B, T, C), att (B, NH, T, T) from qkv (B, T, 3C); start (B) optional left padding.
 * att holds the softmax probabilities, 0 where masked.
 */
export function attentionForwardRef(
  out: Float64Array,
  att: Float64Array,
  qkv: ArrayLike<number>,
  B: number,
  T: number,
  C: number,
  NH: number,
  start?: ArrayLike<number> | null,
): void {
  const HS = checkAttentionShape('attentionForwardRef', B, T, C, NH);
  const C3 = 3 * C;
  const scale = 1 / Math.sqrt(HS);
  for (let b = 0; b < B; b++) {
    const s = startOf(start, b);
    for (let t = 0; t < T; t++) {
      const q = (b * T + t) * C3;
      for (let h = 0; h < NH; h++) {
        const row = ((b * NH + h) * T + t) * T;
        // pre[j] = scale * q_t . k_j, max over the visible keys
        let max = -Infinity;
        for (let j = 0; j < T; j++) {
          if (!attends(t, j, s)) continue;
          const k = (b * T + j) * C3 + C;
          let dot = 0;
          for (let d = 0; d < HS; d++) dot += qkv[q + h * HS + d]! * qkv[k + h * HS + d]!;
          att[row + j] = dot * scale;
          if (dot * scale > max) max = dot * scale;
        }
        // att[j] = exp(pre[j] - max) / sum, 0 where masked
        let sum = 0;
        for (let j = 0; j < T; j++) {
          if (attends(t, j, s)) sum += att[row + j] = Math.exp(att[row + j]! - max);
          else att[row + j] = 0;
        }
        for (let j = 0; j < T; j++) att[row + j]! /= sum;
        // out_t = sum_j att[j] v_j
        const o = (b * T + t) * C + h * HS;
        for (let d = 0; d < HS; d++) out[o + d] = 0;
        for (let j = 0; j < T; j++) {
          const a = att[row + j]!;
          if (a === 0) continue;
          const v = (b * T + j) * C3 + 2 * C + h * HS;
          for (let d = 0; d < HS; d++) out[o + d]! += a * qkv[v + d]!;
        }
      }
    }
  }
}

/**
 * dqkv (B, T, 3C) += gradient of attention, from dout (B, T, C), qkv (B, T, 3C) and the saved
 * att (B, NH, T, T). Accumulates, like every llm.c backward.
 */
export function attentionBackwardRef(
  dqkv: Float64Array,
  dout: ArrayLike<number>,
  qkv: ArrayLike<number>,
  att: ArrayLike<number>,
  B: number,
  T: number,
  C: number,
  NH: number,
  start?: ArrayLike<number> | null,
): void {
  const HS = checkAttentionShape('attentionBackwardRef', B, T, C, NH);
  const C3 = 3 * C;
  const scale = 1 / Math.sqrt(HS);
  const datt = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    const s = startOf(start, b);
    for (let t = 0; t < T; t++) {
      const q = (b * T + t) * C3;
      const o = (b * T + t) * C;
      for (let h = 0; h < NH; h++) {
        const row = ((b * NH + h) * T + t) * T;
        // backward of out_t = sum_j att[j] v_j: datt[j] = dout_t . v_j, dv_j += att[j] dout_t
        let dot = 0; // sum_j att[j] datt[j]
        for (let j = 0; j < T; j++) {
          if (!attends(t, j, s)) continue;
          const v = (b * T + j) * C3 + 2 * C + h * HS;
          const a = att[row + j]!;
          let dd = 0;
          for (let d = 0; d < HS; d++) {
            dd += dout[o + h * HS + d]! * qkv[v + d]!;
            dqkv[v + d]! += a * dout[o + h * HS + d]!;
          }
          datt[j] = dd;
          dot += a * dd;
        }
        // backward of att = softmax(pre): dpre[j] = att[j] (datt[j] - sum_i att[i] datt[i]);
        // backward of pre[j] = scale * q_t . k_j: dq_t += scale dpre[j] k_j, dk_j += scale dpre[j] q_t
        for (let j = 0; j < T; j++) {
          if (!attends(t, j, s)) continue;
          const dpre = att[row + j]! * (datt[j]! - dot) * scale;
          const k = (b * T + j) * C3 + C + h * HS;
          for (let d = 0; d < HS; d++) {
            dqkv[q + h * HS + d]! += dpre * qkv[k + d]!;
            dqkv[k + d]! += dpre * qkv[q + h * HS + d]!;
          }
        }
      }
    }
  }
}

/** Throws unless rows [pos, pos + Tnew) fit in a cache of Tmax rows. */
export function checkCacheRange(what: string, Tnew: number, Tmax: number, pos: number): void {
  if (!Number.isInteger(Tnew) || Tnew < 1) throw new Error(`${what}: Tnew must be a positive integer, got ${Tnew}`);
  if (!Number.isInteger(pos) || pos < 0) throw new Error(`${what}: pos must be a non-negative integer, got ${pos}`);
  if (pos + Tnew > Tmax) throw new Error(`${what}: rows [${pos}, ${pos + Tnew}) do not fit in a KV cache of Tmax=${Tmax}`);
}

/** kcache, vcache (B, Tmax, C) rows [pos, pos + Tnew) = the k and v parts of qkv (B, Tnew, 3C). */
export function kvWriteRef(
  kcache: Float64Array,
  vcache: Float64Array,
  qkv: ArrayLike<number>,
  B: number,
  Tnew: number,
  C: number,
  Tmax: number,
  pos: number,
): void {
  checkCacheRange('kvWriteRef', Tnew, Tmax, pos);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < Tnew; t++) {
      const src = (b * Tnew + t) * 3 * C;
      const dst = (b * Tmax + pos + t) * C;
      for (let c = 0; c < C; c++) {
        kcache[dst + c] = qkv[src + C + c]!;
        vcache[dst + c] = qkv[src + 2 * C + c]!;
      }
    }
  }
}

/**
 * out (B, Tnew, C): the queries of qkv (B, Tnew, 3C), at absolute positions pos .. pos+Tnew-1,
 * attending over kcache/vcache (B, Tmax, C) rows j with attends(pos + i, j, start[b]). The
 * caller has already written the new rows' k and v into the cache (kvWriteRef).
 */
export function attentionDecodeRef(
  out: Float64Array,
  qkv: ArrayLike<number>,
  kcache: ArrayLike<number>,
  vcache: ArrayLike<number>,
  B: number,
  Tnew: number,
  C: number,
  NH: number,
  Tmax: number,
  pos: number,
  start?: ArrayLike<number> | null,
): void {
  const HS = checkAttentionShape('attentionDecodeRef', B, Tnew, C, NH);
  checkCacheRange('attentionDecodeRef', Tnew, Tmax, pos);
  const scale = 1 / Math.sqrt(HS);
  const p = new Float64Array(Tmax);
  for (let b = 0; b < B; b++) {
    const s = startOf(start, b);
    for (let i = 0; i < Tnew; i++) {
      const t = pos + i;
      const q = (b * Tnew + i) * 3 * C;
      for (let h = 0; h < NH; h++) {
        let max = -Infinity;
        for (let j = 0; j <= t; j++) {
          if (!attends(t, j, s)) continue;
          const k = (b * Tmax + j) * C + h * HS;
          let dot = 0;
          for (let d = 0; d < HS; d++) dot += qkv[q + h * HS + d]! * kcache[k + d]!;
          p[j] = dot * scale;
          if (p[j]! > max) max = p[j]!;
        }
        let sum = 0;
        for (let j = 0; j <= t; j++) if (attends(t, j, s)) sum += p[j] = Math.exp(p[j]! - max);
        const o = (b * Tnew + i) * C + h * HS;
        for (let d = 0; d < HS; d++) out[o + d] = 0;
        for (let j = 0; j <= t; j++) {
          if (!attends(t, j, s)) continue;
          const a = p[j]! / sum;
          const v = (b * Tmax + j) * C + h * HS;
          for (let d = 0; d < HS; d++) out[o + d]! += a * vcache[v + d]!;
        }
      }
    }
  }
}
