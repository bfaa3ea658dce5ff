// dst += src over N values, in place: how backward passes add a gradient into one that already
// holds another contribution (the residual's backward sends dout down both branches).
// Shape legend: N = any element count. Row-major f32.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read_write> dst: array<f32>;  // (N), accumulated
@group(0) @binding(1) var<storage, read> src: array<f32>;        // (N)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 256;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  dst[i] += src[i];
}
