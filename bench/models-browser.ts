/**
 * `coderl bench models --ort webgpu`: ORT's webgpu provider runs in a browser only, so the whole
 * bench runs in one page of Debian's headless Chromium with WebGPU (playwright-core; SwiftShader
 * on GPU-less machines): bench/models-page.ts bundled with esbuild (WGSL as text), served with
 * onnxruntime-web's dist/ (its .wasm) from 127.0.0.1 by a small node:http server. No build of the
 * app is needed; the repository root must be the working directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { ModelsBenchOptions, ModelsBenchResult } from '../src/perf/models';
import chromiumArgs from './chromium-args.json';

const CHROMIUM_ARGS: string[] = chromiumArgs;

export interface BrowserModelsOptions {
  options: ModelsBenchOptions;
  /** the repository root (holds bench/models-page.ts and node_modules) */
  root: string;
  chromium?: string;
  /** the whole run (default 2 h: full shapes on a software adapter are slow) */
  timeoutMs?: number;
  say?: (m: string) => void;
}

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>coderl bench models</title></head>
<body><script type="module" src="/page.mjs"></script></body></html>`;

/** Bundles the page: everything inside (our engine, the exporter, onnxruntime-web's JS). */
async function bundlePage(root: string): Promise<Uint8Array> {
  const entry = join(root, 'bench/models-page.ts');
  if (!existsSync(entry)) throw new Error(`${entry} not found: run coderl bench models from the repository root`);
  const esbuild = await import('esbuild');
  const r = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    loader: { '.wgsl': 'text' },
    logLevel: 'error',
    absWorkingDir: root,
  });
  return r.outputFiles[0]!.contents;
}

function serve(page: Uint8Array, ortDist: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (type: string, body: Uint8Array | string) => {
      res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
    if (path === '/') return send('text/html', PAGE);
    if (path === '/page.mjs') return send('text/javascript', page);
    const name = path.replace(/^\/(ort\/)?/, '');
    if (/^ort-wasm[\w.-]*\.(wasm|mjs)$/.test(name) && existsSync(join(ortDist, name)))
      return send(name.endsWith('.wasm') ? 'application/wasm' : 'text/javascript', readFileSync(join(ortDist, name)));
    if (path === '/favicon.ico') return void res.writeHead(204).end();
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      if (!a || typeof a === 'string') return reject(new Error('no server address'));
      resolve({ server, url: `http://127.0.0.1:${a.port}/` });
    });
  });
}

export async function browserModelsBench(o: BrowserModelsOptions): Promise<ModelsBenchResult> {
  const say = o.say ?? (() => {});
  const chromiumPath = o.chromium ?? process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromiumPath))
    throw new Error(
      `Chromium not found at ${chromiumPath}: apt-get install -y chromium, or set CHROMIUM_PATH (or run ours alone: --ort none)`,
    );
  const ortDist = join(o.root, 'node_modules/onnxruntime-web/dist');
  if (!existsSync(join(ortDist, 'ort.bundle.min.mjs'))) throw new Error(`${ortDist} is missing (npm ci)`);
  say('bundling bench/models-page.ts');
  const page = await bundlePage(o.root);
  const { chromium } = await import('playwright-core');
  const { server, url } = await serve(page, ortDist);
  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS, headless: true });
  try {
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    tab.on('console', (m) => {
      const t = m.text();
      if (t.startsWith('[bench] ')) say(t.slice(8));
      else if (m.type() === 'error') errors.push(t);
    });
    say(`opening ${url} in ${chromiumPath}`);
    await tab.goto(url);
    await tab.waitForFunction(() => typeof window.coderlModelsBench === 'function', null, { timeout: 60_000 });
    const timeoutMs = o.timeoutMs ?? 2 * 3600_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const result = await Promise.race([
      tab.evaluate((opts) => window.coderlModelsBench!(opts), o.options),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the page did not finish within ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    if (errors.length) say(`page errors: ${errors.slice(0, 5).join('; ')}`);
    return result;
  } finally {
    await browser.close();
    await new Promise((r) => server.close(r));
  }
}
