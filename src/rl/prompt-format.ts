/**
 * How a task's prompt reaches a model: as plain completion (a base model continues the code:
 * the lab's own GPT, GPT-2, a base SmolLM2 or Qwen2.5-Coder), or through the model's chat template
 * (an instruct model). The choice is a setting (`auto` picks chat when the tokenizer has a
 * chat_template) and is recorded with the results.
 *
 * Chat for code completion follows EvalPlus's instruct prompts: the user turn asks for the
 * function and shows its prompt in a code block, and the assistant's turn is opened with that
 * code block and the prompt itself, so the model continues the function exactly where a base
 * model would; the completion ends at the closing fence. Scoring is unchanged: the program is
 * still prompt + completion.
 */
import type { Language } from '../tasks/types';
import { renderChat } from '../tokenizer/chat';
import type { TextTokenizer } from '../tokenizer/types';

export type PromptFormatSetting = 'auto' | 'chat' | 'completion';
export type PromptFormatKind = 'chat' | 'completion';

export const PROMPT_FORMATS: readonly PromptFormatSetting[] = ['auto', 'chat', 'completion'];

/** A tokenizer's chat template and special-token strings, when it has them (HfTokenizer). */
export interface ChatSource {
  readonly chatTemplate?: string | null;
  readonly specialTokens?: { readonly bos: string | null; readonly eos: string | null };
}

export interface PromptFormat {
  readonly kind: PromptFormatKind;
  /** the ids the model reads for a task prompt */
  taskIds(prompt: string, language: Language): number[];
  /** the ids for a free user message (coderl generate, the Models panel's prompt box) */
  messageIds(text: string): number[];
  /** the completion cut at the format's end (chat: the closing code fence) */
  cut(completion: string): string;
  /** token sequences that end a completion early (chat: the fence's tokens) */
  readonly stop: number[][];
}

const LANGUAGE_NAMES: Record<Language, string> = { javascript: 'JavaScript', python: 'Python' };

/** The kind a setting gives for a tokenizer: auto is chat exactly when there is a chat template. */
export function resolvePromptFormat(setting: PromptFormatSetting, tok: TextTokenizer & ChatSource, where = 'the model'): PromptFormatKind {
  if (!PROMPT_FORMATS.includes(setting))
    throw new Error(`prompt format must be one of ${PROMPT_FORMATS.join(', ')}, got "${String(setting)}"`);
  const template = tok.chatTemplate ?? null;
  if (setting === 'chat' && !template)
    throw new Error(`${where} has no chat template (tokenizer_config.json chat_template): use the completion format`);
  if (setting === 'auto') return template ? 'chat' : 'completion';
  return setting;
}

export function completionFormat(tok: TextTokenizer): PromptFormat {
  return {
    kind: 'completion',
    taskIds: (prompt) => Array.from(tok.encode(prompt)),
    messageIds: (text) => Array.from(tok.encode(text)),
    cut: (c) => c,
    stop: [],
  };
}

export function chatFormat(tok: TextTokenizer & ChatSource, where = 'tokenizer_config.json'): PromptFormat {
  const template = tok.chatTemplate;
  if (!template) throw new Error(`${where}: no chat_template, so prompts cannot go through a chat template`);
  const render = (content: string, assistant = '') =>
    renderChat(template, [{ role: 'user', content }], {
      addGenerationPrompt: true,
      bosToken: tok.specialTokens?.bos ?? null,
      eosToken: tok.specialTokens?.eos ?? null,
      where,
    }) + assistant;
  const ids = (text: string) => Array.from(tok.encode(text, { allowSpecial: true }));
  const fence = '```';
  return {
    kind: 'chat',
    taskIds: (prompt, language) => {
      const lang = language === 'python' ? 'python' : 'javascript';
      const ask = `Complete the following ${LANGUAGE_NAMES[language]} function. Reply with the whole function in one code block.\n\n${fence}${lang}\n${prompt.trimEnd()}\n${fence}`;
      return ids(render(ask, `${fence}${lang}\n${prompt}`));
    },
    messageIds: (text) => ids(render(text)),
    cut: (c) => {
      const i = c.indexOf(fence);
      return i < 0 ? c : c.slice(0, i);
    },
    stop: [Array.from(tok.encode(fence)), Array.from(tok.encode(`\n${fence}`))].filter((s) => s.length > 0),
  };
}

/** The format of a setting for a tokenizer. */
export function promptFormatFor(setting: PromptFormatSetting, tok: TextTokenizer & ChatSource, where?: string): PromptFormat {
  return resolvePromptFormat(setting, tok, where) === 'chat' ? chatFormat(tok, where) : completionFormat(tok);
}
