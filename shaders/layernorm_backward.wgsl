// Backward of layer normalization (accumulates into dinp, dweight, dbias). The forward was
//   norm = (x - mean) * rstd;  out = norm * weight + bias
// so with dnorm = dout * weight:
//   dinp    += (dnorm - mean_c(dnorm) - norm * mean_c(dnorm * norm)) * rstd     (per row)
//   dweight += sum over rows of dout * norm;  dbias += sum over rows of dout    (per channel)
// Shape legend: N rows (= BT), C channels. Row-major f32.
//
// Two entry points over the same bindings, dispatched one after the other:
//   rows      one workgroup per row (1-D, WG_X threads, a power of two): both means by one tree
//             in workgroup memory, then dinp. Dispatch may be folded: row = wid.x + wid.y * nwg.x.
//   channels  dweight and dbias. A workgroup owns WG_X consecutive channels (coalesced reads along
//             a row) and all N rows; its WG_Y row lanes (a power of two) each sum rows ly, ly + WG_Y,
//             ... in order, then a fixed tree over the lanes and one += per channel. Deterministic,
//             no atomics, no scratch buffer. Parallelism is C * WG_Y threads (6144 for C = 768), each
//             looping N / WG_Y rows; a split over rows into partial sums with a second pass would
//             add more for large N.
//             Dispatch may be folded: block = wid.x + wid.y * nwg.x.

struct Params {
  N: u32,
  C: u32,
}

@group(0) @binding(0) var<storage, read_write> dinp: array<f32>;     // (N, C), accumulated
@group(0) @binding(1) var<storage, read_write> dweight: array<f32>;  // (C), accumulated
@group(0) @binding(2) var<storage, read_write> dbias: array<f32>;    // (C), accumulated
@group(0) @binding(3) var<storage, read> dout: array<f32>;           // (N, C)
@group(0) @binding(4) var<storage, read> inp: array<f32>;            // (N, C)
@group(0) @binding(5) var<storage, read> weight: array<f32>;         // (C)
@group(0) @binding(6) var<storage, read> mean: array<f32>;           // (N)
@group(0) @binding(7) var<storage, read> rstd: array<f32>;           // (N)
@group(0) @binding(8) var<uniform> params: Params;

override WG_X: u32 = 256;
override WG_Y: u32 = 1;
override LANES: u32 = WG_X * WG_Y;

var<workgroup> sumA: array<f32, LANES>;
var<workgroup> sumB: array<f32, LANES>;

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
  let m = mean[row];
  let r = rstd[row];

  var a = 0.0;  // sum of dnorm
  var b = 0.0;  // sum of dnorm * norm
  for (var c = lid; c < C; c += WG_X) {
    let dnorm = dout[x0 + c] * weight[c];
    a += dnorm;
    b += dnorm * (inp[x0 + c] - m) * r;
  }
  sumA[lid] = a;
  sumB[lid] = b;
  workgroupBarrier();
  for (var stride = WG_X / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      sumA[lid] += sumA[lid + stride];
      sumB[lid] += sumB[lid + stride];
    }
    workgroupBarrier();
  }
  let dnormMean = sumA[0] / f32(C);
  let dnormNormMean = sumB[0] / f32(C);

  for (var c = lid; c < C; c += WG_X) {
    let norm = (inp[x0 + c] - m) * r;
    let dnorm = dout[x0 + c] * weight[c];
    dinp[x0 + c] += (dnorm - dnormMean - norm * dnormNormMean) * r;
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
  var db = 0.0;
  if (c < C) {
    for (var row = local.y; row < params.N; row += WG_Y) {
      let d = dout[row * C + c];
      dw += d * (inp[row * C + c] - mean[row]) * rstd[row];
      db += d;
    }
  }
  let i = local.y * WG_X + local.x;
  sumA[i] = dw;
  sumB[i] = db;
  workgroupBarrier();
  for (var stride = WG_Y / 2u; stride > 0u; stride /= 2u) {
    if (local.y < stride) {
      sumA[i] += sumA[i + stride * WG_X];
      sumB[i] += sumB[i + stride * WG_X];
    }
    workgroupBarrier();
  }
  if (local.y == 0u && c < C) {
    dweight[c] += sumA[local.x];
    dbias[c] += sumB[local.x];
  }
}
