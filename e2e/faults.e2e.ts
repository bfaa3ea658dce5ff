/**
 * Faults during a run in Chromium: a non-finite loss, a lost GPU device and a run worker that
 * dies without a word each stop the run with a message saying what happened, and Resume carries
 * on from the last checkpoint, losing at most the step or iteration in flight, until the run
 * finishes with every PPO iteration recorded once.
 *
 * The faults are real ones, set off in the run worker through the debugger (run-worker.ts's
 * `coderlFault`, as a user could from devtools): the device is destroyed, the learning rate of the
 * live backends becomes NaN (the numerics guard must catch the NaN parameters), the worker closes.
 */
import { describe, expect, test } from 'vitest';
import type { Page, Worker } from 'playwright-core';
import { MINI_RUN } from '../src/rl/testing';
import { chromiumSession, WORKER_END_MS } from './browser';
import { opfsFiles, readOpfsText } from './run-fixture';

const open = chromiumSession();
const RUN = 'e2e-faults';
const OVERRIDES = { ...MINI_RUN, sft: { ...MINI_RUN.sft, maxSteps: 24, evalEvery: 4 }, rl: { ...MINI_RUN.rl, iterations: 3 } };

const isRunWorker = (w: Worker): boolean => /\/run-worker-[\w-]+\.js$/.test(new URL(w.url()).pathname);

async function runWorker(page: Page): Promise<Worker> {
  await expect.poll(() => page.workers().filter(isRunWorker).length, { timeout: 60_000 }).toBe(1);
  return page.workers().find(isRunWorker)!;
}

describe('faults during a run', () => {
  test('a non-finite loss, a lost device and a crashed worker each stop the run clearly, and Resume finishes it', async () => {
    const { page, errors, screenshot } = await open();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    await page.getByTestId('exp-preset').selectOption('tiny');
    await page.getByTestId('exp-backend').selectOption('webgpu'); // a device to lose (automatic is cpu on SwiftShader)
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(OVERRIDES));
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-files'), { timeout: 30_000 }).toBe('0');
    const start = page.getByTestId('exp-start');
    const status = page.getByTestId('exp-status');
    const error = page.getByTestId('exp-error');
    const fault = async (kind: string): Promise<string> =>
      (await runWorker(page)).evaluate((k) => (self as unknown as { coderlFault(k: string): string }).coderlFault(k), kind);
    const stoppedWith = async (pattern: RegExp): Promise<void> => {
      await expect.poll(() => status.textContent(), { timeout: 120_000, interval: 250 }).toBe('error');
      expect(await error.textContent()).toMatch(pattern);
      await expect.poll(() => page.workers().filter(isRunWorker).length, { timeout: WORKER_END_MS }).toBe(0);
      await expect.poll(() => start.textContent(), { timeout: 10_000 }).toBe('Resume');
    };

    // (1) NaN parameters during SFT: the numerics guard stops the run, naming the step
    await start.click();
    await expect.poll(() => opfsFiles(page, RUN), { timeout: 180_000, interval: 200 }).toContain('sft-progress.json');
    console.log(`fault 1: ${await fault('non-finite')}`);
    await stoppedWith(/non-finite .* at step \d+: training stopped; lower the learning rate or resume from the last checkpoint/);
    expect(await opfsFiles(page, RUN)).not.toContain('sft.ckpt');
    await screenshot('faults-non-finite');

    // (2) resumed; the device is lost during PPO's second iteration
    await start.click();
    await expect.poll(() => opfsFiles(page, RUN), { timeout: 240_000, interval: 200 }).toContain('rollouts/iter-0001.jsonl');
    console.log(`fault 2: ${await fault('lose-device')}`);
    await stoppedWith(/GPU device was lost during the run \(destroyed: .*What finished is saved; start the run again to resume it/);
    expect(await opfsFiles(page, RUN)).toContain('sft.ckpt');
    await screenshot('faults-device-lost');

    // (3) resumed; the worker dies during the next iteration, without a last message
    await start.click();
    const before = (await opfsFiles(page, RUN)).filter((f) => f.startsWith('rollouts/')).length;
    await expect
      .poll(async () => (await opfsFiles(page, RUN)).filter((f) => f.startsWith('rollouts/')).length, { timeout: 240_000, interval: 200 })
      .toBeGreaterThan(before);
    console.log(`fault 3: ${await fault('crash')}`);
    await stoppedWith(/run worker stopped without a word .*Resume continues from the last checkpoint/);
    await screenshot('faults-crash');

    // (4) resumed to the end: every PPO iteration recorded once, in order
    await start.click();
    await expect.poll(() => status.textContent(), { timeout: 300_000, interval: 1000 }).toMatch(/^(done|error)$/);
    expect(await error.count(), (await error.textContent().catch(() => '')) ?? '').toBe(0);
    const files = await opfsFiles(page, RUN);
    for (const f of ['summary.json', 'policy.ckpt', 'rollouts/iter-0001.jsonl', 'rollouts/iter-0002.jsonl', 'rollouts/iter-0003.jsonl'])
      expect(files, f).toContain(f);
    const ppo = (await readOpfsText(page, RUN, 'metrics.jsonl'))!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { stage: string; iteration?: number })
      .filter((m) => m.stage === 'ppo')
      .map((m) => m.iteration);
    expect(ppo).toEqual([0, 1, 2]);
    await screenshot('faults-resumed-done');
    // the faults' own reports are expected in the console; nothing else may be
    console.log(`console errors: ${errors.length ? errors.map((e) => e.slice(0, 160)).join(' | ') : 'none'}`);
    const unexpected = errors.filter((e) => !/WebGPU|device|destroyed|Instance dropped|GPU/i.test(e));
    expect(unexpected).toEqual([]);
  }, 900_000);
});
