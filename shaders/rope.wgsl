// Rotary position embedding (RoPE), in place, Hugging Face's rotate-half layout (Llama, Qwen2):
// heads [0, nHeads) of HS floats at the start of each row of x are rotated; for i < HS/2,
//   x1 = x[i], x2 = x[i + HS/2]
//   x[i] = x1 cos - x2 sin,  x[i + HS/2] = x2 cos + x1 sin,  angle = positions[n] * invFreq[i]
// and with `inverse` = 1 by -angle (sin negated): the backward, and the undoing of the forward.
// Shape legend: N rows, W row width (a packed qkv row: (NH + 2 NKV) HS), nHeads rotated heads
// (NH + NKV rotates q and k in one dispatch), HS head size (even), H = HS / 2, maxPos table rows.
// Row-major f32; positions u32.
//
// cos and sin come from tables built on the CPU in float64 (ropeTables in src/kernels/rope.ts):
// WGSL's sin and cos are only accurate on [-pi, pi] and angles reach maxPos radians. A position
// at or past the tables' end (maxPos = arrayLength / H) leaves its row unchanged (memory-safe).
// One invocation per (n, head, i): it owns x[i] and x[i + H] of its head, so in place is race-free.
// The dispatch may be folded into 2-D (linearWorkgroups), so the index uses num_workgroups.

struct Params {
  N: u32,
  W: u32,
  nHeads: u32,
  HS: u32,
  inverse: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;    // (N, W)
@group(0) @binding(1) var<storage, read> positions: array<u32>;  // (N)
@group(0) @binding(2) var<storage, read> cosT: array<f32>;       // (maxPos, H)
@group(0) @binding(3) var<storage, read> sinT: array<f32>;       // (maxPos, H)
@group(0) @binding(4) var<uniform> params: Params;

override WG_X: u32 = 64;

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG_X;
  let H = params.HS / 2u;
  if (idx >= params.N * params.nHeads * H) {
    return;
  }
  let i = idx % H;
  let nh = idx / H;  // n * nHeads + head
  let head = nh % params.nHeads;
  let n = nh / params.nHeads;
  let pos = positions[n];
  if (pos >= arrayLength(&cosT) / H) {
    return;
  }
  let t = pos * H + i;
  let c = cosT[t];
  let s = select(sinT[t], -sinT[t], params.inverse != 0u);
  let a = n * params.W + head * params.HS + i;
  let x1 = x[a];
  let x2 = x[a + H];
  x[a] = x1 * c - x2 * s;
  x[a + H] = x2 * c + x1 * s;
}
