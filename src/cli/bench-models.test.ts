/**
 * `coderl bench models` through the CLI at toy widths (--tiny): ours (WebGPU in Node) against ORT
 * wasm on the same exported models, and ours alone with the bandwidth bound; the JSON has the
 * documented shape, ORT's logits match ours, the ratios are the rows' quotients; usage errors.
 * Speeds are printed, never asserted. (The Chromium run, --ort webgpu, is e2e/bench-models.e2e.ts.)
 */
import { describe, expect, test } from 'vitest';
import { formatModelsBench, type ModelsBenchResult } from '../perf/models';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

const positive = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;

describe('coderl bench models', () => {
  test('--tiny --ort wasm --json: the three architectures, ours and ORT wasm, validated, with ratios', async () => {
    const c = capture();
    expect(await main(['bench', 'models', '--tiny', '--ort', 'wasm', '--json'], c.io), c.err.join('\n')).toBe(0);
    const r = JSON.parse(c.out.join('')) as ModelsBenchResult;
    expect(r).toMatchObject({ size: 'tiny', prompt_len: 6, new_tokens: 4, reps: 1 });
    expect(r.models.map((m) => [m.model, m.arch.hfArchitecture])).toEqual([
      ['smollm2-135m', 'LlamaForCausalLM'],
      ['qwen2.5-0.5b', 'Qwen2ForCausalLM'],
      ['gpt2', 'GPT2LMHeadModel'],
    ]);
    for (const m of r.models) {
      expect(m.engines.map((e) => e.engine)).toEqual(['ours', 'ORT wasm']);
      const [ours, ort] = m.engines;
      for (const e of m.engines) {
        expect(e.error).toBeUndefined();
        expect(e.rows.map((x) => x.B)).toEqual([1, 2]);
        expect(e.upload_ms).toBeGreaterThanOrEqual(0);
        for (const x of e.rows) {
          expect(positive(x.prefill_tokens_per_s), JSON.stringify(x)).toBe(true);
          // ours' decode time is generateOn(N) - generateOn(1): at toy sizes on a busy machine it may be lost in the noise
          expect(x.decode_tokens_per_s === null || positive(x.decode_tokens_per_s), JSON.stringify(x)).toBe(true);
        }
      }
      for (const x of ours!.rows) {
        expect(positive(x.dispatches_per_step)).toBe(true);
        expect(x.submits_per_step).toBeLessThanOrEqual(1); // several decode steps share a submit
        expect(x.memory!.weights).toBeGreaterThan(4 * m.parameters - 1); // f32, plus nothing left out
        expect(x.memory!.weights + x.memory!.kv_cache + x.memory!.activations).toBeLessThanOrEqual(x.peak_bytes!);
      }
      for (const x of ort!.rows) {
        expect(x.max_rel_diff).toBeLessThan(1e-4);
        expect(x.same_tokens).toBeGreaterThanOrEqual(0.5);
        expect(x.peak_bytes).toBeNull(); // ORT wasm holds no GPU memory
      }
      expect(m.ratios.map((q) => q.B)).toEqual([1, 2]);
      for (const q of m.ratios) {
        const [a, b] = [ours!.rows.find((x) => x.B === q.B)!, ort!.rows.find((x) => x.B === q.B)!];
        // the rows' quotients, to their three significant digits
        if (a.decode_tokens_per_s && b.decode_tokens_per_s)
          expect(q.decode! / (a.decode_tokens_per_s / b.decode_tokens_per_s)).toBeCloseTo(1, 2);
        else expect(q.decode).toBeNull();
        expect(q.prefill / (a.prefill_tokens_per_s / b.prefill_tokens_per_s)).toBeCloseTo(1, 2);
      }
    }
    expect(c.err.join('\n')).toMatch(/ORT's webgpu provider needs a browser/);
    expect(formatModelsBench(r)).toMatch(/ours \/ ORT wasm, B=2: decode (\d+\.\d\dx|- \(not measured\)), prefill \d+\.\d\dx/);
  }, 300_000);

  test('--ort none with --bandwidth: ours only, each row with its decode bound', async () => {
    const c = capture();
    const args = [
      'bench',
      'models',
      '--tiny',
      '--ort',
      'none',
      '--models',
      'gpt2',
      '--batches',
      '2',
      '--new-tokens',
      '3',
      '--bandwidth',
      '4800',
      '--json',
    ];
    expect(await main(args, c.io), c.err.join('\n')).toBe(0);
    const r = JSON.parse(c.out.join('')) as ModelsBenchResult;
    expect(r.bandwidth_gb_s).toBe(4800);
    expect(r.models).toHaveLength(1);
    const [m] = r.models;
    expect(m!.engines.map((e) => e.engine)).toEqual(['ours']);
    expect(m!.ratios).toEqual([]);
    const row = m!.engines[0]!.rows[0]!;
    expect(row.B).toBe(2);
    expect(positive(row.bound!.tokens_per_s)).toBe(true);
    if (row.decode_tokens_per_s !== null)
      expect(row.bound!.achieved / (row.decode_tokens_per_s / row.bound!.tokens_per_s)).toBeCloseTo(1, 2);
    expect(row.bound!.with_kv_tokens_per_s).toBeLessThan(row.bound!.tokens_per_s);
    expect(formatModelsBench(r)).toMatch(/decode bound at 4800 GB\/s/);
  }, 120_000);

  test('usage errors', async () => {
    for (const [args, msg] of [
      [['bench', 'models', '--ort', 'cuda'], /--ort must be webgpu, wasm, none, got 'cuda'/],
      [['bench', 'models', '--models', 'llama-7b'], /--models takes smollm2-135m, qwen2\.5-0\.5b, gpt2, got 'llama-7b'/],
      [['bench', 'models', '--batches', '1,0'], /--batches takes positive integers/],
      [['bench', 'models', '--new-tokens', '1', '--ort', 'none'], /new tokens must be an integer >= 2/],
      [['bench', 'models', '--quick', '--tiny'], /--quick or --tiny, not both/],
      [['bench', 'models', '--bandwidth', 'fast'], /--bandwidth takes GB\/s/],
      [['bench', 'models', '--swiftshader'], /--swiftshader applies to --ort wasm \/ none/],
      [['bench', 'models', '--preset', 'tiny'], /--preset applies to the engine and onnx suites only/],
      [['bench', 'engine', '--ort', 'none'], /--ort applies to the models suite only/],
      [['bench', 'runtime', '--reps', '2'], /--reps applies to the engine, onnx, models and train suites only/],
    ] as const) {
      const c = capture();
      expect(await main([...args], c.io), args.join(' ')).toBe(2);
      expect(c.err.join('\n')).toMatch(msg);
    }
  });
});
