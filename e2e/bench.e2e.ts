import { describe, expect, test } from 'vitest';
import { chromiumSession } from './browser';

const open = chromiumSession();

describe('the Benchmarks panel in Chromium', () => {
  test('runs the engine bench against TF.js on the same adapter and shows positive figures for both', async () => {
    const { page, errors, screenshot } = await open();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    const bench = page.getByTestId('bench');
    await page.getByTestId('panel-toggle-bench').click(); // folded on the first screen
    await page.getByTestId('bench-run').click();
    await expect.poll(() => bench.getAttribute('data-state')).toMatch(/running|done|error/);
    await expect.poll(() => bench.getAttribute('data-state'), { timeout: 150_000, interval: 1000 }).toMatch(/done|error/);
    await page.getByTestId('panel-bench').scrollIntoViewIfNeeded();
    await screenshot('bench-results');
    if ((await bench.getAttribute('data-state')) === 'error')
      throw new Error(`bench failed: ${await page.getByTestId('bench-error').textContent()}`);

    const number = async (id: string): Promise<number> => Number((await page.getByTestId(id).textContent())?.trim());
    const figures: Record<string, number> = {};
    for (const n of [128, 256]) {
      figures[`matmul ours ${n}`] = await number(`bench-matmul-ours-${n}`);
      figures[`matmul tfjs ${n}`] = await number(`bench-matmul-tfjs-${n}`);
    }
    figures['train ours'] = await number('bench-train-ours');
    figures['train tfjs'] = await number('bench-train-tfjs');
    console.log('bench figures (browser):', JSON.stringify(figures));
    for (const [what, x] of Object.entries(figures)) expect(Number.isFinite(x) && x > 0, `${what} = ${x}`).toBe(true);
    expect(await page.getByTestId('bench-per-step').textContent()).toMatch(/\d+ dispatches, 1 submit, 0 readbacks/);
    expect(await page.getByTestId('bench-generate').textContent()).toMatch(/\d tokens\/s/);
    expect(errors).toEqual([]);
  }, 240_000);
});
