/**
 * Chat templates: tokenizer_config.json's `chat_template` (Jinja) rendered with @huggingface/jinja,
 * the engine transformers.js uses, with the variables transformers' apply_chat_template passes:
 * `messages`, `add_generation_prompt`, the special-token strings (`bos_token`, `eos_token`,
 * `pad_token`, `unk_token`), `tools` and `documents` when given, and any extra ones (such as
 * Qwen3's `enable_thinking`). Like transformers, blocks are trimmed (trim_blocks, lstrip_blocks)
 * and the template's `raise_exception(...)` becomes an error.
 *
 * The rendered prompt holds the special tokens as text (`<|im_start|>`): encode it with
 * `{ allowSpecial: true }` so that they become their ids.
 */
import { Template } from '@huggingface/jinja';
import { errorText } from '../util/errors';

export class ChatTemplateError extends Error {
  override readonly name = 'ChatTemplateError';
}

export interface ChatMessage {
  role: string;
  content: string;
  [key: string]: unknown;
}

export interface RenderChatOptions {
  /** End with the assistant's opening (`<|im_start|>assistant\n`), so the model writes the reply. Default false. */
  addGenerationPrompt?: boolean;
  bosToken?: string | null;
  eosToken?: string | null;
  padToken?: string | null;
  unkToken?: string | null;
  /** tool (function) definitions, for templates that describe them */
  tools?: readonly unknown[];
  /** retrieved documents, for templates that take them */
  documents?: readonly unknown[];
  /** more template variables (e.g. `{ enable_thinking: false }`); they override the ones above */
  extra?: Readonly<Record<string, unknown>>;
  /** where the template comes from, for errors (default "tokenizer_config.json") */
  where?: string;
}

const PARSED_LIMIT = 16;
const parsed = new Map<string, Template>();

function compile(template: string, where: string): Template {
  let t = parsed.get(template);
  if (t) return t;
  try {
    t = new Template(template);
  } catch (e) {
    throw new ChatTemplateError(`${where}: chat_template does not parse: ${errorText(e)}`);
  }
  if (parsed.size >= PARSED_LIMIT) parsed.clear();
  parsed.set(template, t);
  return t;
}

/** Renders `template` over `messages`; errors name the file's chat_template and give Jinja's message. */
export function renderChat(template: string, messages: readonly ChatMessage[], opts: RenderChatOptions = {}): string {
  const where = opts.where ?? 'tokenizer_config.json';
  if (typeof template !== 'string' || template === '') throw new ChatTemplateError(`${where}: chat_template must be a non-empty string`);
  if (!Array.isArray(messages)) throw new ChatTemplateError(`${where}: chat_template: messages must be an array`);
  messages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null || typeof m.role !== 'string') {
      throw new ChatTemplateError(`${where}: chat_template: messages[${i}] must be an object with a string "role"`);
    }
  });
  const vars: Record<string, unknown> = {
    messages: messages.map((m) => ({ ...m })),
    add_generation_prompt: opts.addGenerationPrompt === true,
  };
  const tokens: [string, string | null | undefined][] = [
    ['bos_token', opts.bosToken],
    ['eos_token', opts.eosToken],
    ['pad_token', opts.padToken],
    ['unk_token', opts.unkToken],
  ];
  for (const [k, v] of tokens) if (typeof v === 'string') vars[k] = v;
  if (opts.tools) vars.tools = opts.tools;
  if (opts.documents) vars.documents = opts.documents;
  Object.assign(vars, opts.extra ?? {});
  const t = compile(template, where);
  try {
    return t.render(vars);
  } catch (e) {
    throw new ChatTemplateError(`${where}: chat_template failed to render: ${errorText(e)}`);
  }
}

/**
 * The chat template of a parsed tokenizer_config.json: its `chat_template` string, or from a list
 * of named templates ([{name, template}], as some models have) the one called `name` (default
 * "default"). Null when there is none; throws, naming the file, when the field is malformed.
 */
export function chatTemplateOf(tokenizerConfig: unknown, name = 'default', where = 'tokenizer_config.json'): string | null {
  if (typeof tokenizerConfig !== 'object' || tokenizerConfig === null || Array.isArray(tokenizerConfig)) return null;
  const v = (tokenizerConfig as Record<string, unknown>).chat_template;
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v === '' ? null : v;
  if (Array.isArray(v)) {
    const names: string[] = [];
    for (const [i, entry] of v.entries()) {
      const e = entry as Record<string, unknown> | null;
      if (typeof e !== 'object' || e === null || typeof e.name !== 'string' || typeof e.template !== 'string') {
        throw new ChatTemplateError(`${where}: chat_template[${i}] must be {"name": ..., "template": ...}`);
      }
      if (e.name === name) return e.template;
      names.push(e.name);
    }
    if (name === 'default') return null;
    throw new ChatTemplateError(`${where}: chat_template has no template named ${JSON.stringify(name)} (it has ${names.join(', ')})`);
  }
  throw new ChatTemplateError(`${where}: chat_template must be a string or a list of {name, template}, got ${typeof v}`);
}

/**
 * Whether a parsed tokenizer_config.json has a (default) chat template: an instruct model, not a
 * base one. Throws like chatTemplateOf when the field is malformed.
 */
export function hasChatTemplate(tokenizerConfig: unknown): boolean {
  return chatTemplateOf(tokenizerConfig) !== null;
}
