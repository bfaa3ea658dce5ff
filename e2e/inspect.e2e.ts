/**
 * The inspection UI in Chromium (WebGPU on SwiftShader), on a real run of the `tiny` preset
 * (shrunk by overrides to a miniature) through one PPO iteration: the training curves plot it,
 * the rollout browser lists its rollouts, a rollout opens in Monaco with heatmap decorations and
 * markers, an edit of the completion is rescored in the sandbox and changes the reward, moving a
 * reward weight changes the ranking exactly as the what-if arithmetic says, and after a reload
 * the run is still there. Each pane is screenshotted.
 */
import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumSession } from './browser';
import { MINI_RUN } from '../src/rl/testing';
import type { RolloutRecord } from '../src/rl/ppo-loop';
import { groupStats } from '../src/lab/whatif';

const open = chromiumSession();
const RUN = 'e2e-inspect';
/**
 * The miniature run, trained long enough to write code-like completions, with more samples per
 * prompt and a length penalty that counts: completions that differ in correctness and length,
 * so some reward weight re-ranks them (a freshly initialised model's rollouts all score alike).
 */
const OVERRIDES = {
  ...MINI_RUN,
  model: { ...MINI_RUN.model, dModel: 64 },
  sft: { maxSteps: 150, evalEvery: 50, batch: 16, lr: 0.005 },
  rl: { ...MINI_RUN.rl, promptsPerIteration: 4, samplesPerPrompt: 6, minibatch: 8, maxNewTokens: 16 },
  eval: { ...MINI_RUN.eval, maxNewTokens: 16 },
  reward: { length: 0.5, lengthFree: 2 },
};

/** A file of the run directory, from OPFS. */
function runFile(page: Page, run: string, path: string): Promise<string> {
  return page.evaluate(
    async ({ run, path }) => {
      let dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('runs')).getDirectoryHandle(run);
      const parts = path.split('/');
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
      return (await (await dir.getFileHandle(parts[parts.length - 1]!)).getFile()).text();
    },
    { run, path },
  );
}

const jsonl = <T>(text: string): T[] =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);

/**
 * A completion that passes the task's own tests whatever its function is: a table of the tested
 * inputs (tests are `console.assert(JSON.stringify(f(IN)) === "OUT")`).
 */
function lookupBody(tests: string, arg: string): string {
  const rows = [...tests.matchAll(/f\((.*)\)\) === (".*")\);$/gm)].map((m) => `[${JSON.stringify(m[1]!)}, ${m[2]!}]`);
  if (!rows.length) throw new Error(`no assertions found in the tests: ${tests}`);
  return `  const table = new Map([${rows.join(', ')}]);\n  return JSON.parse(table.get(JSON.stringify(${arg})));\n}\n`;
}

async function ranks(page: Page): Promise<Map<number, number>> {
  const rows = await page
    .getByTestId('rollout-row')
    .evaluateAll((els) => els.map((e) => [Number(e.getAttribute('data-index')), Number(e.getAttribute('data-rank'))] as const));
  return new Map(rows);
}

describe('the inspection UI in Chromium', () => {
  test('a tiny run through one PPO iteration: curves, rollouts, heatmaps and markers, what-if edits and weights, and a reload', async () => {
    const { page, errors, screenshot } = await open();
    const shot = async (testid: string, name: string): Promise<void> => {
      await page.getByTestId(testid).screenshot({ path: (await screenshot(name)).replace('.png', '-pane.png') });
    };
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    expect(await page.getByTestId('exp-preset').inputValue()).toBe('quick');
    await page.getByTestId('exp-preset').selectOption('tiny');

    // (1) the run: tiny preset, miniature overrides, one PPO iteration
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(OVERRIDES));
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-start').isEnabled()).toBe(true);
    await page.getByTestId('exp-start').click();
    const status = page.getByTestId('exp-status');
    // SFT's 150 steps take long enough for its row to show its progress and time left
    await expect
      .poll(() => page.getByTestId('exp-eta-sft').textContent(), { timeout: 180_000, interval: 250 })
      .toMatch(/^\d+% · (\d+ s|\d+ min \d\d s) left$/);
    await expect.poll(() => status.textContent(), { timeout: 600_000, interval: 1000 }).toMatch(/^(done|error)$/);
    expect(await page.getByTestId('exp-eta-sft').textContent()).toBe('done');
    expect(
      await page.getByTestId('exp-error').count(),
      (await page
        .getByTestId('exp-error')
        .textContent()
        .catch(() => '')) ?? '',
    ).toBe(0);

    // (2) curves: the PPO iteration is plotted
    await page
      .getByTestId('curves-run')
      .selectOption(`run:${RUN}`)
      .catch(() => undefined); // the live run is shown by default
    await expect.poll(() => page.getByTestId('chart-reward').getAttribute('data-points'), { timeout: 30_000 }).toBe('1');
    expect(Number(await page.getByTestId('chart-sft-loss').getAttribute('data-points'))).toBeGreaterThanOrEqual(100);
    await shot('panel-curves', 'inspect-curves');

    // (3) the rollout browser lists the iteration's rollouts, grouped by prompt
    const records = jsonl<RolloutRecord>(await runFile(page, RUN, 'rollouts/iter-0001.jsonl'));
    expect(records.length).toBeGreaterThan(12);
    await page.getByTestId('rollouts-run').selectOption(RUN);
    await expect.poll(() => page.getByTestId('rollout-row').count(), { timeout: 30_000 }).toBe(records.length);
    expect(await page.getByTestId('rollout-group').count()).toBe(new Set(records.map((r) => `${r.group}:${r.turn}`)).size);
    await shot('panel-rollouts', 'inspect-rollouts');

    // (4) open a failed rollout: heatmap decorations and markers in Monaco, the breakdown beside it
    const pick = records.findIndex((r) => !r.passed);
    expect(pick, 'a failed rollout to open').toBeGreaterThanOrEqual(0);
    await page.locator(`[data-testid="rollout-row"][data-index="${pick}"]`).click();
    const view = page.getByTestId('rollout-view');
    await expect.poll(() => view.locator('[class*="heat-"]').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await expect.poll(async () => Number(await view.getAttribute('data-marker-count')), { timeout: 30_000 }).toBeGreaterThan(0);
    const breakdown = page.getByTestId('reward-breakdown');
    const recorded = Number(await breakdown.getAttribute('data-recorded-total'));
    expect(recorded).toBeCloseTo(records[pick]!.reward.total, 5);
    expect(Number(await breakdown.getAttribute('data-total'))).toBeCloseTo(recorded, 5);
    for (const mode of ['advantage', 'kl', 'entropy', 'logprob']) {
      await page.getByTestId('heatmap-mode').selectOption(mode);
      expect(await view.locator('[class*="heat-"]').count(), mode).toBeGreaterThan(0);
    }
    expect(await page.getByTestId('ast-tree').count()).toBeGreaterThan(0);
    await shot('rollout-view', 'inspect-rollout-view');

    // (5) what-if editing: a completion that passes the task's tests is rescored in the sandbox
    const tasks = jsonl<{ task_id: string; tests: string; prompt: string }>(await runFile(page, RUN, 'tasks/rl.jsonl'));
    const task = tasks.find((t) => t.task_id === records[pick]!.task_id)!;
    const arg = /function f\((\w+)\)/.exec(task.prompt)![1]!;
    const promptLines = records[pick]!.prompt.split('\n').length - 1;
    const editor = view.locator('.monaco-editor').first();
    await editor.click();
    await page.keyboard.press('Control+Home');
    for (let i = 0; i < promptLines; i++) await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+Control+End');
    await page.keyboard.insertText(lookupBody(task.tests, arg));
    const rescore = page.getByTestId('rollout-rescore-status');
    const rescored = async (): Promise<string> => {
      await expect.poll(() => rescore.getAttribute('data-state'), { timeout: 60_000 }).toMatch(/^(done|error)$/);
      return `${await rescore.getAttribute('data-state')}: ${await rescore.textContent()}`;
    };
    expect(await rescored()).toMatch(/^done: /);
    const passing = Number(await breakdown.getAttribute('data-total'));
    expect(passing, 'the edited completion is scored anew').not.toBeCloseTo(recorded, 6);
    const statuses = await page
      .getByTestId('rollout-tests')
      .locator('[data-status]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
    expect(statuses.length).toBeGreaterThan(0);
    expect(new Set(statuses)).toEqual(new Set(['passed'])); // the table of the tested inputs passes them all
    await shot('rollout-view', 'inspect-edited');
    // and a syntax error on top: the reward falls, an AST marker appears
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('function (');
    await expect.poll(() => rescore.getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
    await expect.poll(async () => Number(await breakdown.getAttribute('data-total')), { timeout: 30_000 }).toBeLessThan(passing);
    await expect.poll(async () => Number(await view.getAttribute('data-marker-ast')), { timeout: 30_000 }).toBeGreaterThan(0);

    // (6) moving a weight re-ranks as the what-if arithmetic predicts
    const before = await ranks(page);
    const sliders = page.getByTestId('rollouts-weights').locator('input[type="range"]');
    let moved: { name: string; key: 'Home' | 'End'; ranks: number[] } | null = null;
    for (let i = 0; i < (await sliders.count()) && !moved; i++) {
      const s = sliders.nth(i);
      const name = (await s.getAttribute('aria-label'))!.replace(/^Weight /, '');
      const max = Number(await s.getAttribute('max'));
      for (const [key, w] of [
        ['Home', 0],
        ['End', max],
      ] as const) {
        const predicted = groupStats(records, { [name]: w }).ranks;
        if (predicted.some((r, k) => r !== before.get(k))) {
          moved = { name, key, ranks: predicted };
          break;
        }
      }
    }
    expect(moved, 'some weight change re-ranks this iteration').not.toBeNull();
    const slider = page.getByLabel(`Weight ${moved!.name}`, { exact: true });
    await slider.focus();
    await page.keyboard.press(moved!.key);
    await expect.poll(async () => [...(await ranks(page)).entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r)).toEqual(moved!.ranks);
    await shot('panel-rollouts', 'inspect-reweighted');

    // (7) reload: the run is still there, in both pickers, and opens
    await page.reload();
    await expect.poll(() => page.getByTestId('rollouts-run').locator('option').allTextContents(), { timeout: 60_000 }).toContain(RUN);
    await page.getByTestId('rollouts-run').selectOption(RUN);
    await expect.poll(() => page.getByTestId('rollout-row').count(), { timeout: 30_000 }).toBe(records.length);
    await page.getByTestId('curves-run').selectOption(`run:${RUN}`);
    await expect.poll(() => page.getByTestId('chart-reward').getAttribute('data-points'), { timeout: 30_000 }).toBe('1');
    await screenshot('inspect-after-reload');
    expect(errors).toEqual([]);
  }, 900_000);
});
