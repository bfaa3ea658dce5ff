/**
 * Steps in the app the e2e tests share: import a Hugging Face model folder in the Models panel
 * (refused folders fail the test with the panel's message), start the Experiment panel's run and
 * wait for its end, and the run's error.
 */
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

/** Picks `folder` in the Models panel's folder input and waits for the import; throws with the panel's message when it was refused. */
export async function importFolder(page: Page, folder: string): Promise<void> {
  const models = page.getByTestId('models');
  const before = Number(await models.getAttribute('data-attempts'));
  await page.getByTestId('models-folder-input').setInputFiles(folder);
  await expect.poll(async () => Number(await models.getAttribute('data-attempts')), { timeout: 60_000 }).toBe(before + 1);
  if (await page.getByTestId('models-error').count())
    throw new Error(`import failed: ${await page.getByTestId('models-error').textContent()}`);
}

/** Presses Start and waits until the run is done, stopped or failed; returns that status. */
export async function runToEnd(page: Page, timeout = 100_000): Promise<string> {
  await page.getByTestId('exp-start').click();
  const status = page.getByTestId('exp-status');
  await expect.poll(() => status.textContent(), { timeout, interval: 250 }).toMatch(/^(done|error|stopped)$/);
  return (await status.textContent())!;
}

/** The Experiment panel's run error ('' when there is none). */
export const runError = async (page: Page): Promise<string> => {
  const e = page.getByTestId('exp-error');
  return (await e.count()) ? ((await e.textContent()) ?? '') : '';
};
