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
 *
 * Error-driven repair (explore.repair) is a second turn in either format. Completion: the task's
 * description, the failed attempt and its error as comments, then the function's header again
 * (a base model reads the error as code). Chat: the conversation goes on, as an instruct model is
 * used: the first user turn, the assistant's failed function, then a user turn with the failing
 * test and its error, and the assistant's reply opened with the task's prompt once more, so the
 * repaired program is again prompt + completion.
 */
import type { Language } from '../tasks/types';
import { renderChat, type ChatMessage } from '../tokenizer/chat';
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
  /**
   * A repair turn of a failed attempt: the ids the model reads, and the prompt text the repaired
   * program starts with (scoring runs prompt + completion).
   */
  repair(prompt: string, language: Language, attempt: string, error: string): { ids: number[]; prompt: string };
}

/**
 * The completion format's repair prompt: the task's description, the failed attempt and its error
 * as comments (clipped to a line each), then the function's header again.
 */
export function commentRepairPrompt(prompt: string, attempt: string, error: string): string {
  const lines = prompt.replace(/\n$/, '').split('\n');
  const header = lines.pop()!;
  const flat = attempt
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && l !== '}')
    .join(' ');
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 3)}...` : s).replace(/\s+/g, ' ');
  return [...lines, `// attempt: ${clip(flat, 60)}`, `// ${clip(error, 70)}`, header, ''].join('\n');
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
    repair: (prompt, _language, attempt, error) => {
      const text = commentRepairPrompt(prompt, attempt, error);
      return { ids: Array.from(tok.encode(text)), prompt: text };
    },
  };
}

export function chatFormat(tok: TextTokenizer & ChatSource, where = 'tokenizer_config.json'): PromptFormat {
  const template = tok.chatTemplate;
  if (!template) throw new Error(`${where}: no chat_template, so prompts cannot go through a chat template`);
  const render = (messages: ChatMessage[], assistant = '') =>
    renderChat(template, messages, {
      addGenerationPrompt: true,
      bosToken: tok.specialTokens?.bos ?? null,
      eosToken: tok.specialTokens?.eos ?? null,
      where,
    }) + assistant;
  const ids = (text: string) => Array.from(tok.encode(text, { allowSpecial: true }));
  const fence = '```';
  const tag = (language: Language) => (language === 'python' ? 'python' : 'javascript');
  const ask = (prompt: string, language: Language): ChatMessage => ({
    role: 'user',
    content: `Complete the following ${LANGUAGE_NAMES[language]} function. Reply with the whole function in one code block.\n\n${fence}${tag(language)}\n${prompt.trimEnd()}\n${fence}`,
  });
  const opened = (prompt: string, language: Language) => `${fence}${tag(language)}\n${prompt}`;
  return {
    kind: 'chat',
    taskIds: (prompt, language) => ids(render([ask(prompt, language)], opened(prompt, language))),
    messageIds: (text) => ids(render([{ role: 'user', content: text }])),
    cut: (c) => {
      const i = c.indexOf(fence);
      return i < 0 ? c : c.slice(0, i);
    },
    stop: [Array.from(tok.encode(fence)), Array.from(tok.encode(`\n${fence}`))].filter((s) => s.length > 0),
    repair: (prompt, language, attempt, error) => {
      const messages: ChatMessage[] = [
        ask(prompt, language),
        { role: 'assistant', content: `${opened(prompt, language)}${attempt.replace(/\n*$/, '')}\n${fence}` },
        {
          role: 'user',
          content: `That function fails its tests:\n\n${error}\n\nFix it. Reply with the whole corrected function in one code block.`,
        },
      ];
      return { ids: ids(render(messages, opened(prompt, language))), prompt };
    },
  };
}

/** The format of a setting for a tokenizer. */
export function promptFormatFor(setting: PromptFormatSetting, tok: TextTokenizer & ChatSource, where?: string): PromptFormat {
  return resolvePromptFormat(setting, tok, where) === 'chat' ? chatFormat(tok, where) : completionFormat(tok);
}
