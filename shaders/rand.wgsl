// Counter-based uniform random numbers: out[i] = u(seed, stream, i) in [0, 1), reproduced
// bit-exactly on the CPU by randUniformRef (src/kernels/rand.ts). Shape legend: N outputs.
//   pcg(x)  = the PCG-RXS-M-XS 32-bit hash (Jarzynski & Olano 2020), a bijection of u32
//   key     = pcg(pcg(seed) ^ stream)
//   bits    = pcg(pcg(i ^ key) + key)
//   u       = (bits >> 8) * 2^-24          (24 bits: exact in f32, so the CPU matches exactly)
// Integer ops only (u32 multiply wraps mod 2^32 in WGSL as Math.imul does in JS).
// The dispatch may be folded into 2-D (see linearWorkgroups in src/gpu/kernel.ts).

struct Params {
  n: u32,       // N
  seed: u32,
  stream: u32,  // e.g. the sampling step, so each step draws fresh numbers
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (N)
@group(0) @binding(1) var<uniform> params: Params;

override WG_X: u32 = 64;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG_X;
  if (i >= params.n) {
    return;
  }
  let key = pcg(pcg(params.seed) ^ params.stream);
  let bits = pcg(pcg(i ^ key) + key);
  out[i] = f32(bits >> 8u) * (1.0 / 16777216.0);
}
