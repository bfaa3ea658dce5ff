/**
 * An imported ONNX model as a run's frozen KL reference, in Chromium. The model is the ONNX export
 * of a real SFT checkpoint made in Node with the same preset, seed and tasks as the page's run (so
 * the same tokenizer). In the page: both it and a byte-level model are imported in the Checkpoints
 * panel; the byte-level one, picked as the reference, is refused at setup with the pipeline's
 * message; the export, picked instead, trains a miniature run whose config names it, whose run
 * directory keeps it, and whose KL is finite; after a reload the finished run starts again from
 * the stored model, with nothing imported. The run uses the cpu backend (WebGPU hidden) to stay
 * short: the reference runs in onnxruntime-web's wasm provider either way.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadModel } from '../src/model/model-file';
import { exportOnnx } from '../src/onnx/export';
import { bigramForSuite } from '../src/onnx/testing';
import { MINI_RUN } from '../src/rl/testing';
import { chromiumSession } from './browser';
import { nodeRun, opfsFiles, readOpfsBytes, readOpfsText } from './run-fixture';

const open = chromiumSession();
const SEED = 4;
const RUN = 'e2e-ref';
let dir: string;
let sftSha: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-ref-'));
  // the SFT checkpoint of the page's run as Node makes it: MINI_RUN's tasks and model, the same seed
  const t0 = Date.now();
  const { files } = await nodeRun(SEED, { rl: { iterations: 1 } });
  const snap = loadModel(files['sft.ckpt']!);
  const model = exportOnnx(snap, { tokenizerFile: 'sft.tokenizer.json' });
  sftSha = createHash('sha256').update(model).digest('hex');
  await writeFile(join(dir, 'sft.onnx'), model);
  await writeFile(join(dir, 'sft.tokenizer.json'), JSON.stringify(snap.tokenizer));
  const bigram = bigramForSuite();
  await writeFile(join(dir, 'bigram.onnx'), bigram.model);
  await writeFile(join(dir, 'bigram.tokenizer.json'), JSON.stringify(bigram.tok.toJSON()));
  console.log(`Node run and export: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Imports a model and its tokenizer in the Checkpoints panel on ORT wasm; throws the inline error if it is refused. */
async function importModel(page: Page, name: string, context = ''): Promise<void> {
  const sec = page.getByTestId('onnx-import');
  const before = Number(await sec.getAttribute('data-attempts'));
  await sec.getByTestId('onnx-import-model').setInputFiles(join(dir, `${name}.onnx`));
  await sec.getByTestId('onnx-import-tokenizer').setInputFiles(join(dir, `${name}.tokenizer.json`));
  await sec.getByTestId('onnx-import-context').fill(context);
  await sec.getByTestId('onnx-import-ep').selectOption('wasm');
  await sec.getByTestId('onnx-import-load').click();
  await expect.poll(async () => Number(await sec.getAttribute('data-attempts')), { timeout: 60_000 }).toBe(before + 1);
  if (await sec.getByTestId('onnx-import-error').count())
    throw new Error(`import of ${name} failed: ${await sec.getByTestId('onnx-import-error').textContent()}`);
}

/** Starts the run the form describes and waits for its end; returns the final status. */
async function runToEnd(page: Page): Promise<string> {
  await page.getByTestId('exp-start').click();
  const status = page.getByTestId('exp-status');
  await expect.poll(() => status.textContent(), { timeout: 100_000, interval: 250 }).toMatch(/^(done|error|stopped)$/);
  return (await status.textContent())!;
}

/** The run's error message, '' when it shows none (without waiting for one to appear). */
async function runError(page: Page): Promise<string> {
  const e = page.getByTestId('exp-error');
  return (await e.count()) ? ((await e.textContent()) ?? '') : '';
}

/** The hex SHA-256 of runs/<run>/<path> in OPFS; null when it is missing. */
async function opfsSha256(page: Page, run: string, path: string): Promise<string | null> {
  const bytes = await readOpfsBytes(page, run, path);
  return bytes && createHash('sha256').update(bytes).digest('hex');
}

describe('an imported ONNX model as the KL reference (Chromium)', () => {
  test("a wrong tokenizer is refused at setup; the export of the run's SFT model trains a run that keeps it and resumes from it", async () => {
    const { page, errors, screenshot } = await open(() => {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    });
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    const t0 = Date.now();
    const picker = page.getByTestId('exp-reference');
    const select = page.getByLabel('Frozen model the KL penalty compares the policy to');
    // nothing imported yet: the SFT policy, and how to get a model
    expect(await picker.getAttribute('data-source')).toBe('sft');
    expect(await page.getByTestId('exp-reference-none').textContent()).toMatch(/export a checkpoint as ONNX in the Checkpoints panel/);

    await importModel(page, 'bigram', '64');
    await importModel(page, 'sft');
    expect(await page.getByTestId('exp-reference-none').count()).toBe(0);
    expect(await select.locator('option').allTextContents()).toEqual(['SFT policy (default)', 'ONNX: bigram.onnx', 'ONNX: sft.onnx']);

    // (1) the byte-level model: refused at setup with the pipeline's message, the form kept
    await page.getByTestId('exp-seed').fill(String(SEED));
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(MINI_RUN));
    await page.getByLabel('Run name').fill(`${RUN}-bad`);
    await select.selectOption('onnx:bigram.onnx');
    expect(await picker.getAttribute('data-source')).toBe('onnx');
    expect(await page.getByTestId('exp-reference-info').textContent()).toMatch(
      /^bigram\.onnx \(SHA-256 [0-9a-f]{12}…\): vocabulary 258, context 64\./,
    );
    expect(await runToEnd(page)).toBe('error');
    expect(await page.getByTestId('exp-error').textContent()).toMatch(
      /^bigram\.onnx \(KL reference\): its tokenizer differs from the policy's \(vocab 258 vs \d+\); the KL penalty compares log-probs of the same token ids$/,
    );
    expect((await opfsFiles(page, `${RUN}-bad`)).filter((f) => /sft|metrics/.test(f))).toEqual([]); // refused before SFT
    expect(await select.inputValue()).toBe('onnx:bigram.onnx');
    expect(JSON.parse(await page.getByLabel('Overrides (JSON)').inputValue())).toMatchObject({
      sft: MINI_RUN.sft,
      rl: { reference: { name: 'bigram.onnx' } },
    });
    console.log(`refused after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // (2) the export of the run's own SFT checkpoint: the run trains against it
    await page.getByLabel('Run name').fill(RUN);
    await select.selectOption('onnx:sft.onnx');
    expect(await page.getByTestId('exp-reference-info').getAttribute('data-sha256')).toBe(sftSha);
    const t1 = Date.now();
    const end = await runToEnd(page);
    expect(end, await runError(page)).toBe('done');
    console.log(`run with the ONNX reference: ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    expect(await page.getByTestId('exp-run-reference').textContent()).toBe(
      `KL reference: ONNX model sft.onnx (SHA-256 ${sftSha.slice(0, 12)}…)`,
    );
    await expect.poll(() => page.getByTestId('exp-summary-reference').getAttribute('data-sha256')).toBe(sftSha);
    const config = JSON.parse((await readOpfsText(page, RUN, 'config.json'))!) as { cfg: { rl: { reference?: unknown } } };
    expect(config.cfg.rl.reference).toEqual({ name: 'sft.onnx', sha256: sftSha });
    expect(await opfsFiles(page, RUN)).toEqual(
      expect.arrayContaining(['reference/model.onnx', 'reference/tokenizer.json', 'summary.json']),
    );
    expect(await opfsSha256(page, RUN, 'reference/model.onnx')).toBe(sftSha);
    const metrics = (await readOpfsText(page, RUN, 'metrics.jsonl'))!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const kl = metrics.filter((m) => m.stage === 'ppo').map((m) => m['objective/kl']);
    console.log(`objective/kl against the ONNX reference: ${JSON.stringify(kl)}`);
    expect(kl).toHaveLength(1);
    expect(Number.isFinite(kl[0])).toBe(true);
    // the same SFT model (cpu backend, same seed) in float32 ORT: the KL of a run without a reference (0) within rounding
    expect(Math.abs(kl[0] as number)).toBeLessThan(1e-3);
    await screenshot('reference-done');

    // (3) after a reload nothing is imported: the run starts again from the stored model (SHA-256 checked)
    await page.reload();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-finished'), { timeout: 30_000 }).toBe('true');
    await page.getByTestId('exp-use-stored').click();
    expect(await select.inputValue()).toBe('stored');
    expect(await page.getByTestId('exp-reference-info').textContent()).toMatch(
      /^sft\.onnx \(SHA-256 [0-9a-f]{12}…\) is not imported in this page/,
    );
    expect(await runToEnd(page), await runError(page)).toBe('done');
    expect(await page.getByTestId('exp-summary-reference').getAttribute('data-name')).toBe('sft.onnx');
    await screenshot('reference-resumed');
    console.log(`whole test in the page: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(errors).toEqual([]);
  }, 120_000);
});
