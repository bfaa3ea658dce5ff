/**
 * evalSuite, `coderl eval`'s core, on a real sandbox and analyzer with the float64 cpu backend:
 * it gives exactly evaluate()'s numbers (the progress wrappers change nothing), a prompt that does
 * not fit the context is one row of the table instead of a crash, the rows recompute pass@k, and
 * `coderl eval` prints the same numbers for the same checkpoint, suite and settings.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { main } from '../cli/main';
import { createBackend, type PolicyBackend } from '../model/backend';
import { saveModel } from '../model/model-file';
import type { ModelConfig } from '../model/config';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM } from '../model/optim';
import { paramTable } from '../model/params';
import { DEFAULT_REWARD } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { passAtK } from '../sandbox/score';
import { parseSuite } from '../tasks/suite';
import { trainTokenizer, type Tokenizer } from '../tokenizer';
import { CODE_CORPUS } from '../tokenizer/corpus';
import { evalSuite, planEval, settingsProblems, type EvalProgress, type EvalSettings } from './eval-suite';
import { evaluate } from './evaluate';

/**
 * Three tasks: `always` ends its prompt in a line comment, so a one-token completion passes unless
 * the token holds a newline; `never` leaves a function open; `long` cannot fit a 48-token context.
 */
const SUITE = [
  {
    task_id: 'x/always',
    language: 'javascript',
    prompt: 'function f(x) {\n  return x + 1;\n}\n// ',
    entry_point: 'f',
    tests: 'console.assert(f(1) === 2);\nconsole.assert(f(2) === 3);\n',
    meta: { family: 'a' },
  },
  {
    task_id: 'x/never',
    language: 'javascript',
    prompt: 'function g(x) {\n  return (',
    entry_point: 'g',
    tests: 'console.assert(g(1) === 1);\n',
    meta: { family: 'b' },
  },
  {
    task_id: 'x/long',
    language: 'javascript',
    prompt: `// ${'sum the numbers of the list and return the total '.repeat(8)}\nfunction h(x) {\n`,
    entry_point: 'h',
    tests: 'console.assert(h([1]) === 1);\n',
    meta: { family: 'a' },
  },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

const SETTINGS: EvalSettings = { samples: 4, k: [1, 2, 4], temperature: 1, maxNewTokens: 1, seed: 5 };

let pool: SandboxPool;
let analyzer: Analyzer;
let tok: Tokenizer;
let config: ModelConfig;
let params: Float32Array;
const policies: PolicyBackend[] = [];
const policy = () => {
  const p = createBackend('cpu', { config, params, optim: DEFAULT_OPTIM });
  policies.push(p);
  return p;
};

beforeAll(async () => {
  [pool, analyzer] = await Promise.all([createNodePool({ size: 1 }), createAnalyzer(nodeWasmLoader)]);
  tok = trainTokenizer(CODE_CORPUS, { vocabSize: 320 });
  config = { nLayer: 1, dModel: 32, nHead: 2, contextLength: 48, vocabSize: tok.vocabSize };
  params = initParams(paramTable(config), 7);
}, 60_000);
afterAll(() => {
  policies.forEach((p) => p.dispose());
  pool?.close();
});

const tasks = () => parseSuite(SUITE, 'suite.jsonl').items;

describe('evalSuite', () => {
  test("gives evaluate()'s numbers, reports a prompt that does not fit per task, and its rows recompute pass@k", async () => {
    const plan = planEval(tok, config.contextLength, tasks(), 100);
    expect(plan.unfit.map((u) => u.task.task_id)).toEqual(['x/long']);
    expect(plan.unfit[0]!.promptTokens).toBeGreaterThanOrEqual(config.contextLength);
    expect(plan.maxNewTokens).toBe(config.contextLength - plan.longestPrompt); // capped by the longest prompt that fits

    const seen: EvalProgress[] = [];
    const r = await evalSuite(policy(), tok, tasks(), SETTINGS, { pool, analyzer }, { onProgress: (p) => seen.push({ ...p }) });
    const ref = await evaluate(
      policy(),
      tok,
      plan.fit,
      { samples: 4, temperature: 1, k: [1, 2, 4], maxNewTokens: 1 },
      { pool, analyzer },
      DEFAULT_REWARD,
      5,
    );
    expect(r.passAtK).toEqual(ref.passAtK);
    expect(r.byFamily).toEqual(ref.byFamily);
    expect(r.rollouts.map((s) => s.completion)).toEqual(ref.rollouts.map((s) => s.completion));
    expect(r.tasks).toBe(2);

    expect(r.rows.map((x) => [x.task_id, x.family, x.total, x.unfit])).toEqual([
      ['x/always', 'a', 4, false],
      ['x/never', 'b', 4, false],
      ['x/long', 'a', 0, true],
    ]);
    const [always, never, long] = r.rows;
    console.log(`rows: ${JSON.stringify(r.rows)}; ${JSON.stringify(r.passAtK)}`);
    expect(always!.passed).toBeGreaterThan(0); // the comment swallows most one-token completions
    expect(never!.passed).toBe(0);
    expect(never!.error).toMatch(/^error: SyntaxError/);
    expect(long!.error).toMatch(/^prompt of \d+ tokens does not fit the model's context of 48$/);
    for (const k of SETTINGS.k) {
      const fit = r.rows.filter((x) => !x.unfit);
      expect(r.passAtK[`pass@${k}`]).toBeCloseTo(fit.reduce((a, x) => a + passAtK(x.total, x.passed, k), 0) / fit.length, 12);
    }
    expect(r.byFamily).toEqual({ a: always!.passed / 4, b: 0 });

    // progress: sampling then scoring, tasks counted up to the two that fit
    expect(seen[0]).toEqual({ stage: 'sampling', done: 0, total: 2 });
    expect(seen.at(-1)).toEqual({ stage: 'scoring', done: 2, total: 2 });
    const scoring = seen.findIndex((p) => p.stage === 'scoring');
    expect(seen.slice(0, scoring).every((p) => p.stage === 'sampling')).toBe(true);
    expect(seen[scoring - 1]).toEqual({ stage: 'sampling', done: 2, total: 2 });
    expect(seen.slice(scoring).map((p) => p.done)).toEqual([0, 1, 2]);
  }, 120_000);

  test('limit keeps the first tasks; no fitting prompt is an error naming the context', async () => {
    const r = await evalSuite(policy(), tok, tasks(), { ...SETTINGS, samples: 1, k: [1], limit: 1 }, { pool, analyzer });
    expect(r.rows.map((x) => x.task_id)).toEqual(['x/always']);
    await expect(evalSuite(policy(), tok, tasks().slice(2), SETTINGS, { pool, analyzer })).rejects.toThrow(
      /no task's prompt fits the model's context of 48 tokens \(the shortest has \d+\)/,
    );
  }, 60_000);

  test('coderl eval prints the same numbers, and the unfit task on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coderl-eval-suite-'));
    writeFileSync(join(dir, 'suite.jsonl'), SUITE);
    writeFileSync(join(dir, 'model.ckpt'), saveModel({ config, tokenizer: tok.toJSON(), params }));
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (t: string) => void out.push(...t.trimEnd().split('\n')),
      err: (t: string) => void err.push(...t.trimEnd().split('\n')),
    };
    const argv = [
      'eval',
      '--suite',
      join(dir, 'suite.jsonl'),
      '--checkpoint',
      join(dir, 'model.ckpt'),
      '--k',
      '1,2,4',
      '--samples',
      '4',
      '--max-new-tokens',
      '1',
      '--seed',
      '5',
      '--workers',
      '1',
    ];
    expect(await main(argv, io)).toBe(0);
    const r = await evalSuite(policy(), tok, tasks(), SETTINGS, { pool, analyzer });
    for (const [k, v] of Object.entries(r.passAtK)) expect(out).toContain(`${k}: ${v.toFixed(4)}`);
    expect(out).toContain(`  a: pass@1 ${r.byFamily.a!.toFixed(4)}`);
    expect(out[0]).toMatch(/\(2 tasks\), 4 samples per task/);
    expect(err).toEqual([
      expect.stringMatching(
        /^coderl eval: task x\/long: prompt of \d+ tokens does not fit the model's context of 48; it is left out of pass@k$/,
      ),
    ]);
  }, 120_000);

  test("settingsProblems applies coderl eval's rules field by field", () => {
    expect(settingsProblems(SETTINGS)).toEqual({});
    expect(settingsProblems({ ...SETTINGS, k: [1, 5], samples: 2 })).toEqual({
      k: 'k = 5 needs at least that many samples per task (n = 2)',
    });
    expect(settingsProblems({ ...SETTINGS, k: [0] }).k).toMatch(/positive integer/);
    expect(settingsProblems({ ...SETTINGS, k: [] }).k).toBe('give at least one k');
    expect(settingsProblems({ ...SETTINGS, temperature: 0 }).temperature).toMatch(/greedy/);
    expect(settingsProblems({ ...SETTINGS, temperature: 0, samples: 1, k: [1] })).toEqual({});
    expect(settingsProblems({ ...SETTINGS, temperature: 11 }).temperature).toMatch(/\[0, 10\]/);
    expect(Object.keys(settingsProblems({ samples: 0, k: [1], temperature: NaN, maxNewTokens: 0, seed: -1, limit: 0 })).sort()).toEqual([
      'limit',
      'maxNewTokens',
      'samples',
      'seed',
      'temperature',
    ]);
  });
});
