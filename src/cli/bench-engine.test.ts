/**
 * `coderl bench engine` end to end through the CLI, at the smallest settings: the JSON has the
 * documented shape, every figure is a positive finite number, and a training step is one
 * submit. Speeds are printed by the bench, never asserted here.
 */
import { expect, test } from 'vitest';
import type { EngineBenchResult } from '../perf/engine';
import { main } from './main';

function capture(): { io: { out(t: string): void; err(t: string): void }; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t) => void out.push(t), err: (t) => void err.push(t) }, out, err };
}

const positive = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;

test('bench engine --json: matmul, training, per-step counts and generation, ours and TF.js', async () => {
  const c = capture();
  const code = await main(['bench', 'engine', '--json', '--quick', '--sizes', '64', '--reps', '1', '--steps', '1'], c.io);
  expect(code, c.err.join('\n')).toBe(0);
  expect(c.out).toHaveLength(1);
  const r = JSON.parse(c.out[0]!) as EngineBenchResult;
  expect(Object.keys(r).sort()).toEqual(['adapter', 'generate', 'matmul', 'per_step', 'train_step']);
  expect(r.adapter.length).toBeGreaterThan(0);

  expect(r.matmul.map((m) => m.n)).toEqual([64]);
  for (const m of r.matmul) {
    for (const x of [m.ours_gflops, m.tfjs_gflops, m.variants.tiled, m.variants.naive]) expect(positive(x), JSON.stringify(m)).toBe(true);
    expect(m.ours_gflops).toBe(Math.max(m.variants.tiled, m.variants.naive));
  }

  const t = r.train_step;
  expect(t.config).toMatchObject({ preset: 'tiny', nLayer: 2, dModel: 64 });
  for (const x of [t.B, t.T, t.ours_tokens_per_s, t.tfjs_tokens_per_s]) expect(positive(x), JSON.stringify(t)).toBe(true);

  expect(r.per_step.submits).toBe(1);
  expect(r.per_step.readbacks).toBe(0);
  expect(positive(r.per_step.dispatches)).toBe(true);

  expect(positive(r.generate.ours_tokens_per_s), JSON.stringify(r.generate)).toBe(true);
}, 600_000);

test('bench engine rejects bad sizes as a usage error', async () => {
  const c = capture();
  expect(await main(['bench', 'engine', '--sizes', '256,x'], c.io)).toBe(2);
  expect(c.err.join('')).toMatch(/--sizes takes positive integers/);
  const p = capture();
  expect(await main(['bench', 'engine', '--preset', 'huge'], p.io)).toBe(2);
  expect(p.err.join('')).toMatch(/--preset must be one of tiny, small, medium, got 'huge'/);
  const r = capture();
  expect(await main(['bench', 'runtime', '--preset', 'small'], r.io)).toBe(2);
  expect(r.err.join('')).toMatch(/--preset applies to the engine and onnx suites only/);
});

test('bench engine --preset small: the training-step figure is the small model, its first loss checked against the float64 reference', async () => {
  const c = capture();
  const code = await main(
    ['bench', 'engine', '--json', '--quick', '--sizes', '64', '--reps', '1', '--steps', '2', '--preset', 'small'],
    c.io,
  );
  expect(code, c.err.join('\n')).toBe(0);
  const r = JSON.parse(c.out[0]!) as EngineBenchResult;
  expect(r.train_step.config).toMatchObject({ preset: 'small', nLayer: 4, dModel: 128 });
  expect(positive(r.train_step.ours_tokens_per_s)).toBe(true);
}, 600_000);
