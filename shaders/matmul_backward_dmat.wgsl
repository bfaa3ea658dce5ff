// The two matrix gradients of out = inp · weight^T, as one accumulating product
//   grad (R, S) += op(a) (R, Q) · b (Q, S)
// with op(a) = a, or a^T when A_T (a stored as (Q, R)):
//   dinp    (M, K) += dout (M, N) · weight (N, K):  R = M, Q = N, S = K, a = dout, A_T = false
//   dweight (N, K) += dout^T (N, M) · inp (M, K):    R = N, Q = M, S = K, a = dout, A_T = true
// Shape legend: M rows (= BT), K inner (= C), N output columns (= OC). Row-major f32.
//
// Each output element is owned by exactly one thread, which sums over Q in a fixed order and adds
// to grad once: deterministic, no atomics, no races (dweight's reduction over the M rows happens
// inside that thread's Q loop).
//
// Strided dout: `a` (dout in both products) is read at row stride lda from column acol0, so the
// product can take the column block [acol0, acol0 + N) of a wider (M, lda) matrix: the LM head of
// a vocabulary stored in chunks differentiates each chunk from its block of the (M, V) dlogits.
// lda = N, acol0 = 0 is the dense dout. b and grad are always dense.
//
// Entry points, as in matmul_forward.wgsl:
//   main   tiled: BM x BN tile per workgroup (BM = 4 * WG_Y, BN = 4 * WG_X), 4 x 4 outputs per thread
//          at rows ty + WG_Y * i, columns tx + WG_X * j; Q walked in slices of BK = 8 in workgroup
//          memory. Each slice is loaded along the matrix's contiguous dimension.
//   naive  one output per thread.
//   direct, direct4, direct4a  no workgroup memory (software adapters), below.

struct Params {
  R: u32,
  Q: u32,
  S: u32,
  lda: u32,    // row stride of a (Q when a is (R, Q), R when A_T; the dense width N either way)
  acol0: u32,  // first column of a read (0 when dense)
}

@group(0) @binding(0) var<storage, read_write> grad: array<f32>;  // (R, S), accumulated
@group(0) @binding(1) var<storage, read> a: array<f32>;            // (R, lda) columns [acol0, acol0 + Q), or (Q, lda) columns [acol0, acol0 + R) when A_T
// @binding(2) b (Q, S): declared with `fn bAt(i) -> f32` by the appended weightReader
// (kernels/weight_format.ts): f32, or a frozen weight packed as f16 / bf16 (dinp only).
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;
override A_T: bool = false;

const BK: u32 = 8u;
override BM: u32 = 4u * WG_Y;
override BN: u32 = 4u * WG_X;
override A_TILE: u32 = BK * BM;
override B_TILE: u32 = BK * BN;

var<workgroup> tileA: array<f32, A_TILE>;  // (BK, BM): tileA[q * BM + r] = op(a)[r0 + r, q0 + q]
var<workgroup> tileB: array<f32, B_TILE>;  // (BK, BN): tileB[q * BN + c] = b[q0 + q, s0 + c]

fn loadA(r: u32, q: u32) -> f32 {
  if (r >= params.R || q >= params.Q) {
    return 0.0;
  }
  if (A_T) {
    return a[q * params.lda + params.acol0 + r];
  }
  return a[r * params.lda + params.acol0 + q];
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(
  @builtin(local_invocation_id) local: vec3u,
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
) {
  let R = params.R;
  let Q = params.Q;
  let S = params.S;
  let r0 = wid.y * BM;
  let s0 = wid.x * BN;
  let tx = local.x;
  let ty = local.y;
  let threads = WG_X * WG_Y;

  var acc: array<vec4f, 4>;  // acc[i][j]: grad[r0 + ty + WG_Y * i, s0 + tx + WG_X * j]
  for (var q0 = 0u; q0 < Q; q0 += BK) {
    for (var e = lid; e < A_TILE; e += threads) {
      // consecutive threads walk a's contiguous dimension: q when a is (R, Q), r when (Q, R)
      var r = e / BK;
      var q = e % BK;
      if (A_T) {
        r = e % BM;
        q = e / BM;
      }
      tileA[q * BM + r] = loadA(r0 + r, q0 + q);
    }
    for (var e = lid; e < B_TILE; e += threads) {
      let c = e % BN;
      let q = e / BN;
      var v = 0.0;
      if (q0 + q < Q && s0 + c < S) {
        v = bAt((q0 + q) * S + s0 + c);
      }
      tileB[q * BN + c] = v;
    }
    workgroupBarrier();
    for (var q = 0u; q < BK; q++) {
      let ra = q * BM + ty;
      let va = vec4f(tileA[ra], tileA[ra + WG_Y], tileA[ra + 2u * WG_Y], tileA[ra + 3u * WG_Y]);
      let rb = q * BN + tx;
      let vb = vec4f(tileB[rb], tileB[rb + WG_X], tileB[rb + 2u * WG_X], tileB[rb + 3u * WG_X]);
      acc[0] += va.x * vb;
      acc[1] += va.y * vb;
      acc[2] += va.z * vb;
      acc[3] += va.w * vb;
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 4u; i++) {
    let r = r0 + ty + WG_Y * i;
    for (var j = 0u; j < 4u; j++) {
      let s = s0 + tx + WG_X * j;
      if (r < R && s < S) {
        grad[r * S + s] += acc[i][j];
      }
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn naive(@builtin(global_invocation_id) gid: vec3u) {
  let s = gid.x;
  let r = gid.y;
  if (r >= params.R || s >= params.S) {
    return;
  }
  var sum = 0.0;
  for (var q = 0u; q < params.Q; q++) {
    sum += loadA(r, q) * bAt(q * params.S + s);
  }
  grad[r * params.S + s] += sum;
}

// direct: no workgroup memory (software adapters; see matmul_forward.wgsl's `direct`). Each thread
// owns a 4 x 4 block of contiguous rows r0..r0+3 and columns s0..s0+3 and walks Q once, reading
// four values of op(a) and four contiguous values of b a step.
@compute @workgroup_size(WG_X, WG_Y)
fn direct(@builtin(global_invocation_id) gid: vec3u) {
  let R = params.R;
  let Q = params.Q;
  let S = params.S;
  let r0 = gid.y * 4u;
  let s0 = gid.x * 4u;
  if (r0 >= R || s0 >= S) {
    return;
  }
  let s1 = min(s0 + 1u, S - 1u);
  let s2 = min(s0 + 2u, S - 1u);
  let s3 = min(s0 + 3u, S - 1u);
  var acc: array<vec4f, 4>;  // acc[i][j]: grad[r0 + i, s0 + j]
  for (var q = 0u; q < Q; q++) {
    let b = vec4f(bAt(q * S + s0), bAt(q * S + s1), bAt(q * S + s2), bAt(q * S + s3));
    acc[0] += loadA(r0, q) * b;
    acc[1] += loadA(r0 + 1u, q) * b;
    acc[2] += loadA(r0 + 2u, q) * b;
    acc[3] += loadA(r0 + 3u, q) * b;
  }
  for (var i = 0u; i < 4u; i++) {
    for (var j = 0u; j < 4u; j++) {
      if (r0 + i < R && s0 + j < S) {
        grad[(r0 + i) * S + s0 + j] += acc[i][j];
      }
    }
  }
}

// grad[r, 4j..4j+3] += v (S a multiple of 4): the four-wide direct kernels' store.
fn addRow4(r: u32, j: u32, v: vec4f) {
  let g = r * params.S + 4u * j;
  grad[g] += v.x;
  grad[g + 1u] += v.y;
  grad[g + 2u] += v.z;
  grad[g + 3u] += v.w;
}

// direct4: `direct` for S a multiple of 4, b read four contiguous elements a load (bAt4; the
// appended reader is weightReader4, b bound as vec4 of f32 or vec2 of packed words).
@compute @workgroup_size(WG_X, WG_Y)
fn direct4(@builtin(global_invocation_id) gid: vec3u) {
  let R = params.R;
  let Q = params.Q;
  let S4 = params.S / 4u;
  let r0 = gid.y * 4u;
  let j = gid.x;  // columns 4j..4j+3
  if (r0 >= R || j >= S4) {
    return;
  }
  var acc: array<vec4f, 4>;  // acc[i]: grad[r0 + i, 4j..4j+3]
  for (var q = 0u; q < Q; q++) {
    let b = bAt4(q * S4 + j);
    acc[0] += loadA(r0, q) * b;
    acc[1] += loadA(r0 + 1u, q) * b;
    acc[2] += loadA(r0 + 2u, q) * b;
    acc[3] += loadA(r0 + 3u, q) * b;
  }
  for (var i = 0u; i < 4u; i++) {
    if (r0 + i < R) {
      addRow4(r0 + i, j, acc[i]);
    }
  }
}

// direct4a: direct4 with op(a) read four values a load as well, through a4 (binding 1 viewed as
// vec4; only this entry point uses it). Needs lda and acol0 multiples of 4, and, for the four
// values to be one aligned vec4, Q (dinp: four consecutive q of a row) or R (dweight, A_T: the
// four rows r0..r0+3 at one q) a multiple of 4.
@group(0) @binding(1) var<storage, read> a4: array<vec4f>;

@compute @workgroup_size(WG_X, WG_Y)
fn direct4a(@builtin(global_invocation_id) gid: vec3u) {
  let R = params.R;
  let Q = params.Q;
  let S4 = params.S / 4u;
  let lda4 = params.lda / 4u;
  let ac4 = params.acol0 / 4u;
  let r0 = gid.y * 4u;
  let j = gid.x;  // columns 4j..4j+3
  if (r0 >= R || j >= S4) {
    return;
  }
  var acc: array<vec4f, 4>;  // acc[i]: grad[r0 + i, 4j..4j+3]
  if (A_T) {
    let c = ac4 + r0 / 4u;  // a[q, acol0 + r0 .. r0 + 3]
    for (var q = 0u; q < Q; q++) {
      let x = a4[q * lda4 + c];
      let b = bAt4(q * S4 + j);
      acc[0] += x.x * b;
      acc[1] += x.y * b;
      acc[2] += x.z * b;
      acc[3] += x.w * b;
    }
  } else {
    // rows past R are clamped to the last one: read, never stored
    let a0 = r0 * lda4 + ac4;
    let a1 = min(r0 + 1u, R - 1u) * lda4 + ac4;
    let a2 = min(r0 + 2u, R - 1u) * lda4 + ac4;
    let a3 = min(r0 + 3u, R - 1u) * lda4 + ac4;
    for (var q4 = 0u; q4 < Q / 4u; q4++) {
      let x0 = a4[a0 + q4];
      let x1 = a4[a1 + q4];
      let x2 = a4[a2 + q4];
      let x3 = a4[a3 + q4];
      // the four q of the vec4s, written out (constant component indices; SwiftShader does not
      // unroll a loop over them)
      let q = 4u * q4 * S4 + j;
      let b0 = bAt4(q);
      let b1 = bAt4(q + S4);
      let b2 = bAt4(q + 2u * S4);
      let b3 = bAt4(q + 3u * S4);
      acc[0] += x0.x * b0 + x0.y * b1 + x0.z * b2 + x0.w * b3;
      acc[1] += x1.x * b0 + x1.y * b1 + x1.z * b2 + x1.w * b3;
      acc[2] += x2.x * b0 + x2.y * b1 + x2.z * b2 + x2.w * b3;
      acc[3] += x3.x * b0 + x3.y * b1 + x3.z * b2 + x3.w * b3;
    }
  }
  for (var i = 0u; i < 4u; i++) {
    if (r0 + i < R) {
      addRow4(r0 + i, j, acc[i]);
    }
  }
}
