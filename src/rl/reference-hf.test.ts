/**
 * A Hugging Face folder as the KL reference (reference-hf.ts): the record (name and the
 * `sha256sum` digest, checked against node:crypto), the vocabulary check (a lab tokenizer and its
 * export pass; another tokenizer, a shorter or longer vocabulary, another eos are refused naming
 * both tokenizers and the first id), the factory (the export of a lab model scores as that model
 * does, KL 0; a changed folder, a short context refused), the run directory's copy (of the KL
 * reference, and of a model the run trains, hfPolicyRun), and the pipeline refusing a foreign
 * reference at setup, before SFT.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { hfFolderFiles, labArch, labWeights } from '../hf/export';
import { memoryFolder, type ModelFolder } from '../hf/folder';
import type { ModelConfig } from '../model/config';
import { maxRelDiff } from '../onnx/parity';
import { tinySnapshot } from '../onnx/testing';
import { labGptFactory, DEFAULT_OPTIM } from '../policy';
import { Tokenizer, trainTokenizer } from '../tokenizer';
import { labTokenizerToHf } from '../tokenizer/export-hf';
import { HfTokenizer } from '../tokenizer/hf';
import { mergeConfig, resolveConfig, type RlConfig } from './config';
import { runPipeline, StoppedError } from './pipeline';
import { isHfReference, referenceLabel } from './reference';
import {
  assertSameVocabulary,
  HF_POLICY_KEPT,
  hfPolicyRun,
  hfReference,
  hfReferenceName,
  loadHfReferenced,
  REFERENCE_HF_DIR,
  REFERENCE_HF_FILES,
  runHfReference,
} from './reference-hf';
import { MemoryRunDir, writeJson } from './run-dir';
import type { Scorer } from './scorer';
import { MINI_RUN } from './testing';

const QWEN2 = join(import.meta.dirname, '../../data/hf-fixtures/qwen2');
const qwen2Files = () => new Map(readdirSync(QWEN2).map((f) => [f, new Uint8Array(readFileSync(join(QWEN2, f)))]));
const qwen2 = () => memoryFolder('fixtures/qwen2', qwen2Files());
const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const cpu = () => ({ backend: 'cpu' as const });

const CORPUS = ['function add(a, b) {\n  return a + b;\n}\n', 'const xs = [1, 2, 3].map((x) => x * 2);\n', 'def f(x):\n    return x\n'];
const labTok = (vocabSize = 300) => trainTokenizer(CORPUS, { vocabSize });

/** A lab GPT of `config` (random, seeded) with `tok`, exported as coderl export-hf writes it. */
function labExport(tok: Tokenizer, config: ModelConfig, name = 'runs/r/hf'): { folder: ModelFolder; params: Float32Array } {
  const cfg = { ...config, vocabSize: tok.vocabSize };
  const { params } = tinySnapshot(cfg, 3, 1);
  const hf = labTokenizerToHf(tok);
  const files = hfFolderFiles({
    arch: labArch(cfg),
    weights: labWeights(cfg, params),
    tokenizerJson: hf.tokenizerJson,
    tokenizerConfig: hf.tokenizerConfig,
    bosId: tok.eosId,
    eosIds: [tok.eosId],
  });
  return { folder: memoryFolder(name, files), params };
}

const hfTok = (tok: Tokenizer, generationConfig?: unknown) => {
  const hf = labTokenizerToHf(tok);
  return HfTokenizer.fromFiles({ tokenizerJson: hf.tokenizerJson, tokenizerConfig: hf.tokenizerConfig, generationConfig });
};
const names = { run: "the run's tokenizer.json", ref: 'hf/tokenizer.json' };

describe('the record of a folder', () => {
  test('name with a "/" and the SHA-256 of what sha256sum prints for config.json and the shards', async () => {
    const { model, ref } = await loadHfReferenced(qwen2());
    const f = qwen2Files();
    const lines = ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']
      .map((n) => `${sha(f.get(n)!)}  ${n}\n`)
      .join('');
    expect(ref).toEqual({ name: 'qwen2/', sha256: sha(lines) });
    expect(model.arch.hfArchitecture).toBe('Qwen2ForCausalLM');
    expect(isHfReference(ref)).toBe(true);
    expect(isHfReference({ name: 'sft.onnx', sha256: ref.sha256 })).toBe(false);
    expect(referenceLabel(ref)).toBe(`Hugging Face model qwen2/ (SHA-256 ${ref.sha256.slice(0, 12)}…)`);
    expect(hfReferenceName('runs/tiny-1/hf/')).toBe('hf/');
    expect(hfReferenceName('C:\\models\\gpt2')).toBe('gpt2/');
    // the tokenizer files are not part of it; a weight byte is
    const tok = qwen2Files();
    tok.set('tokenizer_config.json', new TextEncoder().encode('{}'));
    expect((await loadHfReferenced(memoryFolder('x/qwen2', tok))).ref).toEqual(ref);
    const w = qwen2Files();
    const shard = w.get('model-00002-of-00002.safetensors')!.slice();
    shard[shard.length - 1]! ^= 1;
    w.set('model-00002-of-00002.safetensors', shard);
    expect((await loadHfReferenced(memoryFolder('qwen2', w))).ref.sha256).not.toBe(ref.sha256);
  });
});

describe('assertSameVocabulary', () => {
  test('a lab tokenizer and its export are the same vocabulary; another tokenizer is refused naming both and the first id', async () => {
    const tok = labTok();
    expect(() => assertSameVocabulary(tok, hfTok(tok), names)).not.toThrow();
    const { model } = await loadHfReferenced(qwen2());
    expect(() => assertSameVocabulary(tok, model.tokenizer, names, 'qwen2/ (KL reference)')).toThrow(
      /^qwen2\/ \(KL reference\): its tokenizer \(hf\/tokenizer\.json, 459 ids\) is not the run's \(the run's tokenizer\.json, \d+ ids\): id \d+ is .+ in hf\/tokenizer\.json and .+ in the run's tokenizer\.json\. The KL penalty compares log-probs of the same token ids/,
    );
  });

  test('a vocabulary that is a prefix of the other, and another end-of-sequence id', () => {
    const small = labTok(262);
    const big = labTok(300); // 271 ids: every merge the corpus has
    // the same corpus: the merges of the smaller are the first of the bigger, the specials come after them
    expect(() => assertSameVocabulary(big, hfTok(small), names)).toThrow(/: id \d+ is .+ in hf\/tokenizer\.json and .+ in the run's/);
    const tok = labTok();
    expect(() => assertSameVocabulary(tok, hfTok(tok, { eos_token_id: 5 }), names)).toThrow(
      `the end-of-sequence id is 5 in hf/tokenizer.json and ${tok.eosId} in the run's tokenizer.json`,
    );
  });
});

const config: ModelConfig = { nLayer: 1, dModel: 32, nHead: 2, contextLength: 64, vocabSize: 0 };

describe('hfReference', () => {
  test('the export of a lab model is that model as the reference: the same logits (KL 0)', async () => {
    const tok = labTok();
    const { folder, params } = labExport(tok, config);
    const { ref } = await loadHfReferenced(folder);
    expect(ref.name).toBe('hf/');
    const spec = { config: { ...config, vocabSize: tok.vocabSize }, tokenizer: tok };
    const policy = await hfReference(() => folder, ref, 'hf/ (KL reference)', cpu)(tok, spec.config);
    const lab = labGptFactory('cpu').fromParams(spec, params, DEFAULT_OPTIM);
    const tokens = Array.from(tok.encode('function add(a, b) {'));
    const input = { tokens, B: 1, T: tokens.length };
    const [a, b] = [(await policy.forward(input)).logits, (await lab.forward(input)).logits];
    expect(policy.describe()).toMatchObject({ family: 'hf', vocabSize: tok.vocabSize, contextLength: 64 });
    expect(maxRelDiff(a, b)).toBeLessThan(1e-5);
    policy.dispose();
    lab.dispose();
  });

  test('another folder than the config names, a longer context than its positions, another tokenizer: refused', async () => {
    const tok = labTok();
    const { folder } = labExport(tok, config);
    const { ref } = await loadHfReferenced(folder);
    const make = (named = ref) => hfReference(() => folder, named, 'hf/ (KL reference)', cpu);
    await expect(make({ ...ref, sha256: '0'.repeat(64) })(tok, { ...config, vocabSize: tok.vocabSize })).rejects.toThrow(
      /^hf\/ \(KL reference\): runs\/r\/hf is not the KL reference the config names, hf\/ \(SHA-256 000000000000…\): its SHA-256 \(config\.json and its safetensors files\) is [0-9a-f]{12}…$/,
    );
    await expect(make()(tok, { ...config, contextLength: 65, vocabSize: tok.vocabSize })).rejects.toThrow(
      "hf/ (KL reference): the run's context of 65 tokens exceeds the 64 positions of runs/r/hf",
    );
    await expect(make()(labTok(262), config)).rejects.toThrow(/its tokenizer \(runs\/r\/hf\/tokenizer\.json, \d+ ids\) is not the run's/);
  });
});

describe('runHfReference: the run directory keeps a copy', () => {
  test('a new run copies the model files (files.json last); later starts use the copy without the model', async () => {
    const { ref } = await loadHfReferenced(qwen2());
    const store = new MemoryRunDir();
    const copy = await runHfReference(store, ref, qwen2());
    const kept = [...store.files.keys()];
    expect(kept.at(-1)).toBe(REFERENCE_HF_FILES);
    expect(kept).not.toContain(`${REFERENCE_HF_DIR}/expected.json`); // not a model file
    expect(copy.name).toBe('qwen2');
    expect((await loadHfReferenced(copy)).ref).toEqual(ref);
    const again = await runHfReference(store, ref);
    expect((await loadHfReferenced(again)).ref).toEqual(ref);
    // a changed copy is found out when it is loaded
    store.files.set(
      `${REFERENCE_HF_DIR}/config.json`,
      new TextEncoder().encode(' '.repeat(10) + new TextDecoder().decode(qwen2Files().get('config.json'))),
    );
    await expect(hfReference(() => again, ref, 'qwen2/ (KL reference)', cpu)(labTok(), config)).rejects.toThrow(
      /^qwen2\/ \(KL reference\): qwen2 is not the KL reference the config names/,
    );
  });

  test('no copy and no model, a model that is not the one named, another run in the directory', async () => {
    const { ref } = await loadHfReferenced(qwen2());
    await expect(runHfReference(new MemoryRunDir(), ref)).rejects.toThrow(
      `the run's KL reference is the Hugging Face model qwen2/ (SHA-256 ${ref.sha256.slice(0, 12)}…), and the run directory does not hold it (reference/hf/files.json is missing); import the model in the Hugging Face models panel`,
    );
    const wrong = new MemoryRunDir();
    await expect(runHfReference(wrong, { ...ref, sha256: '1'.repeat(64) }, qwen2())).rejects.toThrow(
      /^the model given as the KL reference \(fixtures\/qwen2, SHA-256 [0-9a-f]{12}…\) is not the one the config names, qwen2\/ \(SHA-256 111111111111…\)$/,
    );
    expect(wrong.files.has(REFERENCE_HF_FILES)).toBe(false); // no complete copy
    const other = new MemoryRunDir();
    await writeJson(other, 'config.json', { cfg: resolveConfig('tiny', MINI_RUN), seed: 1, backend: 'cpu' });
    await runHfReference(other, ref, qwen2());
    expect([...other.files.keys()]).toEqual(['config.json']);
  });
});

describe('the model a run trains: a copy in pretrained/hf, loaded as the config names it (hfPolicyRun)', () => {
  const pretrainedCfg = (over: unknown) => resolveConfig('tiny', mergeConfig(MINI_RUN, over));

  test('copied and named as the KL reference is, in its own directory; the config it records is the model at the run context', async () => {
    const { ref } = await loadHfReferenced(qwen2());
    const store = new MemoryRunDir();
    const copy = await runHfReference(store, ref, qwen2(), HF_POLICY_KEPT);
    expect([...store.files.keys()].at(-1)).toBe('pretrained/hf/files.json');
    expect([...store.files.keys()].every((f) => f.startsWith('pretrained/hf/'))).toBe(true);
    await expect(runHfReference(new MemoryRunDir(), ref, undefined, HF_POLICY_KEPT)).rejects.toThrow(
      /^the run's policy model is the Hugging Face model qwen2\/ .*\(pretrained\/hf\/files\.json is missing\); import the model in the Hugging Face models panel and pick it as the policy model$/,
    );
    await expect(runHfReference(new MemoryRunDir(), { ...ref, sha256: '1'.repeat(64) }, qwen2(), HF_POLICY_KEPT)).rejects.toThrow(
      /^the model given as the policy model \(fixtures\/qwen2, SHA-256 [0-9a-f]{12}…\) is not the one the config names/,
    );
    const cfg = pretrainedCfg({ pretrained: ref, lora: { rank: 4 }, model: { contextLength: 96 } });
    const run = await hfPolicyRun(copy, cfg, cpu());
    expect(run.cfg.model).toEqual({ nLayer: 2, dModel: 32, nHead: 4, contextLength: 96, vocabSize: 512 });
    expect(run.cfg.lora).toEqual({ rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] });
    expect(run.plan.microBatch).toBe(4); // every rollout of an iteration (2 x 2) in one micro-batch
    expect(run.policies.pretrained?.config).toEqual(run.cfg.model);
    expect(run.policies.pretrained?.describe()).toMatch(/LoRA r4 alpha 8 on q_proj, v_proj \(4 modules\)$/);
    const full = await hfPolicyRun(copy, pretrainedCfg({ pretrained: ref, model: { contextLength: 96 } }), cpu());
    expect(full.cfg.lora).toBeUndefined();
    expect(full.policies.pretrained?.describe()).toMatch(/full fine-tuning$/);
  });

  test('refused, naming what is wrong: another model, a longer context, a target it lacks, a PEFT adapter to start from', async () => {
    const { ref } = await loadHfReferenced(qwen2());
    // named as the run directory's copy is
    const run = (over: unknown) =>
      hfPolicyRun(
        memoryFolder('qwen2', qwen2Files()),
        pretrainedCfg({ pretrained: ref, model: { contextLength: 96 }, ...(over as object) }),
        cpu(),
      );
    await expect(run({ pretrained: { ...ref, sha256: '2'.repeat(64) } })).rejects.toThrow(
      /^the policy model qwen2 is not the model the config names \(config\.pretrained\), qwen2\/ \(SHA-256 222222222222…\): its SHA-256 .* is [0-9a-f]{12}…$/,
    );
    await expect(run({ model: { contextLength: 300 } })).rejects.toThrow(
      'config.model.contextLength: 300 exceeds the 256 positions of qwen2',
    );
    await expect(run({ lora: { rank: 4, targets: ['c_fc'] } })).rejects.toThrow(
      /^qwen2: config\.lora\.targets: "c_fc" names no linear module/,
    );
    await expect(run({ lora: { rank: 4, from: { name: 'adapter/', sha256: '3'.repeat(64) } } })).rejects.toThrow(
      /^config\.lora\.from: the run starts its LoRA adapters from the PEFT adapter adapter\/ .*which the app cannot load/,
    );
    await expect(hfPolicyRun(qwen2(), pretrainedCfg({}), cpu())).rejects.toThrow(/names no imported model \(config\.pretrained\)/);
  });
});

describe('the pipeline checks a Hugging Face reference at setup, before SFT', () => {
  const scorer = { pool: null, analyzer: null } as unknown as Scorer; // never reached: the runs end at setup
  const run = async (store: MemoryRunDir, folder: ModelFolder, shouldStop?: () => boolean) => {
    const { ref } = await loadHfReferenced(folder);
    const cfg: RlConfig = resolveConfig('tiny', mergeConfig(MINI_RUN, { rl: { reference: ref } }));
    return runPipeline({
      cfg,
      seed: 2,
      policies: labGptFactory('cpu'),
      store,
      scorer,
      shouldStop,
      reference: hfReference(() => folder, ref, `${ref.name} (KL reference)`, cpu),
    });
  };

  test("a model with another tokenizer is refused; the export of a model with the run's tokenizer passes", async () => {
    const first = new MemoryRunDir();
    await expect(run(first, qwen2())).rejects.toThrow(
      /^qwen2\/ \(KL reference\): its tokenizer \(fixtures\/qwen2\/tokenizer\.json, 459 ids\) is not the run's \(the run's tokenizer\.json, \d+ ids\): id \d+ is/,
    );
    expect([...first.files.keys()].filter((f) => /sft|metrics/.test(f))).toEqual([]);
    const tok = Tokenizer.fromJSON(JSON.parse(new TextDecoder().decode(first.files.get('tokenizer.json'))));
    const { folder } = labExport(tok, resolveConfig('tiny', MINI_RUN).model, 'sft-hf');
    await expect(run(new MemoryRunDir(), folder, () => true)).rejects.toThrow(StoppedError);
  }, 60_000);
});
