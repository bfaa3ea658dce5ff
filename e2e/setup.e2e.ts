/**
 * Experiment setup in Chromium: the settings form edits the JSON overrides field by field with
 * the config validator's messages inline (bad text is kept, Start waits), a whole-config error
 * lands on the field it names; a built-in benchmark (HumanEval-X JavaScript, HumanEval Python) is
 * one click, recorded as `coderl train --suite NAME` records it; a suite file is checked as it is
 * opened (a bad one is refused inline) and a good one becomes the run's tasks; and a running run pauses (nothing moves, the
 * worker keeps everything loaded) and continues to the end.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { RL_PRESETS } from '../src/rl/config';
import { MINI_RUN } from '../src/rl/testing';
import { buildTaskSet, suiteJsonl } from '../src/rl/tasks';
import { readSuiteSource, type SuiteRef } from '../src/rl/tasks/from-suite';
import { benchmarkPath } from '../src/tasks/benchmarks';
import { BUILTIN_SUITES, builtinSuiteLabel } from '../src/tasks/builtin-suites';
import { bytesToText } from '../src/tasks/bytes';
import { chromiumSession } from './browser';
import { readOpfsText } from './run-fixture';

const open = chromiumSession();
const RUN = 'e2e-setup';

let dir: string;
let good: string;
let bad: string;
let goodText: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-e2e-setup-'));
  const b = buildTaskSet({ seed: 4, families: ['spec'] });
  goodText = suiteJsonl([...b.train.slice(0, 30), ...b.heldout.slice(0, 10)]);
  good = join(dir, 'my-tasks.jsonl');
  await writeFile(good, goodText);
  bad = join(dir, 'broken.jsonl');
  await writeFile(bad, goodText.split('\n').slice(0, 3).join('\n') + '\n{"task_id": "x", "prompt": 3}\n');
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const overridesOf = async (page: Page): Promise<Record<string, unknown>> =>
  JSON.parse(await page.getByLabel('Overrides (JSON)').inputValue()) as Record<string, unknown>;

describe('experiment setup', () => {
  test('form fields validate inline, a suite file becomes the tasks, and a run pauses and continues', async () => {
    const { page, errors, screenshot } = await open();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    const start = page.getByTestId('exp-start');
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-files'), { timeout: 30_000 }).toBe('0');

    // (1) the form: a field's bad text stays, with the validator's message; Start waits
    await page.getByTestId('exp-section-rl').locator('summary').click();
    const clip = page.getByTestId('exp-field-rl.clip');
    await clip.fill('3');
    expect(await page.getByTestId('exp-field-error-rl.clip').textContent()).toBe('must be a number in [0.001, 0.999], got 3');
    expect(await clip.getAttribute('aria-invalid')).toBe('true');
    expect(await clip.inputValue()).toBe('3');
    expect(await start.isDisabled()).toBe(true);
    expect(await page.getByTestId('exp-drafts').textContent()).toMatch(/One setting needs a fix/);
    const lr = page.getByTestId('exp-field-rl.lr');
    await lr.fill('abc');
    expect(await page.getByTestId('exp-field-error-rl.lr').textContent()).toBe('not a number: "abc"');
    expect(await page.getByTestId('exp-drafts').textContent()).toMatch(/2 settings need a fix/);
    await screenshot('setup-invalid');
    // fixed values go into the overrides; the JSON is the difference from the preset
    await clip.fill('0.3');
    await lr.fill('0.001');
    expect(await overridesOf(page)).toEqual({ rl: { clip: 0.3, lr: 0.001 } });
    expect(await page.getByTestId('exp-drafts').count()).toBe(0);
    expect(await start.isEnabled()).toBe(true);
    // a reward weight, by keyboard; reset takes it out again
    await page.getByTestId('exp-section-reward').locator('summary').click();
    const lint = page.getByTestId('exp-field-reward.lint');
    await lint.focus();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('0.5');
    expect((await overridesOf(page)).reward).toEqual({ lint: 0.5 });
    await page.getByRole('button', { name: /^Reset lint to the preset's/ }).click();
    expect(await overridesOf(page)).toEqual({ rl: { clip: 0.3, lr: 0.001 } });
    // an error in the JSON that names a field shows at that field too
    await page.getByLabel('Overrides (JSON)').fill('{"rl":{"kl":{"coef":-1}}}');
    expect(await page.getByTestId('exp-field-error-rl.kl.coef').textContent()).toBe('must be a number in [0, 100], got -1');
    expect(await page.getByTestId('exp-overrides-error').textContent()).toBe('config.rl.kl.coef: must be a number in [0, 100], got -1');
    expect(await start.isDisabled()).toBe(true);
    // checkboxes and selects write booleans and strings
    await page.getByLabel('Overrides (JSON)').fill('{}');
    await page.getByTestId('exp-section-explore').locator('summary').click();
    await page.getByTestId('exp-field-explore.repair').check();
    const otherAlgo = RL_PRESETS.tiny!.rl.algo === 'ppo' ? 'grpo' : 'ppo';
    await page.getByTestId('exp-field-rl.algo').selectOption(otherAlgo);
    expect(await overridesOf(page)).toEqual({ explore: { repair: true }, rl: { algo: otherAlgo } });

    // (2) the task source: a broken file is refused inline and changes nothing; a good one is the run's tasks
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify({ ...MINI_RUN, sft: { ...MINI_RUN.sft, maxSteps: 40, evalEvery: 10 } }));
    const before = await overridesOf(page);
    // a built-in benchmark is one click; the config records its file as `coderl train --suite NAME` does (the same ref)
    const source = page.getByTestId('exp-suite');
    const suiteInfo = page.getByTestId('exp-suite-info');
    for (const b of BUILTIN_SUITES) {
      const expected: SuiteRef = (await readSuiteSource(await bytesToText(new Uint8Array(await readFile(benchmarkPath(b.file)))), b.file))
        .ref;
      const radio = page.getByTestId(`exp-suite-${b.name}`);
      expect(await radio.locator('xpath=..').textContent()).toBe(` ${builtinSuiteLabel(b)}`);
      await radio.click();
      await expect.poll(() => source.getAttribute('data-suite'), { timeout: 30_000 }).toBe(b.name);
      expect(await source.getAttribute('data-source')).toBe('benchmark');
      expect(await radio.isChecked()).toBe(true);
      expect(await suiteInfo.textContent()).toBe(
        `${b.title} (${b.file}, shipped with the app): ${b.tasks} ${b.language} tasks, split by task into train (those with a solution), RL and held-out; kept in the run directory on Start.`,
      );
      expect(((await overridesOf(page)).tasks as { suite: SuiteRef }).suite).toEqual(expected);
      expect(expected).toMatchObject({ name: b.file, tasks: b.tasks });
    }
    await screenshot('setup-benchmark');
    await page.getByTestId('exp-suite-builtin').click();
    expect(await source.getAttribute('data-source')).toBe('builtin');
    expect(await overridesOf(page)).toEqual(before);
    // named in the overrides by hand (as a stored run's settings name it), its text is fetched again
    const hx = BUILTIN_SUITES[0]!;
    const hxRef = (await readSuiteSource(await bytesToText(new Uint8Array(await readFile(benchmarkPath(hx.file)))), hx.file)).ref;
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify({ ...before, tasks: { ...(before.tasks as object), suite: hxRef } }));
    expect(await source.getAttribute('data-suite')).toBe(hx.name);
    await expect.poll(() => suiteInfo.textContent(), { timeout: 30_000 }).toMatch(/; kept in the run directory on Start\.$/);
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(before));
    expect(await source.getAttribute('data-source')).toBe('builtin');
    await page.getByTestId('exp-suite-file').setInputFiles(bad);
    await expect
      .poll(
        () =>
          page
            .getByTestId('exp-suite-error')
            .textContent()
            .catch(() => ''),
        { timeout: 10_000 },
      )
      .toMatch(/^broken\.jsonl: \d+ problems? in the suite: broken\.jsonl:4: /);
    expect(await overridesOf(page)).toEqual(before);
    expect(await page.getByTestId('exp-suite').getAttribute('data-source')).toBe('builtin');
    await page.getByTestId('exp-suite-file').setInputFiles(good);
    await expect.poll(() => page.getByTestId('exp-suite').getAttribute('data-source'), { timeout: 10_000 }).toBe('file');
    expect(await page.getByTestId('exp-suite-error').count()).toBe(0);
    expect(await page.getByTestId('exp-suite-info').textContent()).toMatch(/my-tasks\.jsonl: 40 tasks/);
    const suite = ((await overridesOf(page)).tasks as { suite: { name: string; sha256: string; tasks: number } }).suite;
    expect(suite).toMatchObject({ name: 'my-tasks.jsonl', tasks: 40 });
    expect(suite.sha256).toMatch(/^[0-9a-f]{64}$/);
    await screenshot('setup-suite');

    // (3) run it; pause during SFT: nothing moves while paused; continue to the end
    expect(await start.isEnabled()).toBe(true);
    await start.click();
    const status = page.getByTestId('exp-status');
    const sft = page.getByTestId('exp-progress-sft');
    await expect.poll(() => sft.evaluate((p: HTMLProgressElement) => p.value), { timeout: 180_000, interval: 100 }).toBeGreaterThan(0);
    await page.getByTestId('exp-pause').click();
    await expect.poll(() => status.textContent(), { timeout: 60_000, interval: 100 }).toBe('paused');
    expect(await page.getByTestId('exp-pause').textContent()).toBe('Continue');
    const held = await sft.evaluate((p: HTMLProgressElement) => p.value);
    const metricsAt = (await readOpfsText(page, RUN, 'metrics.jsonl')) ?? '';
    await page.waitForTimeout(3000);
    expect(await sft.evaluate((p: HTMLProgressElement) => p.value)).toBe(held);
    expect((await readOpfsText(page, RUN, 'metrics.jsonl')) ?? '').toBe(metricsAt);
    expect(held).toBeLessThan(1);
    await screenshot('setup-paused');
    await page.getByTestId('exp-pause').click();
    await expect.poll(() => status.textContent(), { timeout: 480_000, interval: 1000 }).toMatch(/^(done|error)$/);
    expect(
      await page.getByTestId('exp-error').count(),
      (await page
        .getByTestId('exp-error')
        .textContent()
        .catch(() => '')) ?? '',
    ).toBe(0);

    // the run trained on the file: it keeps the file, and its splits are the file's tasks
    expect(await readOpfsText(page, RUN, 'tasks/suite.jsonl')).toBe(goodText);
    const fileIds = new Set(
      goodText
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { task_id: string }).task_id),
    );
    for (const k of ['train', 'val', 'rl', 'heldout']) {
      const text = (await readOpfsText(page, RUN, `tasks/${k}.jsonl`)) ?? '';
      for (const l of text.trim().split('\n').filter(Boolean))
        expect(fileIds.has((JSON.parse(l) as { task_id: string }).task_id), k).toBe(true);
    }
    const config = JSON.parse((await readOpfsText(page, RUN, 'config.json'))!) as { cfg: { tasks: { suite: unknown } } };
    expect(config.cfg.tasks.suite).toEqual(suite);
    await screenshot('setup-done');
    expect(errors).toEqual([]);
  }, 600_000);
});
