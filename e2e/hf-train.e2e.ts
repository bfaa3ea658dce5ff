/**
 * Training an imported Hugging Face model from the app, in Chromium: the Qwen2 fixture is
 * imported in the Models panel and picked as the policy model of a miniature run, LoRA turned on
 * with rank 4 (alpha follows: 8; the targets are Qwen2's default, q_proj and v_proj); the setup
 * shows the memory plan and what the run trains, and a step over the 4 GiB budget keeps Start
 * disabled. The run skips SFT, trains the adapters with PPO
 * in the run worker (cpu backend: WebGPU hidden, to stay short), records the model and the
 * resolved LoRA settings in its config.json as `coderl train --model` does, keeps a copy of the
 * model in its run directory (pretrained/hf), and its rollouts, in the model's own tokens, open
 * in the rollout browser.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { nodeFolder } from '../src/hf/node';
import type { RlConfig } from '../src/rl/config';
import type { Summary } from '../src/rl/pipeline';
import type { RolloutRecord } from '../src/rl/ppo-loop';
import type { ReferenceRef } from '../src/rl/reference';
import { loadHfReferenced } from '../src/rl/reference-hf';
import { MINI_RUN } from '../src/rl/testing';
import { importFolder, runError, runToEnd } from './app-steps';
import { chromiumSession, SCREENSHOTS } from './browser';
import { opfsFiles, readOpfsText } from './run-fixture';

const open = chromiumSession();
const RUN = 'e2e-hf-train';
const QWEN2 = join(import.meta.dirname, '..', 'data', 'hf-fixtures', 'qwen2');
/** The miniature run (its model section is replaced by the picker with qwen2's shape at context 96). */
const OVERRIDES = {
  ...MINI_RUN,
  promptFormat: 'completion', // the fixture's chat template and English, a character a token, outgrow its context
  rl: { ...MINI_RUN.rl, iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, maxNewTokens: 8 },
  eval: { ...MINI_RUN.eval, maxNewTokens: 8 },
};
let qwen2Ref: ReferenceRef;

beforeAll(async () => {
  qwen2Ref = (await loadHfReferenced(await nodeFolder(QWEN2))).ref;
});

describe('training an imported Hugging Face model with LoRA (Chromium)', () => {
  test('qwen2 picked as the policy model with LoRA rank 4: the run records it, keeps a copy and its rollouts open', async () => {
    const { page, errors, screenshot } = await open(() => {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    });
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    const t0 = Date.now();
    const picker = page.getByTestId('exp-policy');
    const select = page.getByLabel('The model the run trains');
    expect(await picker.getAttribute('data-source')).toBe('lab');
    expect(await page.getByTestId('exp-policy-none').count()).toBe(1);
    await picker.screenshot({ path: join(SCREENSHOTS, 'hf-train-picker-none.png') });
    await importFolder(page, QWEN2);
    await expect
      .poll(() => select.locator('option').allTextContents())
      .toEqual(["The lab's GPT (trained from scratch, default)", 'Hugging Face: qwen2']);

    // the setup: a miniature run, qwen2 as the policy model, LoRA rank 4
    await page.getByTestId('exp-seed').fill('3');
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(OVERRIDES));
    await page.getByLabel('Run name').fill(RUN);
    await select.selectOption('hf:qwen2');
    await expect.poll(() => picker.getAttribute('data-arch')).toBe('ready');
    expect(await picker.getAttribute('data-source')).toBe('hf');
    expect(await page.getByTestId('exp-policy-info').getAttribute('data-sha256')).toBe(qwen2Ref.sha256);
    const lora = page.getByTestId('exp-lora');
    expect(await lora.getAttribute('data-on')).toBe('false');
    const fullPlan = (await page.getByTestId('exp-memory-plan').textContent()) ?? '';
    expect(fullPlan).toMatch(/^Memory plan: weights [\d.]+ [KM]iB, gradients [\d.]+ [KM]iB, .*; total [\d.]+ [KM]iB of 4\.00 GiB$/);
    await page.getByLabel('LoRA (off: full fine-tuning)').check();
    expect(await lora.getAttribute('data-on')).toBe('true');
    await page.getByTestId('exp-lora-rank').fill('4');
    expect(await page.getByTestId('exp-lora-alpha').inputValue()).toBe('8');
    // LoRA+: plain LoRA (1) until set; a bad ratio is named and changes nothing
    const ratio = page.getByTestId('exp-lora-lrRatio');
    expect(await ratio.inputValue()).toBe('1');
    await ratio.fill('0');
    expect(await page.getByTestId('exp-lora-lrRatio-error').textContent()).toMatch(/above 0 and at most 1000/);
    await ratio.fill('4');
    expect(await page.getByTestId('exp-lora-lrRatio-error').count()).toBe(0);
    const targets = page.getByTestId('exp-lora-targets').locator('input[type="checkbox"]');
    expect(await targets.count()).toBe(8); // Qwen2's seven linear modules per layer and lm_head
    expect(await page.getByTestId('exp-lora-target-q_proj').isChecked()).toBe(true);
    expect(await page.getByTestId('exp-lora-target-v_proj').isChecked()).toBe(true);
    expect(await page.getByTestId('exp-lora-target-o_proj').isChecked()).toBe(false);
    expect(await page.getByTestId('exp-lora-target-lm_head').isChecked()).toBe(false);
    const plan = page.getByTestId('exp-memory-plan');
    expect(await plan.getAttribute('data-fits')).toBe('true');
    expect(await plan.textContent()).toMatch(
      /^Memory plan: weights [\d.]+ [KM]iB \(F16\), adapters [\d.]+ [KM]iB, .*\(4 sequences a micro-batch\)/,
    );
    // the F16 checkpoint's frozen base stays F16 on the GPU (lora.baseDtype auto, left out of the config)
    const baseDtype = page.getByTestId('exp-lora-baseDtype');
    expect(await baseDtype.inputValue()).toBe('auto');
    expect(await baseDtype.locator('option:checked').textContent()).toBe('auto (F16)');
    expect(JSON.parse(await page.getByLabel('Overrides (JSON)').inputValue())).toMatchObject({
      pretrained: qwen2Ref,
      lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'], lrRatio: 4 },
      sft: { maxSteps: 0 },
      model: { dModel: 32, contextLength: 96 }, // qwen2's shape, less what the preset (quick) has already: 2 layers, 4 heads, 512 tokens
    });
    expect(JSON.parse(await page.getByLabel('Overrides (JSON)').inputValue()).model).toEqual({ dModel: 32, contextLength: 96 });
    expect(await page.getByTestId('exp-plan-model').textContent()).toMatch(
      /^Trains the Hugging Face model qwen2\/: 2 layers, width 32, 4 heads, context 96, its own tokenizer; LoRA r4 alpha 8 on q_proj, v_proj \(LoRA\+: lora_B at 4 × the learning rate\), a fresh value head; SFT skipped, then PPO\./,
    );
    expect(await page.getByTestId('exp-estimate').count()).toBe(0);
    await expect.poll(() => page.getByTestId('exp-start').isEnabled()).toBe(true);

    // the picture of the setup (docs/lora-setup.png is this one)
    await page.setViewportSize({ width: 1280, height: 720 });
    await picker.evaluate((el) => el.scrollIntoView({ block: 'center' }));
    await page.screenshot({ path: join(SCREENSHOTS, 'hf-train-setup-1280x720.png') });
    await page.setViewportSize({ width: 1440, height: 900 });

    // a step that does not fit the 4 GiB budget is refused before Start, with the plan's numbers
    const json = page.getByLabel('Overrides (JSON)');
    const fitting = await json.inputValue();
    const big = JSON.parse(fitting) as { rl: Record<string, unknown> };
    await json.fill(JSON.stringify({ ...big, rl: { ...big.rl, promptsPerIteration: 4096, samplesPerPrompt: 128 } }));
    await expect.poll(() => plan.getAttribute('data-fits')).toBe('false');
    expect(await plan.textContent()).toMatch(
      /^The run does not fit: the step does not fit 4\.00 GiB: .*KV cache 6\.00 GiB.*use fewer sequences/,
    );
    expect(await page.getByTestId('exp-overrides-error').count()).toBe(0); // a valid config: only the plan holds Start back
    expect(await page.getByTestId('exp-start').isEnabled()).toBe(false);
    await json.fill(fitting);
    await expect.poll(() => page.getByTestId('exp-start').isEnabled()).toBe(true);
    expect(await page.getByTestId('exp-lora-rank').inputValue()).toBe('4');

    // the run: SFT skipped, one PPO iteration of the adapters
    expect(await runToEnd(page, 240_000), await runError(page)).toBe('done');
    const config = JSON.parse((await readOpfsText(page, RUN, 'config.json'))!) as { cfg: RlConfig };
    expect(config.cfg.pretrained).toEqual(qwen2Ref);
    expect(config.cfg.lora).toEqual({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'], lrRatio: 4 });
    expect(config.cfg.model).toEqual({ nLayer: 2, dModel: 32, nHead: 4, contextLength: 96, vocabSize: 512 });
    // what the page set is what the worker recorded: the stored run is not "started with other settings"
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-finished'), { timeout: 30_000 }).toBe('true');
    expect(await page.getByTestId('exp-use-stored').count()).toBe(0);
    const files = await opfsFiles(page, RUN);
    expect(files).toEqual(
      expect.arrayContaining([
        'pretrained/hf/files.json',
        'pretrained/hf/config.json',
        'policy.ckpt',
        'rollouts/iter-0001.jsonl',
        'summary.json',
      ]),
    );
    expect(files).not.toContain('tokenizer.json'); // the model's own tokenizer: none is trained
    const summary = JSON.parse((await readOpfsText(page, RUN, 'summary.json'))!) as Summary;
    expect(summary.sft.steps).toBe(0); // SFT skipped: the "SFT" column is the pretrained model with fresh adapters
    expect(await page.getByTestId('exp-sft-heldout_pass1').count()).toBe(1);
    await screenshot('hf-train-done');

    // the rollouts, in qwen2's tokens, in the rollout browser
    const records = (await readOpfsText(page, RUN, 'rollouts/iter-0001.jsonl'))!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RolloutRecord);
    expect(records).toHaveLength(4);
    await expect.poll(() => page.getByTestId('rollouts-run').locator('option').allTextContents(), { timeout: 60_000 }).toContain(RUN);
    await page.getByTestId('rollouts-run').selectOption(RUN);
    await expect.poll(() => page.getByTestId('rollout-row').count(), { timeout: 30_000 }).toBe(records.length);
    await page.locator('[data-testid="rollout-row"][data-index="0"]').click();
    const view = page.getByTestId('rollout-view');
    await expect.poll(() => view.locator('[class*="heat-"]').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await screenshot('hf-train-rollout');
    console.log(`whole test in the page: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(errors).toEqual([]);
  }, 360_000);
});
