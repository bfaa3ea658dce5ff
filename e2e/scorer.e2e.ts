import { describe, expect, test } from 'vitest';
import { chromiumSession } from './browser';
import { score, statuses, total } from './scorer-fixture';

const open = chromiumSession();

const REFERENCE_TOTAL_MIN = 1;

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

    // (2) a completion that fails some tests, scored with Ctrl+Enter; it also has a lint finding
    const wrong = await score(page, '  var unused = 1;\n  return true;\n};\n', true);
    expect(wrong.verdict).toBe('failed');
    const s = await statuses(page);
    expect(s.filter((x) => x === 'passed').length).toBe(4);
    expect(s.filter((x) => x === 'failed').length).toBe(2);
    expect(await page.getByTestId('scorer-tests').textContent()).toContain("isPalindrome('race a car') === false");
    expect(await total(page)).toBeLessThan(refTotal);
    const lint = (await page.getByTestId('scorer-lint').textContent()) ?? '';
    expect(lint).toMatch(/no-var/);
    const first = page.getByTestId('scorer-lint').locator('tbody tr').first().locator('td');
    expect(await first.nth(0).textContent()).toBe('1'); // var is on the completion's first line
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
    await screenshot('scorer-syntax-error');

    expect(errors).toEqual([]);
  });

  test('scores the Python task in Pyodide: reference, failing, looping, then the reference again', async () => {
    const { page, errors, screenshot } = await open();
    await page.getByTestId('panel-reward').waitFor();
    await page.getByTestId('scorer-language').selectOption('python');
    expect(await page.getByTestId('scorer-prompt').textContent()).toContain('def is_palindrome(text: str) -> bool:');
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
    expect(r.verdict).toBe('failed'); // the sandbox still ran
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
