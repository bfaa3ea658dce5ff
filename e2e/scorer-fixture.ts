/** Driving the Reward panel's scratch scorer: shared by the scorer and network e2e tests. */
import { expect } from 'vitest';
import type { Page } from 'playwright-core';

/** Fills the completion, scores it and waits for the result; returns the verdict and seconds taken. */
export async function score(page: Page, completion: string | null, viaKeyboard = false): Promise<{ verdict: string; seconds: number }> {
  const editor = page.getByLabel('Completion (follows the prompt)');
  if (completion !== null) {
    await editor.fill(completion);
    // the text must be the store's (and so what is scored) before Score is pressed: a lost edit fails here, by name
    await expect
      .poll(() => page.getByTestId('scorer-completion').inputValue(), { message: 'the filled completion was not kept' })
      .toBe(completion);
  }
  const button = page.getByTestId('scorer-score');
  const seq = async (): Promise<number> =>
    Number((await page.getByTestId('scorer-result').count()) ? await page.getByTestId('scorer-result').getAttribute('data-seq') : 0);
  const before = await seq();
  const t0 = Date.now();
  if (viaKeyboard) {
    await editor.focus();
    await page.keyboard.press('Control+Enter');
  } else {
    await button.click();
  }
  await expect.poll(seq, { timeout: 60_000 }).toBe(before + 1);
  expect(await button.textContent()).toBe('Score');
  const verdict = ((await page.getByTestId('scorer-verdict').textContent()) ?? '').trim();
  return { verdict, seconds: (Date.now() - t0) / 1000 };
}

/** The reward total the panel shows. */
export const total = async (page: Page): Promise<number> =>
  Number(await page.getByTestId('scorer-reward-total').getAttribute('data-value'));

/** Each test row's status, in order. */
export const statuses = async (page: Page): Promise<string[]> =>
  page
    .getByTestId('scorer-tests')
    .locator('tbody tr')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status') ?? ''));
