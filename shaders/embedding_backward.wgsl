// Backward of one embedding table (dispatched once for wte with the tokens, once for wpe with
// the positions): accumulates  dtable[ids[bt]] += dout[bt]  over all BT rows.
// Shape legend: BT rows, C channels, R table rows (V for wte, maxT for wpe). Row-major f32; ids u32.
//
// Ids repeat, so rows must not race on the same table row. Two deterministic entry points:
//   buckets   `index` holds the rows grouped by id, built on the CPU (embeddingBuckets in
//             src/kernels/embedding.ts):  [ids (NB) | starts (NB + 1) | rows (BT)], where bucket b
//             is table row ids[b] and its dout rows are rows[starts[b] .. starts[b + 1]) in
//             ascending order. One workgroup per bucket owns that table row: its threads take
//             channels c = lid, lid + WG_X, ..., sum the bucket's rows in order and add once.
//             Parallel over distinct ids x channels. Dispatch folded: b = wid.x + wid.y * nwg.x.
//   channels  `index` is the ids themselves (BT), e.g. still on the GPU. One thread per channel
//             walks all BT rows in order: race-free (threads own channels), no CPU work, but only
//             C threads in parallel.
// Out-of-range ids (>= R) are skipped, so a bad id cannot write outside the table.

struct Params {
  BT: u32,
  C: u32,
  R: u32,   // rows of the table
  NB: u32,  // buckets (entry point `buckets` only)
}

@group(0) @binding(0) var<storage, read_write> dtable: array<f32>;  // (R, C), accumulated
@group(0) @binding(1) var<storage, read> dout: array<f32>;          // (BT, C)
@group(0) @binding(2) var<storage, read> index: array<u32>;         // buckets: (2 NB + 1 + BT); channels: (BT)
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = 256;

@compute @workgroup_size(WG_X)
fn buckets(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) nwg: vec3u,
) {
  let b = wid.x + wid.y * nwg.x;
  let NB = params.NB;
  if (b >= NB) {
    return;
  }
  let id = index[b];
  if (id >= params.R) {
    return;
  }
  let C = params.C;
  let start = index[NB + b];
  let end = index[NB + b + 1u];
  let rows = 2u * NB + 1u;  // offset of the row lists
  for (var c = lid; c < C; c += WG_X) {
    var sum = 0.0;
    for (var j = start; j < end; j++) {
      let bt = index[rows + j];
      if (bt < params.BT) {
        sum += dout[bt * C + c];
      }
    }
    dtable[id * C + c] += sum;
  }
}

@compute @workgroup_size(WG_X)
fn channels(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let c = gid.x + gid.y * nwg.x * WG_X;
  let C = params.C;
  if (c >= C) {
    return;
  }
  for (var bt = 0u; bt < params.BT; bt++) {
    let id = index[bt];
    if (id < params.R) {
      dtable[id * C + c] += dout[bt * C + c];
    }
  }
}
