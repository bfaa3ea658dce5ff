// What matmul_forward.wgsl and matmul_forward_direct4.wgsl share (prepended to each by
// kernels/matmul.ts): the uniforms, the output, bias and params bindings, the overrides, and the
// epilogue (bias, pre-activation, GELU, strided store). Each shader declares its own inp (binding
// 2) and appends its weight reader (binding 3).

struct Params {
  M: u32,
  K: u32,
  N: u32,
  ldo: u32,   // row stride of out and pre (N when dense)
  col0: u32,  // first column of out and pre written (0 when dense)
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // (M, ldo), columns [col0, col0 + N) written
@group(0) @binding(1) var<storage, read_write> pre: array<f32>;  // (M, ldo) when WRITE_PRE, as out
// @binding(2) inp and @binding(3) weight: declared by each shader (scalar or four-wide)
@group(0) @binding(4) var<storage, read> bias: array<f32>;       // (N) when HAS_BIAS
@group(0) @binding(5) var<uniform> params: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;
override HAS_BIAS: bool = true;
override GELU: bool = false;
override WRITE_PRE: bool = false;

const GELU_SCALE: f32 = 0.7978845608028654;  // sqrt(2 / pi)

// GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The tanh argument is clamped to
// +-10 (tanh(10) rounds to 1 in f32, so nothing changes) because some backends compute tanh from
// exponentials that overflow to inf/inf = NaN for large arguments.
fn gelu(x: f32) -> f32 {
  let u = GELU_SCALE * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + tanh(clamp(u, -10.0, 10.0)));
}

// Writes one finished output: bias, pre-activation, activation.
fn store(m: u32, n: u32, sum: f32) {
  var v = sum;
  if (HAS_BIAS) {
    v += bias[n];
  }
  let i = m * params.ldo + params.col0 + n;
  if (WRITE_PRE) {
    pre[i] = v;
  }
  if (GELU) {
    v = gelu(v);
  }
  out[i] = v;
}
