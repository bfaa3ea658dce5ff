/**
 * LoRA's kernels on the GPU vs their float64 references: the forward adding into a column block
 * of a packed output (the columns outside it untouched, bit for bit), the backward's dxa, dB
 * (accumulated onto a random start) and, through the matmul backward, dA and dinp; the references
 * vs central finite differences. Shape legend: lora_linear.ts.
 */
import { describe, expect, test } from 'vitest';
import { centralDiff } from '../testing/finite-diff';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { loraDbRef, loraDxaRef, loraForwardRef, recordLoraBackward, recordLoraForward, type LoraLinearProblem } from './lora_linear';
import { matmulBackwardRef } from './matmul';

// f32 sums of at most ~100 products of values in [-1, 1] (over r for add, N for dxa, M for dB,
// then over r and M for dinp and dA), scaled by 2: as the matmul's tests, whose observed error at
// that size is 4.4e-6 absolute. A transposed B, a wrong block or a missing scale is off by O(1).
const TOL = { atol: 2e-5, rtol: 1e-4 };

/** [M, K, r, N, ldo, col0]: a whole layer, packed blocks (q, k, v of a qkv row), rank 1 and 16. */
const SHAPES: [number, number, number, number, number, number][] = [
  [1, 1, 1, 1, 1, 0],
  [7, 33, 2, 33, 33, 0],
  [18, 48, 2, 48, 80, 0], // q of (NH 6 + 2 NKV 2) * HS 8
  [18, 48, 2, 16, 80, 64], // v of the same row
  [65, 20, 16, 70, 100, 17],
  [100, 64, 8, 96, 96, 0],
];

async function run(M: number, K: number, r: number, N: number, ldo: number, col0: number): Promise<void> {
  const rt = await testRuntime();
  const p: LoraLinearProblem = { M, K, r, N, ldo, col0, scale: 2 };
  const rng = new Rng(M * 131 + K * 17 + r * 7 + col0);
  const inp = rng.float32(M * K);
  const A = rng.float32(r * K);
  const B = rng.float32(N * r);
  const out0 = rng.float32(M * ldo); // the base layer's output
  const dout = rng.float32(M * ldo);
  const init = { dinp: rng.float32(M * K), dA: rng.float32(r * K), dB: rng.float32(N * r) };
  const b = {
    out: rt.upload(out0, 'out'),
    inp: rt.upload(inp, 'inp'),
    A: rt.upload(A, 'A'),
    B: rt.upload(B, 'B'),
    xa: rt.storage(M * r * 4, 'xa'),
    dxa: rt.storage(M * r * 4, 'dxa'),
    dout: rt.upload(dout, 'dout'),
    dinp: rt.upload(init.dinp, 'dinp'),
    dA: rt.upload(init.dA, 'dA'),
    dB: rt.upload(init.dB, 'dB'),
  };
  const rec = rt.record(`lora M=${M} K=${K} r=${r} N=${N}`);
  await recordLoraForward(rt, rec, b, p);
  await recordLoraBackward(rt, rec, b, p);
  const reads = [b.out, b.xa, b.dxa, b.dinp, b.dA, b.dB].map((x) => rec.read(x));
  await rec.submit();
  const [out, xa, dxa, dinp, dA, dB] = (await Promise.all(reads)).map((x) => new Float32Array(x));

  const want = { out: Float64Array.from(out0), dxa: new Float64Array(M * r) };
  const wantXa = loraForwardRef(want.out, inp, A, B, p);
  expectClose(out!, want.out, TOL, 'out');
  for (let m = 0; m < M; m++)
    for (let c = 0; c < ldo; c++)
      if (c < col0 || c >= col0 + N) expect(out![m * ldo + c], `out[${m}, ${c}] outside the block`).toBe(out0[m * ldo + c]);
  expectClose(xa!, wantXa, TOL, 'xa');
  loraDxaRef(want.dxa, dout, B, p);
  expectClose(dxa!, want.dxa, TOL, 'dxa');
  const wantDB = Float64Array.from(init.dB);
  loraDbRef(wantDB, dout, wantXa, p);
  expectClose(dB!, wantDB, TOL, 'dB');
  const wantDinp = Float64Array.from(init.dinp);
  const wantDA = Float64Array.from(init.dA);
  matmulBackwardRef(wantDinp, wantDA, null, want.dxa, inp, A, M, K, r);
  expectClose(dinp!, wantDinp, TOL, 'dinp');
  expectClose(dA!, wantDA, TOL, 'dA');
  for (const x of Object.values(b)) x.destroy();
}

describe('LoRA kernels match their float64 references', () => {
  test.each(SHAPES)('M=%i K=%i r=%i N=%i ldo=%i col0=%i', run);
});

test('the references are the gradient of the adapted output (finite differences)', () => {
  const p: LoraLinearProblem = { M: 3, K: 4, r: 2, N: 3, ldo: 5, col0: 1, scale: 1.5 };
  const { M, K, r, N, ldo } = p;
  const rng = new Rng(5);
  const f64 = (n: number) => Float64Array.from(rng.float32(n));
  const [inp, A, B, g] = [f64(M * K), f64(r * K), f64(N * r), f64(M * ldo)]; // loss = sum(g * out)
  const loss = (): number => {
    const out = new Float64Array(M * ldo);
    loraForwardRef(out, inp, A, B, p);
    return out.reduce((s, o, i) => s + o * g[i]!, 0);
  };
  const xa = loraForwardRef(new Float64Array(M * ldo), inp, A, B, p);
  const dxa = new Float64Array(M * r);
  loraDxaRef(dxa, g, B, p);
  const dB = new Float64Array(N * r);
  loraDbRef(dB, g, xa, p);
  const dinp = new Float64Array(M * K);
  const dA = new Float64Array(r * K);
  matmulBackwardRef(dinp, dA, null, dxa, inp, A, M, K, r);
  // the loss is bilinear in (A, B) and linear in inp: central differences are exact up to rounding
  const tol = { atol: 1e-8, rtol: 1e-8 };
  for (const [x, grad, name] of [
    [inp, dinp, 'dinp'],
    [A, dA, 'dA'],
    [B, dB, 'dB'],
  ] as const) {
    expectClose(
      grad,
      Array.from(x, (_, i) => centralDiff(loss, x, i, 1e-4)),
      tol,
      `${name} vs finite differences`,
    );
  }
});
