// The matmul forward's epilogue, shared by matmul_forward.wgsl and matmul_forward_direct4.wgsl
// (prepended to each by kernels/matmul.ts). It reads the including shader's out, pre, bias and
// params bindings and its HAS_BIAS, GELU and WRITE_PRE overrides.

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
