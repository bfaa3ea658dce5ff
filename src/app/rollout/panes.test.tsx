/** The tests table shared by the rollout view and the Reward panel: a failure every test shares is said once. */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import { sharedFailure, TestTable, testMessage, Tests } from './panes';

const SYNTAX = 'SyntaxError: unexpected token in expression';
const t = (i: number, status: TestResult['status'], message?: string, source = `console.assert(f(${i}) === ${i});`): TestResult => ({
  name: `assert ${i}`,
  status,
  line: i,
  source,
  evaluations: status === 'passed' ? 1 : 0,
  ...(message === undefined ? {} : { message }),
});
const brokenTests = [1, 2, 3].map((i) => t(i, 'error', `the program failed before the tests: ${SYNTAX}`));

describe('sharedFailure', () => {
  it('says once why every test failed to run when the program failed first', () => {
    expect(sharedFailure(brokenTests)).toBe(`Every test failed to run: ${SYNTAX}`);
  });
  it('names a timeout, an error or a failure every test shares', () => {
    expect(sharedFailure([1, 2].map((i) => t(i, 'timeout', 'timeout: the run took longer than 3000 ms')))).toBe(
      'Every test timed out: the run took longer than 3000 ms',
    );
    expect(sharedFailure([1, 2].map((i) => t(i, 'error', 'tampering: console.assert was replaced')))).toBe(
      'Every test errored: tampering: console.assert was replaced',
    );
    expect(sharedFailure([t(1, 'error', 'm'), t(2, 'failed', 'm')])).toBe('No test passed: m');
  });
  it('is null for one test, a passed test, different messages or none', () => {
    expect(sharedFailure(brokenTests.slice(0, 1))).toBeNull();
    expect(sharedFailure([])).toBeNull();
    expect(sharedFailure([...brokenTests, t(4, 'passed')])).toBeNull();
    expect(sharedFailure([t(1, 'failed', 'assertion failed: a'), t(2, 'failed', 'assertion failed: b')])).toBeNull();
    expect(sharedFailure([t(1, 'failed'), t(2, 'failed')])).toBeNull();
  });
});

describe('testMessage', () => {
  it("leaves out the assertion's source the row shows anyway", () => {
    const src = "console.assert(isPalindrome('ab') === false);";
    expect(testMessage({ source: src, message: `assertion failed: ${src}` })).toBe('assertion failed');
    expect(testMessage({ source: src, message: `assertion failed (2 of 5 evaluations): ${src}` })).toBe(
      'assertion failed (2 of 5 evaluations)',
    );
    expect(testMessage({ source: src, message: 'TypeError: x is not a function' })).toBe('TypeError: x is not a function');
    expect(testMessage({ source: src })).toBe('');
  });
});

const count = (html: string, s: string): number => html.split(s).length - 1;

describe('TestTable', () => {
  it('says a shared failure once above the table, and the rows give only their status', () => {
    const html = renderToStaticMarkup(<TestTable tests={brokenTests} testId="x-tests" />);
    expect(count(html, SYNTAX)).toBe(1);
    expect(html).toContain(`<p class="test-shared" data-testid="tests-shared-failure">Every test failed to run: ${SYNTAX}</p>`);
    expect(html.indexOf('test-shared')).toBeLessThan(html.indexOf('<table'));
    expect(count(html, 'data-status="error"')).toBe(3);
    expect(count(html, 'class="test-msg"')).toBe(0);
    expect(html).toContain('data-testid="x-tests"');
    expect(html).not.toContain('>line<'); // no line column without lineOf
  });
  it('leaves the shared line to the caller with sharedNote false', () => {
    const html = renderToStaticMarkup(<TestTable tests={brokenTests} sharedNote={false} />);
    expect(count(html, SYNTAX)).toBe(0);
    expect(count(html, 'data-status="error"')).toBe(3);
  });
  it("shows each failure's own message, without the source repeated, and the line when asked", () => {
    const tests = [t(1, 'passed'), t(2, 'failed', 'assertion failed: console.assert(f(2) === 2);'), t(3, 'error', 'TypeError: boom')];
    const html = renderToStaticMarkup(<TestTable tests={tests} lineOf={(x) => ({ line: x.line + 10, known: x.line === 3 })} />);
    expect(html).not.toContain('test-shared');
    expect(html).toContain('<span class="test-msg">assertion failed</span>');
    expect(html).toContain('<span class="test-msg">TypeError: boom</span>');
    expect(count(html, 'console.assert(f(2) === 2);')).toBe(1);
    expect(html).toContain('>12*<');
    expect(html).toContain('>13<');
  });
});

describe('Tests', () => {
  const record = { tests_passed: 0, tests_total: 3, message: SYNTAX } as RolloutRecord;
  it("does not repeat the run's message when the shared failure says it", () => {
    const html = renderToStaticMarkup(
      <Tests tests={brokenTests} edited={false} record={record} prompt={'function f(x) {\n'} entryPoint="f" />,
    );
    expect(count(html, SYNTAX)).toBe(1);
    expect(html).toContain('data-testid="rollout-tests"');
    expect(html).toContain('Tests: 0/3 passed');
  });
  it("keeps the run's message otherwise, and takes a test id", () => {
    const tests = [t(1, 'passed'), t(2, 'error', 'RangeError: too deep')];
    const html = renderToStaticMarkup(
      <Tests
        tests={tests}
        edited={false}
        record={{ ...record, message: 'RangeError: too deep' }}
        prompt=""
        entryPoint={undefined}
        testId="mine"
      />,
    );
    expect(html).toContain('<p class="rv-note">RangeError: too deep</p>');
    expect(html).toContain('data-testid="mine"');
  });
});
