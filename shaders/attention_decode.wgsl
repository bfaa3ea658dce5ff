// Attention of new query rows over the KV cache (a decode step when Tnew = 1, a prefill when
// Tnew > 1). Row i of qkv is at absolute position p = pos + i and sees cache rows j with
// j == p || start[b] <= j <= p; kv_write.wgsl has already put the new rows' k and v there.
// Shape legend: B batch, Tnew new rows, C channels, NH heads, HS = C / NH head size,
// Tmax the KV-cache capacity, WG = WG_X (a power of two).
//
// One workgroup of WG invocations per (i, h, b). The visible keys form one contiguous range
// [jBegin, p], walked in chunks of WG keys with an online softmax (running max m, running sum
// l, output accumulator rescaled by exp(m_old - m_new)): invocation lid scores key j0 + lid
// against q (held in shared memory), the chunk max and sum are tree-reduced in shared memory,
// then invocations take output channels d = lid (mod WG) and add sum_j p_j v_j[d]. Every chunk
// starts at a visible key, so each chunk max is finite. Nothing is saved for backward.
// Shared memory: 2 * MAX_HS + 2 * WG floats (2.5 KiB at the defaults); HS <= MAX_HS, any Tmax.

struct Params {
  B: u32,
  Tnew: u32,
  C: u32,
  NH: u32,
  Tmax: u32,
  pos: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // (B, Tnew, 3C)
@group(0) @binding(1) var<storage, read> kcache: array<f32>;     // (B, Tmax, C)
@group(0) @binding(2) var<storage, read> vcache: array<f32>;     // (B, Tmax, C)
@group(0) @binding(3) var<storage, read> start: array<u32>;      // (B)
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // (B, Tnew, C)
@group(0) @binding(5) var<uniform> params: Params;

override WG_X: u32 = 64;      // WG, a power of two
override MAX_HS: u32 = 256;   // largest head size this pipeline serves

var<workgroup> qs: array<f32, MAX_HS>;   // (HS) the query row of head h
var<workgroup> acc: array<f32, MAX_HS>;  // (HS) unnormalized output
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

@compute @workgroup_size(WG_X)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u) {
  let C = params.C;
  let HS = C / params.NH;
  let i = wid.x;
  let h = wid.y;
  let b = wid.z;
  let p = params.pos + i;
  let s = start[b];
  let jBegin = select(s, p, p < s);  // a padding query sees only itself
  let q = (b * params.Tnew + i) * 3u * C + h * HS;  // q part of qkv[b, i], head h
  let cache = b * params.Tmax * C + h * HS;         // kcache[b, 0], vcache[b, 0], head h

  for (var d = lid; d < HS; d += WG_X) {
    qs[d] = qkv[q + d];
    acc[d] = 0.0;
  }
  workgroupBarrier();

  var m = -3.0e38;  // running max (the same in every invocation)
  var l = 0.0;      // running sum of exp(score - m)
  for (var j0 = jBegin; j0 <= p; j0 += WG_X) {
    let j = j0 + lid;
    let seen = j <= p;
    var score = -3.0e38;
    if (seen) {
      var dot = 0.0;
      for (var d = 0u; d < HS; d++) {
        dot += qs[d] * kcache[cache + j * C + d];
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
    let n = min(WG_X, p + 1u - j0);       // keys in this chunk
    for (var d = lid; d < HS; d += WG_X) {
      var a = acc[d] * alpha;
      for (var k = 0u; k < n; k++) {
        a += ps[k] * vcache[cache + (j0 + k) * C + d];
      }
      acc[d] = a;
    }
    m = mNew;
    workgroupBarrier();  // ps is rewritten by the next chunk
  }

  let o = (b * params.Tnew + i) * C + h * HS;
  for (var d = lid; d < HS; d += WG_X) {
    out[o + d] = acc[d] / l;
  }
}
