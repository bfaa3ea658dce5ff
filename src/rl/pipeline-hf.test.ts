/**
 * The staged pipeline on an imported model (policy/hf-train.ts) end to end: the committed Qwen2
 * fixture with LoRA, its own tokenizer, SFT skipped, the reward model as a value head on the
 * shared base, PPO with the KL penalty against the same base; resume after a stop gives the
 * uninterrupted run's numbers; the first iteration is the same on webgpu as on cpu; a config and
 * a factory that disagree about the model are refused.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import type { HfModel } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { hfPolicyFactory, isHfPolicyCheckpoint } from '../policy/hf-train';
import { labGptFactory, type PolicyFactory } from '../policy';
import type { SandboxPool } from '../sandbox/pool';
import { createNodePool } from '../sandbox/pool.node';
import { testRuntime } from '../testing/gpu';
import { HF_FIXTURES } from '../testing/hf-fixtures';
import { mergeConfig, resolveConfig, type RlConfig } from './config';
import { runPipeline, StoppedError, type Summary } from './pipeline';
import type { RolloutRecord } from './ppo-loop';
import { runWeightFormat } from './pretrained';
import { loadHfReferenced } from './reference-hf';
import { readMetrics, readRollouts } from './run-files';
import { MemoryRunDir, readJson } from './run-dir';
import { MINI_RUN } from './testing';

let pool: SandboxPool;
let analyzer: Analyzer;
let model: HfModel;
let ref: { name: string; sha256: string };
beforeAll(async () => {
  [pool, analyzer] = await Promise.all([createNodePool({ size: 2 }), createAnalyzer(nodeWasmLoader)]);
  ({ model, ref } = await loadHfReferenced(await nodeFolder(join(HF_FIXTURES, 'qwen2'))));
}, 60_000);
afterAll(() => pool?.close());

const LORA = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] };

function hfConfig(over: unknown = {}): RlConfig {
  const base = mergeConfig(MINI_RUN, {
    promptFormat: 'completion', // the fixture's chat template and English, a character a token, outgrow 96 tokens
    pretrained: ref,
    lora: LORA,
    model: { contextLength: 96 },
    sft: { maxSteps: 0 },
    rm: { enabled: true, samplesPerTask: 3, steps: 2, batch: 4 },
    rl: { iterations: 2, promptsPerIteration: 2, samplesPerPrompt: 3, maxNewTokens: 8 },
    eval: { maxNewTokens: 8 },
  });
  return resolveConfig('tiny', mergeConfig(base, over));
}

const factory = (cfg: RlConfig, backend: 'cpu' | 'webgpu' = 'cpu', runtime?: Awaited<ReturnType<typeof testRuntime>>) =>
  hfPolicyFactory(model, {
    backend,
    runtime,
    lora: cfg.lora ? { ...LORA, ...cfg.lora } : null,
    // the fixture's F16 base stays F16 on webgpu (lora.baseDtype "auto"); the cpu copy is the same numbers
    weightFormat: runWeightFormat(cfg, model.dtypes),
    contextLength: cfg.model.contextLength,
  });

function run(cfg: RlConfig, store: MemoryRunDir, policies: PolicyFactory, shouldStop?: () => boolean): Promise<Summary> {
  return runPipeline({ cfg, seed: 5, policies, store, scorer: { pool, analyzer }, shouldStop });
}

describe('the pipeline on an imported model', () => {
  test('LoRA: every stage runs on the model with its own tokenizer; a stopped run resumes to the same numbers', async () => {
    const cfg = hfConfig();
    const store = new MemoryRunDir();
    const summary = await run(cfg, store, factory(cfg));
    expect(summary.sft.steps).toBe(0);
    expect(summary.prompt_format).toBe('completion');
    const stored = await readJson<{ cfg: RlConfig }>(store, 'config.json');
    expect(stored!.cfg.pretrained).toEqual(ref);
    expect(stored!.cfg.lora).toEqual(LORA);
    // the run trains no tokenizer of its own
    expect(store.files.has('tokenizer.json')).toBe(false);
    expect(isHfPolicyCheckpoint(store.files.get('policy.ckpt')!)).toBe(true);
    const rollouts = (await readRollouts(store, 1)) as RolloutRecord[];
    expect(rollouts.length).toBe(6);
    for (const r of rollouts) {
      // per-token texts in the model's own tokens
      expect(r.tokens.length).toBe(r.ids.length);
      expect(model.tokenizer.decode(r.ids.filter((id) => !model.tokenizer.isSpecial(id)))).toBe(
        r.tokens.filter((_, i) => !model.tokenizer.isSpecial(r.ids[i]!)).join(''),
      );
      expect(r.ref_logprobs.every(Number.isFinite)).toBe(true);
    }
    // after a stop at the first iteration, the same factory's policies resume to the same numbers
    const again = new MemoryRunDir();
    let ppoLines = 0;
    await expect(
      run(cfg, again, factory(cfg), () => {
        ppoLines = [
          ...(again.files.get('metrics.jsonl')
            ? new TextDecoder().decode(again.files.get('metrics.jsonl')).matchAll(/"stage":"ppo"/g)
            : []),
        ].length;
        return ppoLines >= 1;
      }),
    ).rejects.toThrow(StoppedError);
    const resumed = await run(cfg, again, factory(cfg));
    const ppo = async (s: MemoryRunDir) =>
      (await readMetrics(s)).filter((l) => l.stage === 'ppo').map((l) => [l['iteration'], l['reward'], l['loss/policy_avg']]);
    // the checkpoint holds the float64 trainer's adapters and moments in f32: the resumed
    // iteration agrees to f32 rounding, not bit for bit
    const [got, want] = [await ppo(again), await ppo(store)];
    expect(got.length).toBe(want.length);
    got.forEach((row, i) => row.forEach((v, j) => expect(v as number).toBeCloseTo(want[i]![j] as number, 6)));
    expect(resumed.rl.heldout_pass1).toBe(summary.rl.heldout_pass1);
  }, 240_000);

  test('full fine-tuning with GRPO runs too', async () => {
    const cfg = hfConfig({ rl: { algo: 'grpo', iterations: 1 }, rm: { enabled: false } });
    delete cfg.lora;
    const summary = await run(cfg, new MemoryRunDir(), factory(cfg));
    expect(summary.rl.iterations).toBe(1);
  }, 120_000);

  test('the first PPO iteration on webgpu matches cpu', async () => {
    const cfg = hfConfig({ rl: { iterations: 1 }, rm: { enabled: false } });
    const rt = await testRuntime();
    const [a, b] = [new MemoryRunDir(), new MemoryRunDir()];
    await run(cfg, a, factory(cfg));
    await run(cfg, b, factory(cfg, 'webgpu', rt));
    const first = async (s: MemoryRunDir) => (await readMetrics(s)).find((l) => l.stage === 'ppo')!;
    const [mc, mg] = [await first(a), await first(b)];
    expect(mg['reward']).toBeCloseTo(mc['reward'] as number, 3);
    expect(mg['loss/policy_avg']).toBeCloseTo(mc['loss/policy_avg'] as number, 3);
    expect(mg['objective/kl']).toBeCloseTo(mc['objective/kl'] as number, 3);
  }, 300_000);

  test("chat: an instruct model's rollouts and repair turns go through its chat template", async () => {
    // the Qwen2 fixture with its real chat template; its English takes a token a character, so the
    // conversation needs more than the fixture's 256 positions: a copy that declares 1024 (RoPE: no
    // position table, the weights are the same)
    const nodeFs = await import('node:fs/promises');
    const os = await import('node:os');
    const dir = await nodeFs.mkdtemp(join(os.tmpdir(), 'coderl-chat-'));
    for (const f of await nodeFs.readdir(join(HF_FIXTURES, 'qwen2'))) await nodeFs.copyFile(join(HF_FIXTURES, 'qwen2', f), join(dir, f));
    const config = JSON.parse(await nodeFs.readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    await nodeFs.writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 1024 }));
    const long = await loadHfReferenced(await nodeFolder(dir));
    const cfg = resolveConfig(
      'tiny',
      mergeConfig(hfConfig(), {
        pretrained: long.ref,
        promptFormat: 'auto',
        model: { contextLength: 900 },
        tasks: { families: ['spec'] },
        explore: { repair: true },
        rm: { enabled: false },
        rl: { iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2 },
        eval: { samples: 1, k: [1] },
      }),
    );
    const store = new MemoryRunDir();
    const policies = hfPolicyFactory(long.model, { backend: 'cpu', lora: LORA, contextLength: 900 });
    const events: string[] = [];
    const summary = await runPipeline({
      cfg,
      seed: 5,
      policies,
      store,
      scorer: { pool, analyzer },
      onEvent: (e) => events.push(e.message),
    });
    expect(events.some((m) => m.includes('prompts through the chat template'))).toBe(true);
    expect(summary.prompt_format).toBe('chat');
    const rollouts = (await readRollouts(store, 1)) as RolloutRecord[];
    const first = rollouts.filter((r) => r.turn === 1);
    const second = rollouts.filter((r) => r.turn === 2);
    expect(first.length).toBe(4);
    // a random model fails: every failed first attempt gets its repair turn
    expect(second.length).toBe(first.filter((r) => !r.passed).length);
    expect(second.length).toBeGreaterThan(0);
    for (const r of first) {
      expect(r.model_input).toMatch(/^<\|im_start\|>system\n/);
      expect(r.model_input).toContain('<|im_start|>user\nComplete the following JavaScript function.');
      expect(r.model_input!.endsWith(`<|im_start|>assistant\n\`\`\`javascript\n${r.prompt}`)).toBe(true);
    }
    for (const r of second) {
      // the conversation goes on: the failed function as the assistant's turn, the error as the
      // next user turn, the reply opened with the task's prompt again (the program is prompt + completion)
      const attempt = first.find(
        (f) =>
          f.group === r.group && !f.passed && r.model_input!.includes(`${f.prompt}${f.completion.replace(/\n*$/, '')}\n\`\`\`<|im_end|>`),
      );
      expect(attempt).toBeDefined();
      expect(r.prompt).toBe(attempt!.prompt);
      expect(r.model_input).toContain('<|im_start|>user\nThat function fails its tests:');
      expect(r.model_input).toContain(
        attempt!.verdict === 'failed' ? `failed: ${attempt!.tests.find((t) => t.status !== 'passed')!.source}` : `${attempt!.verdict}:`,
      );
      expect(r.model_input!.endsWith(`<|im_start|>assistant\n\`\`\`javascript\n${r.prompt}`)).toBe(true);
      expect(r.completion).not.toContain('```');
    }
    const ppo = (await readMetrics(store)).find((l) => l.stage === 'ppo')!;
    expect(ppo['repair/attempts']).toBe(second.length);
    expect(ppo['repair/success_rate']).toBe(second.filter((r) => r.passed).length / second.length);
    await nodeFs.rm(dir, { recursive: true, force: true });
  }, 300_000);

  test('a config and a factory that disagree about the model are refused', async () => {
    const cfg = hfConfig();
    await expect(run(cfg, new MemoryRunDir(), labGptFactory('cpu'))).rejects.toThrow(
      /trains the Hugging Face model "qwen2\/".*--model DIR/,
    );
    const lab = resolveConfig('tiny', MINI_RUN);
    await expect(run(lab, new MemoryRunDir(), factory(cfg))).rejects.toThrow(/config does not name it \(config.pretrained\)/);
    expect(() => resolveConfig('tiny', mergeConfig(MINI_RUN, { lora: { rank: 4 } }))).toThrow(/config.lora: LoRA adapts an imported model/);
    expect(() => resolveConfig('tiny', mergeConfig(MINI_RUN, { pretrained: ref, lora: { rank: 0 } }))).toThrow(/config.lora.rank/);
    for (const bad of [0, -2, 'x', 1e6])
      expect(() => resolveConfig('tiny', mergeConfig(MINI_RUN, { pretrained: ref, lora: { rank: 4, lrRatio: bad } }))).toThrow(
        /config.lora.lrRatio: must be a number in \(0, 1000\]/,
      );
    expect(resolveConfig('tiny', mergeConfig(MINI_RUN, { pretrained: ref, lora: { rank: 4, lrRatio: 16 } })).lora).toMatchObject({
      lrRatio: 16,
    });
    for (const bad of ['fp16', 16, null])
      expect(() => resolveConfig('tiny', mergeConfig(MINI_RUN, { pretrained: ref, lora: { rank: 4, baseDtype: bad } }))).toThrow(
        /config.lora.baseDtype: must be one of "auto", "f32", "f16", "bf16" \(how the frozen base is stored on the GPU\)/,
      );
    const withBase = (baseDtype?: string) =>
      resolveConfig('tiny', mergeConfig(MINI_RUN, { pretrained: ref, lora: { rank: 4, ...(baseDtype ? { baseDtype } : {}) } }));
    expect(runWeightFormat(withBase(), ['F16'])).toBe('f16'); // auto: the checkpoint's own
    expect(runWeightFormat(withBase('auto'), ['BF16'])).toBe('bf16');
    expect(runWeightFormat(withBase(), ['F16', 'F32'])).toBe('f32'); // an F32 tensor would be rounded
    expect(runWeightFormat(withBase('bf16'), ['F32'])).toBe('bf16');
    expect(runWeightFormat(withBase('f32'), ['BF16'])).toBe('f32');
    expect(runWeightFormat(hfConfig(), ['BF16'])).toBe('bf16');
    expect(runWeightFormat({ lora: undefined }, ['BF16'])).toBe('f32'); // full fine-tuning trains f32 weights
  });
});
