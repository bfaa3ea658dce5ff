// GQA attention backward, part 1 of 2: delta and dq, recomputing the probabilities from the
// logsumexp the forward saved (attention_gqa_train_forward.wgsl). Forward lines differentiated:
//   out_t = sum_j att[t, j] v_j       ->  datt[t, j] = dout_t . v_j
//   att[t, :] = softmax(pre[t, :])     ->  dpre[t, j] = att[t, j] (datt[t, j] - D_t),  D_t = dout_t . out_t
//   pre[t, j] = scale q_t . k_j        ->  dq_t += scale sum_j dpre[t, j] k_j
// with att[t, j] = exp(pre[t, j] - lse_t) over the keys t sees (j == t || start[b] <= j <= t).
// D_t = sum_j att[t, j] datt[t, j] equals dout_t . out_t, so it is one HS-term dot per row
// (FlashAttention-2's preprocessing step), written to delta for attention_gqa_train_backward_dkv.
// Shape legend: B batch, T time, NH query heads, NKV kv heads, HS head size, W = (NH + 2 NKV) HS
// the packed qkv row, TILE = WG_X = WG_Y. Query head h reads kv head g = h / (NH / NKV).
//
// One workgroup of TILE x TILE invocations per (query tile, head, batch), invocation (ly, lx)
// owning row t = q0 + ly: D_t by a row reduction; then per key tile the rows can see,
//   1. S and datt for [ly][lx] (key k0 + lx) by one tiled pass over HS (Q, K, dout, V tiles);
//   2. dpre = exp(S - lse_t) (datt - D_t), 0 where masked, into a shared tile;
//   3. dq[ly][c] += sum_k dpre[ly][k] k_{k0 + k}[c] through a K tile per TILE channels (lane lx owns
//      channels c = lx mod TILE of row ly in the shared accumulator).
// At the end dqkv's q part += scale dq. No invocation writes where another one does.
// Shared memory: 4 TILE (TILE + 1) + TILE^2 + TILE MAX_HS floats (13.3 KiB at TILE 16, MAX_HS 128).

struct Params {
  B: u32,
  T: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> dout: array<f32>;         // (B, T, NH*HS)
@group(0) @binding(1) var<storage, read> qkv: array<f32>;          // (B, T, W)
@group(0) @binding(2) var<storage, read> out: array<f32>;          // (B, T, NH*HS) from the forward
@group(0) @binding(3) var<storage, read> lse: array<f32>;          // (B, NH, T) from the forward
@group(0) @binding(4) var<storage, read> start: array<u32>;        // (B)
@group(0) @binding(5) var<storage, read_write> delta: array<f32>;  // (B, NH, T) written: D_t
@group(0) @binding(6) var<storage, read_write> dqkv: array<f32>;   // (B, T, W), q part += here
@group(0) @binding(7) var<uniform> params: Params;

override WG_X: u32 = 16;     // TILE
override WG_Y: u32 = 16;     // must equal WG_X
override MAX_HS: u32 = 128;  // largest head size this pipeline serves

var<workgroup> ta: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): Q tile, then dpre tile [row][key]
var<workgroup> tb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): K tile [key][channel]
var<workgroup> tc: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dout tile [row][channel]
var<workgroup> td: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): V tile [key][channel]
var<workgroup> red: array<f32, WG_X * WG_X>;        // (TILE, TILE): per-row partial sums
var<workgroup> dq: array<f32, WG_X * MAX_HS>;       // (TILE, MAX_HS): dq rows, unscaled

fn attends(t: u32, j: u32, s: u32) -> bool {
  return j == t || (s <= j && j <= t);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;
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
  let qOff = h * HS;
  let kOff = (NH + g) * HS;
  let vOff = (NH + params.NKV + g) * HS;
  let rows = b * T;
  let o = (rows + t) * NH * HS + qOff;  // dout[b, t], out[b, t], head h
  let r = (b * NH + h) * T + t;         // lse[b, h, t], delta[b, h, t]
  let kBegin = (min(s, q0) / TILE) * TILE;
  let kEnd = min(T, q0 + TILE);

  // D_t = dout_t . out_t
  var part = 0.0;
  if (live) {
    for (var c = lx; c < HS; c += TILE) {
      part += dout[o + c] * out[o + c];
    }
  }
  red[ly * TILE + lx] = part;
  workgroupBarrier();
  var D = 0.0;
  for (var i = 0u; i < TILE; i++) {
    D += red[ly * TILE + i];
  }
  var L = 0.0;
  if (live) {
    L = lse[r];
    if (lx == 0u) {
      delta[r] = D;
    }
  }
  for (var c = lx; c < HS; c += TILE) {
    dq[ly * MAX_HS + c] = 0.0;
  }

  for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
    // 1. S[ly][lx] = q_t . k_j and datt[ly][lx] = dout_t . v_j, j = k0 + lx
    var sacc = 0.0;
    var dacc = 0.0;
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      let c = c0 + lx;
      var qv = 0.0;
      var ov = 0.0;
      var kv = 0.0;
      var vv = 0.0;
      if (live && c < HS) {
        qv = qkv[(rows + t) * W + qOff + c];
        ov = dout[o + c];
      }
      if (k0 + ly < T && c < HS) {
        kv = qkv[(rows + k0 + ly) * W + kOff + c];
        vv = qkv[(rows + k0 + ly) * W + vOff + c];
      }
      ta[ly * P + lx] = qv;
      tc[ly * P + lx] = ov;
      tb[ly * P + lx] = kv;
      td[ly * P + lx] = vv;
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        sacc += ta[ly * P + i] * tb[lx * P + i];
        dacc += tc[ly * P + i] * td[lx * P + i];
      }
      workgroupBarrier();
    }
    // 2. dpre[ly][lx] = att (datt - D_t), att = exp(S scale - lse_t)
    let j = k0 + lx;
    var gpre = 0.0;
    if (live && j < T && attends(t, j, s)) {
      gpre = exp(sacc * params.scale - L) * (dacc - D);
    }
    ta[ly * P + lx] = gpre;  // dpre tile [row ly][key lx]

    // 3. dq[ly][c] += sum_k dpre[ly][k] k_{k0 + k}[c]
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      var kv = 0.0;
      if (k0 + ly < T && c0 + lx < HS) {
        kv = qkv[(rows + k0 + ly) * W + kOff + c0 + lx];
      }
      tb[ly * P + lx] = kv;  // K tile [key ly][channel lx]
      workgroupBarrier();    // also publishes the dpre tile
      if (c0 + lx < HS) {
        var a = dq[ly * MAX_HS + c0 + lx];
        for (var i = 0u; i < TILE; i++) {
          a += ta[ly * P + i] * tb[i * P + lx];
        }
        dq[ly * MAX_HS + c0 + lx] = a;
      }
      workgroupBarrier();
    }
  }

  if (live) {
    for (var c = lx; c < HS; c += TILE) {
      let i = (rows + t) * W + qOff + c;
      dqkv[i] = dqkv[i] + params.scale * dq[ly * MAX_HS + c];
    }
  }
}
