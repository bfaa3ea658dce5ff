import { describe, expect, it } from 'vitest';
import { assertCompatible, checkCompatible, decodeCheckpoint, encodeCheckpoint } from './index';

const decoded = decodeCheckpoint(
  encodeCheckpoint({
    config: { nLayer: 2, nEmbd: 8, blockSize: 64, attn: { heads: 2, bias: false }, dropout: 0.1 },
    tokenizer: null,
    tensors: {
      wte: { data: new Float32Array(40 * 8), shape: [40, 8] },
      wpe: { data: new Float32Array(64 * 8), shape: [64, 8] },
      lnf: { data: new Float32Array(8), shape: [8] },
    },
  }),
);

describe('checkCompatible', () => {
  it('accepts a checkpoint that matches', () => {
    const expected = {
      config: { nLayer: 2, nEmbd: 8, blockSize: 64, attn: { bias: false, heads: 2 }, dropout: 0.1 },
      tensors: { wte: [40, 8], wpe: [64, 8], lnf: [8] },
    };
    expect(checkCompatible(decoded, expected)).toEqual({ ok: true, problems: [] });
    expect(() => assertCompatible(decoded, expected)).not.toThrow();
    expect(checkCompatible(decoded, {}).ok).toBe(true); // nothing asked, nothing wrong
  });

  it('reports every mismatching config field and tensor by name', () => {
    const { ok, problems } = checkCompatible(decoded, {
      config: { nLayer: 4, nEmbd: 8, blockSize: 64, attn: { heads: 4, bias: false, rope: true }, vocabSize: 40 },
      tensors: { wte: [40, 16], wpe: [64, 8], lmHead: [40, 8] },
    });
    expect(ok).toBe(false);
    expect(problems).toEqual([
      'config.attn.heads: checkpoint has 2, expected 4',
      'config.attn.rope: missing from the checkpoint (expected true)',
      'config.dropout: in the checkpoint (0.1) but not in the expected config',
      'config.nLayer: checkpoint has 2, expected 4',
      'config.vocabSize: missing from the checkpoint (expected 40)',
      'tensor "wte": checkpoint has shape [40, 8], expected [40, 16]',
      'tensor "lmHead": missing from the checkpoint (expected shape [40, 8])',
      'tensor "lnf": in the checkpoint but not expected by the model',
    ]);
  });

  it('assertCompatible throws with all problems listed (expected config is the whole config)', () => {
    expect(() => assertCompatible(decoded, { config: { nLayer: 3 } })).toThrow(
      [
        'checkpoint does not fit the model (5 problems):',
        '  config.attn: in the checkpoint ({"heads":2,"bias":false}) but not in the expected config',
        '  config.blockSize: in the checkpoint (64) but not in the expected config',
        '  config.dropout: in the checkpoint (0.1) but not in the expected config',
        '  config.nEmbd: in the checkpoint (8) but not in the expected config',
        '  config.nLayer: checkpoint has 2, expected 3',
      ].join('\n'),
    );
  });
});
