// Backward of shaders/logprob_forward.wgsl; recomputes the row's softmax statistics.
// Shape legend: BT rows (batch * time), V vocab.
// Forward:  logp = log p_t,  H = -sum p log p,  p = softmax(z),  z = invTemp * logits
// Backward (written, not accumulated):
//   dlogits[r, i] = invTemp * ( dlogp[r] * ((i == t) - p_i) + dentropy[r] * (-p_i * (log p_i + H)) )
// from d log p_t / d z_i = (i == t) - p_i and d H / d z_i = -p_i (log p_i + H).
// A target >= V contributes no one-hot term. WG_X must be a power of two.

struct Params {
  rows: u32,     // BT
  V: u32,
  invTemp: f32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;          // (BT, V)
@group(0) @binding(1) var<storage, read> targets: array<u32>;         // (BT)
@group(0) @binding(2) var<storage, read> dlogp: array<f32>;           // (BT)
@group(0) @binding(3) var<storage, read> dentropy: array<f32>;        // (BT)
@group(0) @binding(4) var<storage, read_write> dlogits: array<f32>;   // (BT, V)
@group(0) @binding(5) var<uniform> params: Params;

override WG_X: u32 = 256;

var<workgroup> red: array<vec2f, WG_X>;  // (WG_X)

fn reduceMax(lid: u32, v: f32) -> f32 {
  red[lid] = vec2f(v, 0.0);
  workgroupBarrier();
  for (var s = WG_X / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      red[lid].x = max(red[lid].x, red[lid + s].x);
    }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&red[0]).x;
}

fn reduceSum2(lid: u32, v: vec2f) -> vec2f {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG_X / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      red[lid] = red[lid] + red[lid + s];
    }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&red[0]);
}

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) {
    return;  // extra workgroups of a folded dispatch (uniform per workgroup)
  }
  let V = params.V;
  let base = row * V;
  let k = params.invTemp;

  var m = -3.402823e38;
  for (var i = lid; i < V; i += WG_X) {
    m = max(m, k * logits[base + i]);
  }
  m = reduceMax(lid, m);

  var acc = vec2f(0.0);  // (sum e, sum e * (z - m))
  for (var i = lid; i < V; i += WG_X) {
    let d = k * logits[base + i] - m;
    let e = exp(d);
    acc += vec2f(e, e * d);
  }
  acc = reduceSum2(lid, acc);

  let logS = log(acc.x);
  let H = logS - acc.y / acc.x;
  let t = targets[row];
  let gl = dlogp[row];
  let gh = dentropy[row];
  for (var i = lid; i < V; i += WG_X) {
    let logpi = (k * logits[base + i] - m) - logS;
    let p = exp(logpi);
    let g = gl * (select(0.0, 1.0, i == t) - p) - gh * p * (logpi + H);
    dlogits[base + i] = k * g;
  }
}
