/**
 * `coderl bench onnx` in Node (ours on WebGPU vs ORT wasm), at the smallest settings: the JSON has
 * the documented shape, ORT's logits match ours, the ratios are the rows' quotients; and the race's
 * pure helpers. Speeds are printed, never asserted.
 */
import { describe, expect, test } from 'vitest';
import { agreement, formatOnnxRace, median, validateRaceOptions, ONNX_RACE_QUICK, type OnnxRaceResult } from '../perf/onnx';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

describe('coderl bench onnx', () => {
  test('--json --quick: ours and ORT wasm on the same exported model, validated, with ratios', async () => {
    const c = capture();
    expect(await main(['bench', 'onnx', '--json', '--quick', '--reps', '1'], c.io), c.err.join('\n')).toBe(0);
    const r = JSON.parse(c.out.join('')) as OnnxRaceResult & { adapter: string };
    expect(r).toMatchObject({ preset: 'tiny', forward: ONNX_RACE_QUICK.forward, reps: 1, goal: 1.5 });
    expect(r.rows.map((x) => x.engine)).toEqual(['ours (WGSL)', 'ORT wasm']);
    for (const x of r.rows) {
      expect(x.forward_ms).toBeGreaterThan(0);
      expect(x.generate_tokens_per_s).toBeGreaterThan(0);
    }
    expect(r.rows[1]!.max_rel_diff).toBeGreaterThan(0);
    expect(r.rows[1]!.max_rel_diff).toBeLessThan(1e-4);
    expect(r.rows[1]!.same_tokens).toBeGreaterThanOrEqual(0.5); // greedy on a random model: near-ties may flip a token
    const [ours, ort] = r.rows;
    expect(r.ratios[0]!.forward).toBeCloseTo(ort!.forward_ms / ours!.forward_ms, 1);
    expect(r.ratios[0]!.generate).toBeCloseTo(ours!.generate_tokens_per_s / ort!.generate_tokens_per_s, 1);
    expect(c.err.join('\n')).toMatch(/ORT webgpu runs in a browser only/);
    expect(formatOnnxRace(r)).toMatch(/ours \/ ORT wasm: forward \d+\.\d\dx, generation \d+\.\d\dx \(goal 1\.5x: (met|not met)\)/);
  }, 120_000);

  test('usage errors', async () => {
    for (const [args, msg] of [
      [['bench', 'onnx', '--steps', '2'], /--steps applies to the engine suite only/],
      [['bench', 'engine', '--browser'], /--browser applies to the onnx suite only/],
      [['bench', 'onnx', '--preset', 'huge'], /--preset must be one of tiny, small, medium/],
      [['bench', 'onnx', '--browser', '--reps', '2'], /--preset and --json only/],
    ] as const) {
      const c = capture();
      expect(await main([...args], c.io)).toBe(2);
      expect(c.err.join('\n')).toMatch(msg);
    }
  });

  test('helpers: median, token agreement, option checks', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(
      agreement(
        [[1, 2, 3], [4]],
        [
          [1, 9, 3],
          [4, 5],
        ],
      ),
    ).toBe(3 / 5);
    expect(agreement([], [])).toBe(1);
    expect(() => validateRaceOptions({ ...ONNX_RACE_QUICK, forward: { B: 1, T: 999 } })).toThrow(
      /forward T 999 exceeds the tiny context 128/,
    );
    expect(() => validateRaceOptions({ ...ONNX_RACE_QUICK, generate: { B: 1, promptLen: 100, newTokens: 40 } })).toThrow(
      /exceed the tiny context 128/,
    );
    expect(() => validateRaceOptions({ ...ONNX_RACE_QUICK, reps: 0 })).toThrow(/reps must be a positive integer/);
  });
});
