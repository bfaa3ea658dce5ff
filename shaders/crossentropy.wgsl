// Softmax cross-entropy with a loss mask, forward and (optionally) backward fused.
// Shape legend: BT rows (batch * time), V vocab.
//   losses[r]     = mask[r] * -log softmax(logits[r])[targets[r]]       (0 when mask[r] == 0)
//   dlogits[r, i] = (softmax(logits[r])[i] - (i == targets[r])) * mask[r] * scale   (written, not accumulated)
// One workgroup per row (folded into 2-D past the per-dimension limit); each invocation strides
// over V, and the row max and the sum of exponentials are reduced in workgroup memory
// (lib/softmax_row.wgsl, appended).
// A target >= V on an unmasked row gives a NaN loss (and a gradient without the one-hot term).
// WG_X must be a power of two.

struct Params {
  rows: u32,       // BT
  V: u32,
  scale: f32,      // gradient scale, typically 1 / sum(mask)
  writeGrad: u32,  // 0: losses only (dlogits may be a dummy buffer), 1: also write dlogits
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;        // (BT, V)
@group(0) @binding(1) var<storage, read> targets: array<u32>;       // (BT)
@group(0) @binding(2) var<storage, read> mask: array<f32>;          // (BT)
@group(0) @binding(3) var<storage, read_write> losses: array<u32>;  // (BT) f32 bits, so NaN is stored exactly
@group(0) @binding(4) var<storage, read_write> dlogits: array<f32>; // (BT, V), or a dummy when writeGrad == 0
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

  let st = softmaxRowStats(lid, base, V, 1.0);  // lib/softmax_row.wgsl
  let m = st.x;
  let s = st.y;

  let t = targets[row];
  let w = mask[row];
  if (lid == 0u) {
    var bits = 0u;  // +0.0 for masked rows
    if (w != 0.0) {
      if (t < V) {
        bits = bitcast<u32>(w * (log(s) - (logits[base + t] - m)));  // x_t - m first: exact when close
      } else {
        bits = 0x7fc00000u;  // NaN: target out of range
      }
    }
    losses[row] = bits;
  }

  if (params.writeGrad != 0u) {
    let g = w * params.scale;
    let inv = 1.0 / s;
    for (var i = lid; i < V; i += WG_X) {
      let p = exp(logits[base + i] - m) * inv;
      dlogits[base + i] = (p - select(0.0, 1.0, i == t)) * g;
    }
  }
}
