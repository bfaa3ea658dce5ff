// One pass of a tree reduction: out[g] = sum of inp[g * WG_X .. (g + 1) * WG_X) over N inputs.
// Applied repeatedly (N -> ceil(N / WG_X) -> ... -> 1) it sums a whole array.
// WG_X must be a power of two.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> inp: array<f32>;        // (N)
@group(0) @binding(1) var<storage, read_write> out: array<f32>;  // (ceil(N / WG_X))
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 256;

var<workgroup> partial: array<f32, WG_X>;  // (WG_X)

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let group = wid.x + wid.y * nwg.x;
  let i = group * WG_X + lid;
  partial[lid] = select(0.0, inp[min(i, params.n - 1u)], i < params.n);
  workgroupBarrier();
  for (var stride = WG_X / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      partial[lid] = partial[lid] + partial[lid + stride];
    }
    workgroupBarrier();
  }
  // A 2-D folded dispatch may have more workgroups than partial sums; those write nothing.
  if (lid == 0u && group < (params.n + WG_X - 1u) / WG_X) {
    out[group] = partial[0];
  }
}
