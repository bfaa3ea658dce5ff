import { describe, expect, test } from 'vitest';
import { onnxFileNames, parseContextLength } from './files';

describe('app ONNX file helpers', () => {
  test('sidecar names follow the CLI: M.onnx and M.tokenizer.json', () => {
    expect(onnxFileNames('tiny-1.crlckpt')).toEqual({ model: 'tiny-1.onnx', tokenizer: 'tiny-1.tokenizer.json' });
    expect(onnxFileNames('run.v2')).toEqual({ model: 'run.v2.onnx', tokenizer: 'run.v2.tokenizer.json' });
    expect(onnxFileNames('.crlckpt')).toEqual({ model: 'model.onnx', tokenizer: 'model.tokenizer.json' });
  });

  test('the context field: empty is "from the metadata", else an integer >= 2', () => {
    expect(parseContextLength(' ')).toEqual({ value: undefined });
    expect(parseContextLength('64')).toEqual({ value: 64 });
    for (const bad of ['1', '2.5', '-3', 'abc', '1e3'])
      expect(parseContextLength(bad)).toEqual({ error: expect.stringMatching(/integer >= 2/) });
  });
});
