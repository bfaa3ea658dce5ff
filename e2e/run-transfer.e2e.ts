/**
 * Moving a run between browsers in the Experiment panel: a run directory in OPFS exports as one
 * `.coderl-run` file, which imports back byte for byte after the directory is gone; a corrupted
 * copy and a clash with an existing run are refused with an inline error, and nothing is written.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { unpackRun } from '../src/rl/run-bundle';
import { chromiumSession } from './browser';
import { writeOpfsRun } from './run-fixture';

const open = chromiumSession();
const RUN = 'e2e-transfer';
const text = (s: string) => [...new TextEncoder().encode(s)];
/** The fake run: path -> bytes (plain arrays, to pass through page.evaluate). */
const FILES: Record<string, number[]> = {
  'config.json': text('{"seed": 1, "cfg": {"preset": "tiny"}}\n'),
  'metrics.jsonl': text('{"step":0,"losses/kl":0.01}\n{"step":1,"losses/kl":0.02}\n'),
  'rollouts/policy.ckpt': Array.from({ length: 3000 }, (_, i) => (i * 131 + 7) & 0xff),
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-run-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Every file under OPFS's runs/<run>/ with its bytes; null when the directory is missing. */
function opfsRun(page: Page, run: string): Promise<Record<string, number[]> | null> {
  return page.evaluate(async (run) => {
    type Dir = FileSystemDirectoryHandle & { values(): AsyncIterable<FileSystemHandle> };
    const out: Record<string, number[]> = {};
    const walk = async (d: Dir, prefix: string): Promise<void> => {
      for await (const h of d.values()) {
        if (h.kind === 'file')
          out[prefix + h.name] = [...new Uint8Array(await (await (h as FileSystemFileHandle).getFile()).arrayBuffer())];
        else await walk(h as Dir, `${prefix}${h.name}/`);
      }
    };
    const runs = await (await navigator.storage.getDirectory()).getDirectoryHandle('runs', { create: true });
    try {
      await walk((await runs.getDirectoryHandle(run)) as Dir, '');
    } catch {
      return null;
    }
    return out;
  }, run);
}

const removeOpfsRun = (page: Page, run: string): Promise<void> =>
  page.evaluate(async (run) => {
    const runs = await (await navigator.storage.getDirectory()).getDirectoryHandle('runs');
    await runs.removeEntry(run, { recursive: true });
  }, run);

const storedFiles = (page: Page) => page.getByTestId('exp-stored').getAttribute('data-files');

describe('run export and import in the Experiment panel', () => {
  test('exports a stored run, imports it back byte for byte, refuses corrupt and clashing files', async () => {
    const { page, errors, screenshot } = await open();
    await page.getByTestId('experiment').waitFor({ timeout: 30_000 });
    await writeOpfsRun(page, RUN, FILES);
    await page.reload();

    // export: the button appears once the named run has files
    await page.getByLabel('Run name').fill('e2e-nothing-here');
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('0');
    expect(await page.getByTestId('exp-export').count()).toBe(0);
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('exp-export').click()]);
    expect(download.suggestedFilename()).toBe(`${RUN}.coderl-run`);
    const bundle = new Uint8Array(await readFile((await download.path())!));
    const unpacked = unpackRun(bundle);
    expect(unpacked.run).toBe(RUN);
    expect(Object.fromEntries(unpacked.files.map((f) => [f.path, [...f.data]]))).toEqual(FILES);

    const good = join(dir, `${RUN}.coderl-run`);
    const corrupt = join(dir, 'corrupt.coderl-run');
    await writeFile(good, bundle);
    const bad = bundle.slice();
    bad[bad.length - 5]! ^= 0x40; // inside the last file's bytes
    await writeFile(corrupt, bad);

    // the run is gone; a corrupted copy is refused, naming the file and the checksum, and writes nothing
    await removeOpfsRun(page, RUN);
    await page.getByLabel('Run name').fill('e2e-elsewhere');
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('0');
    await page.getByTestId('exp-import').setInputFiles(corrupt);
    const importError = page.getByTestId('exp-import-error');
    await expect
      .poll(async () => ((await importError.count()) ? await importError.textContent() : ''), { timeout: 30_000 })
      .toMatch(/corrupt\.coderl-run.*file 2 \(rollouts\/policy\.ckpt\): checksum mismatch/);
    expect(await opfsRun(page, RUN)).toBeNull();
    await screenshot('run-import-corrupt');

    // the good file: the run comes back byte for byte, and the panel selects it
    await page.getByTestId('exp-import').setInputFiles(good);
    await expect.poll(() => page.getByLabel('Run name').inputValue(), { timeout: 30_000 }).toBe(RUN);
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');
    expect(await importError.count()).toBe(0);
    expect(await opfsRun(page, RUN)).toEqual(FILES);

    // importing it again would overwrite the run: refused, naming it
    await page.getByTestId('exp-import').setInputFiles(good);
    await expect
      .poll(async () => ((await importError.count()) ? await importError.textContent() : ''), { timeout: 30_000 })
      .toMatch(`a run named "${RUN}" already exists (3 files)`);
    expect(await opfsRun(page, RUN)).toEqual(FILES);

    // ... but it can go in under another name: the form suggests a free one
    const asName = page.getByTestId('exp-import-as-name');
    expect(await asName.inputValue()).toBe(`${RUN}-2`);
    await asName.fill('bad/name');
    expect(await page.getByTestId('exp-import-as').isDisabled()).toBe(true);
    await asName.fill(`${RUN}-copy`);
    await page.getByTestId('exp-import-as').click();
    await expect.poll(() => page.getByLabel('Run name').inputValue(), { timeout: 30_000 }).toBe(`${RUN}-copy`);
    expect(await opfsRun(page, `${RUN}-copy`)).toEqual(FILES);
    expect(await importError.count()).toBe(0);
    expect(await asName.count()).toBe(0);
    await screenshot('run-import-as');

    // deleting asks first; Cancel keeps the run, Delete removes every file and the run from the lists
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');
    await page.getByTestId('exp-delete').click();
    expect(await page.getByRole('group', { name: `Delete run ${RUN}-copy` }).textContent()).toContain('its 3 files');
    await page.getByTestId('exp-delete-cancel').click();
    expect(await opfsRun(page, `${RUN}-copy`)).toEqual(FILES);
    await page.getByTestId('exp-delete').click();
    await page.getByTestId('exp-delete-confirm').click();
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('0');
    expect(await opfsRun(page, `${RUN}-copy`)).toBeNull();
    expect(await opfsRun(page, RUN)).toEqual(FILES);
    const listed = await page.getByTestId('rollouts-run').locator('option').allTextContents();
    expect(listed).toContain(RUN);
    expect(listed).not.toContain(`${RUN}-copy`);

    // a run written by someone else (another tab) shows up in the lists when the page gets focus again
    await writeOpfsRun(page, 'e2e-other-tab', FILES);
    await page.evaluate(() => window.dispatchEvent(new Event('focus')));
    await expect
      .poll(() => page.getByTestId('rollouts-run').locator('option').allTextContents(), { timeout: 10_000 })
      .toContain('e2e-other-tab');
    expect(errors).toEqual([]);
  });

  test('in the IndexedDB fallback a run imports and deletes the same way', async () => {
    const { page, errors } = await open(() => {
      delete (StorageManager.prototype as { getDirectory?: unknown }).getDirectory;
    });
    await page.getByTestId('experiment').waitFor({ timeout: 30_000 });
    const { packRun } = await import('../src/rl/run-bundle');
    const file = join(dir, 'idb.coderl-run');
    await writeFile(
      file,
      packRun(
        Object.entries(FILES).map(([path, b]) => ({ path, data: new Uint8Array(b) })),
        { run: 'e2e-idb' },
      ),
    );
    await page.getByTestId('exp-import').setInputFiles(file);
    await expect.poll(() => page.getByLabel('Run name').inputValue(), { timeout: 30_000 }).toBe('e2e-idb');
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');
    expect(await page.getByTestId('exp-stored').textContent()).toContain('IndexedDB');
    await page.getByTestId('exp-delete').click();
    await page.getByTestId('exp-delete-confirm').click();
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('0');
    const keys = await page.evaluate(
      () =>
        new Promise<string[]>((resolve, reject) => {
          const req = indexedDB.open('coderl-runs', 1);
          req.onerror = () => reject(req.error);
          req.onsuccess = () => {
            const get = req.result.transaction('files', 'readonly').objectStore('files').getAllKeys();
            get.onsuccess = () => resolve(get.result as string[]);
            get.onerror = () => reject(get.error);
          };
        }),
    );
    expect(keys.filter((k) => k.startsWith('e2e-idb/'))).toEqual([]);
    expect(errors).toEqual([]);
  });
});
