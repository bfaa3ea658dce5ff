// LoRA on a block of a linear layer's output columns: with xa = inp · A^T (M, r), computed by the
// matmul kernel, the adapter adds
//   out[:, col0 : col0 + N] += scale * xa · B^T            scale = alpha / r
// and its backward, from the block of dout the base layer's output got:
//   dxa (M, r) = scale * dout[:, col0 : col0 + N] · B      (written, not accumulated)
//   dB  (N, r) += scale * dout[:, col0 : col0 + N]^T · xa  (accumulated)
// (then dA += dxa^T · inp and dinp += dxa · A are the matmul backward's, dout = dxa).
// Shape legend: M rows (= BT), r the rank, N the adapted block's width (the module's out_features),
// ldo the row stride of out / dout (the engine tensor's width: a packed qkv or gate|up row),
// col0 the block's first column. Row-major f32.
//
// One output element per invocation, summing over r (add), N (dxa) or M (db) in order: no
// atomics, deterministic. r is small (the rank), so `add` reads a row of xa and of B per output;
// `dxa` and `db` walk a whole block column or row, fine at LoRA's sizes (they are a rank-r sliver
// of the base layer's backward). The dispatch may be folded into 2-D (linearWorkgroups).
//
// Entry points share the bindings: dst (rw), a, b (read) are
//   add  out (M, ldo), xa (M, r), B (N, r)
//   dxa  dxa (M, r), dout (M, ldo), B (N, r)
//   db   dB (N, r), dout (M, ldo), xa (M, r)

struct Params {
  M: u32,
  r: u32,
  N: u32,
  ldo: u32,
  col0: u32,
  scale: f32,
}

@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;

fn linearIndex(gid: vec3u, nwg: vec3u) -> u32 {
  return gid.x + gid.y * nwg.x * WG_X;
}

// out[m, col0 + n] += scale * sum_j xa[m, j] B[n, j]; i = m * N + n
@compute @workgroup_size(WG_X)
fn add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = linearIndex(gid, nwg);
  let r = params.r;
  if (i >= params.M * params.N) {
    return;
  }
  let m = i / params.N;
  let n = i % params.N;
  var sum = 0.0;
  for (var j = 0u; j < r; j++) {
    sum += a[m * r + j] * b[n * r + j];
  }
  let o = m * params.ldo + params.col0 + n;
  dst[o] = dst[o] + params.scale * sum;
}

// dxa[m, j] = scale * sum_n dout[m, col0 + n] B[n, j]; i = m * r + j
@compute @workgroup_size(WG_X)
fn dxa(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = linearIndex(gid, nwg);
  let r = params.r;
  if (i >= params.M * r) {
    return;
  }
  let m = i / r;
  let j = i % r;
  let row = m * params.ldo + params.col0;
  var sum = 0.0;
  for (var n = 0u; n < params.N; n++) {
    sum += a[row + n] * b[n * r + j];
  }
  dst[i] = params.scale * sum;
}

// dB[n, j] += scale * sum_m dout[m, col0 + n] xa[m, j]; i = n * r + j
@compute @workgroup_size(WG_X)
fn db(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = linearIndex(gid, nwg);
  let r = params.r;
  if (i >= params.N * r) {
    return;
  }
  let n = i / r;
  let j = i % r;
  var sum = 0.0;
  for (var m = 0u; m < params.M; m++) {
    sum += a[m * params.ldo + params.col0 + n] * b[m * r + j];
  }
  dst[i] = dst[i] + params.scale * sum;
}
