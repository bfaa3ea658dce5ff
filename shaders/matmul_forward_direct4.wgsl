// out (M, N) = act(inp (M, K) · weight (N, K)^T + bias (N)), as matmul_forward.wgsl's `direct`
// (software adapters: no workgroup memory, each thread a 4 x 4 block of contiguous rows
// m0..m0+3 and columns n0..n0+3), for K a multiple of 4: inp is read as vec4 and the weight four
// elements a load (`weightAt4(j)`, elements 4j..4j+3, from the appended weightReader4: vec4 of
// f32, or a vec2 of packed 16-bit words). Rows and columns past M and N are clamped to the last
// one (read, never stored). The epilogue (bias, pre-activation, GELU, strided out) is
// shaders/lib/matmul_epilogue.wgsl, prepended.

// Params, out, pre, bias, params and the overrides: shaders/lib/matmul_epilogue.wgsl, prepended.

@group(0) @binding(2) var<storage, read> inp: array<vec4f>;      // (M, K / 4)
// @binding(3) weight (N, K): `fn weightAt4(j) -> vec4f` from the appended weightReader4

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K4 = params.K / 4u;
  let m0 = gid.y * 4u;
  let n0 = gid.x * 4u;
  if (m0 >= M || n0 >= N) {
    return;
  }
  let a0 = m0 * K4;
  let a1 = min(m0 + 1u, M - 1u) * K4;
  let a2 = min(m0 + 2u, M - 1u) * K4;
  let a3 = min(m0 + 3u, M - 1u) * K4;
  let b0 = n0 * K4;
  let b1 = min(n0 + 1u, N - 1u) * K4;
  let b2 = min(n0 + 2u, N - 1u) * K4;
  let b3 = min(n0 + 3u, N - 1u) * K4;
  var c0 = vec4f(0.0);
  var c1 = vec4f(0.0);
  var c2 = vec4f(0.0);
  var c3 = vec4f(0.0);
  for (var k = 0u; k < K4; k++) {
    let x0 = inp[a0 + k];
    let x1 = inp[a1 + k];
    let x2 = inp[a2 + k];
    let x3 = inp[a3 + k];
    let w0 = weightAt4(b0 + k);
    let w1 = weightAt4(b1 + k);
    let w2 = weightAt4(b2 + k);
    let w3 = weightAt4(b3 + k);
    c0 += vec4f(dot(x0, w0), dot(x0, w1), dot(x0, w2), dot(x0, w3));
    c1 += vec4f(dot(x1, w0), dot(x1, w1), dot(x1, w2), dot(x1, w3));
    c2 += vec4f(dot(x2, w0), dot(x2, w1), dot(x2, w2), dot(x2, w3));
    c3 += vec4f(dot(x3, w0), dot(x3, w1), dot(x3, w2), dot(x3, w3));
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
