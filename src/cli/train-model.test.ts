/**
 * `coderl train --model DIR`: an imported model trained with LoRA from the CLI (the memory plan
 * printed first, the LoRA targets resolved into config.json), its policy checkpoint exported as a
 * PEFT adapter and as a merged folder (`coderl export-hf --model --checkpoint [--merge]`) whose
 * logits are the trained policy's, the adapter evaluated (`coderl eval --adapter`) and used to
 * start another run (`coderl train --adapter`, whose rank it fixes); a plan over --memory-budget,
 * unknown targets, a missing adapter and --adapter without --model are refused with their reasons.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { loadHfFolder } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, readLoraAdapter } from '../hf/peft';
import { DEFAULT_OPTIM } from '../model/optim';
import { hfPolicyFactory } from '../policy/hf-train';
import { MINI_RUN } from '../rl/testing';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

const QWEN2 = join(import.meta.dirname, '../../data/hf-fixtures/qwen2');
const root = mkdtempSync(join(tmpdir(), 'coderl-train-model-'));
const { sft: _sft, ...MINI_NO_SFT } = MINI_RUN;
// completion prompts: the fixture's chat template and English (a character a token) outgrow its context
const SET = {
  ...MINI_NO_SFT,
  promptFormat: 'completion',
  model: { contextLength: 96 },
  lora: { rank: 4 },
  rl: { ...MINI_RUN.rl, iterations: 2 },
};
const args = (out: string, set: unknown = SET, extra: string[] = []) => [
  'train',
  '--preset',
  'tiny',
  '--seed',
  '4',
  '--out',
  out,
  '--model',
  QWEN2,
  '--set',
  JSON.stringify(set),
  '--workers',
  '1',
  ...extra,
];

const run = join(root, 'lora');
let trainErr: string[] = [];
beforeAll(async () => {
  const c = capture();
  expect(await main(args(run), c.io)).toBe(0);
  trainErr = c.err;
}, 180_000);

describe('coderl train --model', () => {
  test('prints the memory plan and records the model and the resolved LoRA settings', () => {
    expect(trainErr.join('\n')).toMatch(/memory plan: weights .* adapters .* KV cache .* activations .*total .* of 4\.00 GiB/);
    const cfg = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8')).cfg;
    expect(cfg.pretrained.name).toBe('qwen2/');
    expect(cfg.lora).toEqual({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] });
    expect(cfg.model).toMatchObject({ nLayer: 2, dModel: 32, contextLength: 96, vocabSize: 512 });
    expect(cfg.sft.maxSteps).toBe(0);
  });

  test('export-hf writes the adapter and the merged model; both give the trained policy', async () => {
    const adapterDir = join(root, 'adapter');
    const mergedDir = join(root, 'merged');
    const ckpt = join(run, 'policy.ckpt');
    expect(await main(['export-hf', '--model', QWEN2, '--checkpoint', ckpt, '--out', adapterDir], capture().io)).toBe(0);
    expect(await main(['export-hf', '--model', QWEN2, '--checkpoint', ckpt, '--merge', '--out', mergedDir], capture().io)).toBe(0);
    const base = await loadHfFolder(await nodeFolder(QWEN2));
    const adapter = readLoraAdapter(
      base.arch,
      JSON.parse(readFileSync(join(adapterDir, ADAPTER_CONFIG), 'utf8')),
      new Uint8Array(readFileSync(join(adapterDir, ADAPTER_WEIGHTS))),
    );
    expect(adapter.config).toEqual({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] });
    // the trained policy from its checkpoint, and the merged folder as a plain model
    const lora = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] };
    const f = hfPolicyFactory(base, { backend: 'cpu', lora, contextLength: 96 });
    const spec = { config: f.pretrained!.config, tokenizer: base.tokenizer };
    const policy = f.load(spec, new Uint8Array(readFileSync(ckpt)), DEFAULT_OPTIM);
    const merged = await loadHfFolder(await nodeFolder(mergedDir));
    const plain = hfPolicyFactory(merged, { backend: 'cpu', lora: null, contextLength: 96 }).init(spec, 1, DEFAULT_OPTIM);
    const input = { tokens: [5, 9, 33, 2, 100, 7], B: 1, T: 6 };
    const [a, b] = [(await policy.forward(input)).logits, (await plain.forward(input)).logits];
    let d = 0;
    for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
    expect(d).toBeLessThan(1e-5);
    // the adapter moved: B is not zero any more
    expect(adapter.B.some((x) => x.some((v) => v !== 0))).toBe(true);
    // evaluated with --adapter (merged on load)
    const e = capture();
    const evalArgs = ['--suite', join(run, 'tasks', 'heldout.jsonl'), '--model', QWEN2, '--adapter', adapterDir];
    const evalCode = await main(
      ['eval', ...evalArgs, '--limit', '2', '--samples', '1', '--k', '1', '--max-new-tokens', '8', '--quiet'],
      e.io,
    );
    expect(evalCode).toBe(0);
    expect(e.err.join('\n')).toBe('');
    expect(e.out.join('\n')).toMatch(/pass@1/);
    // and used to start a run: its adapters are the exported ones, recorded in config.lora.from
    const next = join(root, 'from-adapter');
    const c = capture();
    expect(
      await main(args(next, { ...SET, lora: undefined, rl: { ...SET.rl, iterations: 1 } }, ['--adapter', adapterDir, '--quiet']), c.io),
    ).toBe(0);
    const cfg = JSON.parse(readFileSync(join(next, 'config.json'), 'utf8')).cfg;
    expect(cfg.lora.from.name).toBe('adapter/');
    const sft = f.readCheckpoint(spec, new Uint8Array(readFileSync(join(next, 'sft.ckpt'))));
    const exported = await policy.getParams();
    // the adapters (every slab value but the value head's C + 1) start as the exported ones
    const n = exported.length - (base.arch.dModel + 1);
    expect(Array.from(sft.params.subarray(0, n))).toEqual(Array.from(exported.subarray(0, n)));
    // as a lab checkpoint it is refused, saying how to evaluate it
    const lab = capture();
    expect(await main(['eval', '--suite', join(run, 'tasks', 'heldout.jsonl'), '--checkpoint', ckpt], lab.io)).toBe(2);
    expect(lab.err.join('\n')).toMatch(/a run on an imported Hugging Face model .*--adapter/);
    // an adapter's settings are the run's: a --set lora.rank that differs is refused
    const r = capture();
    expect(await main(args(join(root, 'v'), { ...SET, lora: { rank: 8 } }, ['--adapter', adapterDir]), r.io)).toBe(2);
    expect(r.err.join('\n')).toMatch(/--set lora.rank is 8, the adapter .* has 4/);
    policy.dispose();
    plain.dispose();
  }, 240_000);

  test('refuses a plan over the budget, unknown targets, a missing adapter folder and --adapter without --model', async () => {
    const c = capture();
    expect(await main([...args(join(root, 'x')), '--memory-budget', '0.0002'], c.io)).toBe(2);
    // the fixture's F16 weights stay F16 under LoRA (lora.baseDtype "auto"), and the plan says so
    expect(c.err.join('\n')).toMatch(/does not fit 209\.7 KiB: weights [\d.]+ KiB \(F16\), .*total .*--memory-budget 0\.0002 GiB/);
    const t = capture();
    expect(await main(args(join(root, 'y'), { ...SET, lora: { rank: 4, targets: ['c_attn'] } }), t.io)).toBe(2);
    expect(t.err.join('\n')).toMatch(/c_attn/);
    const a = capture();
    expect(await main(['train', '--out', join(root, 'z'), '--adapter', root], a.io)).toBe(2);
    expect(a.err.join('\n')).toMatch(/--adapter needs --model DIR/);
    const m = capture();
    expect(await main(args(join(root, 'w'), SET, ['--adapter', join(root, 'nowhere')]), m.io)).toBe(2);
    expect(m.err.join('\n')).toMatch(/no adapter_config\.json/);
  });
});
