// Grouped-query attention forward for training: every row of a full sequence over packed qkv
// rows, saving the per-row logsumexp (not the probabilities) for a recomputing backward.
//   pre[t, j] = scale q_t . k_j,  lse_t = log sum_j exp(pre[t, j]),  out_t = sum_j exp(pre[t, j] - lse_t) v_j
// over the keys j query t sees: j == t || start[b] <= j <= t (left padding masked; a padding
// query sees only itself). Query head h reads kv head g = h / (NH / NKV).
// Shape legend: B batch, T time, NH query heads, NKV kv heads (NKV divides NH), HS head size,
// W = (NH + 2 NKV) HS the packed qkv row [q NH*HS | k NKV*HS | v NKV*HS], TILE = WG_X = WG_Y.
//
// One workgroup of TILE x TILE invocations per (query tile, head, batch); invocation (ly, lx)
// owns query row t = q0 + ly. For each key tile the rows can see (an online softmax, as
// attention_gqa.wgsl, but over TILE rows at once):
//   1. scores S[ly][lx] = scale q_t . k_{k0 + lx}: a tiled matmul through shared memory (Q and K
//      tiles of TILE x TILE channels, looping over HS);
//   2. per row: the tile max (through `red`), m_new = max(m, tile max), p = exp(S - m_new) (0 where
//      masked), l = l exp(m - m_new) + sum p;
//   3. o[ly][c] = o[ly][c] exp(m - m_new) + sum_k p[ly][k] v_{k0 + k}[c] through a V tile per TILE
//      channels; lane lx owns channels c = lx (mod TILE) of row ly, so o needs no barrier.
// At the end out_t = o / l and lse_t = m + log(l). A row that has seen no key yet keeps
// m = -3e38, l = 0 and o = 0 through masked tiles (p = 0, exp(m - m_new) = 1); its first seen key
// rescales that by exp(-3e38 - m_new) = 0. Every live row sees itself, so l > 0.
// Shared memory: 2 TILE (TILE + 1) + TILE^2 + TILE MAX_HS floats (11.2 KiB at TILE 16, MAX_HS 128).

struct Params {
  B: u32,
  T: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // (B, T, W)
@group(0) @binding(1) var<storage, read> start: array<u32>;      // (B)
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (B, T, NH*HS)
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;  // (B, NH, T)
@group(0) @binding(4) var<uniform> params: Params;

override WG_X: u32 = 16;     // TILE
override WG_Y: u32 = 16;     // must equal WG_X
override MAX_HS: u32 = 128;  // largest head size this pipeline serves

var<workgroup> ta: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): Q tile, then p tile [row][key]
var<workgroup> tb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): K tile, then V tile [key][channel]
var<workgroup> red: array<f32, WG_X * WG_X>;        // (TILE, TILE): per-row partial max / sum
var<workgroup> o: array<f32, WG_X * MAX_HS>;        // (TILE, MAX_HS): unnormalised output rows

fn attends(t: u32, j: u32, s: u32) -> bool {
  return j == t || (s <= j && j <= t);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;  // padded row stride of the shared tiles
  let T = params.T;
  let NH = params.NH;
  let HS = params.HS;
  let W = (NH + 2u * params.NKV) * HS;
  let lx = lid.x;
  let ly = lid.y;
  let q0 = wid.x * TILE;
  let h = wid.y;
  let b = wid.z;
  let g = h / (NH / params.NKV);
  let s = start[b];
  let t = q0 + ly;
  let live = t < T;
  let qOff = h * HS;                        // q of head h in a row
  let kOff = (NH + g) * HS;                 // k of kv head g
  let vOff = (NH + params.NKV + g) * HS;    // v of kv head g
  let rows = b * T;                         // qkv[b] = rows (b*T ..) of W
  // Keys seen by some row of this tile: [kBegin, kEnd). Padding rows see only themselves.
  let kBegin = (min(s, q0) / TILE) * TILE;
  let kEnd = min(T, q0 + TILE);

  for (var c = lx; c < HS; c += TILE) {
    o[ly * MAX_HS + c] = 0.0;
  }
  var m = -3.0e38;  // running max of row t (the same in all its lanes)
  var l = 0.0;      // running sum of exp(score - m)

  for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
    // 1. S[ly][lx] = scale q_t . k_{k0 + lx}
    var acc = 0.0;
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      let c = c0 + lx;
      var qv = 0.0;
      var kv = 0.0;
      if (live && c < HS) {
        qv = qkv[(rows + t) * W + qOff + c];
      }
      if (k0 + ly < T && c < HS) {
        kv = qkv[(rows + k0 + ly) * W + kOff + c];
      }
      ta[ly * P + lx] = qv;  // Q tile [row ly][channel lx]
      tb[ly * P + lx] = kv;  // K tile [key ly][channel lx]
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        acc += ta[ly * P + i] * tb[lx * P + i];
      }
      workgroupBarrier();
    }
    let j = k0 + lx;
    let seen = live && j < T && attends(t, j, s);
    var score = -3.0e38;
    if (seen) {
      score = acc * params.scale;
    }

    // 2. online softmax of row t over this tile
    red[ly * TILE + lx] = score;
    workgroupBarrier();
    var tileMax = red[ly * TILE];
    for (var i = 1u; i < TILE; i++) {
      tileMax = max(tileMax, red[ly * TILE + i]);
    }
    workgroupBarrier();
    let mNew = max(m, tileMax);
    let alpha = exp(m - mNew);
    var p = 0.0;
    if (seen) {
      p = exp(score - mNew);
    }
    red[ly * TILE + lx] = p;
    ta[ly * P + lx] = p;  // p tile [row ly][key lx]
    workgroupBarrier();
    var psum = 0.0;
    for (var i = 0u; i < TILE; i++) {
      psum += red[ly * TILE + i];
    }
    l = l * alpha + psum;
    m = mNew;

    // 3. o[ly][c] = alpha o[ly][c] + sum_k p[ly][k] v_{k0 + k}[c]
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      var vv = 0.0;
      if (k0 + ly < T && c0 + lx < HS) {
        vv = qkv[(rows + k0 + ly) * W + vOff + c0 + lx];
      }
      tb[ly * P + lx] = vv;  // V tile [key ly][channel lx]
      workgroupBarrier();
      if (c0 + lx < HS) {
        var a = o[ly * MAX_HS + c0 + lx] * alpha;
        for (var i = 0u; i < TILE; i++) {
          a += ta[ly * P + i] * tb[i * P + lx];
        }
        o[ly * MAX_HS + c0 + lx] = a;
      }
      workgroupBarrier();
    }
  }

  if (live) {
    let inv = 1.0 / l;
    for (var c = lx; c < HS; c += TILE) {
      out[(rows + t) * NH * HS + qOff + c] = o[ly * MAX_HS + c] * inv;
    }
    if (lx == 0u) {
      lse[(b * NH + h) * T + t] = m + log(l);
    }
  }
}
