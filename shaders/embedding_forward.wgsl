// out (BT, C) = wte[tokens[bt]] + wpe[positions[bt]], token and position embeddings summed.
// Positions are explicit: t for training, absolute-minus-left-padding positions for generation.
// Shape legend: BT rows, C channels, V vocab, maxT positions. Row-major f32; ids u32.
//
// One thread per output element. Ids are validated on the CPU (src/kernels/embedding.ts); here an
// out-of-range id contributes 0 instead of reading another row, so the kernel stays memory-safe.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  BT: u32,
  C: u32,
  V: u32,
  maxT: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (BT, C)
@group(0) @binding(1) var<storage, read> tokens: array<u32>;     // (BT)
@group(0) @binding(2) var<storage, read> positions: array<u32>;  // (BT)
@group(0) @binding(3) var<storage, read> wte: array<f32>;        // (V, C)
@group(0) @binding(4) var<storage, read> wpe: array<f32>;        // (maxT, C)
@group(0) @binding(5) var<uniform> params: Params;

override WG_X: u32 = 256;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  let C = params.C;
  if (i >= params.BT * C) {
    return;
  }
  let bt = i / C;
  let c = i % C;
  let token = tokens[bt];
  let pos = positions[bt];
  var v = 0.0;
  if (token < params.V) {
    v += wte[token * C + c];
  }
  if (pos < params.maxT) {
    v += wpe[pos * C + c];
  }
  out[i] = v;
}
