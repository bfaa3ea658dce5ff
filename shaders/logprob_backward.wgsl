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

  let st = softmaxRowStats(lid, base, V, k);  // lib/softmax_row.wgsl
  let m = st.x;
  let acc = st.yz;  // (sum e, sum e * (z - m))

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
