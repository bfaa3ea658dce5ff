/**
 * Browser storage (src/storage/browser.ts) keeps what earlier versions saved: a checkpoint and a
 * run written straight into the layout, without the app (OPFS "checkpoints/<name>" and
 * "runs/<run>/<path>"; IndexedDB "coderl-checkpoints" with stores "meta" and "data", and
 * "coderl-runs" with store "files" keyed "<run>/<path>"), list and load in the app; and what the
 * app writes lands in that same layout. Once in OPFS, once in the IndexedDB fallback.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { saveModel } from '../src/model/model-file';
import { initParams } from '../src/model/init';
import { paramTable } from '../src/model/params';
import { unpackRun } from '../src/rl/run-bundle';
import { trainTokenizer } from '../src/tokenizer';
import { chromiumSession } from './browser';
import { writeOpfsRun } from './run-fixture';

const open = chromiumSession();
const LEGACY = 'legacy.crlckpt';
const RUN = 'e2e-legacy';
const text = (s: string) => [...new TextEncoder().encode(s)];
/** The run as an earlier version left it: path -> bytes (plain arrays, to pass through page.evaluate). */
const FILES: Record<string, number[]> = {
  'config.json': text('{"seed": 1, "cfg": {"preset": "tiny"}}\n'),
  'metrics.jsonl': text('{"step":0,"losses/kl":0.01}\n'),
  'rollouts/iter-0001.jsonl': text('{"task":"t1","reward":1}\n'),
};
let dir: string;
let model: number[];
let imported: string;
let importedBytes: number[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-storage-'));
  const tokenizer = trainTokenizer(['let s = 0; for (const x of xs) s += x;\n'.repeat(4)], { vocabSize: 280 });
  const config = { nLayer: 1, dModel: 16, nHead: 2, contextLength: 32, vocabSize: tokenizer.vocabSize };
  const save = (seed: number) =>
    saveModel({ config, tokenizer: tokenizer.toJSON(), params: initParams(paramTable(config), seed), meta: { step: seed } });
  model = [...save(1)];
  const bytes = save(2);
  importedBytes = [...bytes];
  imported = join(dir, 'fresh.crlckpt');
  await writeFile(imported, bytes);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const item = (page: Page, name: string) => page.locator(`[data-testid="ckpt-item"][data-name="${name}"]`);
const names = (page: Page) => page.getByTestId('ckpt-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')));
const storedFiles = (page: Page) => page.getByTestId('exp-stored').getAttribute('data-files');

async function checkpointsReady(page: Page, store: 'opfs' | 'indexeddb'): Promise<void> {
  await expect.poll(() => page.getByTestId('ckpt-store').getAttribute('data-store'), { timeout: 30_000 }).toBe(store);
  await page.locator('[data-testid="ckpt-list"], [data-testid="ckpt-empty"]').first().waitFor({ timeout: 30_000 });
  await expect.poll(() => page.getByTestId('checkpoints').getAttribute('data-busy')).toBe('false');
}

async function exportedCheckpoint(page: Page, name: string): Promise<number[]> {
  const [download] = await Promise.all([page.waitForEvent('download'), item(page, name).getByTestId('ckpt-export').click()]);
  return [...new Uint8Array(await readFile((await download.path())!))];
}

async function exportedRun(page: Page): Promise<Record<string, number[]>> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('exp-export').click()]);
  const bundle = unpackRun(new Uint8Array(await readFile((await download.path())!)));
  return Object.fromEntries(bundle.files.map((f) => [f.path, [...f.data]]));
}

/** The legacy checkpoint is listed with what its header says and exports as it was; the legacy run has its 3 files and exports them. */
async function legacyLoads(page: Page, store: 'opfs' | 'indexeddb'): Promise<void> {
  await checkpointsReady(page, store);
  expect(await names(page)).toContain(LEGACY);
  expect(await item(page, LEGACY).getByTestId('ckpt-meta').textContent()).toMatch(/step 1/);
  expect(await exportedCheckpoint(page, LEGACY)).toEqual(model);
  await page.getByLabel('Run name').fill(RUN);
  await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');
  expect(await page.getByTestId('exp-stored').textContent()).toContain(store === 'opfs' ? 'OPFS' : 'IndexedDB');
  expect(await exportedRun(page)).toEqual(FILES);
}

/** Imports the fresh checkpoint through the Checkpoints panel and waits for it to be listed. */
async function importCheckpoint(page: Page): Promise<void> {
  await page.getByLabel(/Import a checkpoint file/).setInputFiles(imported);
  await item(page, 'fresh.crlckpt').waitFor({ timeout: 30_000 });
}

/** Evaluated in the page: window.__openDb opens an IndexedDB database at version 1, creating its stores as the app always has. */
const IDB_HELPERS = `
  window.__openDb = (name) => new Promise((resolve, reject) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => {
      if (name === 'coderl-checkpoints') {
        r.result.createObjectStore('meta', { keyPath: 'name' });
        r.result.createObjectStore('data');
      } else r.result.createObjectStore('files');
    };
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  window.__req = (q) => new Promise((resolve, reject) => { q.onsuccess = () => resolve(q.result); q.onerror = () => reject(q.error); });
  window.__tx = (t) => new Promise((resolve, reject) => { t.oncomplete = () => resolve(); t.onabort = t.onerror = () => reject(t.error); });
`;
type IdbWindow = {
  __openDb(name: string): Promise<IDBDatabase>;
  __req<T>(r: IDBRequest<T>): Promise<T>;
  __tx(t: IDBTransaction): Promise<void>;
};

describe('browser storage keeps the layout saved data has', () => {
  test('OPFS: a checkpoint file and a run directory written without the app load; what the app writes is there', async () => {
    const { page, errors } = await open();
    await page.getByTestId('experiment').waitFor({ timeout: 30_000 });
    await page.evaluate(
      async ({ name, bytes }) => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle('checkpoints', { create: true });
        const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
        await w.write(new Uint8Array(bytes));
        await w.close();
      },
      { name: LEGACY, bytes: model },
    );
    await writeOpfsRun(page, RUN, FILES);
    await page.reload();

    await legacyLoads(page, 'opfs');

    await importCheckpoint(page);
    const raw = await page.evaluate(async () => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('checkpoints');
      return [...new Uint8Array(await (await (await dir.getFileHandle('fresh.crlckpt')).getFile()).arrayBuffer())];
    });
    expect(raw).toEqual(importedBytes);
    expect(errors).toEqual([]);
  });

  test('IndexedDB: records written without the app load; what the app writes has the same shape', async () => {
    const { page, errors } = await open(() => {
      delete (StorageManager.prototype as { getDirectory?: unknown }).getDirectory;
    });
    await page.getByTestId('experiment').waitFor({ timeout: 30_000 });
    await page.evaluate(IDB_HELPERS);
    await page.evaluate(
      async ({ name, bytes, run, files }) => {
        const w = window as unknown as IdbWindow;
        const ckpt = await w.__openDb('coderl-checkpoints');
        const t1 = ckpt.transaction(['meta', 'data'], 'readwrite');
        t1.objectStore('data').put(new Blob([new Uint8Array(bytes)]), name);
        t1.objectStore('meta').put({ name, byteLength: bytes.length, savedAt: Date.UTC(2024, 0, 2) });
        await w.__tx(t1);
        const runs = await w.__openDb('coderl-runs');
        const t2 = runs.transaction('files', 'readwrite');
        for (const [path, b] of Object.entries(files)) t2.objectStore('files').put(new Uint8Array(b).buffer, `${run}/${path}`);
        await w.__tx(t2);
        ckpt.close();
        runs.close();
      },
      { name: LEGACY, bytes: model, run: RUN, files: FILES },
    );
    await page.reload();

    await legacyLoads(page, 'indexeddb');

    // the app's own writes: a checkpoint (a Blob and its meta record), a run imported back after a delete (ArrayBuffers)
    await importCheckpoint(page);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('exp-export').click()]);
    const bundle = join(dir, `${RUN}.coderl-run`);
    await writeFile(bundle, await readFile((await download.path())!));
    await page.getByTestId('exp-delete').click();
    await page.getByTestId('exp-delete-confirm').click();
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('0');
    await page.getByTestId('exp-import').setInputFiles(bundle);
    await expect.poll(() => storedFiles(page), { timeout: 30_000 }).toBe('3');

    await page.evaluate(IDB_HELPERS);
    const raw = await page.evaluate(async (run) => {
      const w = window as unknown as IdbWindow;
      const ckpt = await w.__openDb('coderl-checkpoints');
      const data = (await w.__req(ckpt.transaction('data').objectStore('data').get('fresh.crlckpt'))) as unknown;
      const meta = (await w.__req(ckpt.transaction('meta').objectStore('meta').get('fresh.crlckpt'))) as Record<string, unknown>;
      const runs = await w.__openDb('coderl-runs');
      const files = runs.transaction('files').objectStore('files');
      const keys = (await w.__req(files.getAllKeys())) as string[];
      const values = (await w.__req(files.getAll())) as unknown[];
      return {
        blob: data instanceof Blob ? [...new Uint8Array(await data.arrayBuffer())] : null,
        meta: { name: meta.name, byteLength: meta.byteLength, savedAt: typeof meta.savedAt },
        run: Object.fromEntries(
          keys.flatMap((k, i) => {
            const v = values[i];
            return k.startsWith(`${run}/`) ? [[k.slice(run.length + 1), v instanceof ArrayBuffer ? [...new Uint8Array(v)] : null]] : [];
          }),
        ),
      };
    }, RUN);
    expect(raw.blob).toEqual(importedBytes);
    expect(raw.meta).toEqual({ name: 'fresh.crlckpt', byteLength: importedBytes.length, savedAt: 'number' });
    expect(raw.run).toEqual(FILES);
    expect(errors).toEqual([]);
  });
});
