/**
 * Embedding forward and backward on the GPU vs their float64 references (accumulation, repeated
 * ids, out-of-range ids); the backward reference vs central finite differences of the forward.
 * Shape legend: BT rows, C channels, V vocab, maxT positions; row-major f32, ids u32.
 */
import { describe, expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  checkEmbeddingIds,
  embeddingBackwardChannels,
  embeddingBackwardRef,
  embeddingBuckets,
  embeddingForward,
  embeddingForwardRef,
  recordEmbeddingBackward,
  uploadEmbeddingIds,
  type EmbeddingProblem,
  type EmbeddingTableProblem,
} from './embedding';

// Forward: one f32 addition, correctly rounded (an out-of-range id adds exact zero).
const FWD_TOL = { atol: 0, rtol: 2 ** -23 };
// Backward: f32 sums of at most BT / V + 1 rows (<= ~60 here) of values in [-1, 1) plus the
// initial gradient; observed 3.2e-6 with 60 repeats.
const BWD_TOL = { atol: 1e-5, rtol: 1e-5 };

function ids(rng: Rng, n: number, rows: number): Uint32Array {
  return Uint32Array.from({ length: n }, () => Math.floor(rng.next() * rows));
}

async function runForward(p: EmbeddingProblem): Promise<void> {
  const { BT, C, V, maxT } = p;
  const rt = await testRuntime();
  const rng = new Rng(BT * 31 + C * 7 + V);
  const tokens = ids(rng, BT, V);
  const positions = ids(rng, BT, maxT);
  const wte = rng.float32(V * C);
  const wpe = rng.float32(maxT * C);
  const uploaded = uploadEmbeddingIds(rt, tokens, positions, V, maxT);
  const b = { out: rt.storage(BT * C * 4, 'out'), ...uploaded, wte: rt.upload(wte, 'wte'), wpe: rt.upload(wpe, 'wpe') };
  const rec = rt.record(`embedding forward BT=${BT} C=${C}`);
  rec.dispatch(await rt.compile(embeddingForward), b, p);
  const got = rec.read(b.out);
  await rec.submit();
  const want = new Float64Array(BT * C);
  embeddingForwardRef(want, tokens, positions, wte, wpe, BT, C);
  expectClose(new Float32Array(await got), want, FWD_TOL, `embedding forward BT=${BT} C=${C}`);
  for (const buf of Object.values(b)) buf.destroy();
}

/**
 * Backward twice into random gradients (init + grad, then init + 2 grad), through the buckets
 * (recordEmbeddingBackward) or the channels kernel with the ids on the GPU.
 */
async function runBackward(p: EmbeddingProblem, variant: 'buckets' | 'channels'): Promise<void> {
  const { BT, C, V, maxT } = p;
  const rt = await testRuntime();
  const rng = new Rng(BT * 17 + C * 5 + V);
  const tokens = ids(rng, BT, V);
  const positions = ids(rng, BT, maxT);
  const dout = rng.float32(BT * C);
  const init = { dwte: rng.float32(V * C), dwpe: rng.float32(maxT * C) };
  const b = { dwte: rt.upload(init.dwte, 'dwte'), dwpe: rt.upload(init.dwpe, 'dwpe'), dout: rt.upload(dout, 'dout') };
  const rec = rt.record(`embedding backward ${variant} BT=${BT} C=${C}`);
  const temporaries: GPUBuffer[] = [];
  const reads: Promise<ArrayBuffer>[][] = [];
  for (let pass = 0; pass < 2; pass++) {
    if (variant === 'buckets') {
      temporaries.push(...(await recordEmbeddingBackward(rt, rec, b, tokens, positions, p)));
    } else {
      const kernel = await rt.compile(embeddingBackwardChannels);
      const up = uploadEmbeddingIds(rt, tokens, positions, V, maxT);
      temporaries.push(up.tokens, up.positions);
      rec.dispatch(kernel, { dtable: b.dwte, dout: b.dout, index: up.tokens }, { BT, C, R: V, NB: 0 });
      rec.dispatch(kernel, { dtable: b.dwpe, dout: b.dout, index: up.positions }, { BT, C, R: maxT, NB: 0 });
    }
    reads.push([rec.read(b.dwte), rec.read(b.dwpe)]);
  }
  await rec.submit();
  const want = { dwte: Float64Array.from(init.dwte), dwpe: Float64Array.from(init.dwpe) };
  for (let pass = 0; pass < 2; pass++) {
    embeddingBackwardRef(want.dwte, want.dwpe, dout, tokens, positions, BT, C);
    const [dwte, dwpe] = await Promise.all(reads[pass]!);
    const what = `embedding backward ${variant} BT=${BT} C=${C} after pass ${pass + 1}`;
    expectClose(new Float32Array(dwte!), want.dwte, BWD_TOL, `${what} dwte`);
    expectClose(new Float32Array(dwpe!), want.dwpe, BWD_TOL, `${what} dwpe`);
  }
  for (const buf of [...Object.values(b), ...temporaries]) buf.destroy();
}

// ragged C around the 256 / 64 workgroups; V small so that tokens repeat many times
const SHAPES: EmbeddingProblem[] = [
  { BT: 1, C: 1, V: 1, maxT: 1 },
  { BT: 7, C: 33, V: 5, maxT: 9 },
  { BT: 65, C: 70, V: 11, maxT: 20 },
  { BT: 300, C: 3, V: 50, maxT: 64 },
  { BT: 40, C: 257, V: 3, maxT: 40 },
];

describe('embedding matches its float64 reference', () => {
  test.each(SHAPES)('forward %o', (p) => runForward(p));
  test.each(SHAPES)('backward, buckets: %o', (p) => runBackward(p, 'buckets'));
  test.each(SHAPES)('backward, channels: %o', (p) => runBackward(p, 'channels'));
});

test('the CPU wrapper rejects out-of-range ids', () => {
  expect(() => checkEmbeddingIds([0, 4], [0, 1], 4, 8)).toThrow(/tokens\[1\] = 4 is outside \[0, 4\)/);
  expect(() => checkEmbeddingIds([0, 1], [8, 1], 4, 8)).toThrow(/positions\[0\] = 8/);
  expect(() => checkEmbeddingIds([0, 1.5], [0, 1], 4, 8)).toThrow(/tokens\[1\] = 1.5/);
  expect(() => checkEmbeddingIds([0, -1], [0, 1], 4, 8)).toThrow(/tokens\[1\] = -1/);
  expect(() => checkEmbeddingIds([0], [0, 1], 4, 8)).toThrow(/1 tokens but 2 positions/);
  expect(() => embeddingBuckets([3], 3)).toThrow(/ids\[0\] = 3/);
});

test('the shaders skip out-of-range ids (memory safety when validation is bypassed)', async () => {
  // forward: uploaded without validation, a token >= V and a position >= maxT contribute 0
  const p = { BT: 5, C: 9, V: 4, maxT: 6 };
  const rt = await testRuntime();
  const rng = new Rng(77);
  const tokens = ids(rng, p.BT, p.V);
  const positions = ids(rng, p.BT, p.maxT);
  tokens[0] = p.V + 5;
  positions[1] = p.maxT;
  const wte = rng.float32(p.V * p.C);
  const wpe = rng.float32(p.maxT * p.C);
  const b = {
    out: rt.storage(p.BT * p.C * 4, 'out'),
    tokens: rt.upload(tokens, 'tokens'),
    positions: rt.upload(positions, 'positions'),
    wte: rt.upload(wte, 'wte'),
    wpe: rt.upload(wpe, 'wpe'),
  };
  // backward (channels): a row with an id >= R is skipped
  const dtable = rt.upload(new Float32Array(p.V * p.C), 'dtable');
  const dout = rng.float32(p.BT * p.C);
  const doutBuf = rt.upload(dout, 'dout');
  const rec = rt.record('bad ids');
  rec.dispatch(await rt.compile(embeddingForward), b, p);
  const table: EmbeddingTableProblem = { BT: p.BT, C: p.C, R: p.V, NB: 0 };
  rec.dispatch(await rt.compile(embeddingBackwardChannels), { dtable, dout: doutBuf, index: b.tokens }, table);
  const out = rec.read(b.out);
  const grad = rec.read(dtable);
  await rec.submit();

  const want = new Float64Array(p.BT * p.C);
  const safeTokens = Array.from(tokens, (t) => Math.min(t, p.V - 1));
  const safePositions = Array.from(positions, (t) => Math.min(t, p.maxT - 1));
  embeddingForwardRef(want, safeTokens, safePositions, wte, wpe, p.BT, p.C);
  for (let c = 0; c < p.C; c++) {
    want[c] = wpe[positions[0]! * p.C + c]!; // row 0: no token part
    want[p.C + c] = wte[tokens[1]! * p.C + c]!; // row 1: no position part
  }
  expectClose(new Float32Array(await out), want, FWD_TOL, 'forward with bad ids');
  const wantGrad = new Float64Array(p.V * p.C);
  embeddingBackwardRef(
    wantGrad,
    new Float64Array(p.maxT * p.C),
    dout.map((d, i) => (i < p.C ? 0 : d)),
    safeTokens,
    safePositions,
    p.BT,
    p.C,
  );
  expectClose(new Float32Array(await grad), wantGrad, BWD_TOL, 'backward with a bad id in row 0');
  for (const buf of [...Object.values(b), dtable, doutBuf]) buf.destroy();
});

test('embeddingBuckets groups rows by id, ids and rows ascending', () => {
  const { index, NB } = embeddingBuckets([2, 0, 2, 1, 2, 0], 5);
  expect(NB).toBe(3);
  // ids (3) | starts (4) | rows (6)
  expect(Array.from(index)).toEqual([0, 1, 2, 0, 2, 3, 6, 1, 5, 3, 0, 2, 4]);
});

test('embeddingBackwardRef is the gradient of embeddingForwardRef (finite differences)', () => {
  const [BT, C, V, maxT] = [6, 3, 4, 5];
  const rng = new Rng(9);
  const tokens = [1, 3, 1, 0, 1, 3]; // repeats
  const positions = [0, 1, 2, 0, 1, 4];
  const wte = Float64Array.from(rng.float32(V * C));
  const wpe = Float64Array.from(rng.float32(maxT * C));
  const g = Float64Array.from(rng.float32(BT * C)); // loss = sum(g * out), so dout = g
  const loss = (): number => {
    const out = new Float64Array(BT * C);
    embeddingForwardRef(out, tokens, positions, wte, wpe, BT, C);
    return out.reduce((s, o, i) => s + o * g[i]!, 0);
  };
  const dwte = new Float64Array(V * C);
  const dwpe = new Float64Array(maxT * C);
  embeddingBackwardRef(dwte, dwpe, g, tokens, positions, BT, C);
  const fd = (x: Float64Array): number[] =>
    Array.from(x, (_, i) => {
      const x0 = x[i]!;
      x[i] = x0 + 1e-4;
      const up = loss();
      x[i] = x0 - 1e-4;
      const down = loss();
      x[i] = x0;
      return (up - down) / 2e-4;
    });
  // linear in the tables: the central difference is exact up to rounding (~1e-11)
  expectClose(dwte, fd(wte), { atol: 1e-8, rtol: 1e-8 }, 'dwte vs finite differences');
  expectClose(dwpe, fd(wpe), { atol: 1e-8, rtol: 1e-8 }, 'dwpe vs finite differences');
  expect(dwte.slice(2 * C, 3 * C).every((v) => v === 0)).toBe(true); // token 2 never occurs
});
