// out (M, N) = act(inp (M, K) · weight (N, K)^T + bias (N)), llm.c's convention (weight is (OC, C)).
// Shape legend: M rows (= BT), K inner (= C), N output columns (= OC). Row-major f32; the weight
// may be stored as packed f16 or bf16 (kernels/weight_format.ts), read widened to f32.
//
// Two entry points, the same bindings and overrides:
//   main   tiled: a workgroup computes a BM x BN tile of out (BM = 4 * WG_Y, BN = 4 * WG_X); each
//          thread a 4 x 4 register block at rows ty + WG_Y * i, columns tx + WG_X * j (strided, so
//          neighbouring threads write neighbouring columns). K is walked in slices of BK = 8 staged
//          in workgroup memory: (BM + BN) * BK * 4 bytes = 4 KiB for the 64 x 64 tile.
//   naive  one output per thread, K looped from global memory (the baseline the bench compares).
// Every load is bounds-checked, so any M, N, K >= 1 works.
//
// Output stride: out[m, n] (and pre) is stored at m * ldo + col0 + n, so a product can fill the
// column block [col0, col0 + N) of a wider matrix with row stride ldo >= col0 + N (the LM head of
// a vocabulary in chunks writes its chunk's logits into one (M, V) buffer). ldo = N, col0 = 0 is
// the dense (M, N) output. The inputs are always dense.
//
// Overrides:
//   HAS_BIAS   add bias (N); when false `bias` may be any buffer (it is not read)
//   GELU       apply the GPT-2 tanh GELU to the sum
//   WRITE_PRE  also write the pre-activation (the sum + bias) to `pre`, which GELU's backward needs;
//              when false `pre` may be any other buffer (it is not written)

// Params, out, pre, bias, params and the overrides WG_X, WG_Y, HAS_BIAS, GELU, WRITE_PRE:
// shaders/lib/matmul_epilogue.wgsl, prepended with gelu() and store().

@group(0) @binding(2) var<storage, read> inp: array<f32>;        // (M, K)
// @binding(3) weight (N, K): declared with `fn weightAt(i) -> f32` by the appended weightReader
// (kernels/weight_format.ts), f32 or packed 16-bit.

const BK: u32 = 8u;  // K slice staged per step
override BM: u32 = 4u * WG_Y;  // tile rows (M)
override BN: u32 = 4u * WG_X;  // tile columns (N)
override A_TILE: u32 = BK * BM;
override B_TILE: u32 = BK * BN;

var<workgroup> tileA: array<f32, A_TILE>;  // (BK, BM): tileA[k * BM + r] = inp[m0 + r, k0 + k]
var<workgroup> tileB: array<f32, B_TILE>;  // (BK, BN): tileB[k * BN + c] = weight[n0 + c, k0 + k]

@compute @workgroup_size(WG_X, WG_Y)
fn main(
  @builtin(local_invocation_id) local: vec3u,
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
) {
  let M = params.M;
  let K = params.K;
  let N = params.N;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tx = local.x;
  let ty = local.y;
  let threads = WG_X * WG_Y;

  var acc: array<vec4f, 4>;  // acc[i][j]: out[m0 + ty + WG_Y * i, n0 + tx + WG_X * j]
  for (var k0 = 0u; k0 < K; k0 += BK) {
    // Stage the slices; consecutive threads read consecutive k (contiguous in both matrices).
    for (var e = lid; e < A_TILE; e += threads) {
      let r = e / BK;
      let k = e % BK;
      let m = m0 + r;
      var v = 0.0;
      if (m < M && k0 + k < K) {
        v = inp[m * K + k0 + k];
      }
      tileA[k * BM + r] = v;
    }
    for (var e = lid; e < B_TILE; e += threads) {
      let c = e / BK;
      let k = e % BK;
      let n = n0 + c;
      var v = 0.0;
      if (n < N && k0 + k < K) {
        v = weightAt(n * K + k0 + k);
      }
      tileB[k * BN + c] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let ra = k * BM + ty;
      let a = vec4f(tileA[ra], tileA[ra + WG_Y], tileA[ra + 2u * WG_Y], tileA[ra + 3u * WG_Y]);
      let rb = k * BN + tx;
      let b = vec4f(tileB[rb], tileB[rb + WG_X], tileB[rb + 2u * WG_X], tileB[rb + 3u * WG_X]);
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 4u; i++) {
    let m = m0 + ty + WG_Y * i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + tx + WG_X * j;
      if (m < M && n < N) {
        store(m, n, acc[i][j]);
      }
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn naive(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m = gid.y;
  if (m >= params.M || n >= params.N) {
    return;
  }
  let K = params.K;
  var sum = 0.0;
  for (var k = 0u; k < K; k++) {
    sum += inp[m * K + k] * weightAt(n * K + k);
  }
  store(m, n, sum);
}

// direct: no workgroup memory, for software adapters (SwiftShader, lavapipe), where a barrier costs
// more than a load the CPU's caches already hold. Each thread computes a 4 x 4 block of
// contiguous rows m0..m0+3 and columns n0..n0+3 straight from global memory, four k at a time as
// dot products (then the tail of K), reading each input and weight element once per block. Rows
// and columns past M and N are clamped to the last one (read, never stored).
@compute @workgroup_size(WG_X, WG_Y)
fn direct(@builtin(global_invocation_id) gid: vec3u) {
  let M = params.M;
  let K = params.K;
  let N = params.N;
  let m0 = gid.y * 4u;
  let n0 = gid.x * 4u;
  if (m0 >= M || n0 >= N) {
    return;
  }
  let a0 = m0 * K;
  let a1 = min(m0 + 1u, M - 1u) * K;
  let a2 = min(m0 + 2u, M - 1u) * K;
  let a3 = min(m0 + 3u, M - 1u) * K;
  let b0 = n0 * K;
  let b1 = min(n0 + 1u, N - 1u) * K;
  let b2 = min(n0 + 2u, N - 1u) * K;
  let b3 = min(n0 + 3u, N - 1u) * K;
  var c0 = vec4f(0.0);
  var c1 = vec4f(0.0);
  var c2 = vec4f(0.0);
  var c3 = vec4f(0.0);
  var k = 0u;
  for (; k + 4u <= K; k += 4u) {
    let x0 = vec4f(inp[a0 + k], inp[a0 + k + 1u], inp[a0 + k + 2u], inp[a0 + k + 3u]);
    let x1 = vec4f(inp[a1 + k], inp[a1 + k + 1u], inp[a1 + k + 2u], inp[a1 + k + 3u]);
    let x2 = vec4f(inp[a2 + k], inp[a2 + k + 1u], inp[a2 + k + 2u], inp[a2 + k + 3u]);
    let x3 = vec4f(inp[a3 + k], inp[a3 + k + 1u], inp[a3 + k + 2u], inp[a3 + k + 3u]);
    let w0 = vec4f(weightAt(b0 + k), weightAt(b0 + k + 1u), weightAt(b0 + k + 2u), weightAt(b0 + k + 3u));
    let w1 = vec4f(weightAt(b1 + k), weightAt(b1 + k + 1u), weightAt(b1 + k + 2u), weightAt(b1 + k + 3u));
    let w2 = vec4f(weightAt(b2 + k), weightAt(b2 + k + 1u), weightAt(b2 + k + 2u), weightAt(b2 + k + 3u));
    let w3 = vec4f(weightAt(b3 + k), weightAt(b3 + k + 1u), weightAt(b3 + k + 2u), weightAt(b3 + k + 3u));
    c0 += vec4f(dot(x0, w0), dot(x0, w1), dot(x0, w2), dot(x0, w3));
    c1 += vec4f(dot(x1, w0), dot(x1, w1), dot(x1, w2), dot(x1, w3));
    c2 += vec4f(dot(x2, w0), dot(x2, w1), dot(x2, w2), dot(x2, w3));
    c3 += vec4f(dot(x3, w0), dot(x3, w1), dot(x3, w2), dot(x3, w3));
  }
  for (; k < K; k++) {
    let w = vec4f(weightAt(b0 + k), weightAt(b1 + k), weightAt(b2 + k), weightAt(b3 + k));
    c0 += inp[a0 + k] * w;
    c1 += inp[a1 + k] * w;
    c2 += inp[a2 + k] * w;
    c3 += inp[a3 + k] * w;
  }
  let c = array<vec4f, 4>(c0, c1, c2, c3);
  for (var i = 0u; i < 4u; i++) {
    for (var j = 0u; j < 4u; j++) {
      if (m0 + i < M && n0 + j < N) {
        store(m0 + i, n0 + j, c[i][j]);
      }
    }
  }
}
