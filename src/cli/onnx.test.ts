/** `coderl onnx`: parity --json, export (model + tokenizer sidecar), eval of an imported model, errors. */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { saveModel } from '../model/model-file';
import { inspectOnnxModel } from '../onnx/import';
import { BIGRAM_SUITE, bigramForSuite, byteTokenizer, TINY, tinySnapshot } from '../onnx/testing';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-onnx-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('coderl onnx', () => {
  test('parity --json prints {max_rel_diff} below 1e-4 for a fresh tiny random model', async () => {
    const c = capture();
    expect(await main(['onnx', 'parity', '--json', '--cpu-only'], c.io)).toBe(0);
    const r = JSON.parse(c.out.join('')) as { max_rel_diff: number; checks: { graph: string }[] };
    expect(r.max_rel_diff).toBeGreaterThan(0); // float32 vs float64: never exactly equal
    expect(r.max_rel_diff).toBeLessThan(1e-4);
    expect(r.checks.map((x) => x.graph)).toEqual(['plain', 'kv-prefill', 'kv-step']);
  });

  test('export writes M.onnx and M.tokenizer.json; parity of that checkpoint', async () => {
    const tok = byteTokenizer();
    const config = { ...TINY, vocabSize: tok.vocabSize };
    const ckpt = join(dir, 'tiny.ckpt');
    await writeFile(ckpt, saveModel({ ...tinySnapshot(config), tokenizer: tok.toJSON() }));
    for (const [name, kv] of [
      ['plain.onnx', false],
      ['kv.onnx', true],
    ] as const) {
      const out = join(dir, name);
      const c = capture();
      expect(await main(['onnx', 'export', '--checkpoint', ckpt, '--out', out, ...(kv ? ['--kv-cache'] : [])], c.io)).toBe(0);
      expect(c.out.join('\n')).toContain(`wrote ${out}`);
      const info = inspectOnnxModel(new Uint8Array(await readFile(out)), name);
      expect(info.config).toEqual(config);
      expect(!!info.kv).toBe(kv);
      expect(info.metadata['coderl.tokenizer']).toBe(name.replace('.onnx', '.tokenizer.json'));
      expect(JSON.parse(await readFile(join(dir, name.replace('.onnx', '.tokenizer.json')), 'utf8'))).toEqual(tok.toJSON());
    }
    const c = capture();
    expect(await main(['onnx', 'parity', '--checkpoint', ckpt, '--cpu-only'], c.io)).toBe(0);
    expect(c.out.join('\n')).toMatch(/max_rel_diff: \d\.\d\de-\d+ \(ok, tolerance 0\.0001\)/);
  });

  test('eval: pass@k of a hand-written ONNX model with its tokenizer sidecar', async () => {
    const { model, tok } = bigramForSuite();
    const m = join(dir, 'bigram.onnx');
    await writeFile(m, model);
    await writeFile(join(dir, 'bigram.tokenizer.json'), JSON.stringify(tok.toJSON()));
    const suite = join(dir, 'suite.jsonl');
    await writeFile(suite, BIGRAM_SUITE.map((t) => JSON.stringify(t)).join('\n') + '\n');
    const rec = join(dir, 'records.jsonl');
    const c = capture();
    expect(
      await main(['onnx', 'eval', '--model', m, '--suite', suite, '--context', '64', '--k', '1,2', '--workers', '1', '--out', rec], c.io),
    ).toBe(0);
    expect(c.out.join('\n')).toMatch(/pass@1: 0\.5000\npass@2: 0\.5000/);
    expect(
      (await readFile(rec, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).completion),
    ).toEqual(Array(4).fill(' x*2}'));
    // a built-in suite by name: read and checked against the context (HumanEval-X's prompts are longer than 64 tokens)
    const b = capture();
    expect(await main(['onnx', 'eval', '--model', m, '--suite', 'humaneval-x-js', '--context', '64'], b.io)).toBe(2);
    expect(b.err.join('\n')).toMatch(/^coderl onnx eval: the longest prompt has \d+ tokens, the model's context is 64/);
    const u = capture();
    expect(await main(['onnx', 'eval', '--model', m, '--suite', 'humaneval-js', '--context', '64'], u.io)).toBe(2);
    expect(u.err.join('\n')).toMatch(
      /^coderl onnx eval: cannot read --suite humaneval-js: ENOENT.*'humaneval-js' is not a built-in suite either \(built-in suites: humaneval-x-js, humaneval-python/,
    );
  });

  test('a malformed model is exit 1 naming the file and the problem; bad usage is exit 2', async () => {
    const bad = join(dir, 'bad.onnx');
    const { model } = bigramForSuite();
    await writeFile(bad, model.subarray(0, 100));
    await writeFile(join(dir, 'bad.tokenizer.json'), JSON.stringify(byteTokenizer().toJSON()));
    let c = capture();
    expect(await main(['onnx', 'eval', '--model', bad, '--suite', 'x.jsonl', '--context', '64'], c.io)).toBe(1);
    expect(c.err.join('')).toMatch(
      new RegExp(
        `^coderl onnx eval: ${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: not a valid ONNX file: truncated protobuf at byte \\d+`,
      ),
    );
    c = capture();
    expect(await main(['onnx', 'convert'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/unknown subcommand 'convert'; subcommands: export, parity, eval/);
    c = capture();
    expect(await main(['onnx', 'parity', '--out', 'x.onnx'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/coderl onnx parity: --out does not apply/);
    c = capture();
    expect(await main(['onnx', 'export', '--checkpoint', join(dir, 'missing.ckpt'), '--out', join(dir, 'never.onnx')], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/cannot read .*missing\.ckpt/);
    expect(existsSync(join(dir, 'never.onnx'))).toBe(false);
  });
});
