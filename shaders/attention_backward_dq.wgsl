// Attention backward, part 1 of 2: dpre (the gradient of the pre-softmax scores) and dq.
// Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size, TILE = WG_X = WG_Y.
//
// Forward lines differentiated (see attention_forward.wgsl):
//   out_t = sum_j att[t, j] v_j            ->  datt[t, j] = dout_t . v_j
//   att[t, :] = softmax(pre[t, :])          ->  dpre[t, j] = att[t, j] (datt[t, j] - sum_i att[t, i] datt[t, i])
//   pre[t, j] = scale * q_t . k_j           ->  dq_t += scale * sum_j dpre[t, j] k_j
// The same decomposition as the forward: one workgroup of TILE x TILE invocations per
// (query tile, head, batch); phase 1 is the tiled matmul dout V^T into dpre, phase 2 the
// per-row softmax backward in place (every entry of the row written, 0 where masked), phase 3
// the tiled matmul dpre K accumulated into the q part of dqkv. An invocation only reads dpre
// entries it wrote itself (key j belongs to lane j mod TILE). dk and dv come from
// attention_backward_dkv.wgsl, which reads dpre; no invocation writes where another one does.

struct Params {
  B: u32,
  T: u32,
  C: u32,
  NH: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> dout: array<f32>;        // (B, T, C)
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (B, T, 3C)
@group(0) @binding(2) var<storage, read> att: array<f32>;         // (B, NH, T, T)
@group(0) @binding(3) var<storage, read> start: array<u32>;       // (B)
@group(0) @binding(4) var<storage, read_write> dpre: array<f32>;  // (B, NH, T, T) scratch, written whole
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;  // (B, T, 3C), q part += here
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 16;  // TILE
override WG_Y: u32 = 16;  // must equal WG_X

var<workgroup> ta: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dout tile, then dpre tile
var<workgroup> tb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): V tile, then K tile
var<workgroup> red: array<f32, WG_X * WG_X>;        // (TILE, TILE): per-row partial sums

fn attends(t: u32, j: u32, s: u32) -> bool {
  return j == t || (s <= j && j <= t);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;
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
  let qkvb = b * T * 3u * C;
  let row = ((b * params.NH + h) * T + t) * T;  // att[b, h, t], dpre[b, h, t]
  let kBegin = (min(s, q0) / TILE) * TILE;
  let kEnd = min(T, q0 + TILE);

  // Phase 1: dpre[t, j] = datt[t, j] = dout_t . v_j
  for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
    var acc = 0.0;
    for (var c0 = 0u; c0 < HS; c0 += TILE) {
      let c = c0 + lx;
      var dv = 0.0;
      var vv = 0.0;
      if (live && c < HS) {
        dv = dout[(b * T + t) * C + h * HS + c];
      }
      if (k0 + ly < T && c < HS) {
        vv = qkv[qkvb + (k0 + ly) * 3u * C + 2u * C + h * HS + c];
      }
      ta[ly * P + lx] = dv;  // dout tile [row ly][channel lx]
      tb[ly * P + lx] = vv;  // V tile [key ly][channel lx]
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        acc += ta[ly * P + i] * tb[lx * P + i];
      }
      workgroupBarrier();
    }
    if (live && k0 + lx < T) {
      dpre[row + k0 + lx] = acc;
    }
  }

  // Phase 2: dpre[t, j] = att[t, j] (datt[t, j] - sum_i att[t, i] datt[t, i]), 0 where masked.
  var dot = 0.0;
  if (live) {
    for (var j = lx; j < T; j += TILE) {
      if (attends(t, j, s)) {
        dot += att[row + j] * dpre[row + j];
      }
    }
  }
  red[ly * TILE + lx] = dot;
  workgroupBarrier();
  dot = 0.0;
  for (var i = 0u; i < TILE; i++) {
    dot += red[ly * TILE + i];
  }
  if (live) {
    for (var j = lx; j < T; j += TILE) {
      var g = 0.0;
      if (attends(t, j, s)) {
        g = att[row + j] * (dpre[row + j] - dot);
      }
      dpre[row + j] = g;
    }
  }

  // Phase 3: dq_t[c] += scale * sum_j dpre[t, j] k_j[c]
  for (var c0 = 0u; c0 < HS; c0 += TILE) {
    var acc = 0.0;
    for (var k0 = kBegin; k0 < kEnd; k0 += TILE) {
      var gv = 0.0;
      var kv = 0.0;
      if (live && k0 + lx < T) {
        gv = dpre[row + k0 + lx];
      }
      if (k0 + ly < T && c0 + lx < HS) {
        kv = qkv[qkvb + (k0 + ly) * 3u * C + C + h * HS + c0 + lx];
      }
      ta[ly * P + lx] = gv;  // dpre tile [row ly][key lx]
      tb[ly * P + lx] = kv;  // K tile [key ly][channel lx]
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        acc += ta[ly * P + i] * tb[i * P + lx];
      }
      workgroupBarrier();
    }
    if (live && c0 + lx < HS) {
      let o = qkvb + t * 3u * C + h * HS + c0 + lx;
      dqkv[o] = dqkv[o] + params.scale * acc;
    }
  }
}
