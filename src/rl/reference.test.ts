/**
 * The ONNX KL reference (reference.ts): what the config records, how a run directory keeps the
 * model and refuses a changed or missing one, and the pipeline refusing a reference that cannot
 * score the run's sequences at setup, before SFT.
 */
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { exportOnnx } from '../onnx/export';
import { loadNodeOrt } from '../onnx/node';
import { bigramForSuite, tinySnapshot } from '../onnx/testing';
import { labGptFactory } from '../policy';
import { Tokenizer } from '../tokenizer';
import { mergeConfig, resolveConfig, type RlConfig } from './config';
import { runPipeline, StoppedError } from './pipeline';
import {
  describeReference,
  onnxReference,
  REFERENCE_MODEL_FILE,
  REFERENCE_TOKENIZER_FILE,
  referenceRef,
  runReference,
  type ReferenceFiles,
} from './reference';
import type { Scorer } from './scorer';
import { MemoryRunDir, readJson, writeJson } from './run-dir';
import { MINI_RUN } from './testing';

const bytes = Uint8Array.from({ length: 64 }, (_, i) => i * 7);
const sha = createHash('sha256').update(bytes).digest('hex');
const files: ReferenceFiles = { bytes, tokenizerText: '{"tokenizer":1}' };
const decode = (b: Uint8Array | null | undefined) => (b ? new TextDecoder().decode(b) : null);

describe('referenceRef', () => {
  test('records the base name of the file and the SHA-256 of its bytes', async () => {
    expect(await referenceRef('runs/tiny-1/sft.onnx', bytes)).toEqual({ name: 'sft.onnx', sha256: sha });
    expect(await referenceRef('C:\\models\\m.onnx', bytes)).toEqual({ name: 'm.onnx', sha256: sha });
    expect(await referenceRef('m.onnx', bytes)).toEqual({ name: 'm.onnx', sha256: sha });
    expect(describeReference({ name: 'm.onnx', sha256: sha })).toBe(`m.onnx (SHA-256 ${sha.slice(0, 12)}…)`);
  });
});

describe('runReference: the run directory keeps the model', () => {
  const named = { name: 'm.onnx', sha256: sha };

  test('a new run stores the given files; later starts read them back without them', async () => {
    const store = new MemoryRunDir();
    expect(await runReference(store, named, files)).toEqual(files);
    expect(store.files.get(REFERENCE_MODEL_FILE)).toEqual(bytes);
    expect(decode(store.files.get(REFERENCE_TOKENIZER_FILE))).toBe(files.tokenizerText);
    expect(await runReference(store, named)).toEqual(files);
  });

  test('without a reference in the config nothing is read or written; a model given anyway is refused', async () => {
    const store = new MemoryRunDir();
    expect(await runReference(store, undefined)).toBeUndefined();
    await expect(runReference(store, undefined, files)).rejects.toThrow(
      /a KL reference model was given but the config does not name it \(config\.rl\.reference\)/,
    );
    expect(store.files.size).toBe(0);
  });

  test('a missing model, a changed one, a missing tokenizer and a wrong model given are errors naming the file', async () => {
    await expect(runReference(new MemoryRunDir(), named)).rejects.toThrow(
      `the run's KL reference is the ONNX model m.onnx (SHA-256 ${sha.slice(0, 12)}…), and the run directory does not hold it (reference/model.onnx is missing); import the model in the Checkpoints panel`,
    );
    const other = { bytes: bytes.map((b) => b ^ 1), tokenizerText: files.tokenizerText };
    const fresh = new MemoryRunDir();
    await expect(runReference(fresh, named, other)).rejects.toThrow(
      /the model given as the KL reference \(SHA-256 [0-9a-f]{12}…\) is not the one the config names, m\.onnx/,
    );
    expect(fresh.files.size).toBe(0);

    const changed = new MemoryRunDir();
    await changed.write(REFERENCE_MODEL_FILE, other.bytes);
    await changed.write(REFERENCE_TOKENIZER_FILE, files.tokenizerText);
    // the stored file wins over a given one, and a changed stored file is never overwritten
    await expect(runReference(changed, named, files)).rejects.toThrow(
      /^reference\/model\.onnx in the run directory is not the KL reference the config names, m\.onnx .*the stored file's SHA-256 is [0-9a-f]{12}… \(it was changed\)/,
    );
    expect(changed.files.get(REFERENCE_MODEL_FILE)).toEqual(other.bytes);

    const noTok = new MemoryRunDir();
    await noTok.write(REFERENCE_MODEL_FILE, bytes);
    await expect(runReference(noTok, named)).rejects.toThrow(/^reference\/tokenizer\.json is missing from the run directory/);
  });

  test('a directory holding a run of another config is left as it is (the pipeline refuses that config next)', async () => {
    const store = new MemoryRunDir();
    await writeJson(store, 'config.json', { cfg: resolveConfig('tiny', MINI_RUN), seed: 1, backend: 'cpu' });
    expect(await runReference(store, named, files)).toEqual(files);
    expect([...store.files.keys()]).toEqual(['config.json']);
    // a directory of this very run (e.g. one whose first start wrote config.json, then stopped) gets the files
    const same = new MemoryRunDir();
    await writeJson(same, 'config.json', {
      cfg: resolveConfig('tiny', mergeConfig(MINI_RUN, { rl: { reference: named } })),
      seed: 1,
      backend: 'cpu',
    });
    await runReference(same, named, files);
    expect(same.files.has(REFERENCE_MODEL_FILE)).toBe(true);
  });
});

describe('the pipeline checks an ONNX reference at setup, before SFT', () => {
  // never reached: every run here ends at setup or at SFT's first step, before anything is scored
  const scorer = { pool: null, analyzer: null } as unknown as Scorer;
  const run = async (store: MemoryRunDir, name: string, model: Uint8Array, tokenizerText: string, shouldStop?: () => boolean) => {
    const cfg: RlConfig = resolveConfig('tiny', mergeConfig(MINI_RUN, { rl: { reference: await referenceRef(name, model) } }));
    return runPipeline({
      cfg,
      seed: 2,
      policies: labGptFactory('cpu'),
      store,
      scorer,
      shouldStop,
      reference: onnxReference(
        loadNodeOrt,
        { bytes: model, tokenizerText, file: name, tokenizerFile: `${name}.tokenizer.json` },
        `${name} (KL reference)`,
      ),
    });
  };

  test("another tokenizer or a shorter context is refused with the pipeline's message; a fitting model passes", async () => {
    const { model, tok } = bigramForSuite();
    const bigram = new MemoryRunDir();
    await expect(run(bigram, 'bigram.onnx', model, JSON.stringify(tok.toJSON()))).rejects.toThrow(
      /^bigram\.onnx \(KL reference\): its tokenizer differs from the policy's \(vocab 258 vs \d+\); the KL penalty compares log-probs of the same token ids$/,
    );
    expect([...bigram.files.keys()].filter((f) => /sft|metrics/.test(f))).toEqual([]); // SFT never started

    // the run's own tokenizer (tokenizer.json is written at setup): a random model of the run's shape fits
    const tokText = decode(bigram.files.get('tokenizer.json'))!;
    const vocabSize = Tokenizer.fromJSON(JSON.parse(tokText)).vocabSize;
    const shape = { ...resolveConfig('tiny', MINI_RUN).model, vocabSize };
    const fits = exportOnnx(tinySnapshot(shape, 9, 1));
    const stopped = new MemoryRunDir();
    await expect(run(stopped, 'rand.onnx', fits, tokText, () => true)).rejects.toThrow(StoppedError);
    expect(await readJson(stopped, 'sft-progress.json')).toBeNull();

    const short = exportOnnx(tinySnapshot({ ...shape, contextLength: 32 }, 9, 1));
    await expect(run(new MemoryRunDir(), 'short.onnx', short, tokText)).rejects.toThrow(
      /^short\.onnx: context length 96 exceeds the model's 32$/,
    );
  }, 60_000);
});
