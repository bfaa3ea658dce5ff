// dinp += gelu'(inp) * dout over N values (accumulates), for GPT-2's tanh GELU.
// Differentiates  out = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3):
//   gelu'(x) = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// Shape legend: N = any element count (e.g. BT * 4C). Row-major f32.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read_write> dinp: array<f32>;  // (N), accumulated
@group(0) @binding(1) var<storage, read> inp: array<f32>;         // (N) the forward's input
@group(0) @binding(2) var<storage, read> dout: array<f32>;        // (N)
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;

const GELU_SCALE: f32 = 0.7978845608028654;  // sqrt(2 / pi)

fn gelu_grad(x: f32) -> f32 {
  let u = GELU_SCALE * (x + 0.044715 * x * x * x);
  let t = tanh(clamp(u, -10.0, 10.0));  // clamped as in the forward: no inf/inf from exp-based tanh
  let du = GELU_SCALE * (1.0 + 3.0 * 0.044715 * x * x);
  // 1 - tanh(u)^2 < 1e-8 for |u| >= 10: drop the term there, which also avoids 0 * inf for huge x
  let dtanh = select(0.0, 0.5 * x * (1.0 - t * t) * du, abs(u) < 10.0);
  return 0.5 * (1.0 + t) + dtanh;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  dinp[i] += gelu_grad(inp[i]) * dout[i];
}
