/**
 * The imported-model commands end to end on the fixture folders (data/hf-fixtures): `generate`
 * reproduces PyTorch's greedy ids from the prompt text (tokenizer.json through
 * @huggingface/tokenizers, then our engine), `logits --json` PyTorch's logits, `export-hf` writes
 * a folder that loads again with the same logits, and `eval --model` runs a suite.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { maxRelDiff } from '../onnx/parity';
import { main } from './main';

const FIXTURES = join(__dirname, '../../data/hf-fixtures');

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

interface Expected {
  input_ids: number[][];
  logits: number[][][];
  greedy: { prompts: { text: string; input_ids: number[]; generated_ids: number[] }[] };
}

const expected = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name, 'expected.json'), 'utf8')) as Expected;

describe('coderl generate and logits on the fixtures', () => {
  // the prompts without chat markers: plain completion
  const cases = (['gpt2', 'llama', 'qwen2'] as const).flatMap((name) =>
    expected(name)
      .greedy.prompts.filter((p) => !p.text.includes('<|im_start|>'))
      .map((p) => [name, p] as const),
  );

  test.each(cases)('%s: greedy generate from the text gives PyTorch ids (%#)', async (name, p) => {
    for (const backend of ['cpu', 'webgpu']) {
      const c = capture();
      const argv = [
        'generate',
        '--model',
        join(FIXTURES, name),
        '--prompt',
        p.text,
        '--temperature',
        '0',
        '--max-new',
        '8',
        '--format',
        'completion',
        '--json',
        '--backend',
        backend,
      ];
      expect(await main(argv, c.io), c.err.join('')).toBe(0);
      const r = JSON.parse(c.out.join('')) as { tokens: number[]; prompt_tokens: number; format: string };
      expect(r.prompt_tokens).toBe(p.input_ids.length);
      expect(r.tokens).toEqual(p.generated_ids);
      expect(r.format).toBe('completion');
    }
  });

  test('logits --json prints PyTorch logits for the ids', async () => {
    const e = expected('qwen2');
    const c = capture();
    expect(await main(['logits', '--model', join(FIXTURES, 'qwen2'), '--ids', e.input_ids[0]!.join(','), '--json'], c.io)).toBe(0);
    const { logits } = JSON.parse(c.out.join('')) as { logits: number[][] };
    expect(logits.length).toBe(e.input_ids[0]!.length);
    expect(maxRelDiff(logits.flat(), e.logits[0]!.flat())).toBeLessThan(1e-4);
  });

  test('bad input is a usage error naming it', async () => {
    let c = capture();
    expect(await main(['logits', '--model', join(FIXTURES, 'gpt2'), '--ids', '1,x'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/--ids must be comma-separated token ids/);
    c = capture();
    expect(await main(['logits', '--model', join(FIXTURES, 'gpt2'), '--ids', '1,9999'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/id 9999 \(position 1\) is outside the vocabulary 0\.\.456/);
    c = capture();
    expect(await main(['generate', '--model', join(FIXTURES, 'gpt2'), '--prompt', 'x', '--format', 'chat'], c.io)).not.toBe(0);
    expect(c.err.join('')).toMatch(/gpt2\/tokenizer_config.json has no chat template/);
    c = capture();
    expect(await main(['generate', '--model', '/nonexistent/model', '--prompt', 'x'], c.io)).not.toBe(0);
    expect(c.err.join('')).toMatch(/\/nonexistent\/model: no such folder/);
  });
});

describe('coderl export-hf and eval --model', () => {
  test('an imported model written again loads with the same logits', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'coderl-hf-')), 'llama-again');
    let c = capture();
    expect(await main(['export-hf', '--model', join(FIXTURES, 'llama'), '--out', out], c.io), c.err.join('')).toBe(0);
    const e = expected('llama');
    c = capture();
    expect(await main(['logits', '--model', out, '--ids', e.input_ids[1]!.join(','), '--json'], c.io), c.err.join('')).toBe(0);
    const { logits } = JSON.parse(c.out.join('')) as { logits: number[][] };
    expect(maxRelDiff(logits.flat(), e.logits[1]!.flat())).toBeLessThan(1e-4);
  });

  test('eval --model samples and scores a suite, chat format from the template', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coderl-hf-eval-'));
    const suite = join(dir, 'two.jsonl');
    const task = (id: string, body: string) => ({
      task_id: id,
      language: 'javascript',
      prompt: `function ${id}(a, b) {\n`,
      entry_point: id,
      canonical_solution: body,
      tests: `if (${id}(2, 3) !== 5) throw new Error('wrong');`,
    });
    writeFileSync(
      suite,
      [task('add', '  return a + b;\n}\n'), task('plus', '  return b + a;\n}\n')].map((t) => JSON.stringify(t)).join('\n'),
    );
    const c = capture();
    const code = await main(
      ['eval', '--suite', suite, '--model', join(FIXTURES, 'qwen2'), '--k', '1', '--samples', '2', '--max-new-tokens', '16', '--quiet'],
      c.io,
    );
    expect(code, c.err.join('')).toBe(0);
    const text = c.out.join('\n');
    expect(text).toMatch(/suite: .*two\.jsonl \(2 tasks\), 2 samples per task at temperature 1, chat prompts/);
    expect(text).toMatch(/pass@1: \d\.\d{4}/);
  });

  test.each(['humaneval-python', 'humaneval-x-js'])('eval --model on %s by name (first 2 tasks)', async (suite) => {
    // the Llama fixture with room for HumanEval's prompts (rotary positions have no table to outgrow)
    const dir = join(mkdtempSync(join(tmpdir(), 'coderl-hf-he-')), 'llama-long');
    mkdirSync(dir);
    for (const f of readdirSync(join(FIXTURES, 'llama'))) copyFileSync(join(FIXTURES, 'llama', f), join(dir, f));
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 2048 }));
    const c = capture();
    const argv = [
      'eval',
      '--suite',
      suite,
      '--model',
      dir,
      '--limit',
      '2',
      '--k',
      '1',
      '--samples',
      '1',
      '--temperature',
      '0',
      '--max-new-tokens',
      '8',
      '--quiet',
    ];
    expect(await main(argv, c.io), c.err.join('')).toBe(0);
    expect(c.out.join('\n')).toMatch(
      new RegExp(`suite: ${suite} \\(2 tasks\\), 1 samples per task at temperature 0, chat prompts[\\s\\S]*pass@1: 0\\.0000`),
    );
  });
});
