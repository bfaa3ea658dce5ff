/**
 * Prompt formats: completion is the prompt's own ids; chat renders the model's chat template
 * (SmolLM2's and Qwen2.5's, from the fixture folders) with the assistant's turn opened by the
 * prompt's code, so the model continues the function; the completion is cut at the closing fence.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { HfTokenizer } from '../tokenizer/hf';
import { trainTokenizer } from '../tokenizer';
import { chatFormat, completionFormat, promptFormatFor, resolvePromptFormat } from './prompt-format';

const FIXTURES = join(__dirname, '../../data/hf-fixtures');
const read = (name: string, file: string): unknown => JSON.parse(readFileSync(join(FIXTURES, name, file), 'utf8'));
const hfTok = (name: string) =>
  HfTokenizer.fromFiles({
    tokenizerJson: read(name, 'tokenizer.json'),
    tokenizerConfig: read(name, 'tokenizer_config.json'),
    generationConfig: read(name, 'generation_config.json'),
  });

const PROMPT = 'function add(a, b) {\n  // returns the sum\n';

describe('prompt formats', () => {
  test('auto is chat exactly when the tokenizer has a chat template; chat without one is refused', () => {
    expect(resolvePromptFormat('auto', hfTok('qwen2'))).toBe('chat');
    expect(resolvePromptFormat('auto', hfTok('gpt2'))).toBe('completion');
    expect(resolvePromptFormat('completion', hfTok('qwen2'))).toBe('completion');
    expect(() => resolvePromptFormat('chat', hfTok('gpt2'), 'gpt2/tokenizer_config.json')).toThrow(
      /gpt2\/tokenizer_config.json has no chat template/,
    );
    const lab = trainTokenizer(['function f() {}\n'], { vocabSize: 270 });
    expect(resolvePromptFormat('auto', lab)).toBe('completion');
  });

  test('completion: the prompt encoded as it is', () => {
    const tok = hfTok('gpt2');
    expect(completionFormat(tok).taskIds(PROMPT, 'javascript')).toEqual(Array.from(tok.encode(PROMPT)));
    expect(completionFormat(tok).cut('x ``` y')).toBe('x ``` y');
  });

  test.each(['llama', 'qwen2'])('chat (%s): the template with the code opened in the assistant turn', (name) => {
    const tok = hfTok(name);
    const f = chatFormat(tok);
    const ids = f.taskIds(PROMPT, 'javascript');
    const text = tok.decode(ids);
    // the chat markers are single special tokens, not their characters
    const imStart = tok.encode('<|im_start|>', { allowSpecial: true });
    expect(imStart.length).toBe(1);
    expect(ids.filter((i) => i === imStart[0]).length).toBeGreaterThanOrEqual(2);
    expect(text).toContain('<|im_start|>user\nComplete the following JavaScript function.');
    // the assistant's turn ends with the prompt itself, so the model continues the function
    expect(text.endsWith(`<|im_start|>assistant\n\`\`\`javascript\n${PROMPT}`)).toBe(true);
    if (name === 'qwen2') expect(text).toMatch(/^<\|im_start\|>system\n/); // Qwen2.5's template adds its default system turn
    expect(f.cut('  return a + b;\n}\n```\nThat is all.')).toBe('  return a + b;\n}\n');
    expect(f.stop.length).toBeGreaterThan(0);
    expect(f.taskIds('def f(x):\n', 'python').length).toBeGreaterThan(0);
    expect(tok.decode(f.taskIds('def f(x):\n', 'python'))).toContain('```python\ndef f(x):\n');
  });

  test('repair: completion repeats the description with the attempt and error as comments; chat goes on with the error as the next user turn', () => {
    const tok = hfTok('qwen2');
    const plain = completionFormat(tok).repair('// add 3\nfunction f(x) {\n', 'javascript', '  return x - 3;\n}\n', 'failed: f(1) === 4');
    expect(plain.prompt).toBe('// add 3\n// attempt: return x - 3;\n// failed: f(1) === 4\nfunction f(x) {\n');
    expect(plain.ids).toEqual(Array.from(tok.encode(plain.prompt)));
    const chat = chatFormat(tok).repair(PROMPT, 'javascript', '  return a - b;\n}\n', 'failed: add(1, 2) === 3');
    // the repaired program starts with the task's prompt again
    expect(chat.prompt).toBe(PROMPT);
    const text = tok.decode(chat.ids);
    const first = tok.decode(chatFormat(tok).taskIds(PROMPT, 'javascript'));
    // the first turn as it was asked, the failed function as the assistant's reply, closed
    expect(text.startsWith(first.slice(0, first.indexOf('<|im_start|>assistant')))).toBe(true);
    expect(text).toContain(`<|im_start|>assistant\n\`\`\`javascript\n${PROMPT}  return a - b;\n}\n\`\`\`<|im_end|>`);
    expect(text).toContain('<|im_start|>user\nThat function fails its tests:');
    expect(text).toContain('failed: add(1, 2) === 3');
    expect(text.endsWith(`<|im_start|>assistant\n\`\`\`javascript\n${PROMPT}`)).toBe(true);
    expect(text.split('<|im_start|>user').length).toBe(3);
  });

  test('a free message through the template ends with the opened assistant turn', () => {
    const tok = hfTok('qwen2');
    const text = tok.decode(promptFormatFor('auto', tok).messageIds('sum a list'));
    expect(text).toContain('<|im_start|>user\nsum a list<|im_end|>\n');
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
  });
});
