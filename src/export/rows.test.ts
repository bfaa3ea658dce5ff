/**
 * The rows' prompts and the emitters: the chat prompt is the lab's own user turn (the ids
 * chatFormat gives equal the chat template over chatUserMessage plus the lab's opening of the
 * reply), chat rows carry messages for every trainer, veRL's chat-format parquet reads back, and
 * YAML numbers in exponent form read back as numbers in the yaml package and in PyYAML (YAML 1.1).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { parse as parseYaml } from 'yaml';
import { describe, expect, test } from 'vitest';
import { chatFormat } from '../rl/prompt-format';
import type { Task } from '../tasks/types';
import { renderChat } from '../tokenizer/chat';
import { HfTokenizer } from '../tokenizer/hf';
import { flagWords, pyValue, shellWord, yamlTree } from './emit';
import { verlParquet } from './parquet';
import { chatUserMessage, openrlhfRow, taskRows, trlRow } from './rows';
import { hasPython, python } from './testing';

const QWEN2 = join(import.meta.dirname, '../../data/hf-fixtures/qwen2');
const tok = HfTokenizer.fromFiles({
  tokenizerJson: readFileSync(join(QWEN2, 'tokenizer.json'), 'utf8'),
  tokenizerConfig: JSON.parse(readFileSync(join(QWEN2, 'tokenizer_config.json'), 'utf8')),
});

const TASKS: Task[] = [
  { task_id: 'a/1', language: 'javascript', prompt: '// add 1\nfunction f(x) {\n', entry_point: 'f', tests: '', meta: { family: 'spec' } },
  { task_id: 'b/2', language: 'python', prompt: 'def g(x):\n    """double x"""\n', entry_point: 'g', tests: '' },
];

describe('prompts', () => {
  test("the chat prompt is chatFormat's user turn, for both languages", () => {
    const template = tok.chatTemplate!;
    const fmt = chatFormat(tok);
    for (const t of TASKS) {
      const tag = t.language === 'python' ? 'python' : 'javascript';
      const rendered = renderChat(template, [chatUserMessage(t.prompt, t.language)], {
        addGenerationPrompt: true,
        bosToken: tok.specialTokens?.bos ?? null,
        eosToken: tok.specialTokens?.eos ?? null,
      });
      const ids = Array.from(tok.encode(`${rendered}\`\`\`${tag}\n${t.prompt}`, { allowSpecial: true }));
      expect(ids).toEqual(fmt.taskIds(t.prompt, t.language));
    }
  });

  test('chat rows carry messages for every trainer; data sources are the family or the suite', async () => {
    const rows = taskRows(TASKS, TASKS.slice(0, 1), 'mine.jsonl');
    expect(rows.train.map((r) => r.source)).toEqual(['coderl/spec', 'coderl/mine.jsonl']);
    const user = chatUserMessage(TASKS[1]!.prompt, 'python');
    expect(user.content).toContain('```python\ndef g(x):\n    """double x"""\n```');
    expect(trlRow(rows.train[1]!, 'chat').prompt).toEqual([user]);
    expect(openrlhfRow(rows.train[1]!, 'chat').input).toEqual([user]);
    expect(trlRow(rows.train[1]!, 'completion').prompt).toBe(TASKS[1]!.prompt);
    const back = await parquetReadObjects({ file: verlParquet(rows.train, 'chat').buffer as ArrayBuffer });
    expect(back.map((r) => r['prompt'])).toEqual(TASKS.map((t) => [chatUserMessage(t.prompt, t.language)]));
    expect(back.map((r) => (r['extra_info'] as Record<string, unknown>)['prompt_format'])).toEqual(['chat', 'chat']);
  });
});

describe('emitters', () => {
  const entries = [
    { key: 'a.eps', value: 1e-8, comment: 'eps' },
    { key: 'a.big', value: 1e21, comment: 'big' },
    { key: 'a.lr', value: 0.0003, comment: 'lr' },
    { key: 'b.betas', value: [0.9, 0.95], comment: 'betas' },
    { key: 'b.name', value: 'it\'s "x"', comment: 'name' },
    { key: 'b.on', value: true, comment: 'on' },
  ];
  const want = { a: { eps: 1e-8, big: 1e21, lr: 0.0003 }, b: { betas: [0.9, 0.95], name: 'it\'s "x"', on: true } };

  test('YAML reads back the same values, numbers as numbers, in yaml and in PyYAML', () => {
    const text = yamlTree(entries);
    expect(text).toContain('eps: 1.0e-8');
    expect(parseYaml(text)).toEqual(want);
    if (hasPython('yaml'))
      expect(JSON.parse(python('import json,sys,yaml; print(json.dumps(yaml.safe_load(sys.argv[1])))', text))).toEqual(want);
    expect(() => yamlTree([...entries, { key: 'a', value: 1, comment: '' }])).toThrow(/set twice or is also a section/);
  });

  test('Python literals and shell words', () => {
    expect(pyValue([true, null, 'a"b', 1e-8])).toBe('[True, None, "a\\"b", 1e-8]');
    if (hasPython())
      expect(
        JSON.parse(python('import ast,json,sys; print(json.dumps(ast.literal_eval(sys.argv[1])))', pyValue([true, null, 'a"b', 1e-8]))),
      ).toEqual([true, null, 'a"b', 1e-8]);
    expect(shellWord("it's")).toBe("'it'\\''s'");
    expect(flagWords({ key: 'x.y', value: false })).toEqual([]);
    expect(flagWords({ key: 'x.y', value: true })).toEqual(['--x.y']);
    expect(flagWords({ key: 'x.y', value: [0.9, 0.95] })).toEqual(['--x.y', '0.9', '0.95']);
  });
});
