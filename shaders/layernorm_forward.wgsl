// Layer normalization over the C channels of each of N rows (N = BT), eps = 1e-5:
//   mean = sum(x) / C,  rstd = 1 / sqrt(sum((x - mean)^2) / C + eps)
//   out = (x - mean) * rstd * weight + bias;  mean and rstd are saved for the backward.
// Shape legend: N rows (= BT), C channels. Row-major f32.
//
// One workgroup per row: each thread sums its strided channels c = lid, lid + WG_X, ...; a tree
// in workgroup memory finishes the sum (WG_X must be a power of two). The variance is a second
// pass over (x - mean)^2, not E[x^2] - mean^2, which cancels catastrophically when |mean| >> std.
// The dispatch may be folded into 2-D (linearWorkgroups): row = wid.x + wid.y * nwg.x.

struct Params {
  N: u32,
  C: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;   // (N, C)
@group(0) @binding(1) var<storage, read_write> mean: array<f32>;  // (N)
@group(0) @binding(2) var<storage, read_write> rstd: array<f32>;  // (N)
@group(0) @binding(3) var<storage, read> inp: array<f32>;         // (N, C)
@group(0) @binding(4) var<storage, read> weight: array<f32>;      // (C)
@group(0) @binding(5) var<storage, read> bias: array<f32>;        // (C)
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 256;
const EPS: f32 = 1e-5;

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
  workgroupBarrier();  // partial is reused by the next call
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
    s += inp[x0 + c];
  }
  let m = workgroup_sum(lid, s) / f32(C);

  var v = 0.0;
  for (var c = lid; c < C; c += WG_X) {
    let d = inp[x0 + c] - m;
    v += d * d;
  }
  let r = inverseSqrt(workgroup_sum(lid, v) / f32(C) + EPS);

  for (var c = lid; c < C; c += WG_X) {
    out[x0 + c] = (inp[x0 + c] - m) * r * weight[c] + bias[c];
  }
  if (lid == 0u) {
    mean[row] = m;
    rstd[row] = r;
  }
}
