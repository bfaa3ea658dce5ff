import { describe, expect, test } from 'vitest';
import { chromiumSession } from './browser';

const open = chromiumSession();

describe('the lab in Chromium with WebGPU', () => {
  test('finds the adapter, passes the self-check, shows the layout and Monaco, with a clean console', async () => {
    const { page, errors, screenshot } = await open();
    const status = page.getByTestId('gpu-status');
    await expect.poll(() => status.getAttribute('data-state'), { timeout: 60_000 }).toMatch(/ready|check-failed|unavailable/);
    await screenshot('app-ready');
    // the first screen: the Experiment panel first, saying what to do; GPU details and benchmarks folded away
    const first = await page.locator('.col.setup > section').first().getAttribute('data-testid');
    expect(first).toBe('panel-experiment');
    expect(await page.getByTestId('exp-start-here').isVisible()).toBe(true);
    expect(await page.getByTestId('exp-start').isVisible()).toBe(true);
    expect(await page.getByTestId('panel-toggle-gpu').getAttribute('aria-expanded')).toBe('false');
    expect(await page.getByTestId('panel-toggle-bench').getAttribute('aria-expanded')).toBe('false');
    expect(await page.getByTestId('rollout-view-empty').isVisible()).toBe(true);
    await page.getByTestId('panel-toggle-gpu').click();
    expect(await page.getByTestId('gpu-problem').count(), 'a GPU problem is shown').toBe(0);
    expect(await status.getAttribute('data-state')).toBe('ready');
    expect(await page.getByTestId('gpu-selfcheck').getAttribute('data-ok')).toBe('true');

    const arch = (await page.getByTestId('gpu-architecture').textContent()) ?? '';
    expect(arch.trim().length).toBeGreaterThan(0);
    if (process.env.EXPECT_ADAPTER) expect(arch).toContain(process.env.EXPECT_ADAPTER);
    await expect.poll(() => page.getByTestId('gpu-badge').textContent()).toContain(arch.trim());
    expect(await page.getByTestId('gpu-features').textContent()).toMatch(/timestamp-query: (yes|no)/);

    for (const id of ['gpu', 'experiment', 'curves', 'rollouts', 'code', 'reward']) {
      expect(await page.getByTestId(`panel-${id}`).isVisible(), id).toBe(true);
    }
    // Monaco shows the self-check kernel's WGSL (it renders spaces as U+00A0), one click away
    await page.getByRole('tab', { name: 'Kernels' }).click();
    const lines = page.getByTestId('code-editor').locator('.monaco-editor .view-lines');
    const editorText = async () => ((await lines.textContent()) ?? '').replace(/\u00a0/g, ' ');
    await lines.waitFor({ timeout: 30_000 });
    await expect.poll(editorText).toContain('y[i] = params.a * x[i] + y[i]');
    await page.getByRole('button', { name: 'reduce_sum' }).click();
    await expect.poll(editorText).toContain('workgroupBarrier()');
    // the matmul check shows the kernel this adapter's strategy compiled (SwiftShader in Chromium: the generated subgroup one)
    const matmulCheck = page.getByRole('button', { name: /^matmul / });
    const matmulName = (await matmulCheck.textContent()) ?? '';
    await matmulCheck.click();
    await expect.poll(editorText).toContain(matmulName.includes('subgroup') ? 'enable subgroups;' : 'struct Params');
    await screenshot('app-matmul-kernel');
    await screenshot('app-kernel-view');

    // a panel unfolds and folds from its heading, by keyboard too, and stays as the user left it across a reload
    const toggle = page.getByTestId('panel-toggle-bench');
    expect(await page.getByRole('button', { name: 'Run benchmark' }).isVisible()).toBe(false);
    await toggle.focus();
    await page.keyboard.press('Enter');
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    expect(await page.getByRole('button', { name: 'Run benchmark' }).isVisible()).toBe(true);
    await page.reload();
    await page.getByTestId('panel-toggle-bench').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('panel-toggle-bench').getAttribute('aria-expanded')).toBe('true');
    await page.getByTestId('panel-toggle-experiment').click();
    await page.reload();
    await page.getByTestId('panel-toggle-experiment').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('panel-toggle-experiment').getAttribute('aria-expanded')).toBe('false');
    expect(await page.locator('#experiment-body').isVisible()).toBe(false);
    expect(errors).toEqual([]);
  });

  test('device loss is reported with its reason and the device can be re-created', async () => {
    const { page, errors, screenshot } = await open();
    const status = page.getByTestId('gpu-status');
    await expect.poll(() => status.getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    await page.getByTestId('panel-toggle-gpu').click();
    await page.getByText('Diagnostics').click();
    await page.getByTestId('gpu-simulate-loss').click();
    await expect.poll(() => status.getAttribute('data-state')).toBe('lost');
    expect(await page.getByTestId('gpu-lost').textContent()).toMatch(/reason: destroyed/);
    await screenshot('device-lost');
    await page.getByTestId('gpu-recover').click();
    await expect.poll(() => status.getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    expect(await page.getByTestId('gpu-selfcheck').getAttribute('data-ok')).toBe('true');
    await page.getByText('Diagnostics').click();
    expect(await page.getByText('Devices created this session: 2').isVisible()).toBe(true);
    await screenshot('device-recovered');
    expect(errors).toEqual([]);
  });

  test('without WebGPU the page says so and what to do', async () => {
    const { page, errors, screenshot } = await open(() => {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    });
    const problem = page.getByTestId('gpu-problem');
    await problem.waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('gpu-status').getAttribute('data-state')).toBe('unavailable');
    expect(await problem.textContent()).toMatch(/WebGPU is not available.*--enable-unsafe-webgpu/s);
    await screenshot('no-webgpu');
    expect(errors).toEqual([]);
  });
});
