/**
 * A real stored run for e2e tests that inspect one, without training in the browser: the
 * pipeline runs in Node on the cpu backend (the float64 reference model, a real sandbox pool and
 * analyzer) into a MemoryRunDir, and the test writes its files into the page's OPFS run directory.
 * A miniature run (MINI_RUN with two PPO iterations) takes a few seconds. Also the OPFS helpers
 * the e2e tests share: write a run, list its files, read one.
 */
import type { Page } from 'playwright-core';
import { createAnalyzer } from '../src/analysis';
import { nodeWasmLoader } from '../src/analysis/wasm-node';
import { mergeConfig, resolveConfig } from '../src/rl/config';
import { runPipeline, type Summary } from '../src/rl/pipeline';
import { labGptFactory } from '../src/policy';
import { MemoryRunDir } from '../src/rl/run-dir';
import { MINI_RUN } from '../src/rl/testing';
import { createNodePool } from '../src/sandbox/pool.node';

export interface NodeRun {
  /** path -> bytes, as the run directory holds them */
  files: Record<string, Uint8Array>;
  summary: Summary;
}

/** Runs preset `tiny` with MINI_RUN, two PPO iterations and `overrides` merged over it. */
export async function nodeRun(seed = 1, overrides: unknown = {}): Promise<NodeRun> {
  const cfg = resolveConfig(
    'tiny',
    mergeConfig(mergeConfig(structuredClone(MINI_RUN), { rl: { iterations: 2, samplesPerPrompt: 3 } }), overrides),
  );
  const [pool, analyzer] = await Promise.all([createNodePool({ size: 1 }), createAnalyzer(nodeWasmLoader)]);
  const store = new MemoryRunDir();
  try {
    const summary = await runPipeline({
      cfg,
      seed,
      policies: labGptFactory('cpu'),
      store,
      scorer: { pool, analyzer },
    });
    return { files: Object.fromEntries(store.files), summary };
  } finally {
    pool.close();
  }
}

/** Writes `files` into OPFS's runs/<run>/ (the app's run storage in Chromium). */
export function writeOpfsRun(page: Page, run: string, files: Record<string, Uint8Array | number[]>): Promise<void> {
  const plain = Object.fromEntries(Object.entries(files).map(([p, b]) => [p, [...b]]));
  return page.evaluate(
    async ({ run, files }) => {
      const runs = await (await navigator.storage.getDirectory()).getDirectoryHandle('runs', { create: true });
      for (const [path, bytes] of Object.entries(files)) {
        const parts = path.split('/');
        let d = await runs.getDirectoryHandle(run, { create: true });
        for (const p of parts.slice(0, -1)) d = await d.getDirectoryHandle(p, { create: true });
        const w = await (await d.getFileHandle(parts.at(-1)!, { create: true })).createWritable();
        await w.write(new Uint8Array(bytes));
        await w.close();
      }
    },
    { run, files: plain },
  );
}

/** Every file under OPFS's runs/<run>/, as sorted relative paths; [] when the run directory is missing. */
export function opfsFiles(page: Page, run: string): Promise<string[]> {
  return page.evaluate(async (run) => {
    type Dir = FileSystemDirectoryHandle & { values(): AsyncIterable<FileSystemHandle> };
    const out: string[] = [];
    const walk = async (d: Dir, prefix: string): Promise<void> => {
      for await (const h of d.values()) {
        if (h.kind === 'file') out.push(prefix + h.name);
        else await walk(h as Dir, `${prefix}${h.name}/`);
      }
    };
    try {
      await walk((await (await (await navigator.storage.getDirectory()).getDirectoryHandle('runs')).getDirectoryHandle(run)) as Dir, '');
    } catch {
      return [];
    }
    return out.sort();
  }, run);
}

/** The bytes of runs/<run>/<path> in OPFS; null when it is missing. */
export async function readOpfsBytes(page: Page, run: string, path: string): Promise<Uint8Array | null> {
  const bytes = await page.evaluate(
    async ({ run, path }) => {
      try {
        let d = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('runs')).getDirectoryHandle(run);
        const parts = path.split('/');
        for (const p of parts.slice(0, -1)) d = await d.getDirectoryHandle(p);
        return [...new Uint8Array(await (await (await d.getFileHandle(parts.at(-1)!)).getFile()).arrayBuffer())];
      } catch {
        return null;
      }
    },
    { run, path },
  );
  return bytes && Uint8Array.from(bytes);
}

/** The text of runs/<run>/<path> in OPFS; null when it is missing. */
export async function readOpfsText(page: Page, run: string, path: string): Promise<string | null> {
  const bytes = await readOpfsBytes(page, run, path);
  return bytes && new TextDecoder().decode(bytes);
}
