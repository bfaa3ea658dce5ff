/**
 * The Hugging Face models panel in Chromium: data/hf-fixtures/qwen2 imported through the folder
 * input (<input webkitdirectory>, as the file dialog fills it), listed with the loader's
 * architecture line, sampled from the prompt box (chat and completion formats, tokens/s), found
 * again after a reload (the OPFS copy: model files and the manifest, nothing else), evaluated in
 * the Evaluate panel with the prompt format shown, deleted; a folder without tokenizer.json shows
 * the loader's message word for word and stores nothing, the model stored before untouched; the
 * gpt2 fixture's files dropped loose on the drop zone are imported too.
 * Screenshots at 1280x720 and 1920x1080.
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isModelFile } from '../src/hf/folder';
import { chromiumSession, SCREENSHOTS } from './browser';

const open = chromiumSession();
const QWEN2 = join(import.meta.dirname, '..', 'data', 'hf-fixtures', 'qwen2');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-hf-'));
  // a folder the loader refuses: no tokenizer.json
  await cp(QWEN2, join(dir, 'qwen2-no-tokenizer'), { recursive: true });
  await rm(join(dir, 'qwen2-no-tokenizer', 'tokenizer.json'));
  const task = {
    task_id: 'user/comment',
    language: 'javascript',
    prompt: 'function f(x) {\n  return x * 2;\n}\n// ',
    entry_point: 'f',
    tests: 'console.assert(f(2) === 4);\n',
  };
  await writeFile(join(dir, 'one-task.jsonl'), `${JSON.stringify(task)}\n${JSON.stringify({ ...task, task_id: 'user/second' })}\n`);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Picks `folder` in the folder input and waits for the import to end (loaded and copied, or refused). */
async function importFolder(page: Page, folder: string): Promise<void> {
  const models = page.getByTestId('models');
  const before = Number(await models.getAttribute('data-attempts'));
  await page.getByTestId('models-folder-input').setInputFiles(folder);
  await expect.poll(async () => Number(await models.getAttribute('data-attempts')), { timeout: 60_000 }).toBe(before + 1);
}

const item = (page: Page, id: string) => page.locator(`[data-testid="models-item"][data-id="${id}"]`);
const ids = (page: Page) => page.getByTestId('models-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));

/** The files of hf-models/<id>/ in OPFS. */
const opfsModelFiles = (page: Page, id: string): Promise<string[]> =>
  page.evaluate(async (id) => {
    const d = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('hf-models')).getDirectoryHandle(id);
    const out: string[] = [];
    for await (const [name] of (d as unknown as { entries(): AsyncIterable<[string, unknown]> }).entries()) out.push(name);
    return out.sort();
  }, id);

async function generate(page: Page, o: { prompt: string; format: string; max: string }): Promise<{ text: string; format: string }> {
  const box = page.getByTestId('models-prompt');
  await box.getByTestId('models-prompt-text').fill(o.prompt);
  await box.getByTestId('models-prompt-format').selectOption(o.format);
  await box.getByTestId('models-prompt-max').fill(o.max);
  await box.getByTestId('models-prompt-temperature').fill('0');
  await box.getByTestId('models-generate').click();
  await expect.poll(() => box.getByTestId('models-generate').textContent(), { timeout: 60_000 }).toBe('Generate');
  const err = box.getByTestId('models-sample-error');
  if (await err.count()) throw new Error(`generate failed: ${await err.textContent()}`);
  return {
    text: (await box.getByTestId('models-sample-text').textContent()) ?? '',
    format: (await box.getByTestId('models-sample').getAttribute('data-format')) ?? '',
  };
}

/** The whole page at a size, and the Models panel alone (in a viewport tall enough that its column need not scroll). */
async function shots(page: Page, name: string): Promise<void> {
  for (const size of [
    { width: 1280, height: 720 },
    { width: 1920, height: 1080 },
  ]) {
    await page.setViewportSize(size);
    await page.getByTestId('panel-models').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${size.width}x${size.height}.png`) });
    await page.setViewportSize({ width: size.width, height: 2400 });
    await page.getByTestId('panel-models').screenshot({ path: join(SCREENSHOTS, `${name}-${size.width}-panel.png`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe('Hugging Face models in the app (Chromium)', () => {
  test('import qwen2 through the folder input, sample, reload, evaluate; a folder without tokenizer.json is refused', async () => {
    const { page, errors } = await open();
    const t0 = Date.now();
    const lap = (what: string) => console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    const models = page.getByTestId('models');
    await expect.poll(() => models.getAttribute('data-store'), { timeout: 30_000 }).toBe('opfs');
    await page.getByTestId('models-empty').waitFor();
    await shots(page, 'hf-models-empty');

    // (1) import: listed with the loader's architecture line; the copy holds the model files and the manifest
    await importFolder(page, QWEN2);
    lap('qwen2 imported');
    if (await page.getByTestId('models-error').count())
      throw new Error(`import failed: ${await page.getByTestId('models-error').textContent()}`);
    const q = item(page, 'qwen2');
    expect(await q.getByTestId('models-arch').textContent()).toMatch(
      /^Qwen2ForCausalLM: 2 layers, d_model 32, 4 heads \(1 kv\) of 8, ffn 64, vocab 512 \([\d.]+k parameters, F16\)$/,
    );
    expect(await q.getByTestId('models-params').textContent()).toBe('50,432');
    expect(await q.getByTestId('models-dtypes').textContent()).toBe('F16 (kept 16-bit on the GPU when frozen: sampling, a LoRA base)');
    expect(await q.getByTestId('models-chat').textContent()).toMatch(/^yes/);
    const expectedFiles = (await readdir(QWEN2)).filter(isModelFile);
    expect(await opfsModelFiles(page, 'qwen2')).toEqual([...expectedFiles, 'manifest.json'].sort());
    expect(await page.getByTestId('models-notice').textContent()).toBe('Imported qwen2: 7 files, 125.7 KB.');

    // (2) the prompt box: the chat format (qwen2 has a chat template) and plain completion, greedy
    const chat = await generate(page, { prompt: 'Write a function that adds two numbers.', format: 'auto', max: '12' });
    lap('sampled (chat)');
    expect(chat.format).toBe('chat');
    expect(chat.text.length).toBeGreaterThan(0);
    expect(await page.getByTestId('models-session').getAttribute('data-backend')).toBe('cpu'); // SwiftShader: auto is cpu
    const tps = Number((await page.getByTestId('models-tokens-per-s').textContent())!.split(' ')[0]);
    expect(tps).toBeGreaterThan(0);
    const completion = await generate(page, { prompt: 'function add(a, b) {', format: 'completion', max: '8' });
    expect(completion.format).toBe('completion');
    expect(await page.getByTestId('models-sample-stats').textContent()).toMatch(
      /^\d+ tokens? \((length|eos|stop)\) in [\d.]+ m?s, [\d.]+ tokens\/s on cpu; completion format, a prompt of \d+ tokens$/,
    );
    await shots(page, 'hf-models-sampled');

    // (3) a folder the loader refuses: its message as it words it; nothing stored, qwen2 untouched
    await importFolder(page, join(dir, 'qwen2-no-tokenizer'));
    expect(await page.getByTestId('models-error-text').textContent()).toBe(
      'qwen2-no-tokenizer: no tokenizer.json (a Hugging Face model folder has config.json, model.safetensors or model.safetensors.index.json with its shards, and tokenizer.json)',
    );
    expect(await ids(page)).toEqual(['qwen2']);
    await shots(page, 'hf-models-refused');

    // (4) a drop of loose files (no folder: named after the architecture), read from the DataTransfer
    const gpt2 = join(QWEN2, '..', 'gpt2');
    const loose: [string, number[]][] = [];
    for (const f of (await readdir(gpt2)).filter(isModelFile)) loose.push([f, [...(await readFile(join(gpt2, f)))]]);
    const before = Number(await models.getAttribute('data-attempts'));
    await page.evaluate((files) => {
      const dt = new DataTransfer();
      for (const [name, bytes] of files) dt.items.add(new File([new Uint8Array(bytes)], name));
      const zone = document.querySelector('[data-testid="models-drop"]')!;
      zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, loose);
    await expect.poll(async () => Number(await models.getAttribute('data-attempts')), { timeout: 60_000 }).toBe(before + 1);
    if (await page.getByTestId('models-error').count())
      throw new Error(`drop failed: ${await page.getByTestId('models-error').textContent()}`);
    expect(await ids(page)).toEqual(['gpt2', 'qwen2']);
    expect(await item(page, 'gpt2').getByTestId('models-arch').textContent()).toMatch(/^GPT2LMHeadModel: 2 layers/);
    expect(await item(page, 'gpt2').getByTestId('models-chat').textContent()).toBe('no (a base model)');
    lap('gpt2 dropped');

    // (5) after a reload the stored copies are listed again and qwen2 samples the same greedy text
    await page.reload();
    await expect.poll(() => ids(page), { timeout: 30_000 }).toEqual(['gpt2', 'qwen2']);
    await page.getByTestId('models-prompt-model').selectOption('qwen2');
    expect(await item(page, 'qwen2').getByTestId('models-arch').textContent()).toMatch(/^Qwen2ForCausalLM: 2 layers/);
    expect((await generate(page, { prompt: 'function add(a, b) {', format: 'completion', max: '8' })).text).toBe(completion.text);
    lap('reloaded and sampled again');

    // (6) the Evaluate panel: the model on a suite file, completion prompts, the per-task table
    const ckpt = page.getByTestId('eval-checkpoint');
    await expect
      .poll(() => ckpt.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)))
      .toContain('hf:qwen2');
    await ckpt.selectOption('hf:qwen2');
    expect(await page.getByTestId('eval-ckpt-config').textContent()).toMatch(
      /^Qwen2ForCausalLM: .*; a chat template; runs on the lab's engine$/,
    );
    await page.getByTestId('eval-suite-file').setInputFiles(join(dir, 'one-task.jsonl'));
    await expect.poll(() => page.getByTestId('eval-suite-info').getAttribute('data-tasks')).toBe('2');
    for (const [f, v] of [
      ['samples', '1'],
      ['k', '1'],
      ['temperature', '0'],
      ['maxNewTokens', '6'],
    ] as const)
      await page.getByTestId(`eval-${f}`).fill(v);
    await page.getByTestId('eval-format').selectOption('completion');
    await page.getByTestId('eval-start').click();
    await expect.poll(() => page.getByTestId('eval-status').textContent(), { timeout: 120_000, interval: 500 }).toMatch(/^(done|error)$/);
    if (await page.getByTestId('eval-error').count())
      throw new Error(`evaluation failed: ${await page.getByTestId('eval-error').textContent()}`);
    expect(await page.getByTestId('eval-result-format').getAttribute('data-format')).toBe('completion');
    expect(await page.getByTestId('eval-task').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-task')))).toEqual([
      'user/comment',
      'user/second',
    ]);
    lap('evaluated');
    await page.getByTestId('panel-eval').screenshot({ path: join(SCREENSHOTS, 'hf-models-eval-panel.png') });

    // (7) delete: gone from the list and from OPFS
    await item(page, 'qwen2').getByTestId('models-delete').click();
    await item(page, 'qwen2').getByTestId('models-delete-confirm').click();
    await expect.poll(() => ids(page)).toEqual(['gpt2']);
    expect(
      await page.evaluate(async () => {
        const d = await (await navigator.storage.getDirectory()).getDirectoryHandle('hf-models');
        const out: string[] = [];
        for await (const [name] of (d as unknown as { entries(): AsyncIterable<[string, unknown]> }).entries()) out.push(name);
        return out;
      }),
    ).toEqual(['gpt2']);
    expect(errors).toEqual([]);
  }, 240_000);

  test('without OPFS the models are kept in IndexedDB, by the page and the model worker alike', async () => {
    const { page, errors } = await open(() => {
      delete (StorageManager.prototype as { getDirectory?: unknown }).getDirectory;
    });
    const models = page.getByTestId('models');
    await expect.poll(() => models.getAttribute('data-store'), { timeout: 30_000 }).toBe('indexeddb');
    expect(await models.textContent()).toContain('copied into this browser (IndexedDB)');
    await importFolder(page, QWEN2);
    if (await page.getByTestId('models-error').count())
      throw new Error(`import failed: ${await page.getByTestId('models-error').textContent()}`);
    const first = await generate(page, { prompt: 'function add(a, b) {', format: 'completion', max: '8' });
    await page.reload();
    await expect.poll(() => ids(page), { timeout: 30_000 }).toEqual(['qwen2']); // the worker wrote where the page reads
    expect((await generate(page, { prompt: 'function add(a, b) {', format: 'completion', max: '8' })).text).toBe(first.text);
    expect(errors).toEqual([]);
  }, 120_000);
});
