/**
 * Subgroup-broadcast matmuls for software adapters (lavapipe, SwiftShader): the WGSL of the
 * forward product and of the backward's two products, generated for a subgroup of L lanes.
 *
 * Why: on a CPU-emulated adapter the invocations of a subgroup are the lanes of one SIMD register,
 * arithmetic is nearly free, and each lane's load from a storage buffer costs about the same
 * whatever the addresses (lavapipe on the 2-core build machine: about 1.1 G scalar loads a second
 * for uniform, consecutive and strided addresses alike). The direct kernels, where each thread
 * reads its own 4 rows and 4 columns, are bound by those loads. Here each lane loads one row's
 * four values and `subgroupBroadcast` hands them to the other lanes (a register shuffle), so one
 * loaded element serves L times more products: 2-3x the direct kernels on lavapipe, about 1.8x
 * on SwiftShader (docs/results.md).
 *
 * A workgroup is one subgroup (workgroup size L, the adapter's fixed subgroup size:
 * `subgroupMinSize == subgroupMaxSize`, see ./matmul.ts's `subgroupStrategy`). It owns a tile of
 * `rows * L` output rows and `cols * L` output columns (the forward) or column quads (the
 * backward's products, four columns a vec4): lane i loads rows r0 + g*L + i (g < rows) and owns
 * columns c0 + c*L + i (c < cols). Every lane runs every broadcast (uniform control flow); rows
 * and columns past the matrix are clamped to the last one (read, never stored). The accumulators
 * are named scalars (or vec4s), written out: SwiftShader keeps an indexed array in memory, and
 * subgroupBroadcast takes a constant lane.
 *
 * Each output is still one running sum over k in order, owned by one lane, added once: the same
 * determinism as the other kernels.
 */

/** Subgroup sizes these kernels are written and measured for (SwiftShader 4, lavapipe 8). */
export const SUBGROUP_LANES = [4, 8] as const;
export type SubgroupLanes = (typeof SUBGROUP_LANES)[number];

/** A subgroup's tile: `rows` groups of L rows, `cols` columns (or column quads) a lane. */
export interface SubgroupTile {
  rows: number;
  cols: number;
}

/**
 * The largest row groups and the columns a lane, measured on the 2-core build machine (M = 64,
 * SmolLM2's widths): lavapipe's forward peaks at 4 x 2 (21-23 GFLOP/s against 6-7 for direct4),
 * its dinp at 2 x 1; SwiftShader's at 4 x 4 and 4 x 2.
 */
const TILES: Record<'forward' | 'dmat', Record<SubgroupLanes, SubgroupTile>> = {
  forward: { 4: { rows: 4, cols: 4 }, 8: { rows: 4, cols: 2 } },
  dmat: { 4: { rows: 4, cols: 2 }, 8: { rows: 2, cols: 1 } },
};

/** The tile for `R` output rows: the measured one, with fewer row groups when R is small (no groups of clamped rows). */
export function subgroupTile(kind: 'forward' | 'dmat', lanes: SubgroupLanes, R: number): SubgroupTile {
  const best = TILES[kind][lanes];
  let rows = best.rows;
  while (rows > 1 && lanes * rows > R) rows /= 2;
  return { rows, cols: best.cols };
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Row r of the tile as every lane sees it: row group r / L's value `v` (xv, xs) from lane r % L. */
const broadcast = (v: string, r: number, L: number): string => `subgroupBroadcast(${v}${Math.floor(r / L)}, ${r % L}u)`;

function checkTile(L: number, t: SubgroupTile): void {
  if (!(SUBGROUP_LANES as readonly number[]).includes(L))
    throw new Error(`subgroup matmul: ${L} lanes; written for ${SUBGROUP_LANES.join(', ')}`);
  for (const k of ['rows', 'cols'] as const)
    if (!Number.isInteger(t[k]) || t[k] < 1 || t[k] > 8)
      throw new Error(`subgroup matmul: tile ${k} must be an integer in 1..8, got ${t[k]}`);
}

/**
 * The forward's entry point `main`: out (M, N) = inp (M, K) · weight (N, K)^T through the
 * epilogue's `store` (shaders/lib/matmul_epilogue.wgsl, prepended), the weight read by
 * `weightAt4` (weightReader4, appended). K a multiple of 4. Workgroup (M tile, N tile) =
 * (wid.y, wid.x).
 */
export function subgroupForwardWgsl(L: number, t: SubgroupTile): string {
  checkTile(L, t);
  const R = range(L * t.rows);
  const G = range(t.rows);
  const C = range(t.cols);
  return `
// subgroup forward: ${L} lanes, ${t.rows * L} rows x ${t.cols * L} columns a workgroup (kernels/matmul_subgroup.ts)
@group(0) @binding(2) var<storage, read> inp: array<vec4f>;  // (M, K / 4)

@compute @workgroup_size(WG_X)  // the lanes (the epilogue's override, set by the spec): one subgroup a workgroup
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K4 = params.K / 4u;
  let m0 = wid.y * ${t.rows * L}u;
  let nb = wid.x * ${t.cols * L}u + lane;
  // this lane's input rows (clamped: read, never stored) and weight rows (its columns)
${G.map((g) => `  let xr${g} = min(m0 + ${g * L}u + lane, M - 1u) * K4;`).join('\n')}
${C.map((c) => `  let n${c} = nb + ${c * L}u;\n  let wr${c} = min(n${c}, N - 1u) * K4;`).join('\n')}
${R.flatMap((r) => C.map((c) => `  var s${r}_${c} = 0.0;`)).join('\n')}
  for (var k = 0u; k < K4; k++) {
${G.map((g) => `    let xv${g} = inp[xr${g} + k];`).join('\n')}
${C.map((c) => `    let w${c} = weightAt4(wr${c} + k);`).join('\n')}
${R.map((r) => {
  return `    let x${r} = ${broadcast('xv', r, L)};\n${C.map((c) => `    s${r}_${c} += dot(x${r}, w${c});`).join('\n')}`;
}).join('\n')}
  }
${R.flatMap((r) => C.map((c) => `  if (m0 + ${r}u < M && n${c} < N) {\n    store(m0 + ${r}u, n${c}, s${r}_${c});\n  }`)).join('\n')}
}
`;
}

/**
 * The backward's product grad (R, S) += op(a) (R, Q) · b (Q, S) as shaders/matmul_backward_dmat.wgsl
 * has it (its Params and bindings), entry point `main`, S a multiple of 4 (each lane owns column
 * quads, b read by `bAt4`: weightReader4, appended):
 * - dinp (aT false): a is dout (R = M, Q = N) read four q a load (Q, lda and acol0 multiples of 4);
 * - dweight (aT true): a is dout read transposed (R = N, Q = M), one value a load, any Q.
 */
export function subgroupDmatWgsl(L: number, t: SubgroupTile, aT: boolean): string {
  checkTile(L, t);
  const R = range(L * t.rows);
  const G = range(t.rows);
  const C = range(t.cols);
  const Q = range(4);
  const comp = ['x', 'y', 'z', 'w'];
  // the products of one quad of q: row r's four values (broadcast) times b's rows q..q+3
  const quad = R.map((r) => {
    const x = `    let x${r} = ${broadcast('xv', r, L)};`;
    const adds = C.map((c) => `    g${r}_${c} += ${Q.map((i) => `x${r}.${comp[i]} * b${i}_${c}`).join(' + ')};`);
    return [x, ...adds].join('\n');
  }).join('\n');
  const bLoads = (q: string) => Q.flatMap((i) => C.map((c) => `    let b${i}_${c} = bAt4((${q} + ${i}u) * S4 + j${c});`)).join('\n');
  const body = aT
    ? `
  let lda = params.lda;
${G.map((g) => `  let ac${g} = params.acol0 + min(r0 + ${g * L}u + lane, R - 1u);`).join('\n')}
  let Q4 = params.Q / 4u;
  for (var q4 = 0u; q4 < Q4; q4++) {
    let q = 4u * q4;
${G.map((g) => `    let xv${g} = vec4f(${Q.map((i) => `a[(q + ${i}u) * lda + ac${g}]`).join(', ')});`).join('\n')}
${bLoads('q')}
${quad}
  }
  // the last Q % 4 rows of dout, one at a time
  for (var q = 4u * Q4; q < params.Q; q++) {
${G.map((g) => `    let xs${g} = a[q * lda + ac${g}];`).join('\n')}
${C.map((c) => `    let b_${c} = bAt4(q * S4 + j${c});`).join('\n')}
${R.map((r) => `    let y${r} = ${broadcast('xs', r, L)};\n${C.map((c) => `    g${r}_${c} += y${r} * b_${c};`).join('\n')}`).join('\n')}
  }`
    : `
  let lda4 = params.lda / 4u;
${G.map((g) => `  let ar${g} = min(r0 + ${g * L}u + lane, R - 1u) * lda4 + params.acol0 / 4u;`).join('\n')}
  for (var q4 = 0u; q4 < params.Q / 4u; q4++) {
    let q = 4u * q4;
${G.map((g) => `    let xv${g} = a4[ar${g} + q4];`).join('\n')}
${bLoads('q')}
${quad}
  }`;
  return `
// subgroup ${aT ? 'dweight' : 'dinp'}: ${L} lanes, ${t.rows * L} rows x ${t.cols * L * 4} columns a workgroup (kernels/matmul_subgroup.ts)
struct Params {
  R: u32,
  Q: u32,
  S: u32,
  lda: u32,
  acol0: u32,
}

@group(0) @binding(0) var<storage, read_write> grad: array<vec4f>;  // (R, S / 4), accumulated
${aT ? '@group(0) @binding(1) var<storage, read> a: array<f32>;  // dout (Q, lda), columns [acol0, acol0 + R)' : '@group(0) @binding(1) var<storage, read> a4: array<vec4f>;  // dout (R, lda / 4), columns [acol0, acol0 + Q) / 4'}
@group(0) @binding(3) var<uniform> params: Params;

override WG_X: u32 = ${L}u;  // the spec sets it: the lanes, one subgroup a workgroup

@compute @workgroup_size(WG_X)
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wid: vec3u) {
  let R = params.R;
  let S4 = params.S / 4u;
  let r0 = wid.y * ${t.rows * L}u;
  let jb = wid.x * ${t.cols * L}u + lane;
${C.map((c) => `  let jo${c} = jb + ${c * L}u;\n  let j${c} = min(jo${c}, S4 - 1u);`).join('\n')}
${R.flatMap((r) => C.map((c) => `  var g${r}_${c} = vec4f(0.0);`)).join('\n')}${body}
${R.flatMap((r) => C.map((c) => `  if (r0 + ${r}u < R && jo${c} < S4) {\n    grad[(r0 + ${r}u) * S4 + jo${c}] += g${r}_${c};\n  }`)).join('\n')}
}
`;
}
