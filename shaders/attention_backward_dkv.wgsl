// Attention backward, part 2 of 2: dk and dv, after attention_backward_dq.wgsl has written dpre.
// Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size, TILE = WG_X = WG_Y.
//
// Forward lines differentiated:
//   out_t = sum_j att[t, j] v_j            ->  dv_j += sum_t att[t, j] dout_t
//   pre[t, j] = scale * q_t . k_j           ->  dk_j += scale * sum_t dpre[t, j] q_t
// One workgroup of TILE x TILE invocations per (key tile, head, batch); invocation (ly, lx)
// owns key row j = j0 + ly and channel c0 + lx of each TILE-channel chunk, and loops over the
// query tiles that can see its keys (t >= j0; only the diagonal tile when every key of the tile
// is padding), through four shared tiles (att and dpre transposed on use, dout and Q). Each
// output element is written by exactly one invocation: deterministic, no atomics.
// Shared memory: 4 * TILE * (TILE + 1) floats (4.3 KiB at TILE = 16); no limit on T or HS.

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
@group(0) @binding(4) var<storage, read> dpre: array<f32>;        // (B, NH, T, T) from attention_backward_dq
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;  // (B, T, 3C), k and v parts += here
@group(0) @binding(6) var<uniform> params: Params;

override WG_X: u32 = 16;  // TILE
override WG_Y: u32 = 16;  // must equal WG_X

var<workgroup> pa: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): att [query][key]
var<workgroup> pb: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dpre [query][key]
var<workgroup> pc: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): dout [query][channel]
var<workgroup> pd: array<f32, WG_X * (WG_X + 1u)>;  // (TILE, TILE + 1): Q [query][channel]

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let TILE = WG_X;
  let P = TILE + 1u;
  let T = params.T;
  let C = params.C;
  let NH = params.NH;
  let HS = C / NH;
  let lx = lid.x;
  let ly = lid.y;
  let j0 = wid.x * TILE;
  let h = wid.y;
  let b = wid.z;
  let s = start[b];
  let j = j0 + ly;
  let qkvb = b * T * 3u * C;
  let head = (b * NH + h) * T * T;  // att[b, h], dpre[b, h]
  // Queries that see some key of this tile: [j0, tEnd). A padding key j < s is seen only by t = j.
  let tEnd = select(T, min(T, j0 + TILE), j0 + TILE <= s);

  for (var c0 = 0u; c0 < HS; c0 += TILE) {
    var dv = 0.0;
    var dk = 0.0;
    for (var t0 = j0; t0 < tEnd; t0 += TILE) {
      let tq = t0 + ly;  // the query row this invocation loads
      var a = 0.0;
      var g = 0.0;
      var o = 0.0;
      var q = 0.0;
      if (tq < T && j0 + lx < T) {
        a = att[head + tq * T + j0 + lx];
        g = dpre[head + tq * T + j0 + lx];
      }
      if (tq < T && c0 + lx < HS) {
        o = dout[(b * T + tq) * C + h * HS + c0 + lx];
        q = qkv[qkvb + tq * 3u * C + h * HS + c0 + lx];
      }
      pa[ly * P + lx] = a;
      pb[ly * P + lx] = g;
      pc[ly * P + lx] = o;
      pd[ly * P + lx] = q;
      workgroupBarrier();
      for (var i = 0u; i < TILE; i++) {
        dv += pa[i * P + ly] * pc[i * P + lx];
        dk += pb[i * P + ly] * pd[i * P + lx];
      }
      workgroupBarrier();
    }
    if (j < T && c0 + lx < HS) {
      let k = qkvb + j * 3u * C + C + h * HS + c0 + lx;
      dqkv[k] = dqkv[k] + params.scale * dk;
      dqkv[k + C] = dqkv[k + C] + dv;
    }
  }
}
