// GQA attention backward, part 2 of 2: dk and dv, after attention_gqa_train_backward_dq.wgsl has
// written delta (D_t = dout_t . out_t). Forward lines differentiated, for each query head h of the
// group that reads kv head g:
//   out_t = sum_j att[t, j] v_j       ->  dv_j += sum_t att[t, j] dout_t
//   pre[t, j] = scale q_t . k_j        ->  dk_j += scale sum_t dpre[t, j] q_t,
//                                          dpre[t, j] = att[t, j] (dout_t . v_j - D_t)
// with att[t, j] = exp(pre[t, j] - lse_t) recomputed from the saved lse, over the queries that see
// key j (t == j, or t >= j >= start[b]).
// Shape legend: B batch, T time, NH query heads, NKV kv heads, HS head size, W = (NH + 2 NKV) HS
// the packed qkv row, TILE = WG_X = WG_Y, CB channels per workgroup, NB = ceil(HS / CB) blocks.
//
// One workgroup of TILE x TILE invocations per (key tile x channel block, kv head, batch);
// invocation (ly, lx) owns key row j = j0 + ly and channels cb0 + (lx mod TILE) of the block in
// two shared accumulators. It loops over the NH / NKV query heads of the group, in order, and the
// query tiles that can see its keys (t0 >= j0; only the diagonal tile when every key of the tile
// is padding):
//   1. S^T[ly][lx] = q_{t0 + lx} . k_j and datt^T[ly][lx] = dout_{t0 + lx} . v_j by one tiled pass
//      over all HS channels (Q, K, dout, V tiles);
//   2. att^T and dpre^T into two shared tiles (0 where masked);
//   3. for the block's channels: dv[ly][c] += sum_t att^T[ly][t] dout_t[c] and
//      dk[ly][c] += sum_t dpre^T[ly][t] q_t[c] through a Q and a dout tile per TILE channels.
// Then dqkv's k part += scale dk, v part += dv. The sum over the group's heads is in a fixed
// order inside one invocation: deterministic, no atomics. Head sizes above CB split the channels
// over NB workgroups, each recomputing steps 1 and 2 (so the accumulators stay 2 TILE CB floats).
// Shared memory: 6 TILE (TILE + 1) + 2 TILE CB floats (14.5 KiB at TILE 16, CB 64).

struct Params {
  B: u32,
  T: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  scale: f32,  // 1 / sqrt(HS)
}

@group(0) @binding(0) var<storage, read> dout: array<f32>;        // (B, T, NH*HS)
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (B, T, W)
@group(0) @binding(2) var<storage, read> lse: array<f32>;         // (B, NH, T) from the forward
@group(0) @binding(3) var<storage, read> start: array<u32>;       // (B)
@group(0) @binding(4) var<storage, read> delta: array<f32>;       // (B, NH, T) from attention_gqa_train_backward_dq
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;  // (B, T, W), k and v parts += here
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 16;  // TILE
override WG_Y: u32 = 16;  // must equal WG_X
override CB: u32 = 64;    // channels of dk, dv per workgroup

var<workgroup> ta: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): Q tile [query][channel]
var<workgroup> tb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): K tile [key][channel]
var<workgroup> tc: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dout tile [query][channel]
var<workgroup> td: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): V tile [key][channel]
var<workgroup> pa: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): att^T [key][query]
var<workgroup> pg: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dpre^T [key][query]
var<workgroup> dk: array<f32, WG_X * CB>;           // (TILE, CB): dk rows of the block, unscaled
var<workgroup> dv: array<f32, WG_X * CB>;           // (TILE, CB): dv rows of the block

fn attends(t: u32, j: u32, s: u32) -> bool {
  return j == t || (s <= j && j <= t);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;
  let T = params.T;
  let NH = params.NH;
  let NKV = params.NKV;
  let HS = params.HS;
  let W = (NH + 2u * NKV) * HS;
  let group = NH / NKV;
  let NB = (HS + CB - 1u) / CB;
  let lx = lid.x;
  let ly = lid.y;
  let j0 = (wid.x / NB) * TILE;
  let cb0 = (wid.x % NB) * CB;
  let cbEnd = min(HS, cb0 + CB);
  let g = wid.y;
  let b = wid.z;
  let s = start[b];
  let j = j0 + ly;
  let kOff = (NH + g) * HS;
  let vOff = (NH + NKV + g) * HS;
  let rows = b * T;
  // Queries that see some key of this tile: [j0, tEnd). A padding key j < s is seen only by t = j.
  let tEnd = select(T, min(T, j0 + TILE), j0 + TILE <= s);

  for (var c = lx; c < CB; c += TILE) {
    dk[ly * CB + c] = 0.0;
    dv[ly * CB + c] = 0.0;
  }

  for (var hh = 0u; hh < group; hh++) {
    let h = g * group + hh;
    let qOff = h * HS;
    for (var t0 = j0; t0 < tEnd; t0 += TILE) {
      // 1. S^T[ly][lx] = q_t . k_j and datt^T[ly][lx] = dout_t . v_j, t = t0 + lx
      var sacc = 0.0;
      var dacc = 0.0;
      for (var c0 = 0u; c0 < HS; c0 += TILE) {
        let c = c0 + lx;
        var qv = 0.0;
        var ov = 0.0;
        var kv = 0.0;
        var vv = 0.0;
        if (t0 + ly < T && c < HS) {
          qv = qkv[(rows + t0 + ly) * W + qOff + c];
          ov = dout[(rows + t0 + ly) * NH * HS + qOff + c];
        }
        if (j < T && c < HS) {
          kv = qkv[(rows + j) * W + kOff + c];
          vv = qkv[(rows + j) * W + vOff + c];
        }
        ta[ly * P + lx] = qv;  // [query ly][channel lx]
        tc[ly * P + lx] = ov;
        tb[ly * P + lx] = kv;  // [key ly][channel lx]
        td[ly * P + lx] = vv;
        workgroupBarrier();
        for (var i = 0u; i < TILE; i++) {
          sacc += tb[ly * P + i] * ta[lx * P + i];
          dacc += td[ly * P + i] * tc[lx * P + i];
        }
        workgroupBarrier();
      }
      // 2. att^T[ly][lx] = exp(S scale - lse_t), dpre^T[ly][lx] = att (datt - D_t)
      let t = t0 + lx;
      var a = 0.0;
      var gp = 0.0;
      if (j < T && t < T && attends(t, j, s)) {
        let r = (b * NH + h) * T + t;
        a = exp(sacc * params.scale - lse[r]);
        gp = a * (dacc - delta[r]);
      }
      pa[ly * P + lx] = a;
      pg[ly * P + lx] = gp;

      // 3. dv[ly][c] += sum_t att^T[ly][t] dout_t[c], dk[ly][c] += sum_t dpre^T[ly][t] q_t[c]
      for (var c0 = cb0; c0 < cbEnd; c0 += TILE) {
        let c = c0 + lx;
        var qv = 0.0;
        var ov = 0.0;
        if (t0 + ly < T && c < cbEnd) {
          qv = qkv[(rows + t0 + ly) * W + qOff + c];
          ov = dout[(rows + t0 + ly) * NH * HS + qOff + c];
        }
        ta[ly * P + lx] = qv;  // Q tile [query ly][channel lx]
        tc[ly * P + lx] = ov;  // dout tile [query ly][channel lx]
        workgroupBarrier();    // also publishes pa, pg
        if (c < cbEnd) {
          var ak = dk[ly * CB + c - cb0];
          var av = dv[ly * CB + c - cb0];
          for (var i = 0u; i < TILE; i++) {
            av += pa[ly * P + i] * tc[i * P + lx];
            ak += pg[ly * P + i] * ta[i * P + lx];
          }
          dk[ly * CB + c - cb0] = ak;
          dv[ly * CB + c - cb0] = av;
        }
        workgroupBarrier();
      }
    }
  }

  if (j < T) {
    for (var c = cb0 + lx; c < cbEnd; c += TILE) {
      let k = (rows + j) * W + kOff + c;
      let v = (rows + j) * W + vOff + c;
      dqkv[k] = dqkv[k] + params.scale * dk[ly * CB + c - cb0];
      dqkv[v] = dqkv[v] + dv[ly * CB + c - cb0];
    }
  }
}
