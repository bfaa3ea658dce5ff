// Causal multi-head self-attention forward (llm.c layout), with optional left padding.
// Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size, TILE = WG_X = WG_Y.
//
// One workgroup of TILE x TILE invocations per (query tile, head, batch); invocation (ly, lx)
// owns query row t = q0 + ly. Three phases, each over the key tiles the tile's rows can see:
//   1. pre = scale * Q K^T, a tiled matmul through shared memory (Q and K tiles of TILE x TILE
//      channels, looping over HS), written raw into att;
//   2. row softmax: lane lx handles keys j = lx (mod TILE), the row max and sum are reduced
//      through shared memory, and every entry j in [0, T) of the row is written (0 where masked);
//   3. out = att V, a tiled matmul (att tile and V tile of TILE x TILE) per TILE channels.
// Every att entry an invocation reads in phases 2 and 3 is one it wrote itself (key tiles start
// at multiples of TILE, so key j always belongs to lane j mod TILE), so program order suffices
// and no storage barrier is needed. No limit on T or HS beyond buffer sizes; shared memory is
// 3 * TILE * (TILE + 1) floats (3.2 KiB at TILE = 16).
// Masking: query t sees key j when j == t or start[b] <= j <= t.

struct Params {
  B: u32,
  T: u32,
  C: u32,
  NH: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // (B, T, 3C)
@group(0) @binding(1) var<storage, read> start: array<u32>;      // (B)
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (B, T, C)
@group(0) @binding(3) var<storage, read_write> att: array<f32>;  // (B, NH, T, T)
@group(0) @binding(4) var<uniform> params: Params;

override WG_X: u32 = 16;  // TILE
override WG_Y: u32 = 16;  // must equal WG_X

var<workgroup> ta: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): Q tile, then att tile
var<workgroup> tb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): K tile, then V tile
var<workgroup> red: array<f32, WG_X * WG_X>;        // (TILE, TILE): per-row partial max / sum

fn attends(t: u32, j: u32, s: u32) -> bool {
  return j == t || (s <= j && j <= t);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;  // padded row stride of the shared tiles
  let T = params.T;
  let C = params.C;
  let HS = C / params.NH;
  let lx = lid.x;
  let ly = lid.y;
  let q0 = wid.x * TILE;
  let h = wid.y;
  let b = wid.z;
  let s = start[b];
  let t = q0 + ly;
  let live = t < T;
  let qkvb = b * T * 3u * C;                   // qkv[b]
  let row = ((b * params.NH + h) * T + t) * T;  // att[b, h, t]
  // Keys seen by some row of this tile: [kBegin, kEnd). Padding rows see only themselves.
  let kBegin = (min(s, q0) / TILE) * TILE;
  let kEnd = min(T, q0 + TILE);

  // Phase 1: att[b, h, t, j] = scale * q_t . k_j
  for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
    var acc = 0.0;
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      let c = c0 + lx;
      var qv = 0.0;
      var kv = 0.0;
      if (live && c < HS) {
        qv = qkv[qkvb + t * 3u * C + h * HS + c];
      }
      if (k0 + ly < T && c < HS) {
        kv = qkv[qkvb + (k0 + ly) * 3u * C + C + h * HS + c];
      }
      ta[ly * P + lx] = qv;  // Q tile [row ly][channel lx]
      tb[ly * P + lx] = kv;  // K tile [key ly][channel lx]
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        acc += ta[ly * P + i] * tb[lx * P + i];
      }
      workgroupBarrier();
    }
    if (live && k0 + lx < T) {
      att[row + k0 + lx] = acc * params.scale;
    }
  }

  // Phase 2: softmax over the visible keys of row t, stable (the row max is subtracted).
  var m = -3.0e38;
  if (live) {
    for (var j = lx; j < T; j += TILE) {
      if (attends(t, j, s)) {
        m = max(m, att[row + j]);
      }
    }
  }
  red[ly * TILE + lx] = m;
  workgroupBarrier();
  m = red[ly * TILE];
  for (var i = 1u; i < TILE; i++) {
    m = max(m, red[ly * TILE + i]);
  }
  workgroupBarrier();
  var sum = 0.0;
  if (live) {
    for (var j = lx; j < T; j += TILE) {
      if (attends(t, j, s)) {
        sum += exp(att[row + j] - m);
      }
    }
  }
  red[ly * TILE + lx] = sum;
  workgroupBarrier();
  sum = 0.0;
  for (var i = 0u; i < TILE; i++) {
    sum += red[ly * TILE + i];
  }
  if (live) {
    let inv = 1.0 / sum;
    for (var j = lx; j < T; j += TILE) {
      var p = 0.0;
      if (attends(t, j, s)) {
        p = exp(att[row + j] - m) * inv;
      }
      att[row + j] = p;
    }
  }

  // Phase 3: out[b, t, h*HS + c] = sum_j att[b, h, t, j] v_j[c]
  for (var c0 = 0u; c0 < HS; c0 += TILE) {
    var acc = 0.0;
    for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
      var pv = 0.0;
      var vv = 0.0;
      if (live && k0 + lx < T) {
        pv = att[row + k0 + lx];
      }
      if (k0 + ly < T && c0 + lx < HS) {
        vv = qkv[qkvb + (k0 + ly) * 3u * C + 2u * C + h * HS + c0 + lx];
      }
      ta[ly * P + lx] = pv;  // att tile [row ly][key lx]
      tb[ly * P + lx] = vv;  // V tile [key ly][channel lx]
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        acc += ta[ly * P + i] * tb[i * P + lx];
      }
      workgroupBarrier();
    }
    if (live && c0 + lx < HS) {
      out[(b * T + t) * C + h * HS + c0 + lx] = acc;
    }
  }
}
