/**
 * No network from the browser's sandbox, and no page lost to one failing panel.
 *
 * Network: a TCP listener and a WebSocket listener on 127.0.0.1 count every connection while the
 * Reward panel scores every route of the network corpus (Python in Pyodide, JavaScript in QuickJS,
 * in the app's own sandbox workers); each gets no credit and a verdict with a message, the
 * listeners see nothing, and the reference completions scored after them still pass. The page is
 * served with its Content-Security-Policy, which the sandbox worker gets too.
 *
 * State: the state writer (adversarial/state.ts), then a reader that passes only if it finds what
 * the writer left, in the Reward panel's worker, Python and JavaScript.
 *
 * Panels: a render fault injected into one panel (coderlPanelFault) shows that panel's message
 * with a Retry while the rest of the page keeps working; Retry restores it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tcpListener, wsListener, type Listener } from '../src/sandbox/adversarial/listeners';
import { jsNetworkAttacks, pythonNetworkAttacks } from '../src/sandbox/adversarial/network';
import type { Attack } from '../src/sandbox/adversarial/corpus';
import { JS_STATE_WRITER, PY_STATE_WRITER, jsStateReader, pyStateReader } from '../src/sandbox/adversarial/state';
import { chromiumSession } from './browser';
import { score, statuses } from './scorer-fixture';

const open = chromiumSession();
let tcp: Listener;
let ws: Listener;

beforeAll(async () => {
  [tcp, ws] = await Promise.all([tcpListener(), wsListener()]);
});
afterAll(async () => {
  await Promise.all([tcp, ws].map((l) => l?.close()));
});

describe('the Reward panel scores hostile programs without network', () => {
  test('every route of the corpus, Python and JavaScript: no connection, no credit, a verdict; the references pass after', async () => {
    const { page, errors, screenshot } = await open();
    await page.getByTestId('panel-reward').waitFor();
    const csp = await page.evaluate(async () => (await fetch(location.href)).headers.get('content-security-policy'));
    expect(csp).toBe("connect-src 'self' data: blob:");

    const rows: string[] = [];
    const run = async (language: 'python' | 'javascript', attacks: Attack[]): Promise<void> => {
      await page.getByTestId('scorer-language').selectOption(language);
      for (const a of attacks) {
        const { verdict } = await score(page, a.completion);
        const message =
          ((await page.getByTestId('scorer-message').count()) ? await page.getByTestId('scorer-message').textContent() : '') ?? '';
        rows.push(`${language} ${a.name}: ${verdict} (${message.slice(0, 90)})`);
        expect((await statuses(page)).includes('passed'), a.name).toBe(false);
        // in Chromium some routes fail earlier or later than in Node (JSPI exists here): either way no credit and a reason
        expect(['tampering', 'error'], `${a.name}: ${verdict}`).toContain(verdict);
        expect(message.length, a.name).toBeGreaterThan(0);
        if (language === 'python' && verdict === 'tampering' && a.verdict === 'tampering')
          expect(message, a.name).toMatch(/reach the network|run a command on the host/);
      }
      await page.getByRole('button', { name: 'Reset to reference' }).click();
      expect((await score(page, null)).verdict, `${language} reference after the attacks`).toBe('passed');
    };
    await run('python', pythonNetworkAttacks(tcp.port, ws.port));
    await run('javascript', jsNetworkAttacks(tcp.port, ws.port));
    console.log(rows.join('\n'));
    await new Promise((r) => setTimeout(r, 1000)); // anything opened asynchronously has arrived by now
    expect({ tcp: tcp.count(), ws: ws.count() }).toEqual({ tcp: 0, ws: 0 });
    await screenshot('network-after');
    // the browser logs a refused connection (CSP) as a console error: there must be none, since none was tried
    expect(errors).toEqual([]);
  });
});

describe("no state passes between programs in the browser's sandbox", () => {
  test('a Python and a JavaScript writer, then readers that pass only if they find what was left: they find nothing', async () => {
    const { page, errors } = await open();
    await page.getByTestId('panel-reward').waitFor();
    await page.getByTestId('scorer-language').selectOption('python');
    expect((await score(page, PY_STATE_WRITER)).verdict).toBe('tampering'); // it patched modules too
    const right = "(lambda s: s == s[::-1])(''.join(c for c in text.lower() if c.isalnum()))";
    expect(await score(page, pyStateReader(right))).toMatchObject({ verdict: 'failed' });
    expect((await statuses(page)).filter((x) => x === 'passed')).toHaveLength(0);
    expect(await page.getByTestId('scorer-output').textContent()).toBe('[]\n'.repeat(6));
    await page.getByTestId('scorer-language').selectOption('javascript');
    expect((await score(page, JS_STATE_WRITER)).verdict).toBe('tampering');
    expect(
      (
        await score(
          page,
          jsStateReader(
            "text.toLowerCase().replace(/[^a-z0-9]/g, '') === text.toLowerCase().replace(/[^a-z0-9]/g, '').split('').reverse().join('')",
          ),
        )
      ).verdict,
    ).toBe('failed');
    expect((await statuses(page)).filter((x) => x === 'passed')).toHaveLength(0);
    await page.getByRole('button', { name: 'Reset to reference' }).click();
    expect((await score(page, null)).verdict).toBe('passed');
    expect(errors).toEqual([]);
  });
});

describe('one failing panel does not take the page down', () => {
  test('a render fault in the Reward panel shows its message and a Retry; the other panels keep working; Retry restores it', async () => {
    const { page, errors, screenshot } = await open();
    await page.getByTestId('panel-reward').waitFor();
    await page.getByTestId('scorer').waitFor();
    await page.evaluate(() => (window as unknown as { coderlPanelFault(id: string, on?: boolean): string[] }).coderlPanelFault('reward'));
    const failed = page.getByTestId('panel-error-reward');
    await failed.waitFor({ timeout: 10_000 });
    expect(await failed.getByTestId('panel-error-message').textContent()).toBe(
      'injected render fault in the reward panel (coderlPanelFault)',
    );
    expect(await failed.textContent()).toMatch(/^The Reward panel failed: injected render fault/);
    expect(await page.getByTestId('scorer').count()).toBe(0);
    await screenshot('panel-fault');

    // the rest of the page is alive: another panel folds and unfolds, the GPU panel still reports
    for (const id of ['gpu', 'experiment', 'checkpoints', 'eval', 'curves', 'rollouts', 'code']) {
      expect(await page.getByTestId(`panel-${id}`).isVisible(), id).toBe(true);
      expect(await page.getByTestId(`panel-error-${id}`).count(), id).toBe(0);
    }
    const toggle = page.getByTestId('panel-toggle-bench');
    await toggle.click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    expect(await page.getByRole('button', { name: 'Run benchmark' }).isVisible()).toBe(true);
    await toggle.click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');

    // Retry while the fault is still set fails again, with the same message; once it is cleared Retry restores the panel
    await page.getByTestId('panel-retry-reward').click();
    await failed.waitFor();
    await page.evaluate(() =>
      (window as unknown as { coderlPanelFault(id: string, on?: boolean): string[] }).coderlPanelFault('reward', false),
    );
    await page.getByTestId('panel-retry-reward').click();
    await page.getByTestId('scorer').waitFor({ timeout: 10_000 });
    expect(await failed.count()).toBe(0);
    expect((await score(page, null)).verdict).toBe('passed');
    await screenshot('panel-fault-retried');
    // what the injected fault logged (React and the boundary report it), and nothing else
    expect(errors.filter((e) => !/injected render fault|The Reward panel failed/.test(e))).toEqual([]);
  });
});
