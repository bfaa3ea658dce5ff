/**
 * Launches Debian's Chromium headless with WebGPU (SwiftShader on GPU-less machines) and
 * records every console error and page error, so a test can require a clean console.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, inject } from 'vitest';
import chromiumArgs from '../bench/chromium-args.json';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(import.meta.dirname, '..', 'test-results', 'screenshots');

/**
 * How long a terminated worker may take to leave `page.workers()`: one blocked in a native call
 * (a SwiftShader submit, a wasm compile) ends when that call returns, and on two loaded CI cores
 * that has taken over 10 s.
 */
export const WORKER_END_MS = 60_000;

/** Headless WebGPU (only --enable-unsafe-webgpu matters for it), quiet and offline; in bench/chromium-args.json, shared with coderl bench and scripts/. */
export const CHROMIUM_ARGS: string[] = chromiumArgs;

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}. Install it: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

export interface WatchedPage {
  page: Page;
  /** console messages of type error, and uncaught page errors */
  errors: string[];
  screenshot(name: string): Promise<string>;
}

export async function openPage(browser: Browser, url: string, init?: () => void): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => {
    // A reload or navigation cancels the requests still in flight (lazy chunks, fonts): not a failure.
    if (r.failure()?.errorText === 'net::ERR_ABORTED') return;
    errors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`);
  });
  if (init) await page.addInitScript(init);
  await page.goto(url);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    page,
    errors,
    async screenshot(name) {
      const path = join(SCREENSHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
  };
}

/**
 * One Chromium for the calling test file: launched before its tests and closed after them.
 * Returns a function that opens a watched page on the app this e2e run serves (serve.ts).
 */
export function chromiumSession(): (init?: () => void) => Promise<WatchedPage> {
  let browser: Browser | undefined;
  const url = inject('baseUrl');
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return (init) => {
    if (!browser) throw new Error('chromiumSession: the browser is not launched yet (open pages inside tests)');
    return openPage(browser, url, init);
  };
}
