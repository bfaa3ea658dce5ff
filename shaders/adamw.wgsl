// AdamW (decoupled weight decay, bias-corrected; PyTorch semantics) with global-norm clipping,
// over the sub-range [offset, offset + n) of flat buffers. Shape legend: P parameters in all.
//   scale = min(1, maxNorm / (norm + 1e-6))   (1 when maxNorm <= 0)
//   g = grad * scale
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr * ((m / bc1) / (sqrt(v / bc2) + eps) + weightDecay * param)
// with bc1 = 1 - beta1^step, bc2 = 1 - beta2^step computed in float64 on the CPU.
// When status[1] != 0 (this step's gradient is non-finite) nothing is written: params, m and v
// stay unchanged. Each invocation updates ITEMS elements (the norm and status read once); the
// dispatch may be folded into 2-D (see linearWorkgroups). `main4` is the same step four elements a
// load, for offset and n multiples of 4 (the buffers viewed as vec4; only main4 uses those views).

struct Opts {
  offset: u32,
  n: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  weightDecay: f32,
  bc1: f32,      // 1 - beta1^step
  bc2: f32,      // 1 - beta2^step
  maxNorm: f32,  // <= 0 disables clipping
}

@group(0) @binding(0) var<storage, read_write> param: array<f32>;  // (P)
@group(0) @binding(1) var<storage, read> grad: array<f32>;         // (P)
@group(0) @binding(2) var<storage, read_write> m: array<f32>;      // (P)
@group(0) @binding(3) var<storage, read_write> v: array<f32>;      // (P)
@group(0) @binding(4) var<storage, read> norm: array<f32>;         // (1) global L2 norm of the gradient
@group(0) @binding(5) var<storage, read> status: array<u32>;       // (4) see src/kernels/adamw.ts
@group(0) @binding(6) var<uniform> opts: Opts;

@group(0) @binding(0) var<storage, read_write> param4: array<vec4f>;
@group(0) @binding(1) var<storage, read> grad4: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> m4: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> v4: array<vec4f>;

override WG_X: u32 = 256;
override ITEMS: u32 = 4;  // elements per invocation, WG_X apart (consecutive invocations, consecutive elements)

// The invocation's first element (main) or vec4 (main4); its others follow WG_X apart.
fn firstIndex(lid: u32, wid: vec3u, nwg: vec3u) -> u32 {
  return (wid.x + wid.y * nwg.x) * WG_X * ITEMS + lid;
}

// min(1, maxNorm / (norm + 1e-6)), or 1 when clipping is off.
fn clipScale() -> f32 {
  if (opts.maxNorm > 0.0) {
    return min(1.0, opts.maxNorm / (norm[0] + 1e-6));
  }
  return 1.0;
}

@compute @workgroup_size(WG_X)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  if (status[1] != 0u) {
    return;
  }
  let base = firstIndex(lid, wid, nwg);
  let scale = clipScale();
  for (var e = 0u; e < ITEMS; e++) {
    let i = base + e * WG_X;
    if (i >= opts.n) {
      return;
    }
    let j = opts.offset + i;
    let g = grad[j] * scale;
    let mj = opts.beta1 * m[j] + (1.0 - opts.beta1) * g;
    let vj = opts.beta2 * v[j] + (1.0 - opts.beta2) * g * g;
    m[j] = mj;
    v[j] = vj;
    let p = param[j];
    param[j] = p - opts.lr * ((mj / opts.bc1) / (sqrt(vj / opts.bc2) + opts.eps) + opts.weightDecay * p);
  }
}

// main4: ITEMS vec4s per invocation; offset and n are multiples of 4, so each vec4 lies in range.
@compute @workgroup_size(WG_X)
fn main4(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  if (status[1] != 0u) {
    return;
  }
  let base = firstIndex(lid, wid, nwg);
  let scale = clipScale();
  for (var e = 0u; e < ITEMS; e++) {
    let i = base + e * WG_X;
    if (i >= opts.n / 4u) {
      return;
    }
    let j = opts.offset / 4u + i;
    let g = grad4[j] * scale;
    let mj = opts.beta1 * m4[j] + (1.0 - opts.beta1) * g;
    let vj = opts.beta2 * v4[j] + (1.0 - opts.beta2) * g * g;
    m4[j] = mj;
    v4[j] = vj;
    let p = param4[j];
    param4[j] = p - opts.lr * ((mj / opts.bc1) / (sqrt(vj / opts.bc2) + opts.eps) + opts.weightDecay * p);
  }
}
