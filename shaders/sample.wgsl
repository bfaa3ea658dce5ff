// Token sampling with temperature, top-k, top-p, an additive logit bias and an allow-mask.
// Shape legend: B rows, V vocab, W = ceil(V / 32) mask words per row.
// The exact semantics (kept set, ties, order, fallbacks) are written out at sampleRef in
// src/kernels/sample.ts, which makes the same choice given the same u. In short, per row:
//   s_i   = f32(f32(logits_i + bias_i) * invTemp)          (invTemp = f32(1 / T), 1 for greedy)
//   A     = allowed ids (mask bit 1), m = max_A s, w_i = exp(s_i - m)
//   greedy: token = lowest id of max_A s
//   else:   K = {i in A : s_i >= k-th largest s over A}      (all of A when topK = 0 or >= |A|)
//           S = {i in K : s_i >= tau}, tau = the largest s with sum_{j in K, s_j >= tau} w_j >= topP * sum_K w
//           token = first i in S (index order) with u * sum_S w < sum_{j in S, j <= i} w_j
//   logp  = (s_token - m) - log sum_A w                    (full distribution, before truncation)
//   no allowed token: token = 0xFFFFFFFF, logp = NaN
// The k-th largest value and tau are found exactly, without a sort, by bisection over the
// order-preserving u32 keys of the f32 values, snapped to the keys present (see main).
// One workgroup per row (folded into 2-D past the per-dimension limit). WG_X must be a power of two.

struct Params {
  rows: u32,     // B
  V: u32,
  invTemp: f32,  // f32(1 / temperature); 1 when greedy
  greedy: u32,   // 1 when temperature == 0
  topK: u32,     // 0 = off
  topP: f32,     // 1 = off
  flags: u32,    // bit 0: add bias; bit 1: apply allowMask
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;       // (B, V)
@group(0) @binding(1) var<storage, read> u: array<f32>;            // (B) uniforms in [0, 1)
@group(0) @binding(2) var<storage, read> bias: array<f32>;         // (B, V), or a dummy when flags bit 0 is 0
@group(0) @binding(3) var<storage, read> allowMask: array<u32>;    // (B, W) bit i % 32 of word i / 32 = 1: allowed; or a dummy
@group(0) @binding(4) var<storage, read_write> tokens: array<u32>; // (B)
@group(0) @binding(5) var<storage, read_write> logp: array<u32>;   // (B) f32 bits, so NaN is stored exactly
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 256;

const NONE = 0xffffffffu;

// What one pass over a row reduces: a count and a mass of the tokens at or above a key, the
// smallest such key, and the largest key below it (with the lowest id holding it).
struct Red {
  count: u32,
  mass: f32,
  kmin: u32,  // smallest key >= the cut (NONE if none)
  kmax: u32,  // largest key < the cut, or the largest key overall when the cut is 0
  imax: u32,  // lowest id holding kmax (NONE if none)
}

var<workgroup> red: array<Red, WG_X>;  // (WG_X)
var<workgroup> scan: array<f32, WG_X>; // (WG_X) chunk sums, then their inclusive prefix sums
var<workgroup> chosen: atomic<u32>;    // smallest claimed token
var<workgroup> lastPos: atomic<u32>;   // 1 + last kept token with positive weight

// Order-preserving map f32 -> u32 (with -0 taken as +0, so equal values have equal keys).
fn key(s: f32) -> u32 {
  var b = bitcast<u32>(s);
  if (b == 0x80000000u) {
    b = 0u;
  }
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unkey(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u));
}

fn isAllowed(row: u32, i: u32) -> bool {
  if ((params.flags & 2u) == 0u) {
    return true;
  }
  let W = (params.V + 31u) / 32u;
  return ((allowMask[row * W + i / 32u] >> (i % 32u)) & 1u) != 0u;
}

fn score(base: u32, i: u32) -> f32 {
  var z = logits[base + i];
  if ((params.flags & 1u) != 0u) {
    z = z + bias[base + i];
  }
  return z * params.invTemp;
}

fn combine(a: Red, b: Red) -> Red {
  var r = Red(a.count + b.count, a.mass + b.mass, min(a.kmin, b.kmin), a.kmax, a.imax);
  if (b.kmax > a.kmax || (b.kmax == a.kmax && b.imax < a.imax)) {
    r.kmax = b.kmax;
    r.imax = b.imax;
  }
  return r;
}

fn reduce(lid: u32, v: Red) -> Red {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG_X / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      red[lid] = combine(red[lid], red[lid + s]);
    }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&red[0]);
}

// One pass over the allowed tokens of a row, split at key `cut`: count, mass (w = exp(s - m),
// when withMass) and smallest key of those >= cut; largest key (lowest id) of those < cut.
// With cut = 0 every token is "at or above" and kmax/imax is left to the caller's first pass.
fn split(lid: u32, row: u32, base: u32, cut: u32, m: f32, withMass: bool) -> Red {
  var r = Red(0u, 0.0, NONE, 0u, NONE);
  for (var i = lid; i < params.V; i += WG_X) {
    if (isAllowed(row, i)) {
      let s = score(base, i);
      let k = key(s);
      if (k >= cut) {
        r.count += 1u;
        if (withMass) {
          r.mass += exp(s - m);
        }
        r.kmin = min(r.kmin, k);
      }
      if (k < cut || cut == 0u) {
        if (r.imax == NONE || k > r.kmax) {  // ids ascend: strict > keeps the lowest id
          r.kmax = k;
          r.imax = i;
        }
      }
    }
  }
  return reduce(lid, r);
}

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) {
    return;  // extra workgroups of a folded dispatch (uniform per workgroup)
  }
  let V = params.V;
  let base = row * V;
  if (lid == 0u) {
    atomicStore(&chosen, NONE);
  }

  // Allowed count, smallest key, and the max (lowest id on ties).
  let all = split(lid, row, base, 0u, 0.0, false);
  if (all.count == 0u) {
    if (lid == 0u) {
      tokens[row] = NONE;
      logp[row] = 0x7fc00000u;  // NaN
    }
    return;
  }
  let kMin = all.kmin;
  let kMax = all.kmax;
  let m = unkey(kMax);
  let zAll = split(lid, row, base, kMin, m, true).mass;

  var tok = all.imax;
  if (params.greedy == 0u) {
    // Both thresholds are searched among the keys present: invariant lo <= answer <= hi with lo
    // and hi actual keys; each pass tests mid in (lo, hi] and snaps lo up to the smallest key
    // >= mid or hi down to the largest key < mid, so it ends after at most 32 passes, and after
    // about log2(distinct keys) in practice.
    // top-k: the largest key t with count(key >= t) >= topK is the key of the k-th largest value.
    var kK = kMin;
    if (params.topK > 0u && params.topK < all.count) {
      var lo = kMin;
      var hi = kMax;
      while (lo < hi) {
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        let r = split(lid, row, base, mid, m, false);
        if (r.count >= params.topK) {
          lo = r.kmin;
        } else {
          hi = r.kmax;
        }
      }
      kK = lo;
    }
    // top-p over the top-k set: the largest key t with mass(key >= t) >= topP * mass(key >= kK).
    var kP = kK;
    if (params.topP < 1.0) {
      var zK = zAll;
      if (kK != kMin) {
        zK = split(lid, row, base, kK, m, true).mass;
      }
      let need = params.topP * zK;
      var lo = kK;
      var hi = kMax;
      while (lo < hi) {
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        let r = split(lid, row, base, mid, m, true);
        if (r.mass >= need) {
          lo = r.kmin;
        } else {
          hi = r.kmax;
        }
      }
      kP = lo;
    }

    // Inverse CDF in index order: invocation lid owns the contiguous chunk [c0, c1).
    let C = (V + WG_X - 1u) / WG_X;
    let c0 = min(lid * C, V);
    let c1 = min(c0 + C, V);
    var csum = 0.0;
    var last = NONE;
    for (var i = c0; i < c1; i++) {
      let s = score(base, i);
      if (isAllowed(row, i) && key(s) >= kP) {
        let w = exp(s - m);
        csum += w;
        if (w > 0.0) {
          last = i;
        }
      }
    }
    scan[lid] = csum;
    workgroupBarrier();
    if (lid == 0u) {
      for (var j = 1u; j < WG_X; j++) {
        scan[j] = scan[j] + scan[j - 1u];  // sequential scan: monotone prefix sums
      }
    }
    let total = workgroupUniformLoad(&scan[WG_X - 1u]);
    let goal = u[row] * total;
    let incl = scan[lid];
    let excl = select(0.0, scan[max(lid, 1u) - 1u], lid > 0u);
    if (goal >= excl && goal < incl) {
      var pick = last;  // rounding fallback: the walk below should find it
      var acc = excl;
      for (var i = c0; i < c1; i++) {
        let s = score(base, i);
        if (isAllowed(row, i) && key(s) >= kP) {
          acc += exp(s - m);
          if (goal < acc) {
            pick = i;
            break;
          }
        }
      }
      atomicMin(&chosen, pick);
    }
    if (last != NONE) {
      atomicMax(&lastPos, last + 1u);
    }
    workgroupBarrier();
    tok = atomicLoad(&chosen);
    if (tok == NONE) {
      tok = atomicLoad(&lastPos) - 1u;  // goal >= total by rounding: the last kept token
    }
  }

  if (lid == 0u) {
    tokens[row] = tok;
    logp[row] = bitcast<u32>((score(base, tok) - m) - log(zAll));
  }
}
