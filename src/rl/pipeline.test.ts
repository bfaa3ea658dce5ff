/**
 * The staged pipeline end to end on a miniature config (real tasks, real sandbox, real
 * analyzer, the float64 cpu backend): every stage runs, the run directory holds what the issue
 * lists, a rerun resumes instead of redoing, a stopped run continues where it stopped, and the
 * first RL iteration gives the same numbers on webgpu as on cpu (PPO, and the tiny preset's GRPO).
 */
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { createBackend } from '../model/backend';
import { loadModel } from '../model/model-file';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM } from '../model/optim';
import { paramTable } from '../model/params';
import { labGptFactory } from '../policy';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { testRuntime } from '../testing/gpu';
import { trainTokenizer } from '../tokenizer';
import { mergeConfig, resolveConfig, RL_PRESETS, type RlConfig } from './config';
import { MINI_RUN } from './testing';
import { KlController } from './advantages';
import { ppoIteration, repairPrompt, type RolloutRecord } from './ppo-loop';
import { runPipeline, StoppedError, type Summary } from './pipeline';
import { readMetrics, readRollouts, rolloutIterations } from './run-files';
import { MemoryRunDir, readJson } from './run-dir';
import { buildTaskSet, suiteJsonl } from './tasks';
import { readSuiteSource } from './tasks/from-suite';

let pool: SandboxPool;
let analyzer: Analyzer;
beforeAll(async () => {
  [pool, analyzer] = await Promise.all([createNodePool({ size: 2 }), createAnalyzer(nodeWasmLoader)]);
}, 60_000);
afterAll(() => pool?.close());

/** A config small enough for a test: one family, a 1-layer model, a few steps of each stage. */
function miniConfig(over: unknown = {}): RlConfig {
  const base = mergeConfig(MINI_RUN, {
    sft: { maxSteps: 6, evalEvery: 3 },
    rm: { enabled: true, samplesPerTask: 2, steps: 2, batch: 4 },
    rl: { iterations: 2, promptsPerIteration: 3, maxNewTokens: 12 },
    eval: { maxNewTokens: 12 },
  });
  return resolveConfig('tiny', mergeConfig(base, over));
}

function run(cfg: RlConfig, store: MemoryRunDir, shouldStop?: () => boolean, suiteText?: string): Promise<Summary> {
  return runPipeline({
    suiteText,
    cfg,
    seed: 3,
    policies: labGptFactory('cpu'),
    store,
    scorer: { pool, analyzer },
    shouldStop,
  });
}

const text = (s: MemoryRunDir, name: string) => new TextDecoder().decode(s.files.get(name)!);
const lines = (s: MemoryRunDir, name: string) =>
  text(s, name)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('pipeline', () => {
  test('runs every stage and writes the run directory; a rerun resumes without redoing', async () => {
    const store = new MemoryRunDir();
    const cfg = miniConfig({ rm: { objective: 'regression', score: 'value+likelihood', steps: 2, batch: 4 } });
    const summary = await run(cfg, store);
    expect(summary).toMatchObject({
      preset: 'tiny',
      seed: 3,
      backend: 'cpu',
      rl: { iterations: 2, algo: 'ppo' },
      prompt_format: 'completion',
    });
    for (const k of ['heldout_pass1', 'train_pass1'] as const) {
      expect(summary.sft[k]).toBeGreaterThanOrEqual(0);
      expect(summary.rl[k]).toBeLessThanOrEqual(1);
    }
    expect(summary.rm).toHaveProperty('heldout_pairs');
    expect(summary.minutes).toBeGreaterThan(0);
    for (const f of [
      'config.json',
      'tokenizer.json',
      'tasks/train.jsonl',
      'tasks/heldout.jsonl',
      'sft.ckpt',
      'sft.json',
      'rm.ckpt',
      'policy.ckpt',
      'summary.json',
      'rollouts/iter-0001.jsonl',
      'rollouts/iter-0002.jsonl',
    ]) {
      expect(store.files.has(f), f).toBe(true);
    }
    const metrics = lines(store, 'metrics.jsonl');
    const ppo = metrics.filter((m) => m.stage === 'ppo');
    expect(ppo).toHaveLength(2);
    for (const key of [
      'reward',
      'env/pass_rate',
      'objective/kl',
      'losses/approx_kl',
      'losses/clipfrac',
      'policy/entropy_avg',
      'loss/policy_avg',
      'loss/value_avg',
      'losses/explained_variance',
      'completions/mean_length',
      'time/rollout_s',
      'time/scoring_s',
      'time/update_s',
      'tokens/per_s',
      'rewards/test_pass/mean',
      'rewards/reward_model/mean',
      'eval/heldout_pass@1',
    ]) {
      expect(ppo[0], key).toHaveProperty([key]);
    }
    expect(Array.isArray(ppo[1]!.alarms)).toBe(true);
    const rollout = lines(store, 'rollouts/iter-0001.jsonl')[0] as unknown as RolloutRecord;
    expect(rollout.tokens.length).toBe(rollout.logprobs.length);
    expect(rollout.advantages.length).toBe(rollout.tokens.length);
    expect(rollout.entropies.length).toBe(rollout.tokens.length);
    for (const h of rollout.entropies) expect(h).toBeGreaterThanOrEqual(0);
    expect(rollout.reward.components.map((c) => c.name)).toEqual(
      expect.arrayContaining(['test_pass', 'ast_valid', 'lint', 'reward_model']),
    );
    expect(rollout.reward.total).toBeCloseTo(
      rollout.reward.components.reduce((a, c) => a + c.contribution, 0),
      9,
    );

    // read back the way the app does
    expect(rolloutIterations([...store.files.keys()])).toEqual([1, 2]);
    const read = await readMetrics(store);
    expect(read.map((m) => m.stage)).toEqual(metrics.map((m) => m.stage));
    const it1 = (await readRollouts(store, 1))!;
    expect(it1[0]).toEqual(rollout);
    expect(await readRollouts(store, 9)).toBeNull();
    const broken = new MemoryRunDir();
    await broken.write('rollouts/iter-0001.jsonl', '{"completion":"x","tokens":[],"logprobs":[]}\n{oops\n');
    await expect(readRollouts(broken, 1)).rejects.toThrow(/rollouts\/iter-0001\.jsonl line 2: not valid JSON/);
    await broken.write('metrics.jsonl', '{"step":1}\n');
    await expect(readMetrics(broken)).rejects.toThrow(/metrics\.jsonl line 1: expected an object with a "stage"/);

    // rerun of a finished run: its summary, nothing redone
    const before = text(store, 'metrics.jsonl');
    expect(await run(cfg, store)).toEqual(JSON.parse(JSON.stringify(summary))); // as stored: JSON turns NaN into null
    expect(text(store, 'metrics.jsonl')).toBe(before);

    // another config in the same directory is refused
    await expect(run(miniConfig({ rl: { iterations: 3 } }), store)).rejects.toThrow(
      /different config or seed: rm\.objective \(stored "regression", given "bt"\); rm\.score \(stored "value\+likelihood", given "likelihood"\); rl\.iterations \(stored 2, given 3\); resume it/,
    );
  }, 300_000);

  test('a stopped run resumes after its last finished iteration', async () => {
    const store = new MemoryRunDir();
    const cfg = miniConfig({ rm: { enabled: false } });
    await expect(run(cfg, store, () => store.files.has('ppo-state.json'))).rejects.toThrow(StoppedError);
    const state = await readJson<{ iteration: number }>(store, 'ppo-state.json');
    expect(state?.iteration).toBe(1);
    expect(store.files.has('rollouts/iter-0002.jsonl')).toBe(false);
    const sftLines = lines(store, 'metrics.jsonl').filter((m) => m.stage === 'sft').length;
    const summary = await run(cfg, store);
    expect(lines(store, 'metrics.jsonl').filter((m) => m.stage === 'sft')).toHaveLength(sftLines); // SFT loaded, not redone
    expect(summary.rm).toBeNull();
    expect(
      lines(store, 'metrics.jsonl')
        .filter((m) => m.stage === 'ppo')
        .map((m) => m.iteration),
    ).toEqual([0, 1]);
  }, 300_000);

  test('an iteration whose metrics line was lost after its commit (a killed worker) gets it back on resume', async () => {
    const store = new MemoryRunDir();
    const cfg = miniConfig({ rm: { enabled: false } });
    await expect(run(cfg, store, () => store.files.has('ppo-state.json'))).rejects.toThrow(StoppedError);
    const all = text(store, 'metrics.jsonl').trim().split('\n');
    const lost = all.at(-1)!;
    expect(JSON.parse(lost)).toMatchObject({ stage: 'ppo', iteration: 0 });
    // the state says iteration 1 is done, but the worker died before the line was appended
    await store.write('metrics.jsonl', all.slice(0, -1).join('\n') + '\n');
    await run(cfg, store);
    const ppo = lines(store, 'metrics.jsonl').filter((m) => m.stage === 'ppo');
    expect(ppo.map((m) => m.iteration)).toEqual([0, 1]);
    expect(JSON.stringify(ppo[0])).toBe(lost);
  }, 300_000);
});

describe('tasks from a suite file', () => {
  test("a run trains on the file's tasks, keeps the file, resumes without it and refuses a changed one", async () => {
    // the file: built-in spec tasks as a user would export them (train with solutions, the rest tests only)
    const b = buildTaskSet({ seed: 9, families: ['spec'] });
    const fileText = suiteJsonl([...b.train.slice(0, 40), ...b.rl.slice(0, 10), ...b.heldout.slice(0, 10)]);
    const { ref } = await readSuiteSource(fileText, 'mine.jsonl');
    const cfg = miniConfig({ rm: { enabled: false }, rl: { iterations: 1 }, tasks: { suite: ref, heldoutShare: 0.2, rlShare: 0.2 } });
    const store = new MemoryRunDir();
    await expect(run(cfg, store)).rejects.toThrow(/suite file "mine\.jsonl", which is not in the run directory .*open the file again/);
    const summary = await run(cfg, store, () => store.files.has('sft.json'), fileText).catch((e: unknown) => e);
    expect(summary).toBeInstanceOf(StoppedError);
    expect(text(store, 'tasks/suite.jsonl')).toBe(fileText);
    const fileIds = new Set(
      fileText
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { task_id: string }).task_id),
    );
    const split = (k: string) => lines(store, `tasks/${k}.jsonl`).map((t) => t.task_id as string);
    expect(split('heldout')).toHaveLength(12);
    expect(split('rl')).toHaveLength(12);
    expect([...split('train'), ...split('val'), ...split('rl'), ...split('heldout')].sort()).toEqual([...fileIds].sort());
    for (const t of lines(store, 'tasks/train.jsonl')) expect(t.canonical_solution).toBeTypeOf('string');
    // resumed from the kept file (no text passed); a different text is ignored in favour of the kept one
    const done = await run(cfg, store, undefined, fileText.replace('add', 'plus'));
    expect(done.rl.iterations).toBe(1);
    expect(Object.keys(done.sft.heldout_by_family)).toEqual(['spec']);
    // a changed file under the same config is refused, naming it
    const other = new MemoryRunDir();
    await expect(run(cfg, other, undefined, fileText.replace(/\n$/, '\n\n'))).rejects.toThrow(
      /suite file "mine\.jsonl" is not the one the run was started with/,
    );
    // a config naming an ONNX KL reference that is not given is refused before anything is written
    const none = new MemoryRunDir();
    await expect(run(miniConfig({ rl: { reference: { name: 'm.onnx', sha256: 'ab'.repeat(32) } } }), none)).rejects.toThrow(
      /KL reference is the ONNX model "m\.onnx" \(SHA-256 abababababab…\), which was not given/,
    );
    expect(none.files.size).toBe(0);
    expect(() => miniConfig({ rl: { reference: { name: 'm.onnx', sha256: 'xyz' } } })).toThrow(
      /config\.rl\.reference\.sha256: must be 64 lowercase hex digits/,
    );
    // python tasks with JavaScript-only exploration are refused
    const py = fileText.replaceAll('"language":"javascript"', '"language":"python"');
    const pyRef = (await readSuiteSource(py, 'py.jsonl')).ref;
    await expect(
      run(miniConfig({ tasks: { suite: pyRef }, explore: { syntax: true } }), new MemoryRunDir(), undefined, py),
    ).rejects.toThrow(/python tasks .*JavaScript only/);
  }, 300_000);
});

describe('pause', () => {
  test('a paused run waits in the gate, writing nothing, and carries on where it was', async () => {
    const store = new MemoryRunDir();
    const cfg = miniConfig({ rm: { enabled: false }, rl: { iterations: 1 } });
    let release: (() => void) | null = null;
    let calls = 0;
    const gate = (): Promise<void> => {
      calls++;
      if (release === null && store.files.has('sft.json')) return new Promise<void>((r) => (release = r));
      return Promise.resolve();
    };
    const running = runPipeline({
      cfg,
      seed: 3,
      policies: labGptFactory('cpu'),
      store,
      scorer: { pool, analyzer },
      gate,
    });
    await vi.waitFor(() => expect(release).not.toBeNull(), { timeout: 120_000, interval: 20 });
    const before = new Map([...store.files].map(([k, v]) => [k, v.length]));
    await new Promise((r) => setTimeout(r, 500));
    expect(new Map([...store.files].map(([k, v]) => [k, v.length]))).toEqual(before);
    expect(store.files.has('policy.ckpt')).toBe(false);
    release!();
    const summary = await running;
    expect(summary.rl.iterations).toBe(1);
    expect(lines(store, 'metrics.jsonl').filter((m) => m.stage === 'sft').length).toBeGreaterThan(0);
    expect(calls).toBeGreaterThanOrEqual(cfg.sft.maxSteps + 2); // every SFT step, before the reward model and PPO, each iteration
  }, 300_000);
});

describe('SFT resume', () => {
  test('a run stopped mid-SFT continues from its last validation and ends as the uninterrupted run does', async () => {
    const cfg = miniConfig({ rm: { enabled: false }, rl: { iterations: 1 }, sft: { maxSteps: 9, evalEvery: 3, patience: 10 } });
    const whole = new MemoryRunDir();
    const ref = await run(cfg, whole);

    const store = new MemoryRunDir();
    const progressStep = () => (store.files.has('sft-progress.json') ? (JSON.parse(text(store, 'sft-progress.json')).step as number) : 0);
    // stop one step after the second validation (step 7): steps 1-6 are saved, step 7 is lost
    let stepsSeen = 0;
    await expect(run(cfg, store, () => progressStep() === 6 && ++stepsSeen > 1)).rejects.toThrow(StoppedError);
    expect(store.files.has('sft.json')).toBe(false);
    expect(progressStep()).toBe(6);
    const resumed = await run(cfg, store);
    // the same run, up to the checkpoint's float32 copy of the optimizer moments (the cpu
    // backend keeps them in float64)
    expect({ ...resumed.sft, best_val_loss: 0 }).toEqual({ ...ref.sft, best_val_loss: 0 });
    expect(resumed.sft.best_val_loss).toBeCloseTo(ref.sft.best_val_loss, 6);
    const a = loadModel(store.files.get('sft.ckpt')!).params;
    const b = loadModel(whole.files.get('sft.ckpt')!).params;
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    expect(diff).toBeLessThan(1e-5);
    // a progress file whose checkpoints are from another step is ignored: SFT starts over
    const stale = new MemoryRunDir();
    for (const f of ['sft-progress.json', 'sft-resume.ckpt', 'sft-best.ckpt']) await stale.write(f, store.files.get(f)!);
    await stale.write('sft-progress.json', JSON.stringify({ ...JSON.parse(text(store, 'sft-progress.json')), step: 3 }));
    expect((await run(cfg, stale)).sft).toEqual(ref.sft);
  }, 300_000);
});

describe('repair turn', () => {
  test('the second prompt carries the attempt and the failing test, then the header again', () => {
    const task = { task_id: 't', language: 'javascript' as const, prompt: '// add 3 to x\nfunction f(x) {\n', entry_point: 'f', tests: '' };
    const p = repairPrompt(task, '  return x - 3;\n}\n', {
      task_id: 't',
      index: 0,
      passed: false,
      verdict: 'failed',
      tests: [{ name: 'assert 1', status: 'failed', line: 1, source: 'JSON.stringify(f(1)) === "4"', evaluations: 1 }],
      tests_passed: 0,
      tests_total: 1,
      output: '',
      duration_ms: 1,
    });
    expect(p).toBe('// add 3 to x\n// attempt: return x - 3;\n// failed: JSON.stringify(f(1)) === "4"\nfunction f(x) {\n');
  });
});

describe('webgpu', () => {
  const tinyRl = RL_PRESETS.tiny!.rl;
  test.each([
    ['PPO with a critic and KL (MINI_RUN)', {}],
    [
      `the tiny preset's RL (${tinyRl.algo}, groupStd ${tinyRl.groupStd}, KL ${tinyRl.kl.coef})`,
      { rl: { algo: tinyRl.algo, groupStd: tinyRl.groupStd, kl: { coef: tinyRl.kl.coef } } },
    ],
  ])(
    'the first RL iteration gives the same numbers on webgpu as on cpu: %s',
    async (_name, over) => {
      const rt = await testRuntime();
      const cfg = miniConfig(
        mergeConfig({ rl: { promptsPerIteration: 4, samplesPerPrompt: 2, maxNewTokens: 10, minibatch: 8, epochs: 1 } }, over),
      );
      const set = buildTaskSet({ seed: 3, ...cfg.tasks });
      const tok = trainTokenizer(
        [...set.train, ...set.val].map((t) => t.prompt + t.reference),
        { vocabSize: cfg.model.vocabSize },
      );
      const model = { ...cfg.model, vocabSize: tok.vocabSize };
      const params = initParams(paramTable(model), 3);
      const results = [];
      for (const kind of ['cpu', 'webgpu'] as const) {
        const make = (p: Float32Array, lr: number) =>
          createBackend(kind, { config: model, params: p, optim: { ...DEFAULT_OPTIM, lr }, runtime: rt });
        const policy = make(params, cfg.rl.lr);
        const ref = make(params, 0);
        const out = await ppoIteration(
          { policy, ref, rm: null, tok, scorer: { pool, analyzer }, cfg, seed: 3, tasks: set.rl },
          0,
          new KlController(cfg.rl.kl.coef, false, 1, 1),
        );
        results.push({ out, params: await policy.getParams() });
        policy.dispose();
        ref.dispose();
      }
      const [c, g] = results as [(typeof results)[0], (typeof results)[0]];
      // the same rollouts (identical sampling from the same uniforms) and rewards
      expect(g.out.rollouts.map((r) => r.completion)).toEqual(c.out.rollouts.map((r) => r.completion));
      expect(g.out.rollouts.map((r) => r.score)).toEqual(c.out.rollouts.map((r) => r.score));
      const critic = cfg.rl.algo === 'ppo' ? ['loss/value_avg', 'losses/explained_variance'] : []; // GRPO has no value head loss
      for (const key of [
        'reward',
        'env/pass_rate',
        'policy/entropy_avg',
        'loss/policy_avg',
        'losses/approx_kl',
        'objective/kl',
        ...critic,
      ]) {
        const a = c.out.metrics[key] as number;
        const b = g.out.metrics[key] as number;
        expect(Math.abs(a - b), `${key}: cpu ${a}, webgpu ${b}`).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(a)));
      }
      let maxDiff = 0;
      for (let i = 0; i < c.params.length; i++) maxDiff = Math.max(maxDiff, Math.abs(c.params[i]! - g.params[i]!));
      expect(maxDiff).toBeLessThan(1e-3 * cfg.rl.lr * 100);
    },
    300_000,
  );
});
