/**
 * HfTokenizer on the tiny Hugging Face folders of data/hf-fixtures (scripts/hf-fixtures.py): a
 * GPT-2 layout ("a b" merges), a SmolLM2-like Llama one (Digits + ByteLevel, pair merges, specials
 * inside the vocabulary, SmolLM2's chat template) and a Qwen2.5 one (NFC, Split + ByteLevel, specials
 * only in added_tokens, Qwen2.5's chat template, two eos ids). Their expected.json holds ids that the
 * script's own Python BPE computed: an oracle independent of @huggingface/tokenizers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatTemplateOf } from './chat';
import templates from './chat-templates.json';
import { HfTokenizer } from './hf';
import { CODE_SNIPPETS } from './hf-testing';

const ROOT = join(__dirname, '../../data/hf-fixtures');
const read = (dir: string, file: string): unknown => JSON.parse(readFileSync(join(ROOT, dir, file), 'utf8'));

interface Expected {
  tokenizer_vocab_size: number;
  special_tokens: Record<string, number>;
  greedy: { prompts: { text: string; input_ids: number[] }[] };
  tokenizer_samples: { text: string; ids: number[] }[];
}

function load(dir: string): { tok: HfTokenizer; expected: Expected } {
  const tok = HfTokenizer.fromFiles(
    {
      tokenizerJson: read(dir, 'tokenizer.json'),
      tokenizerConfig: read(dir, 'tokenizer_config.json'),
      generationConfig: read(dir, 'generation_config.json'),
    },
    `data/hf-fixtures/${dir}`,
  );
  return { tok, expected: read(dir, 'expected.json') as Expected };
}

const FIXTURES: [string, { eosIds: number[]; padId: number; nfc: boolean }][] = [
  ['gpt2', { eosIds: [456], padId: 456, nfc: false }],
  ['llama', { eosIds: [2], padId: 2, nfc: false }],
  ['qwen2', { eosIds: [458, 456], padId: 456, nfc: true }],
];

describe.each(FIXTURES)('data/hf-fixtures/%s', (dir, want) => {
  const { tok, expected } = load(dir);

  it("encodes the script's samples and prompts to its ids", () => {
    expect(tok.vocabSize).toBe(expected.tokenizer_vocab_size);
    for (const [content, id] of Object.entries(expected.special_tokens)) {
      expect(tok.tokenToId(content)).toBe(id);
      expect(tok.isSpecial(id)).toBe(true);
    }
    for (const { text, ids } of [
      ...expected.tokenizer_samples,
      ...expected.greedy.prompts.map((p) => ({ text: p.text, ids: p.input_ids })),
    ]) {
      expect(Array.from(tok.encode(text, { allowSpecial: true })), JSON.stringify(text)).toEqual(ids);
      expect(tok.decode(ids)).toBe(text.normalize('NFC'));
    }
  });

  it('round-trips code through encode and decode, streaming too', () => {
    for (const s of CODE_SNIPPETS) {
      const ids = tok.encode(s);
      const back = want.nfc ? s.normalize('NFC') : s;
      expect(tok.decode(ids)).toBe(back);
      const d = tok.createDecoder();
      expect(Array.from(ids, (id) => d.push(id)).join('') + d.flush()).toBe(back);
    }
  });

  it('takes its eos and pad ids from generation_config.json and tokenizer_config.json', () => {
    expect(tok.eosIds).toEqual(want.eosIds);
    expect(tok.eosId).toBe(want.eosIds[0]);
    expect(tok.padId).toBe(want.padId);
  });

  it('renders its chat template (the real model it imitates has the same one)', () => {
    const config = read(dir, 'tokenizer_config.json');
    if (dir === 'gpt2') {
      expect(tok.chatTemplate).toBeNull();
      return;
    }
    const real = dir === 'qwen2' ? templates['Qwen/Qwen2.5-0.5B-Instruct'] : templates['HuggingFaceTB/SmolLM2-135M-Instruct'];
    expect(chatTemplateOf(config)).toBe(real);
    const chat = expected.greedy.prompts[0]!;
    const messages =
      dir === 'qwen2'
        ? [
            { role: 'system', content: 'You are Qwen.' },
            { role: 'user', content: 'sum a list' },
          ]
        : [{ role: 'user', content: 'write add(a, b)' }];
    const rendered = tok.renderChat(messages, { addGenerationPrompt: true });
    if (dir === 'qwen2') expect(rendered).toBe(chat.text);
    else
      expect(rendered).toBe(
        `<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n${chat.text}`,
      );
    const ids = tok.encode(rendered, { allowSpecial: true });
    expect(tok.decode(ids)).toBe(rendered);
    expect(Array.from(ids.slice(-chat.input_ids.length))).toEqual(chat.input_ids);
  });
});
