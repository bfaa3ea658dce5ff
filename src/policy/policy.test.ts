/**
 * The policy layer: the lab GPT's factory (init from a seed, from parameters, checkpoint bytes
 * written and read back with and without the optimizer state, describe), and an imported ONNX
 * model as a frozen Policy (it describes itself and generates; training and saving are errors).
 */
import { describe, expect, test } from 'vitest';
import { initParams } from '../model/init';
import { loadModel } from '../model/model-file';
import { paramTable } from '../model/params';
import { exportOnnx } from '../onnx/export';
import { importOnnxModel } from '../onnx/import';
import { loadNodeOrt } from '../onnx/node';
import { byteTokenizer, TINY, tinySnapshot } from '../onnx/testing';
import { DEFAULT_OPTIM, FrozenOnnxPolicy, labGptFactory, type PolicySpec } from './index';

const tok = byteTokenizer();
const spec: PolicySpec = { config: { ...TINY, vocabSize: tok.vocabSize }, tokenizer: tok };
const batch = (ids: number[]) => ({
  B: 1,
  T: ids.length - 1,
  tokens: Uint32Array.from(ids.slice(0, -1)),
  targets: Uint32Array.from(ids.slice(1)),
  mask: new Float32Array(ids.length - 1).fill(1),
});

describe('labGptFactory', () => {
  const f = labGptFactory('cpu');

  test('init draws the parameters from the seed; describe says what the policy is', async () => {
    const p = f.init(spec, 5, DEFAULT_OPTIM);
    expect(await p.getParams()).toEqual(initParams(paramTable(spec.config), 5));
    expect(p.tokenizer).toBe(tok);
    expect(p.describe()).toEqual({
      family: 'lab-gpt',
      architecture: '2 layers, d_model 32, 2 heads',
      parameters: paramTable(spec.config).count,
      vocabSize: tok.vocabSize,
      contextLength: TINY.contextLength,
      backend: 'cpu',
    });
    p.dispose();
  });

  test('save and load: the same parameters, the optimizer state only when asked for', async () => {
    const p = f.init(spec, 2, { ...DEFAULT_OPTIM, lr: 1e-2 });
    await p.trainStep([batch([5, 100, 7, 9, 8])], true);
    const bytes = await p.save({ optimizer: true, meta: { stage: 'test', step: 1 } });
    const params = await p.getParams();
    const optim = await p.getOptimizerState();
    expect(optim.step).toBe(1);

    const ckpt = f.readCheckpoint(spec, bytes);
    expect(ckpt.params).toEqual(params);
    expect(ckpt.optimizer?.step).toBe(1);
    expect(ckpt.meta).toMatchObject({ stage: 'test', step: 1 });
    expect(loadModel(bytes).tokenizer).toEqual(tok.toJSON());

    const withState = f.load(spec, bytes, DEFAULT_OPTIM, true);
    expect(await withState.getParams()).toEqual(params);
    expect((await withState.getOptimizerState()).step).toBe(1);
    const without = f.load(spec, bytes, DEFAULT_OPTIM);
    expect((await without.getOptimizerState()).step).toBe(0);

    // parameters no live policy holds: written and read back as they are
    const again = f.readCheckpoint(spec, f.writeCheckpoint(spec, { params, optimizer: null, meta: { stage: 'best' } }));
    expect(again).toEqual({ params, optimizer: null, meta: { stage: 'best', optimizerStep: null } });
    // a checkpoint of another shape is refused
    expect(() => f.readCheckpoint({ ...spec, config: { ...spec.config, nLayer: 1 } }, bytes)).toThrow(/nLayer/);
    for (const x of [p, withState, without]) x.dispose();
  });
});

describe('an imported ONNX model as a frozen Policy', () => {
  test('describes itself and generates; training and saving are errors saying it is frozen', async () => {
    const snap = tinySnapshot(spec.config, 4, 3);
    const { policy, tokenizer } = await importOnnxModel(await loadNodeOrt(), exportOnnx(snap), tok.toJSON(), { file: 'tiny.onnx' });
    const p = new FrozenOnnxPolicy(policy, tokenizer);
    expect(p.describe()).toEqual({
      family: 'onnx',
      architecture: 'tiny.onnx: 2 layers, d_model 32, 2 heads',
      parameters: paramTable(spec.config).count,
      vocabSize: tok.vocabSize,
      contextLength: TINY.contextLength,
      backend: 'onnxruntime',
    });
    const g = await p.generate([[5, 100, 7]], { maxNewTokens: 3, temperature: 1, seed: 1 });
    expect(g.tokens[0]).toHaveLength(3);
    await expect(p.trainStep()).rejects.toThrow(
      'tiny.onnx: an imported ONNX model is frozen: it samples, scores and serves as the KL reference, but cannot trainStep',
    );
    await expect(p.save()).rejects.toThrow(/frozen.*cannot save a checkpoint/);
    expect(() => p.setOptim()).toThrow(/frozen/);
    p.dispose();
  });
});
