/**
 * The Experiment panel in Chromium: overrides are validated as `coderl train --set` validates
 * them, a miniature run goes through every phase on WebGPU (SwiftShader here) with a progress
 * bar each, ends with the summary, and its run directory stays in OPFS across a reload; a
 * stopped run resumes where it stopped (in the IndexedDB fallback, which holds the same files).
 * The pipeline runs in a worker: the page's main thread stays responsive through every phase, and
 * a render fault in the panel itself leaves the run going (Retry shows it again).
 */
import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumSession, WORKER_END_MS } from './browser';
import { opfsFiles } from './run-fixture';
import { MINI_RUN } from '../src/rl/testing';

const open = chromiumSession();

const MINI = MINI_RUN;
const PHASES = ['setup', 'sft', 'sft-eval', 'rm-samples', 'rm', 'ppo', 'eval'];
const RUN = 'e2e-mini';

/**
 * The page's main thread by the phase active at the time: the longest gap between two ticks of a
 * 50 ms interval, the ticks, and the time spent in long tasks (over 50 ms: the Long Tasks API).
 */
type MainThread = Record<string, { ticks: number; maxGap: number; longTasks: number; longTaskMs: number }>;

/** Starts watching the page's main thread (see MainThread); `seen` reads what it has seen so far. */
async function watchMainThread(page: Page): Promise<{ seen(): Promise<MainThread> }> {
  await page.evaluate(() => {
    const w = window as unknown as { __mainThread: MainThread };
    const seen: MainThread = (w.__mainThread = {});
    const at = () => {
      const phase = document.querySelector('.exp-phases li[data-state="active"]')?.getAttribute('data-phase') ?? 'none';
      return (seen[phase] ??= { ticks: 0, maxGap: 0, longTasks: 0, longTaskMs: 0 });
    };
    let last = performance.now();
    setInterval(() => {
      const now = performance.now();
      const s = at();
      s.ticks++;
      s.maxGap = Math.max(s.maxGap, now - last);
      last = now;
    }, 50);
    new PerformanceObserver((list) => {
      const s = at();
      for (const e of list.getEntries()) {
        s.longTasks++;
        s.longTaskMs += e.duration;
      }
    }).observe({ type: 'longtask' });
  });
  return { seen: () => page.evaluate(() => (window as unknown as { __mainThread: MainThread }).__mainThread) };
}

/** The script paths of the page's dedicated workers (the run worker's is `/assets/run-worker-<hash>.js`). */
const workerPaths = (page: Page): string[] => page.workers().map((w) => new URL(w.url()).pathname);
const isRunWorker = (path: string) => /\/run-worker-[\w-]+\.js$/.test(path);

const value = async (page: Page, id: string): Promise<number> => Number(await page.getByTestId(id).getAttribute('data-value'));

describe('the Experiment panel in Chromium', () => {
  test('validates overrides, runs a miniature pipeline through every phase, and keeps the run in OPFS across a reload', async () => {
    const { page, errors, screenshot } = await open();
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    const overrides = page.getByLabel('Overrides (JSON)');
    const start = page.getByTestId('exp-start');
    const fieldError = page.getByTestId('exp-overrides-error');
    // on SwiftShader the automatic backend is cpu, and says why; this test runs the WGSL kernels, so it chooses webgpu
    const backend = page.getByTestId('exp-backend');
    expect(await backend.getAttribute('data-backend')).toBe('cpu');
    expect(await page.getByTestId('exp-backend-note').textContent()).toMatch(/is a software GPU: the run uses the cpu backend/);
    await backend.selectOption('webgpu');
    expect(await backend.getAttribute('data-backend')).toBe('webgpu');
    expect(await page.getByTestId('exp-backend-note').count()).toBe(0);
    await page.getByTestId('exp-preset').selectOption('tiny');

    // (1) an out-of-range override: the RlConfigError next to the field, Start disabled
    await overrides.fill('{"rl":{"clip":5}}');
    expect(await fieldError.textContent()).toBe('config.rl.clip: must be a number in [0.001, 0.999], got 5');
    expect(await overrides.getAttribute('aria-invalid')).toBe('true');
    expect(await overrides.getAttribute('aria-describedby')).toContain(await fieldError.getAttribute('id'));
    expect(await start.isDisabled()).toBe(true);
    await overrides.fill('{"rl": {');
    expect(await fieldError.textContent()).toMatch(/^not valid JSON: /);
    await overrides.fill('{"sft": {"steps": 3}}');
    expect(await fieldError.textContent()).toMatch(/config\.sft: unknown field "steps"/);
    expect(await start.isDisabled()).toBe(true);
    await screenshot('experiment-invalid');

    // (2) the miniature run: every phase's bar reaches its end, then the summary
    await overrides.fill(JSON.stringify(MINI));
    expect(await fieldError.count()).toBe(0);
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-files')).toBe('0');
    expect(await start.isEnabled()).toBe(true);
    const mainThread = await watchMainThread(page);
    const t0 = Date.now();
    await start.click();
    const status = page.getByTestId('exp-status');
    await expect.poll(() => status.textContent(), { timeout: 60_000 }).toBe('running');
    await expect
      .poll(() => page.getByTestId('exp-progress-sft').evaluate((p: HTMLProgressElement) => p.value), { timeout: 120_000 })
      .toBeGreaterThan(0);
    await screenshot('experiment-running');
    console.log(`workers while running: ${workerPaths(page).join(', ')}`);
    expect(workerPaths(page).filter(isRunWorker), 'the run worker').toHaveLength(1);

    // a render fault in the Experiment panel itself: its message shows, the run carries on in its
    // worker (the SFT bar moves on while the panel is down), and Retry brings the panel back to the live run
    const sftBefore = await page.getByTestId('exp-progress-sft').evaluate((p: HTMLProgressElement) => p.value);
    const fault = (on: boolean) =>
      page.evaluate(
        (v) => (window as unknown as { coderlPanelFault(id: string, on?: boolean): string[] }).coderlPanelFault('experiment', v),
        on,
      );
    await fault(true);
    await page.getByTestId('panel-error-experiment').waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('exp-status').count()).toBe(0);
    await screenshot('experiment-panel-fault');
    await new Promise((r) => setTimeout(r, 3000));
    expect(workerPaths(page).filter(isRunWorker), 'the run worker while its panel is down').toHaveLength(1);
    await fault(false);
    await page.getByTestId('panel-retry-experiment').click();
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toMatch(/^(running|done)$/);
    // what the user had entered is still there (the setup lives in the store, not in the panel)
    expect(await page.getByLabel('Run name').inputValue()).toBe(RUN);
    expect(JSON.parse(await overrides.inputValue())).toEqual(MINI);
    const sftAfter = await page.getByTestId('exp-progress-sft').evaluate((p: HTMLProgressElement) => p.value);
    console.log(`SFT progress across the panel fault: ${sftBefore.toFixed(3)} -> ${sftAfter.toFixed(3)}`);
    expect(sftAfter).toBeGreaterThanOrEqual(sftBefore); // the remounted panel shows the live run, not a fresh one
    await expect
      .poll(
        async () =>
          (await status.textContent()) === 'done' ||
          (await page.getByTestId('exp-progress-sft').evaluate((p: HTMLProgressElement) => p.value)) > sftBefore,
        { timeout: 240_000, interval: 1000 },
      )
      .toBe(true);
    await expect.poll(() => status.textContent(), { timeout: 480_000, interval: 1000 }).toMatch(/^(done|error)$/);
    const seconds = (Date.now() - t0) / 1000;
    console.log(
      `miniature run on ${await page
        .getByTestId('exp-run')
        .textContent()
        .then((t) => /on the (\w+) backend/.exec(t ?? '')?.[1])}: ${seconds.toFixed(1)} s`,
    );
    expect(
      await page.getByTestId('exp-error').count(),
      (await page
        .getByTestId('exp-error')
        .textContent()
        .catch(() => '')) ?? '',
    ).toBe(0);
    expect(await status.textContent()).toBe('done');
    expect(await page.getByTestId('exp-run').textContent()).toContain('on the webgpu backend');
    // the page stayed responsive: no 50 ms tick came more than a second late, PPO (GPU training) included
    const main = await mainThread.seen();
    console.log(
      `main thread by phase: ${Object.entries(main)
        .map(
          ([p, m]) =>
            `${p}: longest gap ${m.maxGap.toFixed(0)} ms (${m.ticks} ticks), ${m.longTasks} long tasks ${m.longTaskMs.toFixed(0)} ms`,
        )
        .join('; ')}`,
    );
    expect(main.ppo?.ticks ?? 0, 'ticks seen while PPO was active').toBeGreaterThanOrEqual(10);
    for (const [p, m] of Object.entries(main)) expect(m.maxGap, `longest gap while ${p} was active`).toBeLessThan(1000);
    await expect.poll(() => workerPaths(page).filter(isRunWorker), { timeout: WORKER_END_MS }).toEqual([]); // terminated when the run ended
    for (const p of PHASES) {
      const bar = page.getByRole('progressbar', {
        name: `${{ setup: 'Setup', sft: 'SFT', 'sft-eval': 'SFT evaluation', 'rm-samples': 'Reward-model samples', rm: 'Reward model', ppo: 'RL (GRPO/PPO)', eval: 'Final evaluation' }[p]} progress`,
        exact: true,
      });
      expect(await bar.evaluate((el: HTMLProgressElement) => el.value), p).toBe(1);
      expect(await page.locator(`.exp-phases li[data-phase="${p}"]`).getAttribute('data-state'), p).toBe(
        p.startsWith('rm') ? 'off' : 'done',
      );
    }
    const summary = {} as Record<string, number>;
    for (const id of ['exp-sft-heldout_pass1', 'exp-rl-heldout_pass1', 'exp-sft-train_pass1', 'exp-rl-train_pass1', 'exp-minutes'])
      summary[id] = await value(page, id);
    console.log(`summary: ${JSON.stringify(summary)}`);
    for (const [id, v] of Object.entries(summary)) {
      expect(Number.isFinite(v), id).toBe(true);
      expect(v, id).toBeGreaterThanOrEqual(0);
      if (id !== 'exp-minutes') expect(v, id).toBeLessThanOrEqual(1);
    }
    expect(summary['exp-minutes']).toBeGreaterThan(0);
    expect(await page.getByTestId('exp-rm').textContent()).toBe('Reward model: disabled');
    await screenshot('experiment-done');
    await page.getByTestId('panel-experiment').screenshot({ path: (await screenshot('experiment-done')).replace('.png', '-panel.png') });

    // (3) the run directory is in OPFS
    const files = await opfsFiles(page, RUN);
    for (const f of [
      'config.json',
      'tokenizer.json',
      'tasks/train.jsonl',
      'tasks/val.jsonl',
      'tasks/rl.jsonl',
      'tasks/heldout.jsonl',
      'sft.ckpt',
      'sft.json',
      'policy.ckpt',
      'ppo-state.json',
      'rollouts/iter-0001.jsonl',
      'metrics.jsonl',
      'summary.json',
      'state.json',
    ]) {
      expect(files, f).toContain(f);
    }
    const metrics = await page.evaluate(async (run) => {
      const root = await navigator.storage.getDirectory();
      const dir = await (await root.getDirectoryHandle('runs')).getDirectoryHandle(run);
      return (await (await dir.getFileHandle('metrics.jsonl')).getFile()).text();
    }, RUN);
    const stages = metrics
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { stage: string }).stage);
    expect(stages).toEqual(['sft', 'sft', 'sft', 'sft', 'sft-eval', 'ppo', 'rl-eval']); // appended line by line, none lost
    // the rollouts were scored in the sandbox pool, nested in the run worker: each ran its tests there
    const rollouts = await page.evaluate(async (run) => {
      const root = await navigator.storage.getDirectory();
      const dir = await (await (await root.getDirectoryHandle('runs')).getDirectoryHandle(run)).getDirectoryHandle('rollouts');
      return (await (await dir.getFileHandle('iter-0001.jsonl')).getFile()).text();
    }, RUN);
    const records = rollouts
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { verdict: string; message?: string; tests_total: number });
    console.log(`rollout verdicts: ${records.map((r) => `${r.verdict}${r.message ? ` (${r.message.slice(0, 60)})` : ''}`).join('; ')}`);
    expect(records.length).toBe(MINI.rl.promptsPerIteration * MINI.rl.samplesPerPrompt);
    for (const r of records) {
      expect(r.tests_total).toBeGreaterThan(0);
      expect(r.message ?? '').not.toMatch(/sandbox worker|worker did not start|sandbox pool/);
    }
    expect(await page.getByTestId('exp-stored').getAttribute('data-files')).toBe(String(files.length));

    // (4) after a reload the panel finds the stored run by its name and shows its summary
    await page.reload();
    await page.getByLabel('Run name').fill(RUN);
    await expect.poll(() => page.getByTestId('exp-stored').getAttribute('data-finished'), { timeout: 30_000 }).toBe('true');
    expect(await page.getByTestId('exp-stored').getAttribute('data-files')).toBe(String(files.length));
    for (const [id, v] of Object.entries(summary)) expect(await value(page, id), id).toBe(v);
    expect(await page.getByTestId('exp-run').count()).toBe(0); // nothing runs: the summary is the stored one
    // its settings differ from the form's defaults: one click fills them in
    await page.getByTestId('exp-use-stored').click();
    expect(JSON.parse(await overrides.inputValue())).toMatchObject({ model: MINI.model, rm: { enabled: false } });
    expect(await page.getByTestId('exp-use-stored').count()).toBe(0);
    expect(await opfsFiles(page, RUN)).toEqual(files);
    await screenshot('experiment-reloaded');
    expect(errors.filter((e) => !/injected render fault|The Experiment panel failed/.test(e))).toEqual([]);
  }, 600_000);

  test('a stopped run resumes without redoing finished stages (IndexedDB fallback)', async () => {
    const { page, errors, screenshot } = await open(() => {
      delete (StorageManager.prototype as { getDirectory?: unknown }).getDirectory;
    });
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('ready');
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify({ ...MINI, rl: { ...MINI.rl, iterations: 2 } }));
    await page.getByLabel('Run name').fill('e2e-stop');
    const stored = page.getByTestId('exp-stored');
    await expect.poll(() => stored.textContent()).toMatch(/kept in IndexedDB/);
    const status = page.getByTestId('exp-status');
    const t0 = Date.now();
    await page.getByTestId('exp-start').click();
    // stop once SFT is over: the pipeline finishes the step in flight, saves, and stops before PPO's second iteration
    await expect
      .poll(() => page.locator('.exp-phases li[data-phase="sft-eval"]').getAttribute('data-state'), { timeout: 240_000, interval: 250 })
      .toMatch(/active|done/);
    await page.getByTestId('exp-stop').click();
    expect(await status.textContent()).toBe('stopping');
    await expect.poll(() => status.textContent(), { timeout: 240_000, interval: 500 }).toMatch(/^(stopped|done|error)$/);
    console.log(`stopped after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(await status.textContent()).toBe('stopped');
    expect(await page.getByTestId('exp-message').textContent()).toMatch(/resumes from there/);
    await expect.poll(() => stored.getAttribute('data-finished')).toBe('false');
    expect(await stored.textContent()).toMatch(/Stored in IndexedDB: \d+ files, unfinished/);
    expect(await page.getByTestId('exp-start').textContent()).toBe('Resume');
    await screenshot('experiment-stopped');

    const t1 = Date.now();
    await page.getByTestId('exp-start').click();
    await expect.poll(() => status.textContent(), { timeout: 480_000, interval: 1000 }).toMatch(/^(done|error)$/);
    console.log(`resumed and finished in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    expect(await page.getByTestId('exp-error').count()).toBe(0);
    expect(await status.textContent()).toBe('done');
    expect(await page.getByTestId('exp-summary').textContent()).toContain('RL (ppo, 2 it.)');
    for (const p of ['setup', 'sft', 'sft-eval', 'ppo', 'eval']) {
      expect(await page.locator(`.exp-phases li[data-phase="${p}"] progress`).evaluate((el: HTMLProgressElement) => el.value), p).toBe(1);
    }

    // the files are in IndexedDB; SFT ran once, and PPO's iterations once each
    const files = await page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open('coderl-runs');
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      const get = <T>(req: IDBRequest<T>) =>
        new Promise<T>((resolve, reject) => ((req.onsuccess = () => resolve(req.result)), (req.onerror = () => reject(req.error))));
      const store = () => db.transaction('files', 'readonly').objectStore('files');
      const keys = (await get(store().getAllKeys())) as string[];
      const metrics = new TextDecoder().decode((await get(store().get('e2e-stop/metrics.jsonl'))) as ArrayBuffer);
      return { keys: keys.sort(), metrics };
    });
    for (const f of [
      'config.json',
      'tasks/train.jsonl',
      'sft.ckpt',
      'policy.ckpt',
      'rollouts/iter-0001.jsonl',
      'rollouts/iter-0002.jsonl',
      'summary.json',
    ]) {
      expect(files.keys, f).toContain(`e2e-stop/${f}`);
    }
    const lines = files.metrics
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { stage: string; iteration?: number });
    expect(lines.map((l) => l.stage)).toEqual(['sft', 'sft', 'sft', 'sft', 'sft-eval', 'ppo', 'ppo', 'rl-eval']); // resumed: nothing redone
    expect(lines.filter((l) => l.stage === 'ppo').map((l) => l.iteration)).toEqual([0, 1]);
    await screenshot('experiment-resumed');
    expect(errors).toEqual([]);
  }, 600_000);

  test('without WebGPU the run uses the cpu backend and says so', async () => {
    const { page, errors } = await open(() => {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    });
    await expect.poll(() => page.getByTestId('gpu-status').getAttribute('data-state'), { timeout: 60_000 }).toBe('unavailable');
    await page.getByLabel('Overrides (JSON)').fill(JSON.stringify(MINI));
    await page.getByLabel('Run name').fill('e2e-cpu');
    const t0 = Date.now();
    await page.getByTestId('exp-start').click();
    const status = page.getByTestId('exp-status');
    await expect.poll(() => status.textContent(), { timeout: 480_000, interval: 1000 }).toMatch(/^(done|error)$/);
    console.log(`miniature run on the cpu backend: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(await page.getByTestId('exp-error').count()).toBe(0);
    expect(await page.getByTestId('exp-run').textContent()).toContain('on the cpu backend');
    expect(await page.getByTestId('exp-note').textContent()).toMatch(
      /^WebGPU is not usable here: This browser does not expose WebGPU.* The run uses the cpu backend/s,
    );
    expect(await page.getByTestId('exp-summary').textContent()).toContain('cpu backend');

    // a failure in the run's worker reaches the page as the run's error, naming what failed
    await page.getByTestId('exp-seed').fill('2');
    await page.getByTestId('exp-start').click();
    await expect.poll(() => status.textContent(), { timeout: 120_000, interval: 500 }).toMatch(/^(done|error)$/);
    expect(await status.textContent()).toBe('error');
    expect(await page.getByTestId('exp-error').textContent()).toMatch(/^the run directory holds a run with a different config or seed/);
    expect(errors).toEqual([]);
  }, 600_000);
});
