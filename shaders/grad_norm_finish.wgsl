// Last step of the global gradient norm: one invocation turns the total sum of squares into the
// L2 norm and updates the status words (layout in src/kernels/adamw.ts):
//   status[1] = 1 if this step's gradient is non-finite (set by shaders/grad_norm.wgsl for a NaN/Inf
//               element, or here when the sum of squares overflowed), else 0
//   status[0] += status[1]   (non-finite steps since the trainer last cleared it)
//   norm[0]   = sqrt(sum of squares); NaN when an element was NaN/Inf, +Inf on overflow

@group(0) @binding(0) var<storage, read> sumsq: array<f32>;          // (1) total sum of squares
@group(0) @binding(1) var<storage, read_write> norm: array<u32>;     // (1) f32 bits of the norm
@group(0) @binding(2) var<storage, read_write> status: array<u32>;   // (4)

override WG_X: u32 = 1;

@compute @workgroup_size(WG_X)
fn main(@builtin(local_invocation_index) lid: u32) {
  if (lid != 0u) {
    return;
  }
  let s = sumsq[0];
  let elementBad = status[1] != 0u;
  let overflow = (bitcast<u32>(s) & 0x7f800000u) == 0x7f800000u;
  var bits = bitcast<u32>(sqrt(s));
  if (overflow) {
    bits = 0x7f800000u;  // +Inf
  }
  if (elementBad) {
    bits = 0x7fc00000u;  // NaN
  }
  norm[0] = bits;
  let bad = select(0u, 1u, elementBad || overflow);
  status[1] = bad;
  status[0] = status[0] + bad;
}
