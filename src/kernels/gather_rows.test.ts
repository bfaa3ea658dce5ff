/**
 * Chunked row gather on the GPU vs its float64 reference: a vocabulary in two chunks, then a
 * position table added with accumulate = 1 (token + position embedding, as GPT-2 needs).
 * Shape legend: N rows, C channels, V vocabulary, maxT position rows. Row-major f32; ids u32.
 */
import { expect, test } from 'vitest';
import { expectClose, testRuntime } from '../testing/gpu';
import { Rng } from '../util/random';
import { gatherRowChunks, gatherRows, gatherRowsRef } from './gather_rows';

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
