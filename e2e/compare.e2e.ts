/**
 * Compare in Chromium, on a real miniature run made in Node (run-fixture.ts: two PPO iterations,
 * every RL task prompted in each, so each prompt has rollouts at both iterations) and written into
 * OPFS: two rollouts of iteration 2 marked A and B from the keyboard open in Monaco's diff editor
 * with both completions, headers whose rewards are the records' (and the what-if weights'), and
 * the breakdown's difference; swap; then the same prompt at iteration 1 against iteration 2; clear.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { chromiumSession } from './browser';
import { nodeRun, writeOpfsRun, type NodeRun } from './run-fixture';
import type { RolloutRecord } from '../src/rl/ppo-loop';
import { matchPrompt } from '../src/lab/compare';
import { rescore } from '../src/lab/whatif';

const open = chromiumSession();
const RUN = 'e2e-compare';
/** more prompts per iteration than the RL split has tasks: each iteration prompts every task */
const OVERRIDES = { rl: { promptsPerIteration: 40, samplesPerPrompt: 2 } };

let run: NodeRun;
beforeAll(async () => {
  run = await nodeRun(1, OVERRIDES);
}, 300_000);

const rollouts = (it: number): RolloutRecord[] =>
  new TextDecoder()
    .decode(run.files[`rollouts/iter-${String(it).padStart(4, '0')}.jsonl`])
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RolloutRecord);

/** The text a diff side's editor renders (Monaco writes spaces as U+00A0). */
const shown = (editor: Locator): Promise<string> =>
  editor
    .locator('.view-lines')
    .first()
    .evaluate((e) => (e.textContent ?? '').replace(/\u00a0/g, ' '));

/**
 * A completion's first line as Monaco renders it: control characters as their Control Pictures
 * (U+2400 + code, U+2421 for DEL), a tab as spaces (so the longest tab-free piece is compared).
 */
function rendered(completion: string): string {
  const line = completion.split('\n').find((l) => l.trim()) ?? '';
  // eslint-disable-next-line no-control-regex -- control characters are what it pictures
  const pictured = line.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
    String.fromCharCode(c === '\u007f' ? 0x2421 : 0x2400 + c.charCodeAt(0)),
  );
  return pictured.split('\t').reduce((a, b) => (b.trim().length > a.length ? b.trim() : a), '');
}

/** A side's header: what it says it is, and its rewards. */
async function header(page: Page, side: 'a' | 'b') {
  const h = page.getByTestId(`compare-side-${side}`);
  const at = async (name: string) => (await h.getAttribute(`data-${name}`)) ?? '';
  return {
    iteration: Number(await at('iteration')),
    index: Number(await at('index')),
    task: await at('task'),
    tests: await at('tests'),
    total: Number(await at('total')),
    recorded: Number(await at('recorded-total')),
    reward: await page.getByTestId(`compare-reward-${side}`).textContent(),
  };
}

/** The diff shows A and B: the models hold prompt + completion, the editors render the completions' first lines. */
async function expectDiff(page: Page, a: RolloutRecord, b: RolloutRecord): Promise<void> {
  const diff = page.getByTestId('compare-diff');
  await expect.poll(() => diff.getAttribute('data-a-length'), { timeout: 60_000 }).toBe(String((a.prompt + a.completion).length));
  expect(await diff.getAttribute('data-b-length')).toBe(String((b.prompt + b.completion).length));
  const editor = diff.locator('.monaco-diff-editor');
  expect(await editor.count()).toBe(1);
  await expect.poll(() => shown(editor.locator('.editor.original')), { timeout: 30_000 }).toContain(rendered(a.completion));
  await expect.poll(() => shown(editor.locator('.editor.modified')), { timeout: 30_000 }).toContain(rendered(b.completion));
  // the diff is computed: completions that differ have changed lines
  await expect.poll(() => diff.getAttribute('data-changes'), { timeout: 30_000 }).not.toBe('');
  expect(Number(await diff.getAttribute('data-changes')) > 0).toBe(a.prompt + a.completion !== b.prompt + b.completion);
}

describe('Compare in Chromium', () => {
  test('two rollouts of an iteration, then the same prompt at iteration 1 and 2, in the diff editor', async () => {
    const it1 = rollouts(1);
    const it2 = rollouts(2);
    const { page, errors, screenshot } = await open();
    const shot = async (testid: string, name: string): Promise<void> => {
      await page.getByTestId(testid).screenshot({ path: (await screenshot(name)).replace('.png', '-pane.png') });
    };
    await page.getByTestId('rollouts-run').waitFor({ timeout: 60_000 });
    await writeOpfsRun(page, RUN, run.files);
    await page.reload();
    await expect.poll(() => page.getByTestId('rollouts-run').locator('option').allTextContents(), { timeout: 60_000 }).toContain(RUN);
    await page.getByTestId('rollouts-run').selectOption(RUN);
    await expect.poll(() => page.getByTestId('rollouts-iteration').inputValue(), { timeout: 30_000 }).toBe('2');
    await expect.poll(() => page.getByTestId('rollout-row').count(), { timeout: 30_000 }).toBe(it2.length);

    // (1) A and B: two rollouts of one prompt of iteration 2 with different completions (different rewards if any)
    const pairs = it2
      .flatMap((x, i) => it2.map((y, j) => ({ i, j, x, y })))
      .filter(({ i, j, x, y }) => i < j && x.task_id === y.task_id && x.completion !== y.completion);
    const { i: iA, j: iB } = pairs.find(({ x, y }) => x.reward.total !== y.reward.total) ?? pairs[0]!;
    expect(iA, 'two rollouts of one prompt that differ').toBeDefined();
    const row = (i: number) => page.locator(`[data-testid="rollout-row"][data-index="${i}"]`);
    await row(iA).focus();
    await page.keyboard.press('a');
    await expect.poll(() => row(iA).getAttribute('data-compare')).toBe('a');
    expect(await page.getByTestId('compare-chip-a').textContent()).toContain(`${it2[iA]!.task_id} · it. 2 · #${iA}`);
    await row(iB).focus();
    await page.keyboard.press('b');
    // a complete pair brings the Compare tab forward
    await expect.poll(() => page.getByTestId('code-tab-compare').getAttribute('aria-selected')).toBe('true');
    await expectDiff(page, it2[iA]!, it2[iB]!);
    for (const [side, i] of [
      ['a', iA],
      ['b', iB],
    ] as const) {
      const h = await header(page, side);
      const r = it2[i]!;
      expect(h).toMatchObject({
        iteration: 2,
        index: i,
        task: r.task_id,
        tests: `${r.tests_passed}/${r.tests_total}`,
        reward: r.reward.total.toFixed(3),
      });
      expect(h.total).toBeCloseTo(r.reward.total, 5);
      expect(h.recorded).toBeCloseTo(r.reward.total, 5);
    }
    const breakdown = page.getByTestId('compare-breakdown');
    expect(Number(await breakdown.getAttribute('data-delta'))).toBeCloseTo(it2[iB]!.reward.total - it2[iA]!.reward.total, 5);
    expect(await breakdown.locator('tbody tr').count()).toBe(
      new Set([...it2[iA]!.reward.components, ...it2[iB]!.reward.components].map((c) => c.name)).size,
    );
    await shot('panel-code', 'compare-pair');

    // (2) swap from the keyboard, and back
    await page.getByTestId('compare-swap').focus();
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await header(page, 'a')).index).toBe(iB);
    expect((await header(page, 'b')).index).toBe(iA);
    await expectDiff(page, it2[iB]!, it2[iA]!);
    await page.keyboard.press('Space');
    await expect.poll(async () => (await header(page, 'a')).index).toBe(iA);

    // (3) a what-if weight: both headers and the breakdown follow the what-if arithmetic
    const slider = page.getByTestId('rollouts-weights').locator('input[type="range"]').first();
    const name = (await slider.getAttribute('aria-label'))!.replace(/^Weight /, '');
    const w = { [name]: Number(await slider.getAttribute('max')) };
    await slider.focus();
    await page.keyboard.press('End');
    await expect.poll(async () => (await header(page, 'a')).total).toBeCloseTo(rescore(it2[iA]!, w).total, 5);
    expect((await header(page, 'b')).total).toBeCloseTo(rescore(it2[iB]!, w).total, 5);
    expect((await header(page, 'b')).recorded).toBeCloseTo(it2[iB]!.reward.total, 5);
    expect(Number(await breakdown.getAttribute('data-delta'))).toBeCloseTo(rescore(it2[iB]!, w).total - rescore(it2[iA]!, w).total, 5);
    await page.getByTestId('rollouts-weights-reset').click();
    await expect.poll(async () => (await header(page, 'a')).total).toBeCloseTo(it2[iA]!.reward.total, 5);

    // (4) the same prompt at iteration 1: A stays (iteration 2), B is one of that task's rollouts at iteration 1
    const matches = matchPrompt(it1, it2[iA]!);
    expect(matches.length, `task ${it2[iA]!.task_id} is prompted at iteration 1 too`).toBeGreaterThan(0);
    await page.getByTestId('compare-iteration').selectOption('1');
    const candidates = page.getByTestId('compare-candidate');
    await expect
      .poll(() => candidates.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-index')))), { timeout: 30_000 })
      .toEqual(matches.map((m) => m.index));
    const k = matches[matches.length - 1]!.index;
    await candidates.last().focus();
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await header(page, 'b')).iteration).toBe(1);
    expect(await candidates.last().getAttribute('aria-pressed')).toBe('true');
    const b = await header(page, 'b');
    expect(b).toMatchObject({ index: k, task: it2[iA]!.task_id, reward: it1[k]!.reward.total.toFixed(3) });
    expect(b.total).toBeCloseTo(it1[k]!.reward.total, 5);
    expect((await header(page, 'a')).iteration).toBe(2);
    await expectDiff(page, it2[iA]!, it1[k]!);
    expect(Number(await breakdown.getAttribute('data-delta'))).toBeCloseTo(it1[k]!.reward.total - it2[iA]!.reward.total, 5);
    await shot('panel-code', 'compare-iterations');

    // (5) clear: the diff editor goes, the list's marks too
    await page.getByTestId('compare-clear').click();
    await page.getByTestId('compare-empty').waitFor({ timeout: 10_000 });
    expect(await page.locator('.monaco-diff-editor').count()).toBe(0);
    expect(await page.locator('[data-testid="rollout-row"][data-compare]').count()).toBe(0);
    await screenshot('compare-cleared');
    expect(errors).toEqual([]);
  }, 300_000);
});
