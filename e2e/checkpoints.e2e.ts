/**
 * The Checkpoints panel in Chromium: create, persist across reloads, import (valid, clashing,
 * corrupt, mismatched), export and delete, in OPFS and once in the IndexedDB fallback.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { encodeCheckpoint } from '../src/container';
import { loadModel, saveModel } from '../src/model/model-file';
import { MODEL_PRESETS, type ModelConfig } from '../src/model/config';
import { initParams } from '../src/model/init';
import { paramTable } from '../src/model/params';
import { trainTokenizer } from '../src/tokenizer';
import { corpusTokenizer } from '../src/tokenizer/corpus';
import { chromiumSession, SCREENSHOTS } from './browser';

const open = chromiumSession();
let dir: string;
const files = { valid: '', corrupt: '', notCheckpoint: '', mismatched: '' };
let validBytes: Uint8Array;
let importedConfig: ModelConfig;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-ckpt-'));
  const tokenizer = trainTokenizer(['const total = items.reduce((sum, x) => sum + x, 0);\n'.repeat(4)], { vocabSize: 300 });
  importedConfig = { nLayer: 1, dModel: 32, nHead: 2, contextLength: 64, vocabSize: tokenizer.vocabSize };
  const table = paramTable(importedConfig);
  const optimizer = { m: new Float32Array(table.total).fill(0.5), v: new Float32Array(table.total).fill(0.25), step: 7 };
  validBytes = saveModel({
    config: importedConfig,
    tokenizer: tokenizer.toJSON(),
    params: initParams(table, 3),
    optimizer,
    meta: { step: 7 },
  });
  const corrupt = validBytes.slice();
  corrupt[corrupt.length - 3]! ^= 0xff; // the last bytes are tensor data: the CRC no longer matches
  // a well-formed container whose tensors do not fit its config
  const mismatched = encodeCheckpoint({
    config: { ...MODEL_PRESETS.tiny },
    tokenizer: null,
    tensors: { 'param/wte': { data: new Float32Array(4), shape: [2, 2] } },
  });
  files.valid = join(dir, 'e2e-model.crlckpt');
  files.corrupt = join(dir, 'corrupt.crlckpt');
  files.notCheckpoint = join(dir, 'notes.crlckpt');
  files.mismatched = join(dir, 'mismatched.crlckpt');
  await writeFile(files.valid, validBytes);
  await writeFile(files.corrupt, corrupt);
  await writeFile(files.notCheckpoint, 'function f() { return 1; }\n');
  await writeFile(files.mismatched, mismatched);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const item = (page: Page, name: string) => page.locator(`[data-testid="ckpt-item"][data-name="${name}"]`);
const names = (page: Page) => page.getByTestId('ckpt-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')));
const text = async (page: Page, name: string, field: string) => (await item(page, name).getByTestId(field).textContent()) ?? '';

/** Waits for the panel to have opened its store and read the list. */
async function panelReady(page: Page, store: 'opfs' | 'indexeddb'): Promise<void> {
  await expect.poll(() => page.getByTestId('ckpt-store').getAttribute('data-store'), { timeout: 30_000 }).toBe(store);
  await page.locator('[data-testid="ckpt-list"], [data-testid="ckpt-empty"]').first().waitFor({ timeout: 30_000 });
  await expect.poll(() => page.getByTestId('checkpoints').getAttribute('data-busy')).toBe('false');
}

/** The whole panel: the left column scrolls, so the viewport is made tall enough for the shot, then restored. */
async function panelShot(page: Page, name: string): Promise<void> {
  const size = page.viewportSize()!;
  await page.setViewportSize({ width: size.width, height: 2400 });
  await page.getByTestId('panel-checkpoints').screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
  await page.setViewportSize(size);
}

/** The tiny preset with the built-in tokenizer's real vocabulary. */
function tinyConfigText(): { config: string; params: string } {
  const c = { ...MODEL_PRESETS.tiny, vocabSize: corpusTokenizer(MODEL_PRESETS.tiny.vocabSize).vocabSize };
  return {
    config: `2 layers, d_model 64, 4 heads, context 128, vocab ${c.vocabSize}`,
    params: paramTable(c).count.toLocaleString('en-US'),
  };
}

async function createTiny(page: Page, seed: number): Promise<string> {
  const name = `tiny-seed${seed}.crlckpt`;
  await page.getByTestId('ckpt-preset').selectOption('tiny');
  await page.getByTestId('ckpt-seed').fill(String(seed));
  await page.getByTestId('ckpt-new').click();
  await item(page, name).waitFor({ timeout: 30_000 });
  return name;
}

async function importFile(page: Page, path: string): Promise<void> {
  await expect.poll(() => page.getByTestId('checkpoints').getAttribute('data-busy')).toBe('false');
  await page.getByLabel(/Import a checkpoint file/).setInputFiles(path);
}

async function exported(page: Page, name: string): Promise<Uint8Array> {
  const [download] = await Promise.all([page.waitForEvent('download'), item(page, name).getByTestId('ckpt-export').click()]);
  expect(download.suggestedFilename()).toBe(name);
  return new Uint8Array(await readFile((await download.path())!));
}

describe('the Checkpoints panel in Chromium', () => {
  test('creates, persists, imports, rejects bad files, exports and deletes (OPFS)', async () => {
    const { page, errors, screenshot } = await open();
    await panelReady(page, 'opfs');
    expect(await page.getByTestId('ckpt-store').textContent()).toMatch(/Origin Private File System \(OPFS\)/);
    expect(await names(page)).toEqual([]);

    // (a) a new tiny model appears with its config
    const tiny = await createTiny(page, 1);
    const want = tinyConfigText();
    expect(await text(page, tiny, 'ckpt-config')).toBe(want.config);
    expect(await text(page, tiny, 'ckpt-params')).toBe(want.params);
    expect(await text(page, tiny, 'ckpt-optimizer')).toBe('no');
    expect(await text(page, tiny, 'ckpt-tokenizer')).toMatch(/^yes \(\d+ tokens\)$/);
    expect(await text(page, tiny, 'ckpt-meta')).toMatch(/step 0.*preset tiny.*seed 1/);

    // (b) still there after a reload
    await page.reload();
    await panelReady(page, 'opfs');
    expect(await names(page)).toEqual([tiny]);
    expect(await text(page, tiny, 'ckpt-config')).toBe(want.config);

    // (c) a valid file built in Node with saveModel; a second import of it gets a suffix
    await importFile(page, files.valid);
    await item(page, 'e2e-model.crlckpt').waitFor({ timeout: 30_000 });
    const c = importedConfig;
    expect(await text(page, 'e2e-model.crlckpt', 'ckpt-config')).toBe(`1 layer, d_model 32, 2 heads, context 64, vocab ${c.vocabSize}`);
    expect(await text(page, 'e2e-model.crlckpt', 'ckpt-params')).toBe(paramTable(c).count.toLocaleString('en-US'));
    expect(await text(page, 'e2e-model.crlckpt', 'ckpt-optimizer')).toMatch(/^yes/);
    expect(await text(page, 'e2e-model.crlckpt', 'ckpt-meta')).toMatch(/step 7/);
    await importFile(page, files.valid);
    await item(page, 'e2e-model-2.crlckpt').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('ckpt-status').textContent()).toContain('as "e2e-model-2.crlckpt"');
    const before = await names(page);
    expect(before).toEqual(['e2e-model-2.crlckpt', 'e2e-model.crlckpt', tiny]);

    // (d) corrupt, foreign and mismatched files: an alert naming the problem, nothing stored
    const alert = page.getByRole('alert').filter({ hasText: 'Rejected' });
    for (const [path, problem] of [
      [files.corrupt, /Rejected "corrupt\.crlckpt": checkpoint data is corrupt: CRC-32 mismatch/],
      [
        files.notCheckpoint,
        /Rejected "notes\.crlckpt": this file is not a Code RL Lab checkpoint: .*this file starts with "function" \(looks like text/,
      ],
      [files.mismatched, /Rejected "mismatched\.crlckpt": checkpoint does not fit the model/],
    ] as const) {
      await importFile(page, path);
      await expect.poll(async () => ((await alert.count()) ? await alert.textContent() : ''), { timeout: 30_000 }).toMatch(problem);
      expect(await names(page)).toEqual(before);
      if (path === files.corrupt) await panelShot(page, 'checkpoints-corrupt-rejected');
    }
    await page.reload();
    await panelReady(page, 'opfs');
    expect(await names(page)).toEqual(before);

    // export: the stored bytes, which load as the same model
    const bytes = await exported(page, 'e2e-model.crlckpt');
    expect(bytes).toEqual(validBytes);
    expect(loadModel(bytes, importedConfig).optimizer?.step).toBe(7);

    // (e) delete, with the confirmation step; gone after a reload
    await item(page, 'e2e-model-2.crlckpt').getByTestId('ckpt-delete').click();
    await item(page, 'e2e-model-2.crlckpt').getByTestId('ckpt-delete-cancel').click();
    expect(await names(page)).toEqual(before);
    await item(page, 'e2e-model-2.crlckpt').getByTestId('ckpt-delete').click();
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('ckpt-delete-cancel');
    await panelShot(page, 'checkpoints-delete-confirm');
    await item(page, 'e2e-model-2.crlckpt').getByTestId('ckpt-delete-confirm').click();
    await item(page, 'e2e-model-2.crlckpt').waitFor({ state: 'detached', timeout: 30_000 });
    await page.reload();
    await panelReady(page, 'opfs');
    expect(await names(page)).toEqual(['e2e-model.crlckpt', tiny]);
    await page.getByTestId('panel-checkpoints').scrollIntoViewIfNeeded();
    await screenshot('checkpoints-opfs');
    await panelShot(page, 'checkpoints-panel');

    // (f)
    expect(errors).toEqual([]);
  });

  test('falls back to IndexedDB without OPFS, and says so', async () => {
    const { page, errors } = await open(() => {
      delete (StorageManager.prototype as { getDirectory?: unknown }).getDirectory;
    });
    await panelReady(page, 'indexeddb');
    expect(await page.getByTestId('ckpt-store').textContent()).toMatch(/IndexedDB \(OPFS is not available/);
    const tiny = await createTiny(page, 5);
    await importFile(page, files.valid);
    await item(page, 'e2e-model.crlckpt').waitFor({ timeout: 30_000 });
    await importFile(page, files.corrupt);
    await page.getByRole('alert').filter({ hasText: 'CRC-32 mismatch' }).waitFor({ timeout: 30_000 });

    await page.reload();
    await panelReady(page, 'indexeddb');
    expect(await names(page)).toEqual(['e2e-model.crlckpt', tiny]);
    expect(await text(page, tiny, 'ckpt-config')).toBe(tinyConfigText().config);
    expect(await text(page, 'e2e-model.crlckpt', 'ckpt-meta')).toMatch(/step 7/);
    expect(await exported(page, 'e2e-model.crlckpt')).toEqual(validBytes);

    await item(page, tiny).getByTestId('ckpt-delete').click();
    await item(page, tiny).getByTestId('ckpt-delete-confirm').click();
    await item(page, tiny).waitFor({ state: 'detached', timeout: 30_000 });
    await page.reload();
    await panelReady(page, 'indexeddb');
    expect(await names(page)).toEqual(['e2e-model.crlckpt']);
    await panelShot(page, 'checkpoints-indexeddb');
    expect(errors).toEqual([]);
  });
});
