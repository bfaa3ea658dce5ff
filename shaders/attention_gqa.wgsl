// Grouped-query attention of new query rows over a KV cache (a decode step when Tnew = 1, a
// prefill when Tnew > 1), generalising attention_decode.wgsl. Row i of qkv is at absolute
// position p = pos + i and sees cache rows j with j == p || start[b] <= j <= p (left padding
// masked; a padding query sees only itself); kv_write_gqa.wgsl has already put the new rows'
// k and v there. Query head h reads kv head g = h / (NH / NKV).
// Shape legend: B batch, Tnew new rows, NH query heads, NKV kv heads (NKV divides NH), HS head
// size, W = (NH + 2 NKV) HS the packed qkv row [q NH*HS | k NKV*HS | v NKV*HS], Tmax the cache
// capacity, S splits (entry point `split`), WG = WG_X (a power of two).
// Cache layout (B, NKV, Tmax, HS): the keys of one kv head are contiguous over time.
//
// Two entry points, the same bindings (binding 4, `dst`, is out for `main`, the scratch of
// partials for `split`):
//   main   one workgroup per (i, h, b): attends over all visible keys [jBegin, p], writes
//          out (B, Tnew, NH*HS).
//   split  flash-decoding: one workgroup per (s + S i, h, b) attends over split s of the visible
//          keys (S near-equal contiguous ranges, some possibly empty) and writes the partial
//          (m, l, acc (HS)) to scratch (B, Tnew, NH, S, HS + 2); attention_gqa_combine.wgsl
//          merges the S partials of each row.
// Both walk their key range in chunks of WG keys with an online softmax (running max m,
// running sum l of exp(score - m), unnormalised accumulator acc rescaled by exp(m_old - m_new)):
// invocation lid scores key j0 + lid against q (held in shared memory), the chunk max and sum
// are tree-reduced in shared memory, then invocations take output channels d = lid (mod WG)
// and add sum_j p_j v_j[d]. Every chunk starts at a key of the range, so each chunk max is
// finite; an empty range leaves m = -3e38, l = 0, acc = 0.
// Shared memory: 2 * MAX_HS + 2 * WG floats (2.5 KiB at the defaults); HS <= MAX_HS, any Tmax.

struct Params {
  B: u32,
  Tnew: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  Tmax: u32,
  pos: u32,
  S: u32,      // splits (entry point `split`; 1 for `main`)
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // (B, Tnew, W)
@group(0) @binding(1) var<storage, read> kcache: array<f32>;     // (B, NKV, Tmax, HS)
@group(0) @binding(2) var<storage, read> vcache: array<f32>;     // (B, NKV, Tmax, HS)
@group(0) @binding(3) var<storage, read> start: array<u32>;      // (B)
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;  // main: out (B, Tnew, NH*HS); split: scratch (B, Tnew, NH, S, HS + 2)
@group(0) @binding(5) var<uniform> params: Params;

override WG_X: u32 = 64;      // WG, a power of two
override MAX_HS: u32 = 256;   // largest head size this pipeline serves

var<workgroup> qs: array<f32, MAX_HS>;   // (HS) the query row of head h
var<workgroup> acc: array<f32, MAX_HS>;  // (HS) unnormalised output
var<workgroup> ps: array<f32, WG_X>;     // (WG) exp(score - m) of the current chunk
var<workgroup> red: array<f32, WG_X>;    // (WG) reduction scratch

// Tree reduction of red[0 .. WG) into red[0]: max when take_max, else sum. Called by the whole workgroup.
fn reduce(lid: u32, take_max: bool) -> f32 {
  workgroupBarrier();
  for (var stride = WG_X / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      let a = red[lid];
      let b = red[lid + stride];
      red[lid] = select(a + b, max(a, b), take_max);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

// The first visible key of row i of batch b: start[b], or p itself for a padding query.
fn first_key(b: u32, p: u32) -> u32 {
  let s = start[b];
  return select(s, p, p < s);
}

// Loads the query of head h of row i of batch b into qs and zeroes acc; then attends over the
// keys [lo, end) of kv head g (of batch b) into acc. Returns (m, l). Called by the whole workgroup
// with uniform arguments.
fn attend(lid: u32, b: u32, i: u32, h: u32, lo: u32, end: u32) -> vec2f {
  let HS = params.HS;
  let W = (params.NH + 2u * params.NKV) * HS;
  let g = h / (params.NH / params.NKV);
  let q = (b * params.Tnew + i) * W + h * HS;            // q part of qkv[b, i], head h
  let cache = (b * params.NKV + g) * params.Tmax * HS;   // kcache[b, g, 0], vcache[b, g, 0]

  for (var d = lid; d < HS; d += WG_X) {
    qs[d] = qkv[q + d];
    acc[d] = 0.0;
  }
  workgroupBarrier();

  var m = -3.0e38;  // running max (the same in every invocation)
  var l = 0.0;      // running sum of exp(score - m)
  for (var j0 = lo; j0 < end; j0 += WG_X) {
    let j = j0 + lid;
    let seen = j < end;
    var score = -3.0e38;
    if (seen) {
      let k = cache + j * HS;
      var dot = 0.0;
      for (var d = 0u; d < HS; d++) {
        dot += qs[d] * kcache[k + d];
      }
      score = dot * params.scale;
    }
    red[lid] = score;
    let mNew = max(m, reduce(lid, true));
    let alpha = exp(m - mNew);  // 0 on the first chunk
    var e = 0.0;
    if (seen) {
      e = exp(score - mNew);
    }
    ps[lid] = e;
    red[lid] = e;
    l = l * alpha + reduce(lid, false);  // the barriers inside also publish ps
    let n = min(WG_X, end - j0);          // keys in this chunk
    for (var d = lid; d < HS; d += WG_X) {
      var a = acc[d] * alpha;
      for (var k = 0u; k < n; k++) {
        a += ps[k] * vcache[cache + (j0 + k) * HS + d];
      }
      acc[d] = a;
    }
    m = mNew;
    workgroupBarrier();  // ps is rewritten by the next chunk
  }
  return vec2f(m, l);
}

@compute @workgroup_size(WG_X)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u) {
  let i = wid.x;
  let h = wid.y;
  let b = wid.z;
  let p = params.pos + i;
  let ml = attend(lid, b, i, h, first_key(b, p), p + 1u);
  let HS = params.HS;
  let o = (b * params.Tnew + i) * params.NH * HS + h * HS;
  for (var d = lid; d < HS; d += WG_X) {
    dst[o + d] = acc[d] / ml.y;  // each invocation reads the acc entries it wrote
  }
}

@compute @workgroup_size(WG_X)
fn split(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u) {
  let S = params.S;
  let s = wid.x % S;
  let i = wid.x / S;
  let h = wid.y;
  let b = wid.z;
  let p = params.pos + i;
  let jBegin = first_key(b, p);
  let L = (p + 1u - jBegin + S - 1u) / S;  // keys per split, rounded up (>= 1)
  let lo = min(jBegin + s * L, p + 1u);
  let end = min(lo + L, p + 1u);
  let ml = attend(lid, b, i, h, lo, end);
  let HS = params.HS;
  let base = (((b * params.Tnew + i) * params.NH + h) * S + s) * (HS + 2u);
  if (lid == 0u) {
    dst[base] = ml.x;
    dst[base + 1u] = ml.y;
  }
  for (var d = lid; d < HS; d += WG_X) {
    dst[base + 2u + d] = acc[d];
  }
}
