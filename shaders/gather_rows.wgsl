// Row gather from one chunk of a table split by rows (an embedding lookup when the vocabulary
// does not fit one storage binding): for n with v0 <= ids[n] < v0 + rows,
//   out[n, :] = table[ids[n] - v0, :]   (accumulate = 0)
//   out[n, :] += table[ids[n] - v0, :]  (accumulate = 1: e.g. a learned position table)
// and the other rows of out are left untouched, so one dispatch per chunk fills all of out.
// Shape legend: N rows, C channels, rows the chunk's table rows, v0 its first id. Row-major f32; ids u32.
//
// One invocation per (n, c); the dispatch may be folded into 2-D (linearWorkgroups).

struct Params {
  N: u32,
  C: u32,
  v0: u32,
  rows: u32,
  accumulate: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (N, C)
@group(0) @binding(1) var<storage, read> ids: array<u32>;        // (N)
// @binding(2) table (rows, C): declared with `fn tableAt(i) -> f32` by the appended weightReader
// (kernels/weight_format.ts): f32, or packed f16 / bf16.
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  let C = params.C;
  if (i >= params.N * C) {
    return;
  }
  let n = i / C;
  let c = i % C;
  let id = ids[n];
  if (id < params.v0 || id - params.v0 >= params.rows) {
    return;  // another chunk's row
  }
  let v = tableAt((id - params.v0) * C + c);
  if (params.accumulate != 0u) {
    out[i] += v;
  } else {
    out[i] = v;
  }
}
