// Backward of RMS normalization (accumulates into dinp and dweight). The forward was
//   rstd = 1 / sqrt(sum(x^2) / C + eps);  out = x * rstd * weight
// (rstd saved per row), so with n = x * rstd and dn = dout * weight, since d rstd / d x_c =
// -rstd^3 x_c / C:
//   dinp    += rstd * (dn - n * mean_c(dn * n))                    (per row)
//   dweight += sum over rows of dout * n                          (per channel)
// Shape legend: N rows (= BT), C channels. Row-major f32.
//
// Two entry points over the same bindings, dispatched one after the other (either order):
//   rows      one workgroup per row (1-D, WG_X threads, a power of two): mean_c(dn * n) by one
//             tree in workgroup memory, then dinp. Dispatch may be folded: row = wid.x + wid.y * nwg.x.
//   channels  dweight, as layernorm_backward.wgsl's: a workgroup owns WG_X consecutive channels
//             and all N rows; its WG_Y row lanes (a power of two) each sum rows ly, ly + WG_Y, ...
//             in order, then a fixed tree over the lanes and one += per channel. Deterministic,
//             no atomics. Dispatch may be folded: block = wid.x + wid.y * nwg.x.

struct Params {
  N: u32,
  C: u32,
}

@group(0) @binding(0) var<storage, read_write> dinp: array<f32>;     // (N, C), accumulated
@group(0) @binding(1) var<storage, read_write> dweight: array<f32>;  // (C), accumulated
@group(0) @binding(2) var<storage, read> dout: array<f32>;           // (N, C)
@group(0) @binding(3) var<storage, read> inp: array<f32>;            // (N, C)
@group(0) @binding(4) var<storage, read> weight: array<f32>;         // (C)
@group(0) @binding(5) var<storage, read> rstd: array<f32>;           // (N)
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 256;
override WG_Y: u32 = 1;
override LANES: u32 = WG_X * WG_Y;

var<workgroup> red: array<f32, LANES>;

@compute @workgroup_size(WG_X)
fn rows(
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
  let r = rstd[row];

  var a = 0.0;  // sum of dn * n
  for (var c = lid; c < C; c += WG_X) {
    a += dout[x0 + c] * weight[c] * (inp[x0 + c] * r);
  }
  red[lid] = a;
  workgroupBarrier();
  for (var stride = WG_X / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      red[lid] += red[lid + stride];
    }
    workgroupBarrier();
  }
  let dnNormMean = red[0] / f32(C);

  for (var c = lid; c < C; c += WG_X) {
    let n = inp[x0 + c] * r;
    let dn = dout[x0 + c] * weight[c];
    dinp[x0 + c] += (dn - n * dnNormMean) * r;
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn channels(
  @builtin(local_invocation_id) local: vec3u,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let C = params.C;
  let c = (wid.x + wid.y * nwg.x) * WG_X + local.x;
  var dw = 0.0;
  if (c < C) {
    for (var row = local.y; row < params.N; row += WG_Y) {
      dw += dout[row * C + c] * (inp[row * C + c] * rstd[row]);
    }
  }
  let i = local.y * WG_X + local.x;
  red[i] = dw;
  workgroupBarrier();
  for (var stride = WG_Y / 2u; stride > 0u; stride /= 2u) {
    if (local.y < stride) {
      red[i] += red[i + stride * WG_X];
    }
    workgroupBarrier();
  }
  if (local.y == 0u && c < C) {
    dweight[c] += red[local.x];
  }
}
