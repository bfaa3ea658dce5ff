#!/usr/bin/env node
/**
 * How long a run takes in the app, phase by phase, on a chosen backend: the README's "Backends"
 * figures.
 *
 *   npm run build && node scripts/app-timing.mjs [--preset quick] [--backend auto|cpu|webgpu] [--seed 1]
 *                                                [--set JSON] [--limit SECONDS]
 *
 * Serves dist/ with Vite's preview server on 127.0.0.1, opens it in Debian's headless Chromium
 * with WebGPU (SwiftShader on GPU-less machines; the flags of e2e/browser.ts), picks the preset,
 * backend and overrides in the Experiment panel, presses Start and watches the phase list: when
 * each phase becomes active and done. Prints one line per phase and a JSON line. `--limit` stops
 * watching after that many seconds (for a backend too slow to finish, e.g. webgpu on
 * SwiftShader): the phase in flight is reported with its progress and its rate (SFT: steps/s).
 * Compare with `npx coderl train --preset P --backend cpu` on the same machine.
 */
import { mkdtempSync, rmSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { preview } from 'vite';
import chromiumArgs from '../bench/chromium-args.json' with { type: 'json' };

const ROOT = join(import.meta.dirname, '..');
const { values: o } = parseArgs({
  options: {
    preset: { type: 'string', default: 'quick' },
    backend: { type: 'string', default: 'auto' },
    seed: { type: 'string', default: '1' },
    set: { type: 'string', default: '{}' },
    limit: { type: 'string', default: '1800' },
  },
});
const limitMs = Number(o.limit) * 1000;

const dir = mkdtempSync(join(tmpdir(), 'coderl-timing-'));
cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
const server = await preview({ root: dir, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'error' });
const url = server.resolvedUrls?.local[0];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: chromiumArgs, // the flags of e2e/browser.ts
});
let code = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(url);
  await page.waitForFunction(() => document.querySelector('[data-testid="gpu-status"]')?.getAttribute('data-state') !== 'starting', null, {
    timeout: 60_000,
  });
  await page.getByTestId('exp-preset').selectOption(o.preset);
  await page.getByTestId('exp-backend').selectOption(o.backend);
  await page.getByLabel('Overrides (JSON)').fill(o.set);
  await page.getByTestId('exp-seed').fill(o.seed);
  await page.getByLabel('Run name').fill(`timing-${Date.now()}`);
  await page.waitForFunction(() => !document.querySelector('[data-testid="exp-start"]')?.hasAttribute('disabled'), null, {
    timeout: 30_000,
  });
  const estimate = await page.getByTestId('exp-estimate').getAttribute('data-seconds');
  const t0 = Date.now();
  await page.getByTestId('exp-start').click();
  /** phase -> [ms active, ms done] from Start */
  const seen = {};
  let status = 'running';
  let last = {};
  while (Date.now() - t0 < limitMs) {
    await page.waitForTimeout(250);
    const now = Date.now() - t0;
    last = await page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll('.exp-phases li')].map((li) => [
          li.getAttribute('data-phase'),
          { state: li.getAttribute('data-state'), value: li.querySelector('progress')?.value ?? 0 },
        ]),
      ),
    );
    for (const [p, { state }] of Object.entries(last)) {
      seen[p] ??= {};
      if (state === 'active' && seen[p].active === undefined) seen[p].active = now;
      if (state === 'done' && seen[p].done === undefined) seen[p].done = now;
    }
    status = (await page.getByTestId('exp-status').textContent()) ?? '';
    if (/^(done|error|stopped)$/.test(status)) break;
  }
  const backend = /on the (\w+) backend/.exec((await page.getByTestId('exp-run').textContent()) ?? '')?.[1];
  const elapsed = (Date.now() - t0) / 1000;
  const phases = {};
  for (const [p, s] of Object.entries(seen)) {
    if (s.active === undefined) continue;
    const end = s.done ?? Date.now() - t0;
    phases[p] = { seconds: (end - s.active) / 1000, finished: s.done !== undefined, progress: last[p]?.value ?? 0 };
    const rate = p === 'sft' && !s.done ? ` (${(last[p].value * 100).toFixed(1)}% of its steps in flight)` : '';
    console.log(`${p.padEnd(11)} ${phases[p].seconds.toFixed(1).padStart(7)} s${s.done === undefined ? ' so far' : ''}${rate}`);
  }
  console.log(`${o.preset} on ${backend}: ${status} after ${elapsed.toFixed(1)} s (estimated ${estimate} s before Start)`);
  console.log(JSON.stringify({ preset: o.preset, backend, status, seconds: elapsed, estimate: Number(estimate), phases }));
  if (status === 'error') code = 1;
} catch (e) {
  console.error(`app-timing: ${e?.stack ?? e}`);
  code = 1;
} finally {
  await browser.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
