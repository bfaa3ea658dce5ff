/**
 * `coderl bench models --ort webgpu` in Debian's headless Chromium, at toy widths: the page
 * (bench/models-page.ts, bundled by esbuild) runs our engine and onnxruntime-web's webgpu provider
 * on the page's adapter; ORT's prefill logits match ours, its dispatches, submits and GPU bytes are
 * counted, and the ratios are the rows' quotients. Speeds are printed, never asserted.
 */
import { expect, test } from 'vitest';
import { browserModelsBench } from '../bench/models-browser';
import { formatModelsBench, MODELS_BENCH_TINY } from '../src/perf/models';

test('ours and ORT webgpu in one page: the three architectures, validated, counted, with ratios', async () => {
  const r = await browserModelsBench({ options: { ...MODELS_BENCH_TINY, batches: [2] }, root: process.cwd() });
  console.log(formatModelsBench(r));
  expect(r.adapter).toMatch(/\(Chromium\)$/);
  expect(r.models.map((m) => m.model)).toEqual(['smollm2-135m', 'qwen2.5-0.5b', 'gpt2']);
  for (const m of r.models) {
    expect(m.engines.map((e) => [e.engine, e.error])).toEqual([
      ['ours', undefined],
      ['ORT webgpu', undefined],
    ]);
    const [ours, ort] = m.engines.map((e) => e.rows[0]!);
    expect(ort!.max_rel_diff).toBeLessThan(1e-4);
    expect(ort!.same_tokens).toBeGreaterThanOrEqual(0.5);
    for (const x of [ours!, ort!]) {
      expect(x.dispatches_per_step).toBeGreaterThan(0);
      expect(x.peak_bytes).toBeGreaterThan(4 * m.parameters - 1);
    }
    // ours' decode time is a difference of two generations, which a busy machine's noise can swallow at toy sizes
    if (ours!.decode_tokens_per_s && ort!.decode_tokens_per_s)
      expect(m.ratios[0]!.decode! / (ours!.decode_tokens_per_s / ort!.decode_tokens_per_s)).toBeCloseTo(1, 2);
  }
}, 300_000);
