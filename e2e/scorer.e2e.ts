import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumSession } from './browser';
import { writeOpfsRun } from './run-fixture';
import { score, statuses, total } from './scorer-fixture';
import type { RolloutRecord } from '../src/rl/ppo-loop';
import type { RewardComponent } from '../src/reward/reward';

const open = chromiumSession();

const REFERENCE_TOTAL_MIN = 1;

/** Waits for Monaco in the Reward panel: it replaces the textarea (which stays, visually hidden). */
async function monacoShown(page: Page): Promise<void> {
  await page.getByTestId('scorer-monaco').locator('.monaco-editor').waitFor({ timeout: 60_000 });
}

/** Text with runs of whitespace as one space: Monaco indents typed lines as an editor does. */
const words = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** Types `text` over the whole completion in Monaco (which indents new lines) and scores it with Ctrl+Enter there. */
async function typeAndScore(page: Page, text: string): Promise<string> {
  const seq = Number((await page.getByTestId('scorer-result').getAttribute('data-seq')) ?? 0);
  await page.getByTestId('scorer-monaco').locator('.view-lines').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
  // Monaco's text is the store's: the fallback textarea holds it too
  await expect.poll(async () => words(await page.getByTestId('scorer-completion').inputValue())).toBe(words(text));
  await page.keyboard.press('Control+Enter');
  await expect
    .poll(async () => Number(await page.getByTestId('scorer-result').getAttribute('data-seq')), { timeout: 60_000 })
    .toBe(seq + 1);
  return ((await page.getByTestId('scorer-verdict').textContent()) ?? '').trim();
}

/** The markers Monaco shows in the completion, by their squiggle class. */
const squiggles = (page: Page, severity: 'error' | 'warning' | 'info'): Promise<number> =>
  page.getByTestId('scorer-monaco').locator(`.squiggly-${severity}`).count();

describe('the scratch scorer in the Reward panel', () => {
  test('scores the reference, failing, tampering, looping and unparsable completions', async () => {
    const { page, errors, screenshot } = await open();
    const panel = page.getByTestId('panel-reward');
    await panel.waitFor();
    const reference = await page.getByTestId('scorer-completion').inputValue();
    expect(reference).toContain('reverse()');

    // (1) the reference passes every test and earns more than the test bonus alone
    const ref = await score(page, null);
    console.log(`reference (cold: pool + analysis load): ${ref.seconds.toFixed(2)} s`);
    expect(ref.verdict).toBe('passed');
    expect(await page.getByTestId('scorer-tests-count').textContent()).toBe('6/6');
    expect(await statuses(page)).toEqual(Array(6).fill('passed'));
    expect(await page.getByTestId('scorer-ast').getAttribute('data-valid')).toBe('true');
    const refTotal = await total(page);
    expect(refTotal).toBeGreaterThan(REFERENCE_TOTAL_MIN);
    expect(await page.getByTestId('scorer-reward').locator('tbody tr').count()).toBe(6);
    expect(await page.getByTestId('scorer-error').count()).toBe(0);
    await panel.screenshot({ path: (await screenshot('scorer-reference')).replace('.png', '-panel.png') });

    // (2) a completion that fails some tests, typed into Monaco and scored with Ctrl+Enter there; it also has lint findings
    await monacoShown(page);
    expect(await page.getByTestId('scorer-monaco').getAttribute('data-marker-count')).toBe('0');
    expect(await typeAndScore(page, '  var unused = 1;\n  return true;\n};\n')).toBe('failed');
    const s = await statuses(page);
    expect(s.filter((x) => x === 'passed').length).toBe(4);
    expect(s.filter((x) => x === 'failed').length).toBe(2);
    expect(await page.getByTestId('scorer-tests').textContent()).toContain("isPalindrome('race a car') === false");
    expect(await total(page)).toBeLessThan(refTotal);
    const lint = (await page.getByTestId('scorer-lint').textContent()) ?? '';
    expect(lint).toMatch(/no-var/);
    const first = page.getByTestId('scorer-lint').locator('tbody tr').first().locator('td');
    expect(await first.nth(0).textContent()).toBe('1'); // var is on the completion's first line
    // the lint heading counts the rows it lists, and the reward's lint detail agrees with them
    const rows = await page.getByTestId('scorer-lint').locator('tbody tr').count();
    const summary = (await page.getByTestId('scorer-lint-summary').textContent()) ?? '';
    expect(summary).toMatch(new RegExp(`^Lint and metrics: ${rows} findings? \\(`));
    const detail = (await page.locator('[data-testid="scorer-reward"] tr[data-component="lint"] td').last().textContent()) ?? '';
    expect(detail).toMatch(/^\d+ findings? \(.*\) from ESLint in the completion, weighted /);
    expect(detail).not.toMatch(/all diagnostics/);
    // the findings are markers at their lines in Monaco: one per lint row
    expect(Number(await page.getByTestId('scorer-monaco').getAttribute('data-marker-count'))).toBe(rows);
    await expect.poll(() => squiggles(page, 'info').then(async (n) => n + (await squiggles(page, 'warning')))).toBeGreaterThan(0);
    // an assertion wraps between words, in monospace
    const code = page.getByTestId('scorer-tests').locator('code').first();
    expect(await code.evaluate((e) => [getComputedStyle(e).whiteSpace, getComputedStyle(e).wordBreak])).toEqual(['pre-wrap', 'normal']);
    await screenshot('scorer-failed');

    // (3) tampering with console.assert earns no test credit
    const tamper = await score(page, '  console.assert = () => {};\n  return true;\n};\n');
    expect(tamper.verdict).toBe('tampering');
    expect((await statuses(page)).includes('passed')).toBe(false);
    expect(await page.getByTestId('scorer-tests-count').textContent()).toBe('0/6');
    expect(await page.getByTestId('scorer-message').textContent()).toMatch(/console\.assert/);
    expect(await total(page)).toBeLessThan(0.5);
    await screenshot('scorer-tampering');

    // (4) an endless loop times out within a few seconds, and the pool recovers
    const loop = await score(page, '  while (true) {}\n};\n');
    console.log(`endless loop: ${loop.verdict} after ${loop.seconds.toFixed(2)} s`);
    expect(loop.verdict).toBe('timeout');
    expect(loop.seconds).toBeLessThan(8);
    expect(await statuses(page)).toEqual(Array(6).fill('timeout'));
    await screenshot('scorer-timeout');
    await page.getByRole('button', { name: 'Reset to reference' }).click();
    const again = await score(page, null);
    console.log(`reference after the timeout: ${again.seconds.toFixed(2)} s`);
    expect(again.verdict).toBe('passed');
    expect(await total(page)).toBeCloseTo(refTotal, 9);

    // (5) a syntax error: the AST is invalid with its error listed; the text stays in the editor
    const broken = '  return text === ;\n};\n';
    const syn = await score(page, broken);
    expect(syn.verdict).toBe('error');
    expect(await page.getByTestId('scorer-ast').getAttribute('data-valid')).toBe('false');
    expect(await page.getByTestId('scorer-ast-errors').locator('li').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('scorer-ast-errors').textContent()).toMatch(/^line 1: /);
    expect(await page.getByTestId('scorer-completion').inputValue()).toBe(broken);
    expect(await page.getByTestId('scorer-error').count()).toBe(0);
    // the one reason is said once, above the table; the rows give their status only
    expect(await statuses(page)).toEqual(Array(6).fill('error'));
    const reason = (await page.getByTestId('scorer-message').textContent()) ?? '';
    expect(reason).toMatch(/^Every test failed to run: \S/);
    expect(await page.getByTestId('scorer-message').count()).toBe(1);
    expect(await page.getByTestId('scorer-tests').textContent()).not.toContain(reason.replace('Every test failed to run: ', ''));
    // the syntax error is a marker in Monaco, which holds the completion typed into the textarea
    expect(Number(await page.getByTestId('scorer-monaco').getAttribute('data-marker-errors'))).toBeGreaterThan(0);
    await expect.poll(() => squiggles(page, 'error')).toBeGreaterThan(0);
    // (Monaco renders spaces as U+00A0)
    expect((await page.getByTestId('scorer-monaco').locator('.view-lines').textContent())?.replace(/\u00a0/g, ' ')).toContain(
      'return text ===',
    );
    await screenshot('scorer-syntax-error');
    // editing clears the markers of the old score, and undoing back to it brings them again
    await page.getByTestId('scorer-monaco').locator('.view-lines').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('zz');
    await expect.poll(() => page.getByTestId('scorer-monaco').getAttribute('data-marker-count')).toBe('0');
    await page.keyboard.press('Control+Z');
    await expect.poll(() => page.getByTestId('scorer-completion').inputValue()).toBe(broken);
    expect(Number(await page.getByTestId('scorer-monaco').getAttribute('data-marker-errors'))).toBeGreaterThan(0);

    expect(errors).toEqual([]);
  });

  test('follows the rollout selected in the Rollouts panel, with a tab back to the scratch scorer', async () => {
    const { page, errors, screenshot } = await open();
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.getByTestId('rollouts-run').waitFor({ timeout: 60_000 });
    const panel = page.getByTestId('panel-reward');
    expect(await panel.getByTestId('scorer').getAttribute('data-view')).toBe('scratch');
    expect(await panel.getByRole('tab').count()).toBe(0);
    expect(await panel.textContent()).toContain(
      'Select a rollout in the Rollouts panel to see its reward breakdown and tests here instead.',
    );
    await writeOpfsRun(page, RUN, runFiles());
    await page.reload();
    await expect.poll(() => page.getByTestId('rollouts-run').locator('option').allTextContents(), { timeout: 60_000 }).toContain(RUN);
    await page.getByTestId('rollouts-run').selectOption(RUN);
    await expect.poll(() => page.getByTestId('rollout-row').count(), { timeout: 30_000 }).toBe(RECORDS.length);
    const row = (i: number) => page.locator(`[data-testid="rollout-row"][data-index="${i}"]`);

    // (1) the passing sample: its breakdown and tests, headed by what it is
    await row(1).click();
    await expect.poll(() => panel.getByTestId('scorer').getAttribute('data-view')).toBe('rollout');
    expect(await panel.getByTestId('scorer-rollout-head').textContent()).toBe(`Selected rollout: iteration 1, ${TASK.task_id}, sample 2`);
    const breakdown = panel.getByTestId('scorer-rollout-breakdown');
    expect(Number(await breakdown.getAttribute('data-recorded-total'))).toBeCloseTo(RECORDS[1]!.reward.total, 6);
    expect(await breakdown.locator('tbody tr').count()).toBe(RECORDS[1]!.reward.components.length);
    const tests = panel.getByTestId('scorer-rollout-tests');
    expect(await tests.locator('tbody tr').evaluateAll((r) => r.map((e) => e.getAttribute('data-status')))).toEqual([
      'passed',
      'passed',
      'passed',
    ]);
    expect(await panel.getByTestId('scorer-completion').isVisible()).toBe(false);
    await panel.screenshot({ path: await screenshot('scorer-rollout-passed') });

    // (2) the broken sample: its one syntax error is said once, in the Reward panel and in the rollout view
    await row(0).click();
    await expect
      .poll(() => panel.getByTestId('scorer-rollout-head').textContent())
      .toBe(`Selected rollout: iteration 1, ${TASK.task_id}, sample 1`);
    expect(await tests.getByTestId('tests-shared-failure').textContent()).toBe(`Every test failed to run: ${SYNTAX}`);
    expect(((await tests.textContent()) ?? '').split(SYNTAX).length - 1).toBe(1);
    const view = page.getByTestId('rollout-tests');
    await view.waitFor({ timeout: 60_000 });
    expect(((await view.textContent()) ?? '').split(SYNTAX).length - 1).toBe(1);
    await panel.screenshot({ path: await screenshot('scorer-rollout-error') });

    // (3) the tab back to the scratch scorer, which works there; a new selection shows the rollout again
    await panel.getByRole('tab', { name: 'Score your own completion' }).click();
    expect(await panel.getByTestId('scorer').getAttribute('data-view')).toBe('scratch');
    expect(await panel.getByTestId('scorer-rollout').count()).toBe(0);
    expect(await panel.textContent()).toContain('The rollout selected in the Rollouts panel is under “Selected rollout”.');
    expect((await score(page, null)).verdict).toBe('passed');
    await panel.screenshot({ path: await screenshot('scorer-rollout-scratch-tab') });
    await row(1).click();
    await expect.poll(() => panel.getByTestId('scorer').getAttribute('data-view')).toBe('rollout');
    await panel.getByRole('tab', { name: 'Score your own completion' }).click();
    expect(await page.getByTestId('scorer-verdict').textContent()).toBe('passed'); // the scratch result is kept
    await panel.getByRole('tab', { name: 'Selected rollout' }).click();
    expect(await panel.getByTestId('scorer-rollout-head').textContent()).toContain('sample 2');
    expect(errors).toEqual([]);
  });

  test('scores the Python task in Pyodide: reference, failing, looping, then the reference again', async () => {
    const { page, errors, screenshot } = await open();
    await page.getByTestId('panel-reward').waitFor();
    await page.getByTestId('scorer-language').selectOption('python');
    expect(await page.getByTestId('scorer-prompt').textContent()).toContain('def is_palindrome(text: str) -> bool:');
    // the editor takes the Python reference a render after the prompt changes: wait for it rather than read once
    await page.waitForFunction(
      () => (document.querySelector('[data-testid="scorer-completion"]') as HTMLTextAreaElement | null)?.value.includes('s[::-1]'),
      undefined,
      { timeout: 10_000 },
    );
    const reference = await page.getByTestId('scorer-completion').inputValue();
    expect(reference).toContain('s[::-1]');

    // (1) the reference passes all six asserts; there is no static analysis, the reward is still shown
    const ref = await score(page, null);
    console.log(`python reference (cold: Pyodide load): ${ref.seconds.toFixed(2)} s`);
    expect(ref.verdict).toBe('passed');
    expect(await page.getByTestId('scorer-tests-count').textContent()).toBe('6/6');
    expect(await statuses(page)).toEqual(Array(6).fill('passed'));
    expect(await page.getByTestId('scorer-ast').count()).toBe(0);
    expect(await page.getByTestId('scorer-no-analysis').count()).toBe(1);
    const rows = await page.getByTestId('scorer-reward').locator('tbody tr').allTextContents();
    expect(rows).toHaveLength(6);
    expect(rows.filter((r) => r.includes('not measured'))).toHaveLength(3);
    const refTotal = await total(page);
    expect(refTotal).toBeGreaterThan(REFERENCE_TOTAL_MIN);
    expect(await page.getByTestId('scorer-error').count()).toBe(0);
    await screenshot('scorer-python-reference');

    // (2) a wrong completion fails two asserts
    const warm = await score(page, '    return True\n');
    console.log(`python wrong completion (warm): ${warm.seconds.toFixed(2)} s`);
    expect(warm.verdict).toBe('failed');
    const s = await statuses(page);
    expect(s.filter((x) => x === 'passed').length).toBe(4);
    expect(s.filter((x) => x === 'failed').length).toBe(2);
    expect(await page.getByTestId('scorer-tests').textContent()).toContain("candidate('race a car') == False");
    expect(await total(page)).toBeLessThan(refTotal);

    // (3) an endless loop times out (no cross-origin isolation here: the worker is terminated and replaced)
    const loop = await score(page, '    while True:\n        pass\n');
    console.log(`python endless loop: ${loop.verdict} after ${loop.seconds.toFixed(2)} s`);
    expect(loop.verdict).toBe('timeout');
    expect(loop.seconds).toBeLessThan(10);
    expect((await statuses(page)).includes('passed')).toBe(false);
    await screenshot('scorer-python-timeout');

    // (4) the pool recovers: the reference passes again (a fresh worker may load Pyodide again)
    await page.getByRole('button', { name: 'Reset to reference' }).click();
    expect(await page.getByTestId('scorer-completion').inputValue()).toBe(reference);
    const again = await score(page, null);
    console.log(`python reference after the timeout: ${again.seconds.toFixed(2)} s`);
    expect(again.verdict).toBe('passed');
    expect(await total(page)).toBeCloseTo(refTotal, 9);

    expect(errors).toEqual([]);
  }, 300_000);

  test('a failure to load the analysis is shown as an alert and the completion is kept', async () => {
    const { page, errors, screenshot } = await open();
    await page.route('**/*.wasm', (route) =>
      route.request().url().includes('tree-sitter') ? route.fulfill({ status: 404, body: '' }) : route.continue(),
    );
    const text = '  return text.length < 2;\n};\n';
    const r = await score(page, text);
    // the sandbox still ran, on the text typed: two of the six tests fail
    expect({ verdict: r.verdict, kept: await page.getByTestId('scorer-completion').inputValue(), tests: await statuses(page) }).toEqual({
      verdict: 'failed',
      kept: text,
      tests: ['passed', 'passed', 'failed', 'passed', 'failed', 'passed'],
    });
    const alert = page.getByTestId('scorer-error');
    expect(await alert.getAttribute('role')).toBe('alert');
    expect(await alert.textContent()).toMatch(/Static analysis could not be loaded: .*HTTP 404/);
    expect(await page.getByTestId('scorer-reward').count()).toBe(0);
    expect(await page.getByTestId('scorer-completion').inputValue()).toBe(text);
    await screenshot('scorer-analysis-failed');
    // the 404s are console errors from the browser itself; nothing else is
    expect(errors.filter((e) => !/404|tree-sitter/.test(e))).toEqual([]);
  });
});

const RUN = 'e2e-scorer-rollouts';
const TASK = {
  task_id: 'e2e/add',
  language: 'javascript',
  prompt: '/** Returns a + b. */\nfunction add(a, b) {\n',
  entry_point: 'add',
  tests: 'console.assert(add(1, 2) === 3);\nconsole.assert(add(-1, 1) === 0);\nconsole.assert(add(2, 2) === 4);\n',
};
const SYNTAX = "SyntaxError: unexpected token in expression: ';'";
const ASSERTS = TASK.tests.trim().split('\n');

function component(name: string, sign: 1 | -1, weight: number, raw: number, detail: string): RewardComponent {
  return { name, sign, weight, raw, contribution: sign * weight * raw, detail };
}

/** A hand-made rollout of iteration 1 (0 in the record, as ppo-loop writes it; file iter-0001), group 0: prompt, completion, tokens and their numbers, reward and tests. */
function rollout(completion: string, passed: boolean): RolloutRecord {
  const tokens = completion.match(/\s*\S+|\s+/g)!;
  const n = tokens.length;
  const components = [
    component('test_pass', 1, 1, passed ? 1 : 0, `${passed ? 3 : 0}/3 tests passed`),
    component('all_pass', 1, 0.5, passed ? 1 : 0, passed ? 'every test passed' : 'verdict error'),
    component('ast_valid', 1, 0.1, passed ? 1 : 0, passed ? 'no syntax errors' : '1 syntax error(s)'),
    component('lint', -1, 0.02, passed ? 0 : 1, 'lint'),
    component('complexity', -1, 0.02, 0, 'max cyclomatic complexity 1'),
    component('length', -1, 0.1, 0, `${n} tokens`),
  ];
  const total = components.reduce((a, c) => a + c.contribution, 0);
  const message = `the program failed before the tests: ${SYNTAX}`;
  return {
    iteration: 0,
    task_id: TASK.task_id,
    group: 0,
    turn: 1,
    prompt: TASK.prompt,
    completion,
    tokens,
    ids: tokens.map((_, i) => 100 + i),
    logprobs: tokens.map((_, i) => -0.2 - i / 10),
    entropies: tokens.map(() => 0.5),
    ref_logprobs: tokens.map((_, i) => -0.25 - i / 10),
    values: tokens.map(() => 0),
    advantages: tokens.map(() => (passed ? 0.7 : -0.7)),
    returns: tokens.map(() => total),
    raw_advantages: tokens.map(() => (passed ? 0.5 : -0.5)),
    score: total,
    reward: { total, components },
    passed,
    verdict: passed ? 'passed' : 'error',
    tests_passed: passed ? 3 : 0,
    tests_total: 3,
    tests: ASSERTS.map((source, i) =>
      passed
        ? { name: `assert ${i + 1}`, status: 'passed' as const, line: i + 1, source, evaluations: 1 }
        : {
            name: `assert ${i + 1}`,
            status: 'error' as const,
            line: i + 1,
            source,
            evaluations: 0,
            message,
            location: { in: 'completion' as const, line: 1 },
          },
    ),
    ...(passed ? {} : { message: SYNTAX }),
    ast_valid: passed,
    finish: 'stop',
  };
}

const RECORDS = [rollout('  return a + ;\n}\n', false), rollout('  return a + b;\n}\n', true)];

/** The files of a stored run with one iteration of rollouts (what the Rollouts panel reads). */
function runFiles(): Record<string, Uint8Array> {
  const enc = (s: string) => new TextEncoder().encode(s);
  return {
    'rollouts/iter-0001.jsonl': enc(RECORDS.map((r) => JSON.stringify(r)).join('\n') + '\n'),
    'tasks/rl.jsonl': enc(JSON.stringify(TASK) + '\n'),
  };
}
