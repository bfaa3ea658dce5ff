// SwiGLU (Llama, Qwen2 MLP): out[n, f] = silu(gate) * up with gate = gu[n, f], up = gu[n, F + f]
// (gate_proj and up_proj fused in one matmul, gate columns first), silu(x) = x * sigmoid(x).
// Shape legend: N rows (= BT), F hidden features (intermediate_size). Row-major f32.
//
// sigmoid is computed from e = exp(-|x|) in (0, 1], which never overflows: 1 / (1 + e) for
// x >= 0, e / (1 + e) for x < 0 (exp(-x) of a large negative x would be inf, which WGSL leaves
// undefined at run time).
// One invocation per output; the dispatch may be folded into 2-D (linearWorkgroups).

struct Params {
  N: u32,
  F: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (N, F)
@group(0) @binding(1) var<storage, read> gu: array<f32>;         // (N, 2F)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 256;

fn sigmoid(x: f32) -> f32 {
  let e = exp(-abs(x));
  return select(e, 1.0, x >= 0.0) / (1.0 + e);
}

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  let F = params.F;
  if (i >= params.N * F) {
    return;
  }
  let n = i / F;
  let f = i % F;
  let g = gu[2u * F * n + f];
  let u = gu[2u * F * n + F + f];
  out[i] = g * sigmoid(g) * u;
}
