import { describe, expect, it } from 'vitest';
import { ChatTemplateError, chatTemplateOf, hasChatTemplate, renderChat } from './chat';
import templates from './chat-templates.json';
import { HfTokenizer } from './hf';
import { qwen2StyleTokenizerJson } from './hf-testing';

const QWEN = templates['Qwen/Qwen2.5-0.5B-Instruct'];
const SMOL = templates['HuggingFaceTB/SmolLM2-135M-Instruct'];
const user = (content: string) => ({ role: 'user', content });

describe('renderChat with real ChatML templates', () => {
  it("Qwen2.5-Instruct: adds its default system message when there is none, and the assistant's opening", () => {
    expect(renderChat(QWEN, [user('What is the capital of France?')], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('Qwen2.5-Instruct: a given system message replaces the default; turns alternate; no generation prompt unless asked', () => {
    const messages = [
      { role: 'system', content: 'You write JavaScript.' },
      user('Write add(a, b).'),
      { role: 'assistant', content: 'function add(a, b) {\n  return a + b;\n}' },
      user('Now sub.'),
    ];
    expect(renderChat(QWEN, messages)).toBe(
      '<|im_start|>system\nYou write JavaScript.<|im_end|>\n' +
        '<|im_start|>user\nWrite add(a, b).<|im_end|>\n' +
        '<|im_start|>assistant\nfunction add(a, b) {\n  return a + b;\n}<|im_end|>\n' +
        '<|im_start|>user\nNow sub.<|im_end|>\n',
    );
  });

  it('Qwen2.5-Instruct: describes tools when given some', () => {
    const tools = [{ type: 'function', function: { name: 'run', description: 'runs code', parameters: { type: 'object' } } }];
    const out = renderChat(QWEN, [user('hi')], { tools, addGenerationPrompt: true });
    expect(out.startsWith('<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n')).toBe(
      true,
    );
    expect(out).toContain('<tools>\n{"type": "function", "function": {"name": "run"');
    expect(out.endsWith('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  });

  it('SmolLM2-Instruct: its default system message, or the given one', () => {
    expect(renderChat(SMOL, [user('What is the capital of Japan?')], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' +
        '<|im_start|>user\nWhat is the capital of Japan?<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
    expect(
      renderChat(SMOL, [{ role: 'system', content: 'You are a terse assistant.' }, user('What is the capital of Japan?')], {
        addGenerationPrompt: true,
      }),
    ).toBe(
      '<|im_start|>system\nYou are a terse assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of Japan?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('passes the special tokens and extra variables', () => {
    const t =
      '{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}';
    expect(renderChat(t, [user('a'), user('b')], { bosToken: '<s>', eosToken: '</s>', extra: { enable_thinking: false } })).toBe(
      '<s>a</s>b</s><think></think>',
    );
    expect(renderChat(t, [user('a')])).toBe('a'); // unset tokens render as nothing
  });

  it('names the file and gives the Jinja error', () => {
    expect(() => renderChat('{% for m in messages %}', [user('a')])).toThrow(ChatTemplateError);
    expect(() => renderChat('{% for m in messages %}', [user('a')])).toThrow(/^tokenizer_config\.json: chat_template does not parse: /);
    const strict = "{% if messages[0]['role'] != 'system' %}{{ raise_exception('System message required') }}{% endif %}";
    expect(() => renderChat(strict, [user('a')], { where: 'm/tokenizer_config.json' })).toThrow(
      'm/tokenizer_config.json: chat_template failed to render: System message required',
    );
    expect(() => renderChat('{{ 1 + none }}', [])).toThrow(/^tokenizer_config\.json: chat_template failed to render: /);
    expect(() => renderChat(QWEN, 'hi' as never)).toThrow('tokenizer_config.json: chat_template: messages must be an array');
    expect(() => renderChat(QWEN, [{ content: 'x' } as never])).toThrow(
      'tokenizer_config.json: chat_template: messages[0] must be an object with a string "role"',
    );
  });
});

describe('chatTemplateOf / hasChatTemplate', () => {
  it('finds the template: a string, or the named one of a list', () => {
    expect(chatTemplateOf({ chat_template: QWEN })).toBe(QWEN);
    expect(hasChatTemplate({ chat_template: QWEN })).toBe(true);
    expect(hasChatTemplate({ eos_token: '<|endoftext|>' })).toBe(false);
    expect(hasChatTemplate(null)).toBe(false);
    expect(hasChatTemplate({ chat_template: '' })).toBe(false);
    const list = {
      chat_template: [
        { name: 'default', template: SMOL },
        { name: 'tool_use', template: QWEN },
      ],
    };
    expect(chatTemplateOf(list)).toBe(SMOL);
    expect(chatTemplateOf(list, 'tool_use')).toBe(QWEN);
    expect(() => chatTemplateOf(list, 'rag')).toThrow(
      'tokenizer_config.json: chat_template has no template named "rag" (it has default, tool_use)',
    );
    expect(() => hasChatTemplate({ chat_template: [{ name: 'default' }] })).toThrow(
      'tokenizer_config.json: chat_template[0] must be {"name": ..., "template": ...}',
    );
  });
});

describe('a rendered chat through a Qwen2-layout tokenizer', () => {
  it('encodes the ChatML markers as their ids only with allowSpecial', () => {
    const tok = HfTokenizer.fromFiles({
      tokenizerJson: qwen2StyleTokenizerJson(),
      tokenizerConfig: { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', chat_template: QWEN },
    });
    const prompt = tok.renderChat([user('Write add(a, b) in JavaScript.')], { addGenerationPrompt: true });
    expect(prompt.startsWith('<|im_start|>system\nYou are Qwen')).toBe(true);
    const [imStart, imEnd] = [tok.tokenToId('<|im_start|>')!, tok.tokenToId('<|im_end|>')!];
    const ids = Array.from(tok.encode(prompt, { allowSpecial: true }));
    expect(ids.filter((id) => id === imStart)).toHaveLength(3);
    expect(ids.filter((id) => id === imEnd)).toHaveLength(2);
    expect(tok.decode(ids)).toBe(prompt);
    expect(Array.from(tok.encode(prompt))).not.toContain(imStart);
    expect(tok.eosId).toBe(imEnd);
  });

  it('refuses to render for a tokenizer without a template', () => {
    const tok = HfTokenizer.fromFiles({ tokenizerJson: qwen2StyleTokenizerJson() }, 'Qwen2.5-0.5B');
    expect(() => tok.renderChat([user('a')])).toThrow(
      'Qwen2.5-0.5B/tokenizer_config.json: has no chat_template (a base model: prompt it with plain text)',
    );
  });
});
