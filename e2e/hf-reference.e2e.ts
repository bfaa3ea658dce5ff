/**
 * A Hugging Face model of the Models panel as a run's frozen KL reference, in Chromium. The model
 * is a real SFT checkpoint made in Node with the same preset, seed and tasks as the page's run
 * (so the same tokenizer), written as `coderl export-hf` writes it. In the page: it and the qwen2
 * fixture are imported; qwen2, picked as the reference, is refused at setup naming both
 * tokenizers and the first id that differs; the export trains a miniature run whose config names
 * it ({name: "sft-hf/", sha256}), whose run directory keeps a copy, and whose KL is that of the
 * SFT model against itself (~0); once the model is deleted from the Models panel and the page
 * reloaded, the finished run starts again from the run directory's copy. The run uses the cpu
 * backend (WebGPU hidden) to stay short.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hfFolderFiles, labArch, labWeights } from '../src/hf/export';
import { nodeFolder } from '../src/hf/node';
import { loadModel } from '../src/model/model-file';
import type { ReferenceRef } from '../src/rl/reference';
import { loadHfReferenced } from '../src/rl/reference-hf';
import { MINI_RUN } from '../src/rl/testing';
import { Tokenizer } from '../src/tokenizer';
import { labTokenizerToHf } from '../src/tokenizer/export-hf';
import { importFolder, runError, runToEnd } from './app-steps';
import { chromiumSession, SCREENSHOTS } from './browser';
import { nodeRun, opfsFiles, readOpfsText } from './run-fixture';

const open = chromiumSession();
const SEED = 4;
const RUN = 'e2e-hf-ref';
const QWEN2 = join(import.meta.dirname, '..', 'data', 'hf-fixtures', 'qwen2');
let dir: string;
let sftRef: ReferenceRef;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-hf-ref-'));
  const { files } = await nodeRun(SEED, { rl: { iterations: 1 } });
  const snap = loadModel(files['sft.ckpt']!);
  const tok = Tokenizer.fromJSON(snap.tokenizer!);
  const hf = labTokenizerToHf(tok);
  const folder = join(dir, 'sft-hf');
  await mkdir(folder);
  const out = hfFolderFiles({
    arch: labArch(snap.config),
    weights: labWeights(snap.config, snap.params),
    tokenizerJson: hf.tokenizerJson,
    tokenizerConfig: hf.tokenizerConfig,
    bosId: tok.eosId,
    eosIds: [tok.eosId],
  });
  for (const [name, bytes] of out) await writeFile(join(folder, name), bytes);
  sftRef = (await loadHfReferenced(await nodeFolder(folder))).ref;
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a Hugging Face model as the KL reference (Chromium)', () => {
  test("another tokenizer is refused at setup; the export of the run's SFT model trains a run that keeps a copy and resumes from it", async () => {
    const { page, errors, screenshot } = await open(() => {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    });
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    const t0 = Date.now();
    const picker = page.getByTestId('exp-reference');
    const select = page.getByLabel('Frozen model the KL penalty compares the policy to');
    expect(await page.getByTestId('exp-reference-none').textContent()).toMatch(
      /import a Hugging Face model folder with this run's tokenizer in the\s+Hugging Face models panel/,
    );
    await importFolder(page, QWEN2);
    await importFolder(page, join(dir, 'sft-hf'));
    await expect
      .poll(() => select.locator('option').allTextContents())
      .toEqual(['SFT policy (default)', 'Hugging Face: qwen2', 'Hugging Face: sft-hf']);

    // (1) qwen2: refused at setup, naming both tokenizers and the first id that differs
    await page.getByTestId('exp-seed').fill(String(SEED));
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(MINI_RUN));
    await page.getByLabel('Run name').fill(`${RUN}-bad`);
    await select.selectOption('hf:qwen2');
    expect(await picker.getAttribute('data-source')).toBe('hf');
    expect(await page.getByTestId('exp-reference-info').textContent()).toMatch(
      /^qwen2\/ \(SHA-256 [0-9a-f]{12}…\): Qwen2ForCausalLM: 2 layers/,
    );
    expect(await runToEnd(page)).toBe('error');
    console.log(`refused: ${await runError(page)}`);
    expect(await runError(page)).toMatch(
      /^qwen2\/ \(KL reference\): its tokenizer \(qwen2\/tokenizer\.json, 459 ids\) is not the run's \(the run's tokenizer\.json, \d+ ids\): id \d+ is .+ in qwen2\/tokenizer\.json and .+ in the run's tokenizer\.json\. The KL penalty compares log-probs of the same token ids/,
    );
    expect((await opfsFiles(page, `${RUN}-bad`)).filter((f) => /sft|metrics/.test(f))).toEqual([]); // refused before SFT
    await screenshot('hf-reference-refused');

    // (2) the export of the run's own SFT checkpoint: the run trains against it and keeps a copy
    await page.getByLabel('Run name').fill(RUN);
    await select.selectOption('hf:sft-hf');
    expect(await page.getByTestId('exp-reference-info').getAttribute('data-sha256')).toBe(sftRef.sha256);
    for (const size of [
      { width: 1280, height: 720 },
      { width: 1920, height: 1080 },
    ]) {
      await page.setViewportSize(size);
      await picker.scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENSHOTS, `hf-reference-picker-${size.width}x${size.height}.png`) });
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(await runToEnd(page), await runError(page)).toBe('done');
    expect(await page.getByTestId('exp-run-reference').textContent()).toBe(
      `KL reference: Hugging Face model sft-hf/ (SHA-256 ${sftRef.sha256.slice(0, 12)}…)`,
    );
    const config = JSON.parse((await readOpfsText(page, RUN, 'config.json'))!) as { cfg: { rl: { reference?: unknown } } };
    expect(config.cfg.rl.reference).toEqual({ name: 'sft-hf/', sha256: sftRef.sha256 });
    expect(sftRef.name).toBe('sft-hf/');
    expect(await opfsFiles(page, RUN)).toEqual(
      expect.arrayContaining(['reference/hf/files.json', 'reference/hf/config.json', 'reference/hf/model.safetensors', 'summary.json']),
    );
    const kl = (await readOpfsText(page, RUN, 'metrics.jsonl'))!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((m) => m.stage === 'ppo')
      .map((m) => m['objective/kl'] as number);
    console.log(`objective/kl against the Hugging Face reference: ${JSON.stringify(kl)}`);
    expect(kl).toHaveLength(1);
    expect(Math.abs(kl[0]!)).toBeLessThan(1e-3); // the SFT model against itself (float32 weights in the export)
    await screenshot('hf-reference-done');

    // (3) the model deleted from the Models panel and the page reloaded: the run starts again from its own copy
    const item = page.locator('[data-testid="models-item"][data-id="sft-hf"]');
    await item.getByTestId('models-delete').click();
    await item.getByTestId('models-delete-confirm').click();
    await expect.poll(() => page.locator('[data-testid="models-item"][data-id="sft-hf"]').count()).toBe(0);
    await page.reload();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-finished'), { timeout: 30_000 }).toBe('true');
    await page.getByTestId('exp-use-stored').click();
    expect(await select.inputValue()).toBe('stored');
    expect(await page.getByTestId('exp-reference-info').textContent()).toMatch(
      /^sft-hf\/ \(SHA-256 [0-9a-f]{12}…\) is not imported in this page/,
    );
    expect(await runToEnd(page), await runError(page)).toBe('done');
    expect(await page.getByTestId('exp-summary-reference').getAttribute('data-name')).toBe('sft-hf/');
    console.log(`whole test in the page: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(errors).toEqual([]);
  }, 180_000);
});
