// y = a * x + y, element-wise over N values.
// The dispatch may be folded into 2-D when N / WG_X exceeds the per-dimension limit
// (see linearWorkgroups in src/gpu/kernel.ts), so the linear index uses num_workgroups.

struct Params {
  n: u32,
  a: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;        // (N)
@group(0) @binding(1) var<storage, read_write> y: array<f32>;  // (N)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 64;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  y[i] = params.a * x[i] + y[i];
}
