// out = a + b over N values (the residual connection: out = x + f(x)).
// Shape legend: N = any element count (BT * C for the residual stream). Row-major f32.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (N)
@group(0) @binding(1) var<storage, read> a: array<f32>;          // (N)
@group(0) @binding(2) var<storage, read> b: array<f32>;          // (N)
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  out[i] = a[i] + b[i];
}
