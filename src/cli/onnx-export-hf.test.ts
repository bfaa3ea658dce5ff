/**
 * `coderl onnx export --model DIR`: a Hugging Face fixture folder (data/hf-fixtures) as an ONNX
 * file that onnxruntime-web runs to DecoderCpu's logits, its tokenizer files copied as they are
 * next to it (never over a different file of the same name); the option errors.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadHfFolder } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { DecoderCpu } from '../model/decoder-cpu';
import { DECODER_FORMAT, DECODER_META } from '../onnx/decoder-export';
import { inspectOnnxModel } from '../onnx/import';
import { loadNodeOrt } from '../onnx/node';
import { maxRelDiff } from '../onnx/parity';
import { createSession, floatTensor, floats, int64Tensor, runSession } from '../onnx/runtime';
import { main } from './main';

const FIXTURES = join(__dirname, '../../data/hf-fixtures');

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-onnx-hf-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('coderl onnx export --model', () => {
  test('qwen2 (two shards, untied head) with --kv-cache: ORT runs it to DecoderCpu logits; tokenizer files copied as they are', async () => {
    const out = join(dir, 'qwen2.onnx');
    const c = capture();
    expect(await main(['onnx', 'export', '--model', join(FIXTURES, 'qwen2'), '--out', out, '--kv-cache'], c.io), c.err.join('\n')).toBe(0);
    expect(c.out.join('\n')).toMatch(/wrote .*qwen2\.onnx: [\d.]+ MiB, with KV cache \(Qwen2ForCausalLM: 2 layers/);
    expect(c.out.join('\n')).toMatch(/copied .*tokenizer\.json -> .*tokenizer\.json \(as it is/);
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      expect(await readFile(join(dir, f))).toEqual(await readFile(join(FIXTURES, 'qwen2', f)));
    const bytes = new Uint8Array(await readFile(out));
    const info = inspectOnnxModel(bytes, 'qwen2.onnx');
    expect(info.kv).toEqual({ layers: 2, heads: 1, headSize: 8 });
    expect(info.metadata[DECODER_META.format]).toBe(DECODER_FORMAT);
    expect(info.metadata[DECODER_META.tokenizer]).toBe('tokenizer.json');

    const model = await loadHfFolder(await nodeFolder(join(FIXTURES, 'qwen2')));
    const ids = [5, 77, 300, 12, 9];
    const want = new DecoderCpu(model.arch, model.weights).forward({ tokens: ids, B: 1, T: ids.length }).logits;
    const ort = await loadNodeOrt();
    const s = await createSession(ort, bytes, 'qwen2.onnx');
    try {
      const feeds = {
        input_ids: int64Tensor(ort, ids, [1, ids.length]),
        attention_mask: int64Tensor(ort, [1, 1, 1, 1, 1], [1, ids.length]),
        position_ids: int64Tensor(ort, [0, 1, 2, 3, 4], [1, ids.length]),
        ...Object.fromEntries(
          ['key', 'value'].flatMap((kv) =>
            [0, 1].map((l) => [`past_key_values.${l}.${kv}`, floatTensor(ort, new Float32Array(0), [1, 1, 0, 8])]),
          ),
        ),
      };
      const r = await runSession(s, feeds, 'qwen2.onnx');
      expect(maxRelDiff(floats(r.logits, 'logits'), want)).toBeLessThan(1e-4);
    } finally {
      await s.release();
    }
  });

  test('a different tokenizer.json at the destination is not overwritten; option errors', async () => {
    await writeFile(join(dir, 'tokenizer.json'), '{"not": "this one"}');
    const c = capture();
    expect(await main(['onnx', 'export', '--model', join(FIXTURES, 'gpt2'), '--out', join(dir, 'gpt2.onnx')], c.io)).toBe(2);
    expect(c.err.join('\n')).toMatch(/tokenizer\.json exists and differs from .*gpt2\/tokenizer\.json; export into another folder/);
    for (const [args, msg] of [
      [['onnx', 'export', '--model', 'a', '--checkpoint', 'b', '--out', 'x.onnx'], /--checkpoint C or --model DIR, not both/],
      [['onnx', 'export', '--out', 'x.onnx'], /--checkpoint C \(a lab checkpoint\) or --model DIR \(a Hugging Face folder\) is required/],
      [['onnx', 'export', '--model', join(FIXTURES, 'gpt2')], /--out M\.onnx is required/],
    ] as const) {
      const e = capture();
      expect(await main([...args], e.io), args.join(' ')).toBe(2);
      expect(e.err.join('\n')).toMatch(msg);
    }
  });
});
