#!/usr/bin/env node
/**
 * The README's screenshot: the app mid-run, docs/screenshot.png.
 *
 *   npm run build && node scripts/screenshot.mjs [--out docs/screenshot.png] [--size 1440x900] [--view curves|rollouts]
 *                                                [--also 1280x720[@curves|@rollouts]=/tmp/shot.png ...]
 *
 * Serves a copy of the built app (dist/) with Vite's preview server on 127.0.0.1 (as
 * e2e/serve.ts does), opens it in Debian's headless Chromium with WebGPU (SwiftShader on GPU-less
 * machines; the flags of e2e/browser.ts), starts a small run of the `tiny` preset in the
 * Experiment panel (overrides shrink it to a few minutes on SwiftShader, as e2e/inspect.e2e.ts
 * does), waits until PPO has finished WANT_ITERATIONS iterations (the run goes on), picks the most
 * presentable rollout of those iterations in the Rollouts panel, so the Code panel's Rollout tab
 * shows it in Monaco with its per-token heatmap, folds the scratch Reward panel (the Code panel
 * grows into its room) and takes a viewport screenshot. `--also WxH=PATH` (repeatable) resizes
 * the same page afterwards and takes another. About 3 to 5 minutes on 2 CPU cores.
 *
 * The middle column cannot show both of its panels at once: at 1440 px the Training curves stack
 * their ten charts in one column, some 2,000 px, above the Rollouts panel. `--view curves` (the
 * default) shows the top of the curves (SFT loss, reward, pass rate), `--view rollouts` the
 * Rollouts panel (the what-if weights and the rollout table, the picked row highlighted).
 *
 * Exits non-zero, saying which step failed, on any failure or after TIMEOUT_MS; a screenshot of
 * the page at that moment goes to $TMPDIR/screenshot.failed.png. The run is seeded: the same
 * build draws the same picture.
 *
 * Plain Node (no vitest): the e2e helpers import vitest, so the little they do is repeated here.
 * CHROMIUM_PATH overrides /usr/bin/chromium.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { preview } from 'vite';
import chromiumArgs from '../bench/chromium-args.json' with { type: 'json' };

const ROOT = join(import.meta.dirname, '..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The flags of e2e/browser.ts: headless WebGPU, nothing fetched from the network. */
const CHROMIUM_ARGS = chromiumArgs;
const TIMEOUT_MS = 8 * 60_000;
const RUN = 'readme-demo';
/** PPO iterations finished before the picture is taken (of ITERATIONS in the run). */
const WANT_ITERATIONS = 5;
const ITERATIONS = 10;

/**
 * The `tiny` preset shrunk to a miniature (src/rl/testing.ts MINI_RUN, widened as in
 * e2e/inspect.e2e.ts): SFT just long enough to write code-like completions, a few samples per
 * prompt, no held-out evaluation between PPO iterations; more iterations than the picture waits
 * for, so the run is still going when it is taken.
 */
const OVERRIDES = {
  model: { nLayer: 1, dModel: 32, nHead: 2, contextLength: 96, vocabSize: 320 },
  tasks: { families: ['spec'], heldoutShare: 0.1, rlShare: 0.1 },
  sft: { maxSteps: 80, evalEvery: 40, batch: 8, lr: 0.01 },
  rm: { enabled: false, weight: 0.1 },
  rl: {
    algo: 'ppo',
    groupStd: true,
    kl: { coef: 0.02 },
    iterations: ITERATIONS,
    promptsPerIteration: 3,
    samplesPerPrompt: 4,
    maxNewTokens: 16,
    minibatch: 6,
    epochs: 1,
    evalEvery: 1000, // no held-out evaluation between iterations: it would double their time
  },
  eval: { samples: 1, k: [1], maxNewTokens: 16 },
};

const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: join(ROOT, 'docs', 'screenshot.png') },
    size: { type: 'string', default: '1440x900' },
    view: { type: 'string', default: 'curves' },
    also: { type: 'string', multiple: true, default: [] },
  },
});

function parseSize(s) {
  const m = /^(\d+)x(\d+)$/.exec(s);
  if (!m) fail(`not a size (WxH): ${s}`);
  return { width: Number(m[1]), height: Number(m[2]) };
}

function fail(message) {
  console.error(`screenshot: ${message}`);
  process.exit(1);
}

const VIEWS = ['curves', 'rollouts'];
function parseView(v) {
  if (!VIEWS.includes(v)) fail(`--view is one of ${VIEWS.join(', ')}, got ${v}`);
  return v;
}
const size = parseSize(args.size);
const view = parseView(args.view);
const extra = args.also.map((a) => {
  const m = /^(\d+x\d+)(?:@(\w+))?=(.+)$/.exec(a);
  if (!m) fail(`--also wants WxH[@view]=PATH, got ${a}`);
  return { size: parseSize(m[1]), view: m[2] ? parseView(m[2]) : view, path: resolve(m[3]) };
});
const out = resolve(args.out);

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
let step = 'starting';
const log = (s) => {
  step = s;
  console.log(`[${elapsed()}] ${s}`);
};

/** Polls `probe` until it returns a truthy value, or throws after `ms` naming what it waited for. */
async function until(what, probe, ms, interval = 500) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}${last ? ` (${last.message})` : ''}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

let served;
let server;
let browser;
let page;
const pageErrors = [];

async function cleanup() {
  await browser?.close().catch(() => undefined);
  await server?.close().catch(() => undefined);
  if (served) rmSync(served, { recursive: true, force: true });
}

const watchdog = setTimeout(async () => {
  console.error(`screenshot: timed out after ${TIMEOUT_MS / 60_000} min, at step: ${step}`);
  await failedShot();
  await cleanup();
  process.exit(1);
}, TIMEOUT_MS);

async function failedShot() {
  if (!page) return;
  const path = join(tmpdir(), 'screenshot.failed.png');
  await page
    .screenshot({ path, timeout: 10_000 })
    .then(() => console.error(`screenshot: the page at that moment: ${path}`))
    .catch(() => undefined);
}

/** The run's error, if the Experiment panel shows one: a run that fails fails the script at once. */
async function runError() {
  const e = page.getByTestId('exp-error');
  if (await e.count()) throw new Error(`the run failed: ${await e.textContent()}`);
}

async function main() {
  if (!existsSync(join(ROOT, 'dist', 'index.html'))) throw new Error('dist/index.html is missing: build the app first (npm run build)');
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM}. Install it: apt-get install -y chromium (or set CHROMIUM_PATH)`);

  // a copy of dist/, so a rebuild while the run goes (the lazy chunks get new names) breaks nothing
  log('serving a copy of dist/');
  served = mkdtempSync(join(tmpdir(), 'coderl-screenshot-'));
  cpSync(join(ROOT, 'dist'), served, { recursive: true });
  const html = readFileSync(join(served, 'index.html'), 'utf8');
  for (const [, asset] of html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)) {
    if (!existsSync(join(served, asset))) throw new Error(`dist/ is incomplete (${asset} is missing): is a build running? Build again`);
  }
  server = await preview({
    root: ROOT,
    logLevel: 'warn',
    build: { outDir: served },
    preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a local URL');

  log(`opening ${url} in Chromium at ${size.width}x${size.height}`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  const context = await browser.newContext({ viewport: size });
  page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && pageErrors.push(`console.error: ${m.text()}`));
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  await page.goto(url);
  await until(
    'the GPU to be ready',
    async () => {
      const state = await page.getByTestId('gpu-status').getAttribute('data-state');
      if (state === 'unavailable' || state === 'error') throw new Error(`WebGPU is ${state} here`);
      return state === 'ready';
    },
    60_000,
  );

  log('starting the run');
  await page.getByTestId('exp-preset').selectOption('tiny');
  await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(OVERRIDES));
  await page.getByLabel('Run name').fill(RUN);
  const overridesError = page.getByTestId('exp-overrides-error');
  if (await overridesError.count()) throw new Error(`the overrides were refused: ${await overridesError.textContent()}`);
  await until('the Start button', () => page.getByTestId('exp-start').isEnabled(), 30_000, 250);
  await page.getByTestId('exp-start').click();
  const status = page.getByTestId('exp-status');
  await until('the run to start', async () => (await status.textContent()) === 'running', 60_000);

  log('SFT');
  // a line of the run's progress every 30 s, so a slow machine shows where the time goes
  const ticker = setInterval(() => {
    page
      .getByTestId('exp-message')
      .textContent({ timeout: 2000 })
      .then((m) => console.log(`[${elapsed()}]   ${m}`))
      .catch(() => undefined);
  }, 30_000);
  ticker.unref();
  const phase = (p) => page.locator(`.exp-phases li[data-phase="${p}"]`).getAttribute('data-state');
  await until(
    'the PPO phase',
    async () => {
      await runError();
      const s = await status.textContent();
      if (s !== 'running') throw new Error(`the run is ${s} before PPO`);
      return (await phase('ppo')) === 'active';
    },
    6 * 60_000,
    1000,
  );

  log(`PPO: waiting for ${WANT_ITERATIONS} iterations`);
  const rewardPoints = async () => Number(await page.getByTestId('chart-reward').getAttribute('data-points'));
  await until(
    `${WANT_ITERATIONS} PPO iterations on the reward chart`,
    async () => {
      await runError();
      const s = await status.textContent();
      if (s !== 'running') throw new Error(`the run is ${s}`);
      return (await rewardPoints()) >= WANT_ITERATIONS;
    },
    5 * 60_000,
    1000,
  );

  // the Rollouts panel follows the live run to its latest iteration while nothing is selected
  log('selecting a rollout');
  const rows = page.getByTestId('rollout-row');
  const iteration = page.getByTestId('rollouts-iteration');
  await until('the rollout list', async () => (await rows.count()) > 0, 60_000);
  /** Opens a stored iteration in the Rollouts panel and waits for its rows. */
  const openIteration = async (it) => {
    await iteration.selectOption(it);
    await until(
      `iteration ${it} in the rollout list`,
      async () =>
        (await iteration.inputValue()) === it &&
        (await page.getByTestId('rollouts').getAttribute('data-status')) === 'ready' &&
        (await rows.count()) > 0,
      30_000,
      250,
    );
  };
  // the rollout most worth looking at, over the iterations so far: most tests passed, then
  // parseable, then one that ran (a failed test rather than an error), then the longest completion
  const bestRow = () =>
    rows.evaluateAll((els) => {
      const score = (e) => {
        const cells = [...e.querySelectorAll('td')].map((td) => td.textContent ?? '');
        const passed = Number(/^(\d+)\//.exec(cells[4] ?? '')?.[1] ?? 0);
        const ast = cells[5] === 'yes' ? 1 : 0;
        const ran = cells[3] === 'fail' || cells[3] === 'pass' ? 1 : 0;
        const length = Math.min(200, (e.querySelector('.rb-code code')?.getAttribute('title') ?? '').trim().length);
        return passed * 1000 + ast * 400 + ran * 300 + length;
      };
      let best = { index: 0, score: -1 };
      for (const e of els) {
        const s = score(e);
        if (s > best.score) best = { index: Number(e.getAttribute('data-index')), score: s };
      }
      return best;
    });
  const iterations = (await iteration.locator('option').evaluateAll((os) => os.map((o) => o.value))).filter((v) => v !== '');
  let pick = { iteration: iterations[iterations.length - 1], index: 0, score: -1 };
  for (const it of iterations) {
    await openIteration(it);
    const b = await bestRow();
    if (b.score > pick.score) pick = { iteration: it, ...b };
  }
  console.log(`  rollout ${pick.index} of iteration ${pick.iteration} (of ${iterations.join(', ')})`);
  // fold the scratch Reward panel: the Code panel takes its height, the rollout's breakdown and tests included
  await page.getByTestId('panel-toggle-reward').click();
  // (a new iteration arriving while nothing is selected moves the list on to it: select again then)
  for (let attempt = 0; ; attempt++) {
    await openIteration(pick.iteration);
    await page.locator(`[data-testid="rollout-row"][data-index="${pick.index}"]`).click();
    if ((await iteration.inputValue()) === pick.iteration) break;
    if (attempt === 2) throw new Error(`the rollout list would not stay on iteration ${pick.iteration}`);
  }
  const rolloutView = page.getByTestId('rollout-view');
  await until('the rollout in Monaco with its heatmap', async () => (await rolloutView.locator('[class*="heat-"]').count()) > 0, 60_000);
  await runError();
  // let Monaco finish laying out (fonts, decorations, markers)
  await page.waitForTimeout(1500);
  const marks = await rolloutView.evaluate((e) => ({ ...e.dataset }));
  console.log(
    `  markers: ${Object.entries(marks)
      .filter(([k]) => k.startsWith('marker'))
      .map(([k, v]) => `${k.slice(6).toLowerCase()} ${v}`)
      .join(', ')}`,
  );

  /**
   * Each column scrolled to what the picture is about (clicks and fills scrolled them): the run's
   * phases in the setup column, the top of the curves (SFT loss, reward, pass rate) or the
   * Rollouts panel in the middle one, the rollout's view at the top of the code column.
   */
  const compose = async (view) => {
    await page.evaluate((view) => {
      // the setup column: the run's box whole at its foot, and at its top the first edge of the
      // Experiment panel (its own, a fieldset's, a section's) that leaves the box whole
      const setup = document.querySelector('.col.setup');
      const run = document.querySelector('[data-testid="exp-run"]');
      if (setup && run) {
        const y = (el) => el.getBoundingClientRect().top - setup.getBoundingClientRect().top + setup.scrollTop;
        const end = run.getBoundingClientRect().bottom - setup.getBoundingClientRect().top + setup.scrollTop + 12;
        const edges = [
          ...document.querySelectorAll('[data-testid="panel-experiment"], [data-testid="panel-experiment"] :is(fieldset, details)'),
        ];
        const top = edges.map((e) => y(e) - 6).find((t) => end - t <= setup.clientHeight);
        setup.scrollTop = top ?? end - setup.clientHeight;
      }
      const middle = document.querySelector('.col.middle');
      const rollouts = document.querySelector('[data-testid="panel-rollouts"]');
      if (middle) {
        middle.scrollTop = 0;
        if (view === 'rollouts' && rollouts) middle.scrollTop = rollouts.getBoundingClientRect().top - middle.getBoundingClientRect().top;
      }
      const overrides = document.querySelector('[data-testid="exp-overrides"]');
      if (overrides) overrides.scrollTop = 0; // the JSON from its start
      const code = document.querySelector('.col.code');
      if (code) code.scrollTop = 0;
    }, view);
    await page.mouse.move(0, 0); // no hover states
    await page.waitForTimeout(300);
  };

  mkdirSync(dirname(out), { recursive: true });
  await compose(view);
  await page.screenshot({ path: out, fullPage: false });
  log(`wrote ${out}`);
  for (const e of extra) {
    await page.setViewportSize(e.size);
    await page.waitForTimeout(1500);
    await compose(e.view);
    mkdirSync(dirname(e.path), { recursive: true });
    await page.screenshot({ path: e.path, fullPage: false });
    log(`wrote ${e.path} (${e.size.width}x${e.size.height}, ${e.view})`);
  }
  const itersDone = await rewardPoints();
  console.log(`PPO iterations plotted: ${itersDone}, run status: ${await status.textContent()}`);
  if (pageErrors.length) console.warn(`console errors on the page:\n  ${pageErrors.join('\n  ')}`);
}

try {
  await main();
  clearTimeout(watchdog);
  await cleanup();
  console.log(`done in ${elapsed()}`);
} catch (e) {
  clearTimeout(watchdog);
  console.error(`screenshot: failed at step "${step}" after ${elapsed()}: ${e instanceof Error ? e.message : String(e)}`);
  if (pageErrors.length) console.error(`console errors on the page:\n  ${pageErrors.join('\n  ')}`);
  await failedShot();
  await cleanup();
  process.exit(1);
}
