// Per-token log-probability and entropy at inverse temperature invTemp (for PPO).
// Shape legend: BT rows (batch * time), V vocab.
//   z          = invTemp * logits[r]                                   (V)
//   logp[r]    = log softmax(z)[targets[r]] = (z_t - max z) - log sum exp(z - max z)
//   entropy[r] = -sum p log p = log S - sum(e * (z - max z)) / S,  e = exp(z - max z), S = sum e
// One workgroup per row (folded into 2-D past the per-dimension limit); invocations stride over
// V and reduce in workgroup memory (lib/softmax_row.wgsl, appended). A target >= V gives logp = NaN. WG_X must be a power of two.

struct Params {
  rows: u32,     // BT
  V: u32,
  invTemp: f32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;        // (BT, V)
@group(0) @binding(1) var<storage, read> targets: array<u32>;       // (BT)
@group(0) @binding(2) var<storage, read_write> logp: array<u32>;    // (BT) f32 bits, so NaN is stored exactly
@group(0) @binding(3) var<storage, read_write> entropy: array<f32>; // (BT)
@group(0) @binding(4) var<uniform> params: Params;

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

  if (lid == 0u) {
    let logS = log(acc.x);
    let t = targets[row];
    var bits = 0x7fc00000u;  // NaN: target out of range
    if (t < V) {
      bits = bitcast<u32>((k * logits[base + t] - m) - logS);
    }
    logp[row] = bits;
    entropy[row] = logS - acc.y / acc.x;
  }
}
