/**
 * `coderl bench train` through the CLI at toy widths (--tiny): the JSON has the documented shape
 * (the update step of ours and TF.js per shape and mode, checked against each other and the
 * float64 model, one submit a step; the GRPO iteration's three phases, scored in the sandbox),
 * the ratio is the rows' quotient, the table prints; usage errors. Speeds are printed by the
 * bench, never asserted here.
 */
import { describe, expect, test } from 'vitest';
import type { TrainBenchResult } from '../perf/decoder-train';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

const positive = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;

describe('coderl bench train', () => {
  test('--tiny --json: LoRA and full on the Qwen2.5 shape, ours and TF.js, and the GRPO split', async () => {
    const c = capture();
    expect(await main(['bench', 'train', '--tiny', '--json', '--shapes', 'qwen2.5-0.5b'], c.io), c.err.join('\n')).toBe(0);
    const r = JSON.parse(c.out.join('')) as TrainBenchResult;
    expect(Object.keys(r).sort()).toEqual(['adapter', 'lora', 'rows', 'scorer', 'shapes', 'size']);
    expect(r.adapter.length).toBeGreaterThan(0);
    expect(r.size).toBe('tiny');
    expect(r.lora.targets).toEqual(['q_proj', 'v_proj']);
    expect(r.scorer).toMatch(/^humaneval-x-js: sandbox \(\d+ workers?\), static analysis, reward$/);
    expect(r.shapes.map((s) => [s.model, s.arch.hfArchitecture, s.arch.nKvHead])).toEqual([['qwen2.5-0.5b', 'Qwen2ForCausalLM', 2]]);
    expect(r.rows.map((x) => [x.model, x.mode])).toEqual([
      ['qwen2.5-0.5b', 'lora'],
      ['qwen2.5-0.5b', 'full'],
    ]);
    const [lora, full] = r.rows;
    expect(lora!.trainable).toBeLessThan(full!.trainable);
    expect(full!.trainable).toBe(r.shapes[0]!.parameters);
    for (const x of r.rows) {
      expect(x.error).toBeUndefined();
      const u = x.update!;
      expect(u).toMatchObject({ B: 2, T: 8, reps: 1 });
      for (const k of ['ours_ms', 'tfjs_ms', 'ours_tokens_per_s', 'tfjs_tokens_per_s', 'ratio'] as const)
        expect(positive(u[k]), `${k}: ${JSON.stringify(u)}`).toBe(true);
      expect(u.ratio / (u.ours_tokens_per_s / u.tfjs_tokens_per_s)).toBeCloseTo(1, 1); // each rounded to 3 digits
      expect(Math.abs(u.first_loss.ours - u.first_loss.tfjs)).toBeLessThan(2e-3 * u.first_loss.ours);
      const ref = u.reference!;
      for (const got of [ref.ours, ref.tfjs]) expect(Math.abs(got - ref.loss) / ref.loss).toBeLessThan(1e-3);
      expect(u.per_step.submits).toBe(1);
      expect(positive(u.per_step.dispatches)).toBe(true);
      // the profiled step (both adapters here have timestamp-query): every dispatch of one step, by kernel, most first
      const k = u.kernels!;
      expect(k.reduce((s, t) => s + t.dispatches, 0)).toBe(u.per_step.dispatches);
      expect(k.every((t, i) => t.ms >= 0 && (i === 0 || t.ms <= k[i - 1]!.ms))).toBe(true);
      expect(k.reduce((s, t) => s + t.share, 0)).toBeCloseTo(1, 2);
      expect(k.map((t) => t.kernel)).toEqual(expect.arrayContaining(['crossentropy', 'grad_norm']));
      expect(k.some((t) => /^adamw4?$/.test(t.kernel))).toBe(true); // adamw4 where a tensor's size is a multiple of 4

      const g = x.grpo!;
      expect(g).toMatchObject({ prompts: 1, samples: 2, prompt_len: 6, new_tokens: 4, micro_batch: 2 });
      for (const k of ['rollout_s', 'scoring_s', 'update_s', 'total_s', 'rollout_tokens_per_s', 'update_tokens_per_s'] as const)
        expect(positive(g[k]), `${k}: ${JSON.stringify(g)}`).toBe(true);
      expect(g.total_s).toBeCloseTo(g.rollout_s + g.scoring_s + g.update_s, 1);
      expect(g.passed).toBeGreaterThanOrEqual(0);
      expect(g.passed).toBeLessThanOrEqual(2);
      expect(Number.isFinite(g.mean_reward)).toBe(true);
    }
    expect(c.err.join('\n')).toMatch(/GRPO iteration, timed/);
  }, 600_000);

  test('--update-only: the update table, no GRPO iteration and no scorer; LoRA on a BF16 base too', async () => {
    const c = capture();
    const args = ['bench', 'train', '--tiny', '--update-only', '--shapes', 'smollm2-135m', '--modes', 'lora,lora-bf16', '--reps', '2'];
    expect(await main(args, c.io), c.err.join('\n')).toBe(0);
    const text = c.out.join('\n');
    expect(text).toMatch(/^adapter: /);
    expect(text).toMatch(/update step \(masked cross-entropy, clipping, AdamW\), B=2 T=8/);
    expect(text).toMatch(/shape\s+mode\s+trainable\s+ours\s+TF\.js\s+ours\/TF\.js/);
    expect(text).toMatch(/smollm2-135m\s+lora\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+\d+\.\d\dx\s/);
    // the BF16 base: its first loss checked against TF.js and the float64 model on the same (rounded) weights
    expect(text).toMatch(/smollm2-135m\s+lora-bf16\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+\d+\.\d\dx\s/);
    expect(text).not.toMatch(/GRPO/);
    expect(text).toMatch(/where ours spends an update step, by kernel/);
    expect(text).toMatch(/smollm2-135m\s+lora-bf16\s+[\d.]+ ms: \w+ \d+% \(\d+\)/);
  }, 600_000);

  test('usage errors', async () => {
    for (const [args, msg] of [
      [['bench', 'train', '--shapes', 'gpt2'], /--shapes takes smollm2-135m, qwen2\.5-0\.5b, got 'gpt2'/],
      [['bench', 'train', '--modes', 'qlora'], /--modes takes lora, lora-bf16, full, got 'qlora'/],
      [['bench', 'train', '--quick', '--tiny'], /--quick or --tiny, not both/],
      [['bench', 'train', '--reps', '0'], /--reps takes positive integers/],
      [['bench', 'train', '--update-only', '--suite', 'humaneval-python'], /--suite is for the GRPO iteration/],
      [['bench', 'train', '--ort', 'wasm'], /--ort applies to the models suite only/],
      [['bench', 'models', '--shapes', 'smollm2-135m'], /--shapes applies to the train suite only/],
    ] as const) {
      const c = capture();
      expect(await main([...args], c.io), args.join(' ')).toBe(2);
      expect(c.err.join('\n')).toMatch(msg);
    }
  });
});
