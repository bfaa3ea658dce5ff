// out = gelu(inp) over N values, GPT-2's tanh approximation:
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Shape legend: N = any element count (e.g. BT * 4C). Row-major f32.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (N)
@group(0) @binding(1) var<storage, read> inp: array<f32>;        // (N)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 256;

const GELU_SCALE: f32 = 0.7978845608028654;  // sqrt(2 / pi)

// The tanh argument is clamped to +-10 (tanh(10) rounds to 1 in f32, so nothing changes) because
// some backends compute tanh from exponentials that overflow to inf/inf = NaN.
fn gelu(x: f32) -> f32 {
  let u = GELU_SCALE * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + tanh(clamp(u, -10.0, 10.0)));
}

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  out[i] = gelu(inp[i]);
}
