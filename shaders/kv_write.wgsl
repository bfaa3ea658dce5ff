// KV cache write: kcache/vcache rows [pos, pos + Tnew) = the k and v parts of qkv.
// Shape legend: B batch, Tnew new rows, C channels, Tmax the KV-cache capacity.
// One invocation per (b, t, c); the dispatch may be folded into 2-D (linearWorkgroups).

struct Params {
  B: u32,
  Tnew: u32,
  C: u32,
  Tmax: u32,
  pos: u32,
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;           // (B, Tnew, 3C)
@group(0) @binding(1) var<storage, read_write> kcache: array<f32>;  // (B, Tmax, C)
@group(0) @binding(2) var<storage, read_write> vcache: array<f32>;  // (B, Tmax, C)
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 64;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  let C = params.C;
  if (i >= params.B * params.Tnew * C) {
    return;
  }
  let c = i % C;
  let bt = i / C;  // b * Tnew + t
  let b = bt / params.Tnew;
  let t = bt % params.Tnew;
  let dst = (b * params.Tmax + params.pos + t) * C + c;
  kcache[dst] = qkv[bt * 3u * C + C + c];
  vcache[dst] = qkv[bt * 3u * C + 2u * C + c];
}
