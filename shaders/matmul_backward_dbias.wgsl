// dbias (N) += column sums of dout (M, N), the bias gradient of out = inp · weight^T + bias.
// Shape legend: M rows (= BT), N output columns (= OC). Row-major f32.
//
// A workgroup owns WG_X consecutive columns (coalesced reads along a row). Its WG_Y row lanes each
// sum the rows ly, ly + WG_Y, ... in order; then a fixed tree over the lanes in workgroup memory
// and a single += per column: deterministic, no atomics. WG_Y must be a power of two.
// The dispatch may be folded into 2-D (linearWorkgroups): the block index is wid.x + wid.y * nwg.x.

struct Params {
  M: u32,
  N: u32,
}

@group(0) @binding(0) var<storage, read_write> dbias: array<f32>;  // (N), accumulated
@group(0) @binding(1) var<storage, read> dout: array<f32>;         // (M, N)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 32;
override WG_Y: u32 = 8;
override LANES: u32 = WG_X * WG_Y;

var<workgroup> partial: array<f32, LANES>;  // (WG_Y, WG_X)

@compute @workgroup_size(WG_X, WG_Y)
fn main(
  @builtin(local_invocation_id) local: vec3u,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let n = (wid.x + wid.y * nwg.x) * WG_X + local.x;
  var sum = 0.0;
  if (n < params.N) {
    for (var m = local.y; m < params.M; m += WG_Y) {
      sum += dout[m * params.N + n];
    }
  }
  partial[local.y * WG_X + local.x] = sum;
  workgroupBarrier();
  for (var stride = WG_Y / 2u; stride > 0u; stride /= 2u) {
    if (local.y < stride) {
      partial[local.y * WG_X + local.x] += partial[(local.y + stride) * WG_X + local.x];
    }
    workgroupBarrier();
  }
  if (local.y == 0u && n < params.N) {
    dbias[n] += partial[local.x];
  }
}
