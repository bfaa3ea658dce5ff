/**
 * ONNX interop in Chromium: export a stored checkpoint from the Checkpoints panel (two downloads,
 * parsed back with src/onnx's checks), parity of onnxruntime-web (webgpu and wasm) against our
 * WebGPU engine, import of that export and of a hand-written model (a sample generated from each),
 * an inline error for a malformed file, pass@1 of an imported model in the Evaluate panel, and the
 * Benchmarks panel's ONNX race on the tiny preset.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Download, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MODEL_PRESETS } from '../src/model/config';
import { inspectOnnxModel } from '../src/onnx/import';
import { BIGRAM_COMPLETION, BIGRAM_SUITE, bigramForSuite } from '../src/onnx/testing';
import { Tokenizer } from '../src/tokenizer';
import { corpusTokenizer } from '../src/tokenizer/corpus';
import { chromiumSession } from './browser';

const open = chromiumSession();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-onnx-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function gpuReady(page: Page): Promise<void> {
  await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
}

/** Clicks and collects the downloads the click starts, saved under `dir`/`sub` with their suggested names (sorted: arrival order varies). */
async function downloadsOf(page: Page, sub: string, click: () => Promise<void>, count: number): Promise<string[]> {
  const got: Download[] = [];
  const on = (d: Download) => void got.push(d);
  page.on('download', on);
  await click();
  await expect.poll(() => got.length, { timeout: 30_000 }).toBe(count);
  page.off('download', on);
  const paths: string[] = [];
  for (const d of got) {
    const p = join(dir, sub, d.suggestedFilename());
    await d.saveAs(p);
    paths.push(p);
  }
  return paths.sort();
}

async function importModel(page: Page, model: string, tokenizer: string, context = ''): Promise<void> {
  const sec = page.getByTestId('onnx-import');
  const before = Number(await sec.getAttribute('data-attempts'));
  await sec.getByTestId('onnx-import-model').setInputFiles(model);
  await sec.getByTestId('onnx-import-tokenizer').setInputFiles(tokenizer);
  await sec.getByTestId('onnx-import-context').fill(context);
  await sec.getByTestId('onnx-import-load').click();
  await expect.poll(async () => Number(await sec.getAttribute('data-attempts')), { timeout: 60_000 }).toBe(before + 1);
}

async function generate(page: Page, prompt: string, newTokens: string): Promise<string> {
  const sec = page.getByTestId('onnx-import');
  await sec.getByTestId('onnx-prompt').fill(prompt);
  await sec.getByLabel('New tokens').fill(newTokens);
  await sec.getByTestId('onnx-generate').click();
  await sec.locator('[data-testid="onnx-sample"], [data-testid="onnx-generate-error"]').first().waitFor({ timeout: 60_000 });
  const err = sec.getByTestId('onnx-generate-error');
  if (await err.count()) throw new Error(`generate failed: ${await err.textContent()}`);
  return (await sec.getByTestId('onnx-sample-text').textContent()) ?? '';
}

describe('ONNX in the app (Chromium)', () => {
  test('export from the Checkpoints panel, parity with ORT webgpu and wasm, import and sample, a malformed file', async () => {
    const { page, errors, screenshot } = await open();
    await gpuReady(page);
    await page.getByTestId('ckpt-preset').selectOption('tiny');
    await page.getByTestId('ckpt-seed').fill('5');
    await page.getByTestId('ckpt-new').click();
    const item = page.locator('[data-testid="ckpt-item"][data-name="tiny-seed5.crlckpt"]');
    await item.waitFor({ timeout: 60_000 });

    // export: M.onnx + M.tokenizer.json, without and with the KV cache
    const [model, tok] = await downloadsOf(page, 'plain', () => item.getByTestId('onnx-export').click(), 2);
    expect([model, tok].map((p) => p!.slice(dir.length + 1))).toEqual(['plain/tiny-seed5.onnx', 'plain/tiny-seed5.tokenizer.json']);
    const vocab = corpusTokenizer(MODEL_PRESETS.tiny.vocabSize).vocabSize;
    const info = inspectOnnxModel(new Uint8Array(await readFile(model!)), 'tiny-seed5.onnx');
    expect(info.config).toEqual({ ...MODEL_PRESETS.tiny, vocabSize: vocab });
    expect(info.kv).toBeNull();
    expect(info.metadata['coderl.tokenizer']).toBe('tiny-seed5.tokenizer.json');
    expect(Tokenizer.fromJSON(JSON.parse(await readFile(tok!, 'utf8'))).vocabSize).toBe(vocab);
    await item.getByTestId('onnx-kv').check();
    const [kvModel] = await downloadsOf(page, 'kv', () => item.getByTestId('onnx-export').click(), 2);
    expect(inspectOnnxModel(new Uint8Array(await readFile(kvModel!)), 'kv').kv).toEqual({ layers: 2, heads: 4, headSize: 16 });

    // parity in this browser: ORT webgpu and wasm against our WebGPU engine
    await item.getByTestId('onnx-parity').click();
    await item.locator('[data-testid="onnx-parity-result"], [data-testid="onnx-action-error"]').first().waitFor({ timeout: 120_000 });
    if (await item.getByTestId('onnx-action-error').count())
      throw new Error(`parity failed: ${await item.getByTestId('onnx-action-error').textContent()}`);
    const diff = async (ep: string) => Number(await item.getByTestId(`onnx-parity-${ep}`).textContent());
    const parity = { webgpu: await diff('webgpu'), wasm: await diff('wasm') };
    console.log('ONNX parity in Chromium (max_rel_diff vs our WebGPU engine):', JSON.stringify(parity));
    for (const [ep, d] of Object.entries(parity)) {
      expect(d, ep).toBeGreaterThan(0); // float32 engines never agree exactly: the figure is measured
      expect(d, ep).toBeLessThan(1e-4);
    }
    expect(await item.getByTestId('onnx-parity-result').getAttribute('data-ok')).toBe('true');

    // import the KV export with its tokenizer (ORT webgpu) and sample from it
    await importModel(page, kvModel!, tok!);
    expect(await page.getByTestId('onnx-import-summary').textContent()).toMatch(
      /Loaded tiny-seed5\.onnx on ORT webgpu: vocabulary \d+, context 128, KV cache \(2 layers\), value head/,
    );
    const sample = await generate(page, 'function add(a, b) {\n  return', '8');
    expect(Number(await page.getByTestId('onnx-sample').getAttribute('data-tokens'))).toBeGreaterThan(0);
    expect(typeof sample).toBe('string');

    // a hand-written model (no mask, positions, cache or value head) writes its known completion
    const { model: bigram, tok: byteTok } = bigramForSuite();
    await writeFile(join(dir, 'bigram.onnx'), bigram);
    await writeFile(join(dir, 'bigram.tokenizer.json'), JSON.stringify(byteTok.toJSON()));
    await importModel(page, join(dir, 'bigram.onnx'), join(dir, 'bigram.tokenizer.json'), '64');
    expect(await page.getByTestId('onnx-import-summary').textContent()).toMatch(
      /Loaded bigram\.onnx on ORT webgpu: vocabulary 258, context 64, no KV cache/,
    );
    expect(await generate(page, 'function f(x) {\n  return', '16')).toBe(BIGRAM_COMPLETION);

    // malformed files: inline errors naming the file and the problem
    await writeFile(join(dir, 'bad.onnx'), bigram.subarray(0, 100));
    await importModel(page, join(dir, 'bad.onnx'), join(dir, 'bigram.tokenizer.json'), '64');
    expect(await page.getByTestId('onnx-import-error').textContent()).toMatch(
      /^bad\.onnx: not a valid ONNX file: truncated protobuf at byte \d+/,
    );
    await importModel(page, model!, join(dir, 'bigram.tokenizer.json'));
    expect(await page.getByTestId('onnx-import-error').textContent()).toMatch(
      /bigram\.tokenizer\.json: tokenizer vocab 258 but tiny-seed5\.onnx logits last dim \d+/,
    );
    await screenshot('onnx-checkpoints');
    expect(errors).toEqual([]);
  }, 300_000);

  test('an imported ONNX model is evaluated in the Evaluate panel: greedy pass@1 of the bigram model on its two-task suite', async () => {
    const { page, errors, screenshot } = await open();
    const t0 = Date.now();
    const { model: bigram, tok: byteTok } = bigramForSuite();
    await writeFile(join(dir, 'bigram.onnx'), bigram);
    await writeFile(join(dir, 'bigram.tokenizer.json'), JSON.stringify(byteTok.toJSON()));
    await writeFile(join(dir, 'bigram-suite.jsonl'), BIGRAM_SUITE.map((t) => JSON.stringify(t)).join('\n') + '\n');
    await importModel(page, join(dir, 'bigram.onnx'), join(dir, 'bigram.tokenizer.json'), '64');
    await page.getByTestId('onnx-loaded').waitFor();

    // offered as a checkpoint; the suite file; greedy, one sample per task
    const ckpt = page.getByTestId('eval-checkpoint');
    await ckpt.selectOption('onnx:bigram.onnx');
    expect(await ckpt.locator('option:checked').textContent()).toBe('ONNX: bigram.onnx');
    expect(await page.getByTestId('eval-ckpt-config').textContent()).toMatch(/vocabulary 258, context 64/);
    await page.getByTestId('eval-suite-file').setInputFiles(join(dir, 'bigram-suite.jsonl'));
    await expect.poll(() => page.getByTestId('eval-suite-info').getAttribute('data-tasks')).toBe('2');
    for (const [field, v] of Object.entries({ samples: '1', k: '1', temperature: '0', maxNewTokens: '12', seed: '1' }))
      await page.getByTestId(`eval-${field}`).fill(v);
    await page.getByTestId('eval-start').click();
    await expect
      .poll(() => page.getByTestId('eval-status').textContent(), { timeout: 60_000, interval: 250 })
      .toMatch(/^(done|error|stopped)$/);
    if (await page.getByTestId('eval-error').count())
      throw new Error(`the evaluation failed: ${await page.getByTestId('eval-error').textContent()}`);

    // it completes both prompts with " x*2}", which passes the first task only (as evalSuite in Node, src/onnx/import.test.ts)
    expect(Number(await page.getByTestId('eval-pass-1').getAttribute('data-value'))).toBe(0.5);
    const rows = await page
      .getByTestId('eval-task')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-task'), e.getAttribute('data-passed'), e.getAttribute('data-total')]));
    expect(rows).toEqual([
      ['double', '1', '1'],
      ['plus-four', '0', '1'],
    ]);
    expect(await page.getByTestId('eval-note').textContent()).toContain("bigram.onnx runs in onnxruntime-web's wasm provider");
    console.log(
      `ONNX eval in Chromium: ${((Date.now() - t0) / 1000).toFixed(1)} s; ${await page.getByTestId('eval-result-info').textContent()}`,
    );
    await screenshot('onnx-eval');
    expect(errors).toEqual([]);
  }, 120_000);

  test('the ONNX race runs on the tiny preset and shows ours / ORT ratios', async () => {
    const { page, errors, screenshot } = await open();
    await gpuReady(page);
    const race = page.getByTestId('onnx-race');
    await page.getByTestId('panel-toggle-bench').click(); // the Benchmarks panel starts folded
    await race.getByTestId('onnx-race-preset').selectOption('tiny');
    await race.getByTestId('onnx-race-run').click();
    await expect.poll(() => race.getAttribute('data-state'), { timeout: 240_000, interval: 1000 }).toMatch(/done|error/);
    if ((await race.getAttribute('data-state')) === 'error')
      throw new Error(`race failed: ${await race.getByTestId('onnx-race-error').textContent()}`);
    await race.scrollIntoViewIfNeeded();
    await screenshot('onnx-race');
    const r = JSON.parse((await race.getAttribute('data-result'))!) as {
      rows: { engine: string; forward_ms: number; generate_tokens_per_s: number; max_rel_diff: number }[];
      ratios: { engine: string; forward: number; generate: number }[];
    };
    console.log('ONNX race in Chromium:', JSON.stringify(r.rows), JSON.stringify(r.ratios));
    expect(r.rows.map((x) => x.engine)).toEqual(['ours (WGSL)', 'ORT webgpu', 'ORT wasm']);
    for (const x of r.rows) {
      expect(x.forward_ms, x.engine).toBeGreaterThan(0);
      expect(x.generate_tokens_per_s, x.engine).toBeGreaterThan(0);
      expect(x.max_rel_diff, x.engine).toBeLessThan(1e-4);
    }
    for (const ep of ['webgpu', 'wasm'])
      expect(await race.getByTestId(`onnx-race-ratio-${ep}`).textContent()).toMatch(
        /^ours \/ ORT \w+: forward \d+\.\d\dx, generation \d+\.\d\dx \(goal 1\.5x: (met|not met)\)$/,
      );
    expect(errors).toEqual([]);
  }, 300_000);
});
