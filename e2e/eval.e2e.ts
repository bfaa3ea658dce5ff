/**
 * The Evaluate panel in Chromium, on a real stored run (made in Node, e2e/run-fixture.ts, and
 * written into OPFS): its sft.ckpt on its held-out split with n = 2 and k = 1,2 gives pass@k that
 * the per-task table recomputes (the unbiased estimator), the table sorts from the keyboard, Stop
 * ends an evaluation; a suite file the user opens (.jsonl.gz and .jsonl) shows its bad line by
 * number, a prompt too long for the context is one row of the table, and on the cpu backend the
 * numbers are exactly those evalSuite (`coderl eval`'s core) gives in Node. A k above n is an
 * inline error that disables Start. The built-in benchmarks are offered as suites (fetched from the
 * app's own assets): HumanEval-X JavaScript's first tasks, up to the first whose prompt fits the
 * fixture model's context, evaluate greedily to exactly what evalSuite gives in Node.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer } from '../src/analysis';
import { LIFE_LOCK_PREFIX } from '../src/rl/life-lock';
import { nodeWasmLoader } from '../src/analysis/wasm-node';
import { createBackend } from '../src/model/backend';
import { loadModel, saveModel } from '../src/model/model-file';
import { DEFAULT_OPTIM } from '../src/model/optim';
import { evalSuite, planEval, type EvalSuiteResult } from '../src/rl/eval-suite';
import { createNodePool } from '../src/sandbox/pool.node';
import { passAtK } from '../src/sandbox/score';
import { benchmarkPath } from '../src/tasks/benchmarks';
import { BUILTIN_SUITES, builtinSuite, builtinSuiteLabel } from '../src/tasks/builtin-suites';
import { loadSuite, parseSuite } from '../src/tasks/suite';
import type { Task } from '../src/tasks/types';
import { Tokenizer } from '../src/tokenizer';
import { chromiumSession, SCREENSHOTS, WORKER_END_MS } from './browser';
import { nodeRun, writeOpfsRun, type NodeRun } from './run-fixture';

const open = chromiumSession();
const RUN = 'e2e-eval';
const SUITE_FILE = 'user-suite.jsonl';
/** the user suite's settings: a one-token completion keeps the cpu backend quick */
const USER = { samples: 2, k: [1, 2], temperature: 1, maxNewTokens: 1, seed: 3 };
/** held-out tasks evaluated (the limit field): the first ones of the split */
const HELDOUT_LIMIT = 12;
/** the built-in suite evaluated, greedily: one sample of a few tokens per task that fits */
const BENCH = builtinSuite('humaneval-x-js')!;
const BENCH_SETTINGS = { samples: 1, k: [1], temperature: 0, maxNewTokens: 4, seed: 1 };

let run: NodeRun;
let dir: string;
let heldoutCount: number;
let heldoutIds: string[];
/** evalSuite in Node on the cpu backend: what the page must show for the user suite */
let reference: EvalSuiteResult;
/** the task limit that reaches HumanEval-X JavaScript's first task whose prompt fits the model's context */
let benchLimit: number;
/** evalSuite in Node on the cpu backend: what the page must show for that many HumanEval-X tasks */
let benchReference: EvalSuiteResult;

/**
 * Two held-out tasks, a malformed line (line 3), a task whose prompt ends in a line comment (a
 * one-token completion passes unless it holds a newline: pass rates that are not all zero) and
 * one whose prompt is longer than the model's context.
 */
function userSuite(heldout: string): string {
  const [a, b] = heldout.trim().split('\n');
  const comment = {
    task_id: 'user/comment',
    language: 'javascript',
    prompt: 'function f(x) {\n  return x * 2;\n}\n// ',
    entry_point: 'f',
    tests: 'console.assert(f(2) === 4);\n',
    meta: { family: 'user' },
  };
  const long = {
    ...comment,
    task_id: 'user/long',
    prompt: `// ${'return the sum of every number in the list '.repeat(12)}\nfunction g(xs) {\n`,
  };
  return [a, b, '{"task_id": "broken", ', JSON.stringify(comment), JSON.stringify(long)].join('\n') + '\n';
}

beforeAll(async () => {
  run = await nodeRun();
  // a reward model is not a policy: the panel must leave this one out
  const sft = loadModel(run.files['sft.ckpt']!);
  run.files['rm.ckpt'] = saveModel({ ...sft, meta: { stage: 'rm' } });
  const heldout = new TextDecoder().decode(run.files['tasks/heldout.jsonl']!);
  heldoutIds = heldout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { task_id: string }).task_id);
  heldoutCount = heldoutIds.length;
  dir = mkdtempSync(join(tmpdir(), 'coderl-eval-e2e-'));
  const text = userSuite(heldout);
  writeFileSync(join(dir, SUITE_FILE), text);
  writeFileSync(join(dir, `${SUITE_FILE}.gz`), gzipSync(text));

  const [pool, analyzer] = await Promise.all([createNodePool({ size: 1 }), createAnalyzer(nodeWasmLoader)]);
  const policy = createBackend('cpu', { config: sft.config, params: sft.params, optim: DEFAULT_OPTIM });
  try {
    const tok = Tokenizer.fromJSON(sft.tokenizer);
    reference = await evalSuite(policy, tok, parseSuite(text, SUITE_FILE).items, USER, { pool, analyzer });
    // HumanEval prompts are mostly longer than the fixture model's context of 96 tokens: evaluate up to the first that fits
    const bench: Task[] = (await loadSuite(new Uint8Array(readFileSync(benchmarkPath(BENCH.file))), BENCH.file)).items;
    const first = planEval(tok, sft.config.contextLength, bench, BENCH_SETTINGS.maxNewTokens).fit[0];
    if (!first) throw new Error(`no prompt of ${BENCH.name} fits the fixture model's context of ${sft.config.contextLength}`);
    benchLimit = bench.indexOf(first) + 1;
    benchReference = await evalSuite(policy, tok, bench, { ...BENCH_SETTINGS, limit: benchLimit }, { pool, analyzer });
  } finally {
    policy.dispose();
    pool.close();
  }
}, 180_000);

interface Row {
  task: string;
  passed: number;
  total: number;
  unfit: boolean;
  error: string;
}

const rows = (page: Page): Promise<Row[]> =>
  page.getByTestId('eval-task').evaluateAll((els) =>
    els.map((e) => ({
      task: e.getAttribute('data-task')!,
      passed: Number(e.getAttribute('data-passed')),
      total: Number(e.getAttribute('data-total')),
      unfit: e.getAttribute('data-unfit') === 'true',
      error: e.lastElementChild?.textContent ?? '',
    })),
  );

const shown = async (page: Page, k: number): Promise<number> => Number(await page.getByTestId(`eval-pass-${k}`).getAttribute('data-value'));

/** The unbiased pass@k averaged over the table's sampled tasks. */
function recompute(table: Row[], k: number): number {
  const fit = table.filter((r) => !r.unfit);
  return fit.reduce((a, r) => a + passAtK(r.total, r.passed, k), 0) / fit.length;
}

/**
 * The eval workers alive in the page: the life locks they hold (rl/life-lock.ts), which the
 * browser releases exactly when a worker's global is gone. The devtools protocol's worker list
 * (page.workers()) was seen to keep a worker that had closed itself for over a minute, in one run
 * of three, at a commit before this session's changes too; it is logged, not asserted.
 */
const evalWorkers = (page: Page): Promise<string[]> =>
  page.evaluate(
    async (prefix) => ((await navigator.locks.query()).held ?? []).map((l) => l.name ?? '').filter((n) => n.startsWith(prefix)),
    LIFE_LOCK_PREFIX.eval,
  );
const listedEvalWorkers = (page: Page): string[] =>
  page
    .workers()
    .map((w) => new URL(w.url()).pathname)
    .filter((p) => /\/eval-worker-[\w-]+\.js$/.test(p));

async function settings(page: Page, s: Record<string, string>): Promise<void> {
  for (const [field, v] of Object.entries(s)) await page.getByTestId(`eval-${field}`).fill(v);
}

async function finish(page: Page): Promise<void> {
  await expect
    .poll(() => page.getByTestId('eval-status').textContent(), { timeout: 480_000, interval: 500 })
    .toMatch(/^(done|error|stopped)$/);
  const error = page.getByTestId('eval-error');
  if (await error.count()) throw new Error(`the evaluation failed: ${await error.textContent()}`);
  expect(await page.getByTestId('eval-status').textContent()).toBe('done');
}

describe('the Evaluate panel in Chromium', () => {
  test("pass@k of a stored run's sft.ckpt on its held-out split and on a user suite file, consistent with the per-task table", async () => {
    const { page, errors, screenshot } = await open();
    const t = Date.now();
    const lap = (what: string) => console.log(`${((Date.now() - t) / 1000).toFixed(1)} s: ${what}`);
    await writeOpfsRun(page, RUN, run.files);
    await page.reload();
    lap('run written to OPFS, page reloaded');
    const panel = page.getByTestId('panel-eval');
    const ckpt = page.getByTestId('eval-checkpoint');
    /** the whole page, and the Evaluate panel alone (in a viewport tall enough that its column need not scroll) */
    const shotPanel = async (name: string): Promise<void> => {
      await screenshot(name);
      const size = page.viewportSize()!;
      await page.setViewportSize({ width: size.width, height: 2400 });
      await panel.screenshot({ path: join(SCREENSHOTS, `${name}-panel.png`) });
      await page.setViewportSize(size);
    };

    // (1) the run's policy checkpoints are offered, the reward model is not
    await expect
      .poll(() => ckpt.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)), { timeout: 60_000 })
      .toContain(`run:${RUN}/sft.ckpt`);
    const values = await ckpt.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    for (const f of ['sft.ckpt', 'sft-best.ckpt', 'policy.ckpt']) expect(values, f).toContain(`run:${RUN}/${f}`);
    expect(values).not.toContain(`run:${RUN}/rm.ckpt`);
    expect(await panel.textContent()).toContain(`Not listed (reward models, not policies): ${RUN}/rm.ckpt`);
    await ckpt.selectOption(`run:${RUN}/sft.ckpt`);
    expect(await page.getByTestId('eval-ckpt-config').textContent()).toMatch(
      /^1 layer, d_model 32, 2 heads, context 96, vocab \d+, [\d,]+ parameters; tokenizer of \d+ tokens; stage sft, step \d+$/,
    );

    // (2) the held-out split's first tasks (the limit field), n = 2, k = 1,2
    await page.getByTestId('eval-suite').selectOption(`run:${RUN}/heldout`);
    await expect.poll(() => page.getByTestId('eval-suite-info').getAttribute('data-tasks')).toBe(String(heldoutCount));
    await settings(page, { samples: '2', k: '1,2', maxNewTokens: '12', limit: String(HELDOUT_LIMIT) });
    expect(await page.getByTestId('eval-start').isEnabled()).toBe(true);
    await page.evaluate(() => {
      const w = window as unknown as { __evalProgress: string[] };
      w.__evalProgress = [];
      new MutationObserver(() => {
        const t = document.querySelector('[data-testid="eval-progress-text"]')?.textContent;
        if (t && w.__evalProgress.at(-1) !== t) w.__evalProgress.push(t);
      }).observe(document.querySelector('[data-testid="panel-eval"]')!, { subtree: true, childList: true, characterData: true });
    });
    lap('checkpoint and held-out split chosen');
    const t0 = Date.now();
    await page.getByTestId('eval-start').click();
    await expect.poll(async () => (await evalWorkers(page)).length, { timeout: 60_000, interval: 100 }).toBe(1);
    await finish(page);
    const progress = await page.evaluate(() => (window as unknown as { __evalProgress: string[] }).__evalProgress);
    console.log(
      `held-out: ${((Date.now() - t0) / 1000).toFixed(1)} s, ${await page.getByTestId('eval-result-info').textContent()}; progress seen: ${progress.join(' | ')}`,
    );
    for (const p of progress)
      expect(p).toMatch(new RegExp(`^(Starting the eval worker…|(Sampling|Scoring): \\d+ / ${HELDOUT_LIMIT} tasks)$`));
    expect(progress.some((p) => p.startsWith('Sampling'))).toBe(true);
    expect(progress.some((p) => p.startsWith('Scoring'))).toBe(true);
    await expect.poll(() => evalWorkers(page), { timeout: WORKER_END_MS }).toEqual([]); // it ended itself at the end
    console.log(`eval workers in the devtools list after the end: ${listedEvalWorkers(page).length}`);

    const held = await rows(page);
    expect(held.map((r) => r.task)).toEqual(heldoutIds.slice(0, HELDOUT_LIMIT));
    for (const r of held) expect([r.total, r.unfit], r.task).toEqual([2, false]);
    for (const k of [1, 2]) {
      const v = await shown(page, k);
      expect(v, `pass@${k}`).toBeGreaterThanOrEqual(0);
      expect(v, `pass@${k}`).toBeLessThanOrEqual(1);
      expect(v, `pass@${k}`).toBeCloseTo(recompute(held, k), 10);
    }
    expect(Number(await page.getByTestId('eval-family-spec').getAttribute('data-value'))).toBeCloseTo(recompute(held, 1), 10);

    // the table sorts from the keyboard: Enter on a header, again for the other direction
    const byTask = page.getByTestId('eval-sort-task');
    await byTask.focus();
    await page.keyboard.press('Enter');
    expect(await page.locator('th', { has: byTask }).getAttribute('aria-sort')).toBe('ascending');
    const asc = (await rows(page)).map((r) => r.task);
    expect(asc).toEqual([...asc].sort((a, b) => a.localeCompare(b)));
    await page.keyboard.press('Enter');
    expect(await page.locator('th', { has: byTask }).getAttribute('aria-sort')).toBe('descending');
    expect((await rows(page)).map((r) => r.task)).toEqual([...asc].reverse());
    await shotPanel('eval-heldout');
    lap('held-out evaluated');

    // (3) Stop ends an evaluation at once and terminates its worker
    await page.getByTestId('eval-start').click();
    await expect.poll(async () => (await evalWorkers(page)).length, { timeout: 60_000, interval: 100 }).toBe(1);
    await page.getByTestId('eval-stop').click();
    expect(await page.getByTestId('eval-status').textContent()).toBe('stopped');
    await expect.poll(() => evalWorkers(page), { timeout: WORKER_END_MS }).toEqual([]);
    expect(await page.getByTestId('eval-result').count()).toBe(0);
    lap('stopped');

    // (4) a user suite: gzipped first, then plain; the bad line shows with its number
    const file = page.getByTestId('eval-suite-file');
    const info = page.getByTestId('eval-suite-info');
    await file.setInputFiles(join(dir, `${SUITE_FILE}.gz`));
    await expect.poll(() => info.textContent()).toMatch(new RegExp(`^"${SUITE_FILE}\\.gz": 4 valid tasks`));
    await file.setInputFiles(join(dir, SUITE_FILE));
    await expect.poll(() => info.textContent()).toMatch(new RegExp(`^"${SUITE_FILE}": 4 valid tasks.*; 1 line skipped$`));
    const issue = page.getByTestId('eval-suite-issues').locator('li');
    expect(await issue.count()).toBe(1);
    expect(await issue.getAttribute('data-line')).toBe('3');
    expect(await issue.textContent()).toMatch(new RegExp(`^${SUITE_FILE}:3: bad JSON: `));
    expect(await page.getByTestId('eval-suite').inputValue()).toBe(`file:${SUITE_FILE}`);
    await settings(page, {
      samples: String(USER.samples),
      k: USER.k.join(','),
      maxNewTokens: String(USER.maxNewTokens),
      seed: String(USER.seed),
    });
    await page.getByTestId('eval-backend').selectOption('cpu');
    await page.getByTestId('eval-start').click();
    await finish(page);
    expect(await page.getByTestId('eval-run').textContent()).toContain('on the cpu backend');
    const user = await rows(page);
    console.log(`user suite: ${await page.getByTestId('eval-result-info').textContent()}; ${JSON.stringify(user)}`);
    expect(user.map((r) => r.task)).toEqual(reference.rows.map((r) => r.task_id));
    expect(user.find((r) => r.task === 'user/long')).toMatchObject({
      unfit: true,
      total: 0,
      error: expect.stringMatching(/^prompt of \d+ tokens does not fit the model's context of 96$/),
    });
    expect(await page.getByTestId('eval-result-info').textContent()).toMatch(
      /3 tasks × 2 samples.* · 1 task left out: the prompt does not fit the context of 96/,
    );
    for (const k of USER.k) {
      expect(await shown(page, k), `pass@${k}`).toBeCloseTo(recompute(user, k), 10);
      expect(await shown(page, k), `pass@${k} as in Node`).toBeCloseTo(reference.passAtK[`pass@${k}`]!, 12);
    }
    // the same samples passed as in Node, task by task
    expect(user.map((r) => [r.task, r.passed, r.total])).toEqual(reference.rows.map((r) => [r.task_id, r.passed, r.total]));
    expect(user.find((r) => r.task === 'user/comment')!.passed).toBeGreaterThan(0);
    await shotPanel('eval-user-suite');
    lap('user suite evaluated');

    // (5) k above n: an inline error on the field, Start disabled
    await settings(page, { k: '1,5' });
    const kError = page.getByTestId('eval-k-error');
    expect(await kError.textContent()).toBe('k = 5 needs at least that many samples per task (n = 2)');
    expect(await page.getByTestId('eval-k').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('eval-k').getAttribute('aria-describedby')).toContain(await kError.getAttribute('id'));
    expect(await page.getByTestId('eval-start').isDisabled()).toBe(true);
    await shotPanel('eval-invalid');

    // (6) the built-in benchmarks are suites to choose, with no file to open; HumanEval-X JavaScript evaluates as in Node
    const suiteSelect = page.getByTestId('eval-suite');
    const offered = await suiteSelect
      .locator('optgroup[label="Built-in benchmarks"] option')
      .evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent]));
    expect(offered).toEqual(BUILTIN_SUITES.map((b) => [`builtin:${b.name}`, builtinSuiteLabel(b)]));
    expect(offered.map(([, label]) => label)).toEqual(['HumanEval-X JavaScript (164 tasks)', 'HumanEval Python (164 tasks)']);
    for (const b of [...BUILTIN_SUITES].reverse()) {
      // the one evaluated last
      await suiteSelect.selectOption(`builtin:${b.name}`);
      await expect.poll(() => info.textContent(), { timeout: 30_000 }).toBe(`${b.title}: ${b.tasks} valid tasks`);
      expect(await info.getAttribute('data-tasks')).toBe(String(b.tasks));
      expect(await suiteSelect.inputValue()).toBe(`builtin:${b.name}`);
    }
    expect(await suiteSelect.inputValue()).toBe(`builtin:${BENCH.name}`);
    await settings(page, {
      samples: '1',
      k: '1',
      temperature: '0',
      maxNewTokens: String(BENCH_SETTINGS.maxNewTokens),
      seed: '1',
      limit: String(benchLimit),
    });
    await page.getByTestId('eval-start').click();
    await finish(page);
    const bench = await rows(page);
    console.log(
      `${BENCH.name}: ${await page.getByTestId('eval-result-info').textContent()}; sampled ${JSON.stringify(bench.filter((r) => !r.unfit))}`,
    );
    expect(bench.map((r) => [r.task, r.passed, r.total, r.unfit])).toEqual(
      benchReference.rows.map((r) => [r.task_id, r.passed, r.total, r.unfit]),
    );
    expect(bench).toHaveLength(benchLimit);
    expect(bench.filter((r) => !r.unfit).length).toBeGreaterThan(0);
    expect(await shown(page, 1), 'pass@1 as in Node').toBeCloseTo(benchReference.passAtK['pass@1']!, 12);
    await shotPanel('eval-builtin');
    lap(`${BENCH.name} evaluated`);
    expect(errors).toEqual([]);
  }, 600_000);
});
