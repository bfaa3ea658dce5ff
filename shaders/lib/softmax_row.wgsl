// Shared softmax row statistics, appended to crossentropy.wgsl, logprob_forward.wgsl and
// logprob_backward.wgsl by their TS wrappers (WGSL has no include; module-scope declarations may
// come in any order, so appending keeps the shaders' own line numbers in compiler messages).
// Needs from the including shader: `override WG_X` (a power of two) and `logits: array<f32>`.

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

// Over z = k * logits[base .. base + V): (m, S, T) with m = max z, S = sum e, T = sum e * (z - m),
// e = exp(z - m). Every invocation of the workgroup must call it (it reduces in workgroup memory).
fn softmaxRowStats(lid: u32, base: u32, V: u32, k: f32) -> vec3f {
  var m = -3.402823e38;
  for (var i = lid; i < V; i += WG_X) {
    m = max(m, k * logits[base + i]);
  }
  m = reduceMax(lid, m);
  var acc = vec2f(0.0);
  for (var i = lid; i < V; i += WG_X) {
    let d = k * logits[base + i] - m;
    let e = exp(d);
    acc += vec2f(e, e * d);
  }
  acc = reduceSum2(lid, acc);
  return vec3f(m, acc);
}
