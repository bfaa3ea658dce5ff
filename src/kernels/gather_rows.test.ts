/**
 * Chunked row gather on the GPU vs its float64 reference: a vocabulary in two chunks, then a
 * position table added with accumulate = 1 (token + position embedding, as GPT-2 needs). Its
 * backward: the reference vs central differences of the forward reference; the GPU scatter-add
 * into two chunks' gradients (repeated ids, an unused chunk, twice onto random gradients) equal
 * to the reference, and bit for bit to the f32 sums in ascending row order it promises.
 * Shape legend: N rows, C channels, V vocabulary, maxT position rows. Row-major f32; ids u32.
 */
import { expect, test } from 'vitest';
import { centralDiff } from '../testing/finite-diff';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import {
  checkGatherIds,
  gatherRowChunks,
  gatherRows,
  gatherRowsBackwardRef,
  gatherRowsBuckets,
  gatherRowsRef,
  recordGatherRowsBackward,
} from './gather_rows';

test('two vocabulary chunks then an accumulated position table equal the reference', async () => {
  const [N, C, V, maxT] = [37, 19, 23, 11];
  const rng = new Rng(17);
  const wte = rng.float32(V * C);
  const wpe = rng.float32(maxT * C);
  // every id of both chunks' edges (0, 12, 13, 22), then random ones
  const ids = Uint32Array.from({ length: N }, (_, n) => [0, 12, 13, V - 1][n] ?? Math.floor(rng.next() * V));
  const positions = Uint32Array.from({ length: N }, (_, n) => n % maxT);
  const chunks: [number, number][] = [
    [0, 13],
    [13, V - 13],
  ];
  const rt = await testRuntime();
  const out = rt.upload(new Float32Array(N * C).fill(NaN), 'out'); // every row must be written
  const idBuf = rt.upload(ids, 'ids');
  const posBuf = rt.upload(positions, 'positions');
  const tables = chunks.map(([v0, rows]) => rt.upload(wte.subarray(v0 * C, (v0 + rows) * C), `wte ${v0}`));
  const wpeBuf = rt.upload(wpe, 'wpe');
  const kernel = await rt.compile(gatherRows);
  const rec = rt.record('gather_rows');
  chunks.forEach(([v0, rows], i) => rec.dispatch(kernel, { out, ids: idBuf, table: tables[i]! }, { N, C, v0, rows, accumulate: 0 }));
  const tokensOnly = rec.read(out);
  rec.dispatch(kernel, { out, ids: posBuf, table: wpeBuf }, { N, C, v0: 0, rows: maxT, accumulate: 1 });
  const summed = rec.read(out);
  await rec.submit();

  const want = new Float64Array(N * C).fill(NaN);
  for (const [v0, rows] of chunks) gatherRowsRef(want, ids, wte.subarray(v0 * C), N, C, v0, rows, 0);
  // a gather is a copy: exact; the sum is one f32 addition, rounded as Math.fround rounds it
  expectClose(new Float32Array(await tokensOnly), want, { atol: 0, rtol: 0 }, 'tokens');
  gatherRowsRef(want, positions, wpe, N, C, 0, maxT, 1);
  expectClose(new Float32Array(await summed), want.map(Math.fround), { atol: 0, rtol: 0 }, 'tokens + positions');
  for (const b of [out, idBuf, posBuf, wpeBuf, ...tables]) b.destroy();
});

test('a chunk leaves rows of other chunks untouched', async () => {
  const [N, C] = [4, 3];
  const rt = await testRuntime();
  const before = new Float32Array(N * C).fill(7);
  const out = rt.upload(before, 'out');
  const ids = rt.upload(Uint32Array.from([5, 9, 10, 4]), 'ids'); // chunk [5, 10) holds rows 0 and 1
  const table = rt.upload(
    Float32Array.from({ length: 5 * C }, (_, i) => i),
    'table',
  );
  const rec = rt.record('gather_rows one chunk');
  rec.dispatch(await rt.compile(gatherRows), { out, ids, table }, { N, C, v0: 5, rows: 5, accumulate: 0 });
  const got = rec.read(out);
  await rec.submit();
  expect(Array.from(new Float32Array(await got))).toEqual([0, 1, 2, 12, 13, 14, 7, 7, 7, 7, 7, 7]);
  for (const b of [out, ids, table]) b.destroy();
});

test('gatherRowChunks covers the vocabulary within the binding size', () => {
  expect(gatherRowChunks(10, 2, 32)).toEqual([
    [0, 4],
    [4, 4],
    [8, 2],
  ]);
  expect(gatherRowChunks(49152, 576, 128 * 2 ** 20)).toEqual([[0, 49152]]);
  expect(gatherRowChunks(151936, 896, 128 * 2 ** 20).length).toBe(5);
  expect(() => gatherRowChunks(10, 100, 100)).toThrow(/exceeds/);
});

test('gatherRowsBackwardRef is the gradient of gatherRowsRef over both chunks (finite differences), and accumulates', () => {
  const [N, C, V] = [9, 3, 7];
  const chunks: [number, number][] = [
    [0, 4],
    [4, 3],
  ];
  const rng = new Rng(4);
  const table = Float64Array.from(rng.float32(V * C));
  const ids = [3, 4, 3, 0, 6, 3, 4, 1, 6]; // repeats within and across the chunk edge; id 2, 5 unused
  const g = Float64Array.from(rng.float32(N * C)); // loss = sum(g * out), so dout = g
  const loss = (): number => {
    const out = new Float64Array(N * C);
    for (const [v0, rows] of chunks) gatherRowsRef(out, ids, table.subarray(v0 * C), N, C, v0, rows, 0);
    return out.reduce((s, o, i) => s + o * g[i]!, 0);
  };
  const init = Float64Array.from(rng.float32(V * C));
  const grad = Float64Array.from(init);
  for (const [v0, rows] of chunks) gatherRowsBackwardRef(grad.subarray(v0 * C, (v0 + rows) * C), g, ids, N, C, v0, rows);
  // the loss is linear in the table: central differences are exact up to float64 rounding at any h
  expectClose(
    grad.map((v, i) => v - init[i]!),
    Array.from(table, (_, i) => centralDiff(loss, table, i, 0.5)),
    { atol: 1e-14, rtol: 0 },
    'dtable vs finite differences',
  );
});

test('gatherRowsBuckets groups the rows of one chunk by id, relative to v0', () => {
  // chunk [5, 10): n = 0 and 2 hold id 5, n = 4 id 7, n = 1 id 9; n = 3 (id 12) is another chunk's
  const { index, NB } = gatherRowsBuckets([5, 9, 5, 12, 7], 5, 5);
  expect(NB).toBe(3);
  expect(Array.from(index)).toEqual([0, 2, 4, 0, 2, 3, 4, 0, 2, 4, 1]);
  expect(gatherRowsBuckets([1, 2], 5, 5)).toEqual({ index: new Uint32Array([0]), NB: 0 });
});

test('the GPU scatter-add into two chunks equals the reference, bit for bit the f32 sums in ascending rows', async () => {
  const [N, C] = [41, 19];
  const chunks: [number, number][] = [
    [0, 13],
    [13, 10],
    [23, 4], // no id falls here (V = 27): no dispatch, its gradient untouched
  ];
  const rng = new Rng(23);
  // many repeats of a few ids (long buckets) and the chunk edges 12, 13, 22
  const ids = Uint32Array.from({ length: N }, (_, n) => [12, 13, 22, 0][n] ?? [3, 3, 13, 17, 17, 17, 8][n % 7]! + (n % 11 === 0 ? 1 : 0));
  const dout = rng.float32(N * C);
  const init = chunks.map(([, rows]) => rng.float32(rows * C));
  const rt = await testRuntime();
  const dtables = init.map((t, k) => rt.upload(t, `dtable ${k}`));
  const doutBuf = rt.upload(dout, 'dout');
  const rec = rt.record('gather_rows backward');
  const temps: GPUBuffer[] = [];
  const reads: Promise<ArrayBuffer>[][] = [];
  for (let pass = 0; pass < 2; pass++) {
    temps.push(...(await recordGatherRowsBackward(rt, rec, { dtables, dout: doutBuf }, ids, chunks, { N, C })));
    reads.push(dtables.map((d) => rec.read(d)));
  }
  expect(temps).toHaveLength(4); // two chunks a pass; the unused chunk dispatches nothing
  await rec.submit();
  for (const t of temps) t.destroy();

  const want = init.map((t) => Float64Array.from(t));
  const f32 = init.map((t) => Float32Array.from(t)); // what the shader computes: per table row, fround sums in ascending n
  for (let pass = 0; pass < 2; pass++) {
    const got = (await Promise.all(reads[pass]!)).map((x) => new Float32Array(x));
    chunks.forEach(([v0, rows], k) => {
      gatherRowsBackwardRef(want[k]!, dout, ids, N, C, v0, rows);
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < C; c++) {
          let sum = 0;
          let any = false;
          for (let n = 0; n < N; n++) {
            if (ids[n] !== v0 + r) continue;
            sum = Math.fround(sum + dout[n * C + c]!);
            any = true;
          }
          if (any) f32[k]![r * C + c] = Math.fround(f32[k]![r * C + c]! + sum);
        }
      }
      // f32 sums of up to ~18 rows of |dout| <= 1 onto |init| <= 1, twice: rounding ~18 * 2 * 2^-24 ~ 2e-6
      expectClose(got[k]!, want[k]!, { atol: 4e-6, rtol: 1e-6 }, `chunk ${k} after pass ${pass + 1}`);
      expectClose(got[k]!, f32[k]!, { atol: 0, rtol: 0 }, `chunk ${k} after pass ${pass + 1}, f32 order`);
    });
  }
  expect(Array.from(await reads[1]![2]!.then((x) => new Float32Array(x)))).toEqual(Array.from(init[2]!));
  for (const b of [...dtables, doutBuf]) b.destroy();
});

test('the backward refuses ids in no chunk or in two, and a table count unlike the chunks', async () => {
  expect(() => checkGatherIds([0, 5], [[0, 5]])).toThrow(/ids\[1\] = 5 is in no chunk/);
  expect(() =>
    checkGatherIds(
      [3],
      [
        [0, 5],
        [2, 4],
      ],
    ),
  ).toThrow(/in 2 chunks/);
  expect(() => checkGatherIds([1.5], [[0, 5]])).toThrow(/not an integer/);
  const rt = await testRuntime();
  const rec = rt.record('refused');
  const d = rt.storage(16, 'd');
  await expect(
    recordGatherRowsBackward(
      rt,
      rec,
      { dtables: [d], dout: d },
      [0],
      [
        [0, 1],
        [1, 1],
      ],
      { N: 1, C: 1 },
    ),
  ).rejects.toThrow(/1 gradient tables for 2 chunks/);
  await expect(recordGatherRowsBackward(rt, rec, { dtables: [d], dout: d }, [0, 0], [[0, 1]], { N: 1, C: 1 })).rejects.toThrow(
    /2 ids for N = 1/,
  );
  d.destroy();
});
