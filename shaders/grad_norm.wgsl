// First pass of the global gradient norm: per-workgroup sums of squares.
// Shape legend: N gradient elements, G = ceil(N / (WG_X * ITEMS)) partial sums.
//   partial[g] = sum of grads[i]^2 over the g-th chunk of WG_X * ITEMS elements
// The partials are then summed by shaders/reduce_sum.wgsl and finished by
// shaders/grad_norm_finish.wgsl. Any NaN or Inf element (found from its bits, an integer test
// that holds even where float NaN/Inf handling is not guaranteed) sets status[1] with an atomic.
// The dispatch may be folded into 2-D (see linearWorkgroups). WG_X must be a power of two.

struct Params {
  n: u32,  // N
}

@group(0) @binding(0) var<storage, read> grads: array<f32>;              // (N)
@group(0) @binding(1) var<storage, read_write> partial: array<f32>;      // (G)
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>; // (4) see src/kernels/adamw.ts
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;
override ITEMS: u32 = 16;  // elements per invocation

var<workgroup> red: array<f32, WG_X>;  // (WG_X)
var<workgroup> bad: atomic<u32>;       // any non-finite element in this workgroup's chunk

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let group = wid.x + wid.y * nwg.x;
  let n = params.n;
  let base = group * WG_X * ITEMS;
  var acc = 0.0;
  var nonFinite = false;
  for (var j = 0u; j < ITEMS; j++) {
    let i = base + j * WG_X + lid;  // coalesced: consecutive invocations read consecutive elements
    if (i < n) {
      let x = grads[i];
      nonFinite = nonFinite || (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;
      acc += x * x;
    }
  }
  if (nonFinite) {
    atomicOr(&bad, 1u);
  }
  red[lid] = acc;
  workgroupBarrier();
  for (var s = WG_X / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      red[lid] = red[lid] + red[lid + s];
    }
    workgroupBarrier();
  }
  // A 2-D folded dispatch may have more workgroups than partials; those write nothing.
  if (lid == 0u && group < (n + WG_X * ITEMS - 1u) / (WG_X * ITEMS)) {
    partial[group] = red[0];
    if (atomicLoad(&bad) != 0u) {
      atomicOr(&status[1], 1u);
    }
  }
}
