// KV cache write for grouped-query attention: kcache/vcache rows [pos, pos + Tnew) of every kv
// head = the k and v parts of the packed qkv rows.
// Shape legend: B batch, Tnew new rows, NH query heads, NKV kv heads, HS head size,
// W = (NH + 2 NKV) HS the packed qkv row [q NH*HS | k NKV*HS | v NKV*HS], Tmax the cache capacity.
// Cache layout (B, NKV, Tmax, HS): the keys of one kv head are contiguous over time, so the
// attention kernels read a head's cache as one block.
// One invocation per (b, t, g, d), d fastest (reads of qkv and writes of the cache both
// contiguous over d); the dispatch may be folded into 2-D (linearWorkgroups).

struct Params {
  B: u32,
  Tnew: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  Tmax: u32,
  pos: u32,
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;           // (B, Tnew, W)
@group(0) @binding(1) var<storage, read_write> kcache: array<f32>;  // (B, NKV, Tmax, HS)
@group(0) @binding(2) var<storage, read_write> vcache: array<f32>;  // (B, NKV, Tmax, HS)
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 64;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG_X;
  let HS = params.HS;
  let KD = params.NKV * HS;  // the k (or v) part of a row
  if (idx >= params.B * params.Tnew * KD) {
    return;
  }
  let c = idx % KD;  // g * HS + d
  let bt = idx / KD;  // b * Tnew + t
  let g = c / HS;
  let d = c % HS;
  let b = bt / params.Tnew;
  let t = bt % params.Tnew;
  let src = bt * (params.NH * HS + 2u * KD) + params.NH * HS + c;
  let dst = ((b * params.NKV + g) * params.Tmax + params.pos + t) * HS + d;
  kcache[dst] = qkv[src];
  vcache[dst] = qkv[src + KD];
}
