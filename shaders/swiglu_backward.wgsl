// Backward of SwiGLU (accumulates into dgu). The forward was
//   out[n, f] = silu(gate) * up,  gate = gu[n, f], up = gu[n, F + f],  silu(x) = x sigmoid(x)
// so with s = sigmoid(gate), silu'(x) = s (1 + x (1 - s)):
//   dgu[n, f]     += dout[n, f] * up * silu'(gate)     (dgate)
//   dgu[n, F + f] += dout[n, f] * silu(gate)           (dup)
// Shape legend: N rows (= BT), F hidden features (intermediate_size). Row-major f32.
//
// sigmoid from e = exp(-|x|) as in swiglu_forward.wgsl (no overflow): for any finite gate every
// factor below is finite (|gate| = 1e30 gives s = 0 or 1, and 0 * -1e30 or 1e30 * 0 is 0).
// One invocation per (n, f) owns both outputs: race-free. The dispatch may be folded into 2-D.

struct Params {
  N: u32,
  F: u32,
}

@group(0) @binding(0) var<storage, read_write> dgu: array<f32>;  // (N, 2F), accumulated
@group(0) @binding(1) var<storage, read> dout: array<f32>;       // (N, F)
@group(0) @binding(2) var<storage, read> gu: array<f32>;         // (N, 2F) the forward's input
@group(0) @binding(3) var<uniform> params: Params;

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
  let gi = 2u * F * n + f;
  let g = gu[gi];
  let u = gu[gi + F];
  let s = sigmoid(g);
  let d = dout[i];
  dgu[gi] += d * u * (s * (1.0 + g * (1.0 - s)));
  dgu[gi + F] += d * (g * s);
}
