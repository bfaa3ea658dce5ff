// RMS normalization over the C channels of each of N rows (Llama, Qwen2):
//   rstd = 1 / sqrt(sum(x^2) / C + eps),  out = x * rstd * weight;  rstd is saved for the backward.
// Shape legend: N rows (= BT), C channels. Row-major f32.
//
// One workgroup per row: each thread sums the squares of its strided channels c = lid,
// lid + WG_X, ...; a tree in workgroup memory finishes the sum (WG_X must be a power of two).
// No mean is subtracted, so there is no cancellation: one pass suffices.
// The dispatch may be folded into 2-D (linearWorkgroups): row = wid.x + wid.y * nwg.x.

struct Params {
  N: u32,
  C: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;   // (N, C)
@group(0) @binding(1) var<storage, read_write> rstd: array<f32>;  // (N)
@group(0) @binding(2) var<storage, read> inp: array<f32>;         // (N, C)
@group(0) @binding(3) var<storage, read> weight: array<f32>;      // (C)
@group(0) @binding(4) var<uniform> params: Params;

override WG_X: u32 = 256;

var<workgroup> partial: array<f32, WG_X>;  // (WG_X)

// The sum of every thread's `v` over the workgroup (all threads call it; all get the result).
fn workgroup_sum(lid: u32, v: f32) -> f32 {
  partial[lid] = v;
  workgroupBarrier();
  for (var stride = WG_X / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      partial[lid] += partial[lid + stride];
    }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();  // partial may be reused
  return total;
}

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.N) {
    return;  // the same for the whole workgroup, so the barriers below stay uniform
  }
  let C = params.C;
  let x0 = row * C;

  var s = 0.0;
  for (var c = lid; c < C; c += WG_X) {
    let x = inp[x0 + c];
    s += x * x;
  }
  let r = inverseSqrt(workgroup_sum(lid, s) / f32(C) + params.eps);

  for (var c = lid; c < C; c += WG_X) {
    out[x0 + c] = inp[x0 + c] * r * weight[c];
  }
  if (lid == 0u) {
    rstd[row] = r;
  }
}
