/**
 * `coderl bench onnx --browser`: the race with ORT's webgpu provider, which runs in a browser
 * only. Serves the built app (dist/, `npm run build` first) with Vite's preview server on
 * 127.0.0.1, opens it in Debian's Chromium headless with WebGPU (playwright-core; SwiftShader on
 * GPU-less machines), runs the Benchmarks panel's "ONNX race" and returns its result.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { OnnxRaceResult, RacePreset } from '../src/perf/onnx';
import chromiumArgs from './chromium-args.json';

/** As e2e/browser.ts: only --enable-unsafe-webgpu matters for WebGPU; the rest keep Chromium quiet and offline. */
const CHROMIUM_ARGS: string[] = chromiumArgs;

export interface BrowserRaceOptions {
  preset: RacePreset;
  /** the repository root (holds dist/) */
  root: string;
  chromium?: string;
  timeoutMs?: number;
  say?: (m: string) => void;
}

export async function browserOnnxRace(o: BrowserRaceOptions): Promise<{ adapter: string; result: OnnxRaceResult }> {
  const say = o.say ?? (() => {});
  const chromiumPath = o.chromium ?? process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(join(o.root, 'dist/index.html'))) throw new Error(`${join(o.root, 'dist')} holds no built app: run npm run build first`);
  if (!existsSync(chromiumPath))
    throw new Error(`Chromium not found at ${chromiumPath}: apt-get install -y chromium, or set CHROMIUM_PATH`);
  const [{ preview }, { chromium }] = await Promise.all([import('vite'), import('playwright-core')]);
  const server = await preview({ root: o.root, logLevel: 'warn', preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false } });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS, headless: true });
  try {
    const url = server.resolvedUrls?.local[0];
    if (!url) throw new Error('vite preview did not report a local URL');
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    say(`opening ${url} in ${chromiumPath}`);
    await page.goto(url);
    const status = page.getByTestId('gpu-status');
    await page.waitForFunction(
      () =>
        /ready|unavailable|check-failed|lost/.test(document.querySelector('[data-testid="gpu-status"]')?.getAttribute('data-state') ?? ''),
      null,
      { timeout: 120_000 },
    );
    if ((await status.getAttribute('data-state')) !== 'ready')
      throw new Error(`the page's WebGPU device is not ready (${await status.getAttribute('data-state')})`);
    const race = page.getByTestId('onnx-race');
    await race.getByTestId('onnx-race-preset').selectOption(o.preset);
    say(`racing ${o.preset} in the page (our engine, ORT webgpu, ORT wasm)`);
    await race.getByTestId('onnx-race-run').click();
    await page.waitForFunction(
      () => /done|error/.test(document.querySelector('[data-testid="onnx-race"]')?.getAttribute('data-state') ?? ''),
      null,
      { timeout: o.timeoutMs ?? 600_000, polling: 1000 },
    );
    if ((await race.getAttribute('data-state')) === 'error')
      throw new Error(`the race failed in the page: ${await race.getByTestId('onnx-race-error').textContent()}`);
    const result = JSON.parse((await race.getAttribute('data-result'))!) as OnnxRaceResult;
    const adapter = await page.evaluate(async () => {
      const a = await navigator.gpu?.requestAdapter();
      return a ? `${a.info.vendor} ${a.info.architecture} ${a.info.description}`.trim() : 'none';
    });
    if (errors.length) say(`page errors: ${errors.join('; ')}`);
    return { adapter: `${adapter} (Chromium)`, result };
  } finally {
    await browser.close();
    await server.close();
  }
}
