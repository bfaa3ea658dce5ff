// Flash-decoding, second kernel: merges the S partials that attention_gqa.wgsl's `split` entry
// point wrote for each (b, i, h) into the attention output:
//   M = max_s m_s,  L = sum_s l_s exp(m_s - M),  out[d] = sum_s acc_s[d] exp(m_s - M) / L
// Empty splits (l_s = 0, m_s = -3e38) add nothing; split 0 of every row holds at least its
// first visible key, so L > 0.
// Shape legend: B batch, Tnew new rows, NH query heads, HS head size, S splits.
// Partial s of a row is scratch[((row * S) + s) * (HS + 2) + (0: m, 1: l, 2 + d: acc[d])],
// row = (b * Tnew + i) * NH + h.
//
// One invocation per output (row, d); each re-reads the row's S (m, l) pairs (broadcast loads).
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  B: u32,
  Tnew: u32,
  NH: u32,
  NKV: u32,
  HS: u32,
  Tmax: u32,
  pos: u32,
  S: u32,
  scale: f32,
}

@group(0) @binding(0) var<storage, read> scratch: array<f32>;    // (B, Tnew, NH, S, HS + 2)
@group(0) @binding(1) var<storage, read_write> out: array<f32>;  // (B, Tnew, NH*HS)
@group(0) @binding(2) var<uniform> params: Params;

override WG_X: u32 = 64;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG_X;
  let HS = params.HS;
  if (idx >= params.B * params.Tnew * params.NH * HS) {
    return;
  }
  let row = idx / HS;
  let d = idx % HS;
  let S = params.S;
  let stride = HS + 2u;
  let base = row * S * stride;
  var M = -3.0e38;
  for (var s = 0u; s < S; s++) {
    M = max(M, scratch[base + s * stride]);
  }
  var L = 0.0;
  var a = 0.0;
  for (var s = 0u; s < S; s++) {
    let part = base + s * stride;
    let l = scratch[part + 1u];
    if (l > 0.0) {
      let w = exp(scratch[part] - M);
      L += l * w;
      a += scratch[part + 2u + d] * w;
    }
  }
  out[idx] = a / L;
}
