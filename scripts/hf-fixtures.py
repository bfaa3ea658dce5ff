#!/usr/bin/python3
"""Tiny Hugging Face checkpoints and the outputs a PyTorch reference gives on them.

Run with Debian's Python (the one that sees python3-torch):

    /usr/bin/python3 scripts/hf-fixtures.py

It writes data/hf-fixtures/{gpt2,llama,qwen2}/: a folder each, in the layout a user downloads from the
Hugging Face Hub (config.json, model.safetensors or two shards + model.safetensors.index.json,
tokenizer.json, tokenizer_config.json, generation_config.json), plus expected.json with the
reference's logits (no cache, with a KV cache, a left-padded batch), greedy continuations and
tokenizer samples. Everything is seeded; two runs write byte-identical files.

For training, each folder also gets grads.safetensors + grads.json (torch autograd of a masked next-token
loss: every parameter's gradient, and a LoRA adapter's gradients, logits and merged weights), and
data/hf-fixtures/lora/<name>/ holds that adapter in PEFT's on-disk format (adapter_config.json,
adapter_model.safetensors), written by hand after huggingface/peft's source (see PEFT_COMMIT).

Nothing here imports transformers, safetensors or tokenizers (none is installed): the safetensors
files, the byte-level BPE tokenizers and the three forward passes are written out by hand, following
transformers' modeling_gpt2.py, modeling_llama.py and modeling_qwen2.py (the eager attention path).
The script then reads its own safetensors files back and runs the reference on the stored (rounded)
weights widened to float32, so expected.json describes exactly the bytes on disk.

CI never runs this: the folders it writes are committed.
"""

import json
import math
import os
import re
import struct
import sys
import unicodedata
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)  # one reduction order, so the logits are the same run to run
torch.use_deterministic_algorithms(True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, 'data', 'hf-fixtures')
F32_MIN = torch.finfo(torch.float32).min
TOL = 1e-5
N_MERGES = 200
# residual-branch output projections are scaled up so that the layers, not the tied embedding of the
# input token, decide the next token (with gain 1 the tied models just repeat their last token)
OUT_GAIN = 4.0
# greedy steps must win by this much, so an engine that is right to 1e-4 picks the same ids
MIN_MARGIN = 1e-2

# --------------------------------------------------------------------------------------------
# A small corpus of JavaScript and Python (ASCII only, so the simple pre-tokenizers below agree
# with the Rust/JS regex engines on it) to learn the BPE merges from.
# --------------------------------------------------------------------------------------------

CORPUS = r'''
function add(a, b) {
  return a + b;
}

const numbers = [1, 2, 3, 4, 5];
const doubled = numbers.map((n) => n * 2);
const total = numbers.reduce((sum, n) => sum + n, 0);

export function isPalindrome(text) {
  const clean = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  return clean === clean.split('').reverse().join('');
}

async function fetchJson(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`request failed: ${response.status}`);
  }
  return response.json();
}

class Counter {
  constructor() {
    this.count = 0;
  }
  increment() {
    this.count += 1;
    return this.count;
  }
}

for (let i = 0; i < 10; i++) {
  if (i % 2 === 0) {
    console.log('even', i);
  } else {
    console.log('odd', i);
  }
}

function fibonacci(n) {
  if (n < 2) return n;
  return fibonacci(n - 1) + fibonacci(n - 2);
}

const user = { name: 'Ada', age: 36, tags: ['math', 'code'] };
const { name, age } = user;
console.log(`${name} is ${age} years old`);

def add(a, b):
    return a + b


def is_palindrome(text):
    clean = ''.join(ch for ch in text.lower() if ch.isalnum())
    return clean == clean[::-1]


def fibonacci(n):
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)


class Counter:
    def __init__(self):
        self.count = 0

    def increment(self):
        self.count += 1
        return self.count


def count_words(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


numbers = [1, 2, 3, 4, 5]
squares = [n * n for n in numbers]
total = sum(numbers)
print(f"total is {total}")

for i in range(10):
    if i % 2 == 0:
        print("even", i)
    else:
        print("odd", i)


def read_lines(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def max_value(values):
    if not values:
        raise ValueError("empty list")
    best = values[0]
    for value in values[1:]:
        if value > best:
            best = value
    return best
'''

# --------------------------------------------------------------------------------------------
# Byte-level BPE (GPT-2's bytes_to_unicode, a plain most-frequent-pair trainer, rank-order encoder)
# --------------------------------------------------------------------------------------------


def bytes_to_unicode():
    """GPT-2's table (openai/gpt-2 encoder.py, tokenizers' ByteLevel): printable bytes map to
    themselves, the other 68 to U+0100 onwards. The list order is the id order of GPT-2's (and
    Qwen2's) first 256 tokens."""
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('\u00a1'), ord('\u00ac') + 1)) + list(range(ord('\u00ae'), ord('\u00ff') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


BYTE_TABLE = bytes_to_unicode()
BYTE_TO_CHAR = {b: c for b, c in BYTE_TABLE}

# The Rust tokenizers' regexes use \p{L} and \p{N}; Python's re has neither. On ASCII (and on the
# few Latin letters in the samples) these spellings select the same characters:
#   \p{L} -> [^\W\d_]     \p{N} -> \d     [^\s\p{L}\p{N}] -> (?:[^\s\w]|_)
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT2_RE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
# Qwen2's Split pattern exactly as its tokenizer.json carries it
QWEN2_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2_RE = re.compile(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|(?:[^\r\n\w]|_)?[^\W\d_]+|\d| ?(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")


def split_isolated(pattern, text):
    """tokenizers' Split with behavior Isolated: every match is a piece, and so is every gap."""
    pieces, last = [], 0
    for m in pattern.finditer(text):
        if m.start() > last:
            pieces.append(text[last : m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        last = m.end()
    if last < len(text):
        pieces.append(text[last:])
    return pieces


def split_digits(text):
    """tokenizers' Digits(individual_digits=true): each numeric character is its own piece."""
    pieces, cur = [], ''
    for ch in text:
        if ch.isnumeric():
            if cur:
                pieces.append(cur)
                cur = ''
            pieces.append(ch)
        else:
            cur += ch
    if cur:
        pieces.append(cur)
    return pieces


def pretokenize(kind, text):
    """The pre-tokenizer chain of each fixture, ending in ByteLevel's byte-to-char mapping."""
    if kind == 'gpt2':  # ByteLevel(use_regex=true)
        pieces = split_isolated(GPT2_RE, text)
    elif kind == 'llama':  # Sequence[Digits(individual), ByteLevel(use_regex=true)] (SmolLM2)
        pieces = [p for d in split_digits(text) for p in split_isolated(GPT2_RE, d)]
    elif kind == 'qwen2':  # NFC, then Sequence[Split(pattern, Isolated), ByteLevel(use_regex=false)]
        pieces = split_isolated(QWEN2_RE, unicodedata.normalize('NFC', text))
    else:
        raise ValueError(kind)
    return [''.join(BYTE_TO_CHAR[b] for b in p.encode('utf-8')) for p in pieces]


def train_bpe(kind, corpus, n_merges):
    """Most frequent adjacent pair first; ties go to the smallest pair (code-point order); a pair
    whose concatenation is already a token is skipped, so every merge adds one new token."""
    words = Counter(pretokenize(kind, corpus))
    words = {tuple(w): c for w, c in sorted(words.items())}
    vocab = {c for _, c in BYTE_TABLE}
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        candidates = sorted(((-c, p) for p, c in pairs.items() if p[0] + p[1] not in vocab))
        if not candidates:
            raise RuntimeError('corpus too small for %d merges' % n_merges)
        a, b = candidates[0][1]
        merges.append((a, b))
        vocab.add(a + b)
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


def bpe_word(symbols, ranks):
    symbols = list(symbols)
    while len(symbols) > 1:
        best = None
        for i in range(len(symbols) - 1):
            r = ranks.get((symbols[i], symbols[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        a, b = symbols[best[1]], symbols[best[1] + 1]
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


class Tok:
    """The fixture's tokenizer as data (vocab, merges, specials) plus a reference encoder."""

    def __init__(self, kind, merges, vocab, specials):
        self.kind = kind
        self.merges = merges
        self.vocab = vocab  # token -> id, the BPE model's own vocabulary
        self.specials = specials  # content -> id
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.size = max(list(vocab.values()) + list(specials.values())) + 1

    def encode(self, text):
        ids = []
        pat = '(' + '|'.join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True)) + ')'
        for part in re.split(pat, text):
            if not part:
                continue
            if part in self.specials:
                ids.append(self.specials[part])
                continue
            for piece in pretokenize(self.kind, part):
                ids.extend(self.vocab[s] for s in bpe_word(piece, self.ranks))
        return ids

    def decode(self, ids):
        inv = {v: k for k, v in self.vocab.items()}
        inv.update({v: k for k, v in self.specials.items()})
        char_to_byte = {c: b for b, c in BYTE_TABLE}
        out = b''
        for i in ids:
            t = inv[i]
            out += t.encode('utf-8') if t in self.specials else bytes(char_to_byte[c] for c in t)
        return out.decode('utf-8', errors='replace')


def build_tokenizer(kind):
    merges = train_bpe(kind, CORPUS, N_MERGES)
    vocab = {}
    if kind == 'llama':
        # SmolLM2 puts its special tokens first (ids 0..16, in the BPE vocabulary too); ours: 0..2
        names = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
        for n in names:
            vocab[n] = len(vocab)
        specials = {n: vocab[n] for n in names}
    for _, c in BYTE_TABLE:
        vocab[c] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    if kind == 'gpt2':
        # GPT-2: <|endoftext|> is the last id, in the vocabulary and in added_tokens
        vocab['<|endoftext|>'] = len(vocab)
        specials = {'<|endoftext|>': vocab['<|endoftext|>']}
    elif kind == 'qwen2':
        # Qwen2: the specials come after the BPE vocabulary and live only in added_tokens
        base = len(vocab)
        specials = {n: base + i for i, n in enumerate(['<|endoftext|>', '<|im_start|>', '<|im_end|>'])}
    return Tok(kind, merges, vocab, specials)


def added_token(id_, content, normalized):
    return {'id': id_, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': normalized, 'special': True}


def bytelevel(add_prefix_space, trim_offsets, use_regex):
    return {'type': 'ByteLevel', 'add_prefix_space': add_prefix_space, 'trim_offsets': trim_offsets, 'use_regex': use_regex}


def tokenizer_json(tok):
    """tokenizer.json in the layout of the real files: openai-community/gpt2 (merges as "a b"
    strings), HuggingFaceTB/SmolLM2-135M-Instruct and Qwen/Qwen2.5-*-Instruct (merges as pairs)."""
    if tok.kind == 'gpt2':
        return {
            'version': '1.0',
            'truncation': None,
            'padding': None,
            'added_tokens': [added_token(i, c, True) for c, i in tok.specials.items()],
            'normalizer': None,
            'pre_tokenizer': bytelevel(False, True, True),
            'post_processor': bytelevel(True, False, True),
            'decoder': bytelevel(True, True, True),
            'model': {
                'type': 'BPE',
                'dropout': None,
                'unk_token': None,
                'continuing_subword_prefix': '',
                'end_of_word_suffix': '',
                'fuse_unk': False,
                'byte_fallback': False,
                'ignore_merges': False,
                'vocab': tok.vocab,
                'merges': ['%s %s' % m for m in tok.merges],
            },
        }
    if tok.kind == 'llama':
        return {
            'version': '1.0',
            'truncation': None,
            'padding': None,
            'added_tokens': [added_token(i, c, False) for c, i in tok.specials.items()],
            'normalizer': None,
            'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [{'type': 'Digits', 'individual_digits': True}, bytelevel(False, True, True)]},
            'post_processor': bytelevel(True, False, True),
            'decoder': bytelevel(True, True, True),
            'model': {
                'type': 'BPE',
                'dropout': None,
                'unk_token': None,
                'continuing_subword_prefix': None,
                'end_of_word_suffix': None,
                'fuse_unk': False,
                'byte_fallback': False,
                'ignore_merges': False,
                'vocab': tok.vocab,
                'merges': [list(m) for m in tok.merges],
            },
        }
    return {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [added_token(i, c, False) for c, i in tok.specials.items()],
        'normalizer': {'type': 'NFC'},
        'pre_tokenizer': {
            'type': 'Sequence',
            'pretokenizers': [
                {'type': 'Split', 'pattern': {'Regex': QWEN2_PATTERN}, 'behavior': 'Isolated', 'invert': False},
                bytelevel(False, False, False),
            ],
        },
        'post_processor': bytelevel(False, False, False),
        'decoder': bytelevel(False, False, False),
        'model': {
            'type': 'BPE',
            'dropout': None,
            'unk_token': None,
            'continuing_subword_prefix': '',
            'end_of_word_suffix': '',
            'fuse_unk': False,
            'byte_fallback': False,
            'ignore_merges': False,
            'vocab': tok.vocab,
            'merges': [list(m) for m in tok.merges],
        },
    }


def added_tokens_decoder(tok, normalized):
    return {
        str(i): {'content': c, 'lstrip': False, 'normalized': normalized, 'rstrip': False, 'single_word': False, 'special': True}
        for c, i in sorted(tok.specials.items(), key=lambda kv: kv[1])
    }


# SmolLM2-135M-Instruct's chat_template, character for character
SMOLLM2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Qwen2.5-*-Instruct's chat_template (ChatML with the default system prompt and tool calls)
QWEN25_CHAT_TEMPLATE = (
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)

# --------------------------------------------------------------------------------------------
# safetensors, by hand (the layout huggingface/safetensors' Rust `serialize` writes)
# --------------------------------------------------------------------------------------------

# the Rust Dtype enum's order: tensors are laid out by descending dtype, then by name
DTYPE_ORDER = ['BOOL', 'U8', 'I8', 'I16', 'U16', 'F16', 'BF16', 'I32', 'U32', 'F32', 'F64', 'I64', 'U64']


def f32_to_bf16_bits(a):
    """float32 -> bfloat16 bits: the upper 16 bits, rounded to nearest, ties to even."""
    u = np.ascontiguousarray(a, dtype='<f4').view('<u4').astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype('<u2')


def bf16_bits_to_f32(bits):
    return (bits.astype('<u4') << 16).view('<f4')


def encode_tensor(t, dtype):
    a = t.detach().to(torch.float32).numpy()
    if dtype == 'F32':
        return a.astype('<f4').tobytes()
    if dtype == 'F16':
        h = a.astype('<f2')
        assert np.array_equal(h.astype('<f4'), t.to(torch.float16).to(torch.float32).numpy()), 'numpy and torch F16 rounding differ'
        return h.tobytes()
    if dtype == 'BF16':
        bits = f32_to_bf16_bits(a)
        assert np.array_equal(bf16_bits_to_f32(bits), t.to(torch.bfloat16).to(torch.float32).numpy()), 'BF16 rounding differs from torch'
        return bits.tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype):
    """tensors: {name: float32 tensor}; all stored as `dtype`. Returns the tensor bytes written."""
    items = sorted(tensors.items(), key=lambda kv: (-DTYPE_ORDER.index(dtype), kv[0]))
    header = {'__metadata__': {'format': 'pt'}}
    blobs, offset = [], 0
    for name, t in items:
        b = encode_tensor(t, dtype)
        header[name] = {'dtype': dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    hb = json.dumps(header, separators=(',', ':')).encode('utf-8')
    hb += b' ' * ((8 - len(hb) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    return offset


def read_safetensors(path):
    """The reference loads what was written: every tensor widened to float32."""
    with open(path, 'rb') as f:
        data = f.read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8 : 8 + n].decode('utf-8'))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        s, e = info['data_offsets']
        raw = data[base + s : base + e]
        if info['dtype'] == 'F32':
            a = np.frombuffer(raw, dtype='<f4')
        elif info['dtype'] == 'F16':
            a = np.frombuffer(raw, dtype='<f2').astype('<f4')
        elif info['dtype'] == 'BF16':
            a = bf16_bits_to_f32(np.frombuffer(raw, dtype='<u2'))
        else:
            raise ValueError(info['dtype'])
        out[name] = torch.from_numpy(a.copy()).reshape(info['shape'])
    return out


def read_checkpoint(folder):
    index = os.path.join(folder, 'model.safetensors.index.json')
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)['weight_map'].values()))
    else:
        files = ['model.safetensors']
    out = {}
    for fn in files:
        out.update(read_safetensors(os.path.join(folder, fn)))
    return out


# --------------------------------------------------------------------------------------------
# Random weights
# --------------------------------------------------------------------------------------------


class Init:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def normal(self, shape, std, mean=0.0):
        return torch.randn(shape, generator=self.g, dtype=torch.float32) * std + mean

    def linear(self, out_f, in_f, gain=1.0):  # nn.Linear layout (out, in)
        return self.normal((out_f, in_f), gain / math.sqrt(in_f))


def gpt2_weights(cfg, seed):
    g = Init(seed)
    d, V, P, L = cfg['n_embd'], cfg['vocab_size'], cfg['n_positions'], cfg['n_layer']
    inner = cfg.get('n_inner') or 4 * d
    w = {'wte.weight': g.normal((V, d), 0.5), 'wpe.weight': g.normal((P, d), 0.3)}
    for i in range(L):
        p = 'h.%d.' % i
        w[p + 'ln_1.weight'] = g.normal((d,), 0.1, 1.0)
        w[p + 'ln_1.bias'] = g.normal((d,), 0.1)
        # the causal-mask buffer openai-community/gpt2's model.safetensors carries (F32 ones/zeros)
        w[p + 'attn.bias'] = torch.tril(torch.ones((P, P), dtype=torch.float32)).view(1, 1, P, P)
        # Conv1D stores (in, out): y = x @ W + b
        w[p + 'attn.c_attn.weight'] = torch.cat([g.linear(d, d, 1.5).t(), g.linear(d, d, 1.5).t(), g.linear(d, d).t()], dim=1)
        w[p + 'attn.c_attn.bias'] = g.normal((3 * d,), 0.1)
        w[p + 'attn.c_proj.weight'] = g.linear(d, d, OUT_GAIN).t().contiguous()
        w[p + 'attn.c_proj.bias'] = g.normal((d,), 0.1)
        w[p + 'ln_2.weight'] = g.normal((d,), 0.1, 1.0)
        w[p + 'ln_2.bias'] = g.normal((d,), 0.1)
        w[p + 'mlp.c_fc.weight'] = g.linear(inner, d).t().contiguous()
        w[p + 'mlp.c_fc.bias'] = g.normal((inner,), 0.1)
        w[p + 'mlp.c_proj.weight'] = g.linear(d, inner, OUT_GAIN).t().contiguous()
        w[p + 'mlp.c_proj.bias'] = g.normal((d,), 0.1)
    w['ln_f.weight'] = g.normal((d,), 0.1, 1.0)
    w['ln_f.bias'] = g.normal((d,), 0.1)
    return w


def llama_weights(cfg, seed, qkv_bias, tokenizer_size):
    """Llama / Qwen2 state dict, in the module order save_pretrained shards in."""
    g = Init(seed)
    d, V, L = cfg['hidden_size'], cfg['vocab_size'], cfg['num_hidden_layers']
    H, KV, hd, I = cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim'], cfg['intermediate_size']
    w = {'model.embed_tokens.weight': g.normal((V, d), 0.5)}
    for i in range(L):
        p = 'model.layers.%d.' % i
        w[p + 'self_attn.q_proj.weight'] = g.linear(H * hd, d, 1.5)
        if qkv_bias:
            w[p + 'self_attn.q_proj.bias'] = g.normal((H * hd,), 0.1)
        w[p + 'self_attn.k_proj.weight'] = g.linear(KV * hd, d, 1.5)
        if qkv_bias:
            w[p + 'self_attn.k_proj.bias'] = g.normal((KV * hd,), 0.1)
        w[p + 'self_attn.v_proj.weight'] = g.linear(KV * hd, d)
        if qkv_bias:
            w[p + 'self_attn.v_proj.bias'] = g.normal((KV * hd,), 0.1)
        w[p + 'self_attn.o_proj.weight'] = g.linear(d, H * hd, OUT_GAIN)
        w[p + 'mlp.gate_proj.weight'] = g.linear(I, d, 1.5)
        w[p + 'mlp.up_proj.weight'] = g.linear(I, d)
        w[p + 'mlp.down_proj.weight'] = g.linear(d, I, OUT_GAIN)
        w[p + 'input_layernorm.weight'] = g.normal((d,), 0.1, 1.0)
        w[p + 'post_attention_layernorm.weight'] = g.normal((d,), 0.1, 1.0)
    w['model.norm.weight'] = g.normal((d,), 0.1, 1.0)
    if not cfg['tie_word_embeddings']:
        lm = g.normal((V, d), 0.5)
        # rows past the tokenizer (Qwen's padding) are small, so greedy never picks an id the
        # tokenizer cannot decode; they still have logits, and the logits cover them
        lm[tokenizer_size:] *= 0.1
        w['lm_head.weight'] = lm
    return w


# --------------------------------------------------------------------------------------------
# The reference forward passes (float32, eager attention, written out as transformers does)
# --------------------------------------------------------------------------------------------


def gelu_new(x):
    # activations.py NewGELUActivation ("gelu_new")
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def conv1d(x, weight, bias):
    # pytorch_utils.py Conv1D.forward: weight is (in, out)
    size_out = x.size()[:-1] + (weight.size(-1),)
    return torch.addmm(bias, x.view(-1, x.size(-1)), weight).view(size_out)


def with_lora(y, lora, module, x):
    """PEFT's lora.Linear.forward (peft/tuners/lora/layer.py): `result = self.base_layer(x)`, then
    `result = result + lora_B(lora_A(dropout(x))) * scaling`; dropout 0 is nn.Identity. lora: {module path
    in checkpoint naming: (A (r, in), B (out, r), scaling)}. The same for a Conv1D base layer: A and B are
    nn.Linear either way, fan_in_fan_out only changes how the delta is merged."""
    if lora is None or module not in lora:
        return y
    A, B_, scaling = lora[module]
    return y + F.linear(F.linear(x, A), B_) * scaling


def gpt2_forward(W, cfg, input_ids, position_ids, attention_mask=None, past=None, lora=None):
    """GPT2LMHeadModel.forward -> GPT2Model.forward -> GPT2Block -> GPT2Attention._attn (eager).
    attention_mask: (B, past + T) of 0/1 or None. past: list of (key, value), each (B, H, S, D).
    lora: adapters on some Conv1D modules (see with_lora), keyed like 'h.0.attn.c_attn'."""
    d, H, L, eps = cfg['n_embd'], cfg['n_head'], cfg['n_layer'], cfg['layer_norm_epsilon']
    D = d // H
    B, T = input_ids.shape
    h = W['wte.weight'][input_ids] + W['wpe.weight'][position_ids]
    ext = None
    if attention_mask is not None:
        # GPT2Model.forward: (1 - mask) * finfo.min, added after the causal where()
        ext = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * F32_MIN
    presents = []
    for i in range(L):
        p = 'h.%d.' % i
        residual = h
        x = F.layer_norm(h, (d,), W[p + 'ln_1.weight'], W[p + 'ln_1.bias'], eps)
        qkv = with_lora(conv1d(x, W[p + 'attn.c_attn.weight'], W[p + 'attn.c_attn.bias']), lora, p + 'attn.c_attn', x)
        q, k, v = qkv.split(d, dim=2)
        q, k, v = (t.view(B, T, H, D).permute(0, 2, 1, 3) for t in (q, k, v))
        if past is not None:
            k = torch.cat((past[i][0], k), dim=-2)
            v = torch.cat((past[i][1], v), dim=-2)
        presents.append((k, v))
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        ql, kl = q.size(-2), k.size(-2)
        causal = W[p + 'attn.bias'][:, :, kl - ql : kl, :kl].to(torch.bool)
        w = torch.where(causal, w, torch.full([], F32_MIN, dtype=w.dtype))
        if ext is not None:
            w = w + ext
        w = F.softmax(w, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, T, d)
        h = residual + with_lora(conv1d(a, W[p + 'attn.c_proj.weight'], W[p + 'attn.c_proj.bias']), lora, p + 'attn.c_proj', a)
        residual = h
        x = F.layer_norm(h, (d,), W[p + 'ln_2.weight'], W[p + 'ln_2.bias'], eps)
        m = gelu_new(with_lora(conv1d(x, W[p + 'mlp.c_fc.weight'], W[p + 'mlp.c_fc.bias']), lora, p + 'mlp.c_fc', x))
        x = with_lora(conv1d(m, W[p + 'mlp.c_proj.weight'], W[p + 'mlp.c_proj.bias']), lora, p + 'mlp.c_proj', m)
        h = residual + x
    h = F.layer_norm(h, (d,), W['ln_f.weight'], W['ln_f.bias'], eps)
    # lm_head tied to wte, unless the weights carry their own (a merged lm_head adapter unties them)
    lm = W['lm_head.weight'] if 'lm_head.weight' in W else W['wte.weight']
    return with_lora(F.linear(h, lm), lora, 'lm_head', h), presents


def rms_norm(x, weight, eps):
    # LlamaRMSNorm / Qwen2RMSNorm.forward: float32 statistics, eps inside the rsqrt, weight after
    input_dtype = x.dtype
    x = x.to(torch.promote_types(input_dtype, torch.float32))  # float32 (float64 stays float64: the finite-difference check)
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x.to(input_dtype)


def rope_inv_freq(cfg):
    # modeling_rope_utils / Llama(Qwen2)RotaryEmbedding.compute_default_rope_parameters
    dim = cfg['head_dim']
    base = cfg['rope_theta']
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))


def rope_cos_sin(inv_freq, position_ids):
    # LlamaRotaryEmbedding.forward: float32 matmul of inv_freq by positions, emb = cat(freqs, freqs)
    inv = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    pos = position_ids[:, None, :].float()
    freqs = (inv @ pos).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def write_rope_tables(path):
    # HF's rotary tables at real head sizes and long positions (float32 inv_freq, float32 angles,
    # float32 cos/sin): what an engine's tables must equal to match transformers far into a sequence.
    positions = [0, 1, 7, 100, 1000, 2047, 4095, 32767]
    cases = []
    for head_dim, theta in [(64, 10000.0), (64, 100000.0), (64, 1000000.0), (8, 10000.0)]:
        inv = rope_inv_freq({'head_dim': head_dim, 'rope_theta': theta})
        cos, sin = rope_cos_sin(inv, torch.tensor([positions], dtype=torch.int64))
        half = head_dim // 2
        cases.append({
            'head_dim': head_dim,
            'rope_theta': theta,
            'positions': positions,
            'cos': [[float('%.9g' % v) for v in row[:half].tolist()] for row in cos[0]],
            'sin': [[float('%.9g' % v) for v in row[:half].tolist()] for row in sin[0]],
        })
    with open(path, 'w') as f:
        f.write(json.dumps({'source': 'LlamaRotaryEmbedding (default rope_type), float32', 'cases': cases}) + '\n')


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    b, kvh, s, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, kvh, n_rep, s, hd).reshape(b, kvh * n_rep, s, hd)


def llama_forward(W, cfg, input_ids, position_ids, attention_mask=None, past=None, lora=None):
    """LlamaForCausalLM / Qwen2ForCausalLM.forward with attn_implementation="eager":
    LlamaModel.forward (causal + padding mask of finfo.min), LlamaDecoderLayer (pre-norm),
    LlamaAttention + eager_attention_forward (RoPE, repeat_kv, softmax in float32), LlamaMLP.
    lora: adapters on some nn.Linear modules (see with_lora), keyed like 'model.layers.0.self_attn.q_proj'."""
    d, L, eps = cfg['hidden_size'], cfg['num_hidden_layers'], cfg['rms_norm_eps']
    H, KV, hd = cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim']
    n_rep = H // KV
    scaling = hd**-0.5
    B, T = input_ids.shape
    S = 0 if past is None else past[0][0].shape[2]
    h = W['model.embed_tokens.weight'][input_ids]
    cos, sin = rope_cos_sin(rope_inv_freq(cfg), position_ids)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    # the 4D additive mask: 0 where query (at cache slot S + t) may see key j, finfo.min elsewhere
    allowed = torch.arange(S + T)[None, :] <= (S + torch.arange(T))[:, None]
    allowed = allowed[None, None].expand(B, 1, T, S + T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :].to(torch.bool)
    mask = torch.where(allowed, torch.tensor(0.0), torch.tensor(F32_MIN))
    presents = []
    for i in range(L):
        p = 'model.layers.%d.' % i
        residual = h
        x = rms_norm(h, W[p + 'input_layernorm.weight'], eps)
        q = with_lora(F.linear(x, W[p + 'self_attn.q_proj.weight'], W.get(p + 'self_attn.q_proj.bias')), lora, p + 'self_attn.q_proj', x)
        k = with_lora(F.linear(x, W[p + 'self_attn.k_proj.weight'], W.get(p + 'self_attn.k_proj.bias')), lora, p + 'self_attn.k_proj', x)
        v = with_lora(F.linear(x, W[p + 'self_attn.v_proj.weight'], W.get(p + 'self_attn.v_proj.bias')), lora, p + 'self_attn.v_proj', x)
        q = q.view(B, T, -1, hd).transpose(1, 2)
        k = k.view(B, T, -1, hd).transpose(1, 2)
        v = v.view(B, T, -1, hd).transpose(1, 2)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        if past is not None:  # DynamicCache.update: concatenate along the sequence
            k = torch.cat([past[i][0], k], dim=-2)
            v = torch.cat([past[i][1], v], dim=-2)
        presents.append((k, v))
        ks, vs = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        w = torch.matmul(q, ks.transpose(2, 3)) * scaling
        w = w + mask[:, :, :, : ks.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.promote_types(w.dtype, torch.float32)).to(q.dtype)
        a = torch.matmul(w, vs).transpose(1, 2).contiguous().reshape(B, T, -1)
        h = residual + with_lora(F.linear(a, W[p + 'self_attn.o_proj.weight']), lora, p + 'self_attn.o_proj', a)
        residual = h
        x = rms_norm(h, W[p + 'post_attention_layernorm.weight'], eps)
        gate = with_lora(F.linear(x, W[p + 'mlp.gate_proj.weight']), lora, p + 'mlp.gate_proj', x)
        up = with_lora(F.linear(x, W[p + 'mlp.up_proj.weight']), lora, p + 'mlp.up_proj', x)
        m = F.silu(gate) * up
        x = with_lora(F.linear(m, W[p + 'mlp.down_proj.weight']), lora, p + 'mlp.down_proj', m)
        h = residual + x
    h = rms_norm(h, W['model.norm.weight'], eps)
    lm = W['lm_head.weight'] if 'lm_head.weight' in W else W['model.embed_tokens.weight']
    return with_lora(F.linear(h, lm), lora, 'lm_head', h), presents


# --------------------------------------------------------------------------------------------
# The checks and the expected outputs
# --------------------------------------------------------------------------------------------


def hf_position_ids(attention_mask):
    # GenerationMixin / GPT2LMHeadModel.prepare_inputs_for_generation
    pos = attention_mask.long().cumsum(-1) - 1
    pos.masked_fill_(attention_mask == 0, 1)
    return pos


def assert_close(a, b, what):
    err = (a - b).abs().max().item()
    assert err <= TOL, '%s: max abs difference %.3g > %g' % (what, err, TOL)
    return err


def greedy(forward, prompt, n_new, margins):
    """generate(do_sample=False, max_new_tokens=n_new) on one prompt with the cache."""
    ids = torch.tensor([prompt])
    T = ids.shape[1]
    logits, past = forward(ids, torch.arange(T)[None, :])
    out = []
    for step in range(n_new):
        top2 = logits[0, -1].topk(2).values
        margins.append(float(top2[0] - top2[1]))
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        if step + 1 == n_new:
            break
        logits, past = forward(torch.tensor([[nxt]]), torch.tensor([[T + step]]), past=past)
    return out


def greedy_no_cache(forward, prompt, n_new):
    ids = list(prompt)
    for _ in range(n_new):
        logits, _ = forward(torch.tensor([ids]), torch.arange(len(ids))[None, :])
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt) :]


def greedy_batched_left_padded(forward, prompts, n_new, pad_id):
    """generate() on a left-padded batch: attention_mask, position ids from its cumsum, the cache."""
    n = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (n - len(p)) + list(p) for p in prompts])
    mask = torch.tensor([[0] * (n - len(p)) + [1] * len(p) for p in prompts])
    logits, past = forward(ids, hf_position_ids(mask), attention_mask=mask)
    outs = [[] for _ in prompts]
    for step in range(n_new):
        nxt = logits[:, -1].argmax(-1)
        for b in range(len(prompts)):
            outs[b].append(int(nxt[b]))
        if step + 1 == n_new:
            break
        mask = torch.cat([mask, torch.ones((len(prompts), 1), dtype=mask.dtype)], dim=1)
        pos = hf_position_ids(mask)[:, -1:]
        logits, past = forward(nxt[:, None], pos, attention_mask=mask, past=past)
    return outs


def run_checks(name, forward, tok, cfg_vocab, seed, prompts_text, pad_id, eos_ids):
    g = torch.Generator().manual_seed(seed)
    special_ids = set(tok.specials.values())
    normal_ids = torch.tensor([i for i in range(tok.size) if i not in special_ids])
    B, T, PREFILL = 2, 9, 5
    input_ids = normal_ids[torch.randint(0, len(normal_ids), (B, T), generator=g)]
    pos = torch.arange(T)[None, :].expand(B, T)

    # 1. the whole sequences, no cache
    logits, _ = forward(input_ids, pos)
    assert logits.shape == (B, T, cfg_vocab), logits.shape
    assert torch.isfinite(logits).all()

    # 2. the KV cache: prefill 5, then one token at a time
    steps = []
    lg, past = forward(input_ids[:, :PREFILL], pos[:, :PREFILL])
    steps.append({'input_ids': input_ids[:, :PREFILL], 'position_ids': pos[:, :PREFILL], 'logits': lg})
    for t in range(PREFILL, T):
        lg, past = forward(input_ids[:, t : t + 1], pos[:, t : t + 1], past=past)
        steps.append({'input_ids': input_ids[:, t : t + 1], 'position_ids': pos[:, t : t + 1], 'logits': lg})
    err_kv = assert_close(torch.cat([s['logits'] for s in steps], dim=1), logits, name + ' kv vs no cache')

    # 3. a left-padded batch: row 0 is sequence 0 whole, row 1 the first 6 tokens of sequence 1
    short = 6
    pad_ids = input_ids.clone()
    pad_ids[1] = torch.cat([torch.full((T - short,), pad_id), input_ids[1, :short]])
    mask = torch.ones((B, T), dtype=torch.long)
    mask[1, : T - short] = 0
    ppos = hf_position_ids(mask)
    plogits, _ = forward(pad_ids, ppos, attention_mask=mask)
    err_p0 = assert_close(plogits[0], logits[0], name + ' padded row 0')
    alone, _ = forward(input_ids[1:, :short], torch.arange(short)[None, :])
    err_p1 = assert_close(plogits[1, T - short :], alone[0], name + ' padded row 1 vs alone')
    err_p1b = assert_close(plogits[1, T - short :], logits[1, :short], name + ' padded row 1 vs no cache')

    # 4. greedy continuations, with the cache; the same without it and as a left-padded batch
    prompts = [tok.encode(t) for t in prompts_text]
    margins = []
    gen = [greedy(forward, p, 8, margins) for p in prompts]
    assert min(margins) > MIN_MARGIN, '%s greedy: a step wins by only %.3g' % (name, min(margins))
    for p, g_ in zip(prompts, gen):
        assert greedy_no_cache(forward, p, 8) == g_, name + ' greedy: cache and no cache disagree'
        assert all(i < tok.size for i in g_), name + ' greedy picked an id past the tokenizer'
        assert not any(i in eos_ids for i in g_), name + ' greedy hit eos (generate would stop): change the prompt'
    assert greedy_batched_left_padded(forward, prompts, 8, pad_id) == gen, name + ' greedy: batched left-padded disagrees'

    print('%-6s kv %.2g, padded %.2g / %.2g / %.2g, greedy %s (margin >= %.3g)' % (name, err_kv, err_p0, err_p1, err_p1b, gen, min(margins)))
    return {
        'input_ids': input_ids,
        'logits': logits,
        'kv': {'prefill': PREFILL, 'steps': steps},
        'padded': {
            'input_ids': pad_ids,
            'attention_mask': mask,
            'position_ids': ppos,
            'pad_token_id': pad_id,
            'logits': [plogits[b, mask[b].bool()] for b in range(B)],
        },
        'greedy': {
            'do_sample': False,
            'max_new_tokens': 8,
            'min_top1_top2_margin': min(margins),
            'prompts': [{'text': t, 'input_ids': p, 'generated_ids': g_} for t, p, g_ in zip(prompts_text, prompts, gen)],
        },
    }


# --------------------------------------------------------------------------------------------
# JSON writing (expected.json with float32 values to 9 significant digits)
# --------------------------------------------------------------------------------------------


def to_plain(x):
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, dict):
        return {k: to_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_plain(v) for v in x]
    return x


def dump_compact(x, indent=0):
    """Pretty JSON whose innermost number lists sit on one line; floats as '%.9g'."""
    pad = '  ' * indent
    if isinstance(x, dict):
        if not x:
            return '{}'
        items = ['%s  %s: %s' % (pad, json.dumps(k), dump_compact(v, indent + 1)) for k, v in x.items()]
        return '{\n' + ',\n'.join(items) + '\n' + pad + '}'
    if isinstance(x, list):
        if all(not isinstance(v, (list, dict)) for v in x):
            return '[' + ', '.join(dump_compact(v) for v in x) + ']'
        return '[\n' + ',\n'.join(pad + '  ' + dump_compact(v, indent + 1) for v in x) + '\n' + pad + ']'
    if isinstance(x, float):
        assert math.isfinite(x)
        s = '%.9g' % x
        return s if any(c in s for c in '.e') else s + '.0'
    return json.dumps(x, ensure_ascii=False)


def write_json(path, obj, indent=2):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(json.dumps(obj, indent=indent, ensure_ascii=False) + '\n')


def write_expected(path, obj):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(dump_compact(to_plain(obj)) + '\n')


# --------------------------------------------------------------------------------------------
# Whole-model gradients and LoRA (grads.safetensors, grads.json, and PEFT adapter folders)
# --------------------------------------------------------------------------------------------

# PEFT's LoraConfig defaults and on-disk format, as of huggingface/peft at this commit (the version
# string is what PeftConfigMixin._get_peft_version writes for a dev install from git)
PEFT_COMMIT = '5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40'
PEFT_VERSION = '0.20.1.dev0@' + PEFT_COMMIT
LORA_R, LORA_ALPHA = 2, 4
# target_modules per fixture: PEFT's defaults (utils/constants.py
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: gpt2 c_attn, llama/qwen2 q_proj v_proj), plus
# down_proj (an MLP module, 88 -> 48) on llama; qwen2's q_proj and v_proj have biases; lm_head (the
# output layer, an nn.Linear in every family) on gpt2, whose head is tied to wte, and on qwen2, whose is not
LORA_TARGETS = {'gpt2': ['c_attn', 'lm_head'], 'llama': ['down_proj', 'q_proj', 'v_proj'], 'qwen2': ['lm_head', 'q_proj', 'v_proj']}
LOSS_SKIP = (0, 4)  # one more (row, position) left out of the loss, besides the padding and the last position
FD_STEP = 1e-5
FD_PER_TENSOR = 2
FD_RTOL = 1e-4
IGNORE = -100
# the merged model against the LoRA forward: the same function of the weights, rounded differently in
# float32 (W + s B A formed first vs W x + s B (A x)); logits reach ~12, so ~10 ulps
MERGE_TOL = 5e-5


def causal_lm_loss(logits, labels):
    """transformers loss/loss_utils.py ForCausalLMLoss (num_items_in_batch None, so fixed_cross_entropy's
    reduction is "mean"): logits upcast to float32, labels padded on the right with -100 and shifted by one,
    cross_entropy(ignore_index=-100) over all B*T rows: the mean over the counted targets."""
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # .float(); float64 stays float64
    labels = F.pad(labels, (0, 1), value=IGNORE)
    shift_labels = labels[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), shift_labels.view(-1), ignore_index=IGNORE, reduction='mean')


def loss_batch(res):
    """expected.json's padded batch (row 1 left-padded with 3 pads), with next-token targets counted where the
    position is real, not the last, and not LOSS_SKIP."""
    pad = res['padded']
    ids, mask, pos = pad['input_ids'], pad['attention_mask'], pad['position_ids']
    B, T = ids.shape
    loss_mask = mask.clone()
    loss_mask[:, T - 1] = 0
    loss_mask[LOSS_SKIP] = 0
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    targets[:, : T - 1] = ids[:, 1:]
    targets[loss_mask == 0] = IGNORE
    labels = torch.full((B, T), IGNORE, dtype=torch.long)  # HF convention: labels[t + 1] is logits[t]'s target
    labels[:, 1:] = targets[:, : T - 1]
    return {'input_ids': ids, 'attention_mask': mask, 'position_ids': pos, 'labels': labels, 'targets': targets, 'loss_mask': loss_mask}


def parameter_names(W):
    # GPT-2's h.N.attn.bias are the causal-mask buffers of the checkpoint (register_buffer), not parameters
    return [k for k in W if not re.fullmatch(r'h\.\d+\.attn\.bias', k)]


def lora_modules(name, ctx):
    """The targeted modules, in the checkpoint's (name) order: module path in the checkpoint's naming, transformers' module
    path (GPT2LMHeadModel's modules live under `transformer.`, its checkpoint names do not), in/out features."""
    out = []
    W = ctx['W']
    for k, w in W.items():
        if not k.endswith('.weight'):
            continue
        module = k[: -len('.weight')]
        if module.split('.')[-1] not in LORA_TARGETS[name] or module == 'lm_head':
            continue
        # PEFT's _get_in_out_features: nn.Linear weight is (out, in); Conv1D weight is (in, out)
        fin, fout = (w.shape[0], w.shape[1]) if ctx['conv1d'] else (w.shape[1], w.shape[0])
        path = ctx['module_prefix'] + module
        out.append({
            'module': module,
            'hf_module': path,
            'weight': k,
            'lora_A': 'base_model.model.%s.lora_A.weight' % path,
            'lora_B': 'base_model.model.%s.lora_B.weight' % path,
            'in_features': fin,
            'out_features': fout,
        })
    if 'lm_head' in LORA_TARGETS[name]:
        # the causal-LM classes' lm_head is top level (not under `transformer.`) and an nn.Linear (out, in) even
        # in GPT-2, so PEFT turns fan_in_fan_out off for it; tied, its weight is the embedding's ('base')
        emb = 'wte.weight' if 'wte.weight' in W else 'model.embed_tokens.weight'
        base = 'lm_head.weight' if 'lm_head.weight' in W else emb
        out.append({
            'module': 'lm_head',
            'hf_module': 'lm_head',
            'weight': 'lm_head.weight',
            'base': base,
            'lora_A': 'base_model.model.lm_head.lora_A.weight',
            'lora_B': 'base_model.model.lm_head.lora_B.weight',
            'in_features': W[base].shape[1],
            'out_features': W[base].shape[0],
        })
    assert out
    return out


def lora_weights(mods, seed):
    """A (r, in) and B (out, r), both random (PEFT inits B to zero, which would make A's gradient zero)."""
    g = Init(seed)
    ab = {}
    for m in mods:
        ab[m['lora_A']] = g.normal((LORA_R, m['in_features']), 1.0 / math.sqrt(m['in_features']))
        ab[m['lora_B']] = g.normal((m['out_features'], LORA_R), 0.2)
    return ab


def lora_dict(mods, ab):
    scaling = LORA_ALPHA / LORA_R  # LoraLayer.update_layer without use_rslora
    return {m['module']: (ab[m['lora_A']], ab[m['lora_B']], scaling) for m in mods}


def merged_weights(W, mods, ab, conv1d):
    """lora.Linear.merge: weight += get_delta_weight = transpose(B @ A, fan_in_fan_out) * scaling. A tied lm_head
    is merged into a weight of its own (lm_head.weight, the embedding left as it was): merging into the shared
    tensor would change the embedding lookup too, which the adapted model does not."""
    Wm = dict(W)
    scaling = LORA_ALPHA / LORA_R
    for m in mods:
        delta = ab[m['lora_B']] @ ab[m['lora_A']]
        delta = (delta.T if conv1d and m['module'] != 'lm_head' else delta) * scaling
        Wm[m['weight']] = W[m.get('base', m['weight'])] + delta
    return Wm


def fd_check(loss_of, tensors, grads32, seed, what):
    """Central differences in float64 on FD_PER_TENSOR random entries of each tensor (among those whose
    gradient is at least 5% of the tensor's largest), against float64 autograd and the written float32 one."""
    t64 = {k: v.detach().double().clone().requires_grad_(True) for k, v in tensors.items()}
    loss64 = loss_of(t64)
    g64 = dict(zip(t64, torch.autograd.grad(loss64, list(t64.values()))))
    gen = torch.Generator().manual_seed(seed)
    entries, worst64, worst32 = [], 0.0, 0.0
    with torch.no_grad():
        for k, t in t64.items():
            flat = g64[k].abs().flatten()
            cand = torch.nonzero(flat >= 0.05 * flat.max()).flatten()
            picks = cand[torch.randperm(len(cand), generator=gen)[:FD_PER_TENSOR]].sort().values
            for i in picks.tolist():
                idx = list(np.unravel_index(i, tuple(t.shape)))
                old = t.view(-1)[i].item()
                t.view(-1)[i] = old + FD_STEP
                up = loss_of(t64).item()
                t.view(-1)[i] = old - FD_STEP
                down = loss_of(t64).item()
                t.view(-1)[i] = old
                fd = (up - down) / (2 * FD_STEP)
                a64, a32 = g64[k].view(-1)[i].item(), grads32[k].reshape(-1)[i].item()
                r64, r32 = abs(a64 - fd) / abs(fd), abs(a32 - fd) / abs(fd)
                assert r64 <= FD_RTOL and r32 <= FD_RTOL, '%s %s%s: autograd %.9g (float64 %.9g) vs finite difference %.9g' % (what, k, idx, a32, a64, fd)
                worst64, worst32 = max(worst64, r64), max(worst32, r32)
                entries.append({'name': k, 'index': [int(j) for j in idx], 'autograd': a32, 'autograd_f64': a64, 'finite_difference': fd})
    # the whole float32 gradients against the float64 ones, each tensor relative to its largest entry
    worst_tensor = max(((grads32[k].double() - g64[k]).abs().max() / g64[k].abs().max().clamp_min(1e-30)).item() for k in t64)
    assert worst_tensor <= FD_RTOL, '%s: float32 gradients differ from float64 ones by %.3g of a tensor max' % (what, worst_tensor)
    return {
        'dtype': 'float64',
        'step': FD_STEP,
        'rtol': FD_RTOL,
        'loss_f64': loss64.item(),
        'max_rel_err_autograd_f64': worst64,
        'max_rel_err_autograd_f32': worst32,
        'max_err_f32_vs_f64_over_tensor_max': worst_tensor,
        'entries': entries,
    }


def peft_adapter_config(name, target_modules, fan_in_fan_out):
    """adapter_config.json as PeftModel.save_pretrained writes it: asdict(LoraConfig) less runtime_config
    (LoraConfig.to_dict), sets as lists, inference_mode True while saving, auto_mapping None because
    task_type is set, json.dumps(indent=2, sort_keys=True) with no newline at the end."""
    cfg = {
        # PeftConfigMixin
        'task_type': 'CAUSAL_LM',
        'peft_type': 'LORA',
        'auto_mapping': None,
        'peft_version': PEFT_VERSION,
        # PeftConfig
        'base_model_name_or_path': 'data/hf-fixtures/' + name,
        'revision': None,
        'inference_mode': True,
        # LoraConfig
        'r': LORA_R,
        'target_modules': sorted(target_modules),  # a set in LoraConfig: list(set) order is Python's hash order
        'exclude_modules': None,
        'lora_alpha': LORA_ALPHA,
        'lora_dropout': 0.0,
        'fan_in_fan_out': fan_in_fan_out,  # dispatch_default sets it True for Conv1D (GPT-2), False for nn.Linear
        'bias': 'none',
        'use_rslora': False,
        'modules_to_save': None,
        'init_lora_weights': True,
        'layers_to_transform': None,
        'layers_pattern': None,
        'rank_pattern': {},
        'alpha_pattern': {},
        'megatron_config': None,
        'megatron_core': 'megatron.core',
        'trainable_token_indices': None,
        'loftq_config': {},
        'eva_config': None,
        'corda_config': None,
        'lora_ga_config': None,
        'use_dora': False,
        'velora_config': None,
        'alora_invocation_tokens': None,
        'use_qalora': False,
        'qalora_group_size': 16,
        'monteclora_config': None,
        'layer_replication': None,
        'lora_bias': False,
        'target_parameters': None,
        'use_bdlora': None,
        'arrow_config': None,
        'kasa_config': None,
        'ensure_weight_tying': False,
    }
    return json.dumps(cfg, indent=2, sort_keys=True)


def make_grads(name, folder, lora_folder, ctx, res, seed):
    W, forward = ctx['W'], ctx['forward']
    batch = loss_batch(res)
    ids, mask, pos, labels = batch['input_ids'], batch['attention_mask'], batch['position_ids'], batch['labels']
    real = mask.bool()

    # 1. the base model: every parameter, float32 autograd
    names = parameter_names(W)
    loss_of = lambda t: causal_lm_loss(forward({**W, **t}, ids, pos, attention_mask=mask), labels)
    params = {k: W[k].clone().requires_grad_(True) for k in names}
    base_logits = forward({**W, **params}, ids, pos, attention_mask=mask)
    for b in range(ids.shape[0]):  # the same forward as expected.json's padded case
        assert torch.equal(base_logits[b, real[b]].detach(), res['padded']['logits'][b]), name + ' batch logits differ from expected.json padded'
    loss = causal_lm_loss(base_logits, labels)
    # the same loss written out: mean over the loss mask of -log_softmax at the target
    lp = F.log_softmax(base_logits.detach(), dim=-1)
    tgt = batch['targets'].clamp_min(0)
    manual = -(lp.gather(-1, tgt[..., None])[..., 0] * batch['loss_mask']).sum() / batch['loss_mask'].sum()
    assert abs(manual.item() - loss.item()) <= 1e-6 * abs(loss.item()), (name, manual.item(), loss.item())
    grads = dict(zip(names, torch.autograd.grad(loss, list(params.values()))))
    for k in names:
        assert torch.isfinite(grads[k]).all() and grads[k].shape == W[k].shape, k
    fd = fd_check(loss_of, {k: W[k] for k in names}, grads, seed, name)

    # 2. LoRA on the frozen base: PEFT's forward, and the merged weights
    mods = lora_modules(name, ctx)
    ab = lora_weights(mods, seed + 1000)
    abg = {k: v.clone().requires_grad_(True) for k, v in ab.items()}
    lora_logits = forward(W, ids, pos, attention_mask=mask, lora=lora_dict(mods, abg))
    lora_loss = causal_lm_loss(lora_logits, labels)
    lora_grads = dict(zip(abg, torch.autograd.grad(lora_loss, list(abg.values()))))
    lora_logits = lora_logits.detach()
    lora_of = lambda t: causal_lm_loss(forward({k: v.double() for k, v in W.items()}, ids, pos, attention_mask=mask, lora=lora_dict(mods, t)), labels)
    lora_fd = fd_check(lora_of, ab, lora_grads, seed + 1, name + ' lora')
    Wm = merged_weights(W, mods, ab, ctx['conv1d'])
    merged_logits = forward(Wm, ids, pos, attention_mask=mask)
    merged_err = (merged_logits - lora_logits)[real].abs().max().item()
    assert merged_err <= MERGE_TOL, '%s: merged logits differ from the LoRA forward by %.3g' % (name, merged_err)
    merged_loss = causal_lm_loss(merged_logits, labels).item()
    assert abs(merged_loss - lora_loss.item()) <= MERGE_TOL, (name, merged_loss, lora_loss.item())
    assert (lora_logits - base_logits.detach())[real].abs().max() > 0.1, name + ': the adapter barely changes the logits'
    # pad positions (attention_mask 0) are written as 0: their values only depend on how an engine fills a
    # query row that sees no key, and nothing (loss, gradients, real positions) depends on them
    lora_logits_out = torch.where(real[..., None], lora_logits, torch.zeros(()))

    # 3. the files
    out = {'grad.' + k: grads[k] for k in names}
    out.update({'lora_grad.' + k: lora_grads[k] for k in ab})
    out['lora_logits'] = lora_logits_out
    out.update({'merged.' + m['weight']: Wm[m['weight']] for m in mods})
    write_safetensors(os.path.join(folder, 'grads.safetensors'), out, 'F32')
    back = read_safetensors(os.path.join(folder, 'grads.safetensors'))
    assert set(back) == set(out) and all(torch.equal(back[k], out[k].detach()) for k in out)

    os.makedirs(lora_folder, exist_ok=True)
    for fn in os.listdir(lora_folder):
        os.remove(os.path.join(lora_folder, fn))
    with open(os.path.join(lora_folder, 'adapter_config.json'), 'w') as f:
        f.write(peft_adapter_config(name, LORA_TARGETS[name], ctx['conv1d']))
    write_safetensors(os.path.join(lora_folder, 'adapter_model.safetensors'), ab, 'F32')
    assert all(torch.equal(v, ab[k]) for k, v in read_safetensors(os.path.join(lora_folder, 'adapter_model.safetensors')).items())

    print('%-6s loss %.6f (fd %.2g), lora loss %.6f (fd %.2g), merged %.2g' % (name, loss.item(), fd['max_rel_err_autograd_f32'], lora_loss.item(), lora_fd['max_rel_err_autograd_f32'], merged_err))
    return {
        'fixture': name,
        'files': {'grads': 'grads.safetensors', 'adapter': os.path.relpath(lora_folder, ROOT)},
        'compute_dtype': 'float32',
        'batch': {
            'input_ids': ids,
            'attention_mask': mask,
            'position_ids': pos,
            'labels': labels,
            'targets': batch['targets'],
            'loss_mask': batch['loss_mask'],
            'n_targets': int(batch['loss_mask'].sum()),
        },
        'loss': loss.item(),
        'grads': {
            'prefix': 'grad.',
            'names': names,
            'not_parameters': [k for k in W if k not in names],
            'tied': ['wte.weight' if 'wte.weight' in W else 'model.embed_tokens.weight'] if 'lm_head.weight' not in W else [],
            'fd_check': fd,
        },
        'lora': {
            'peft': PEFT_VERSION,
            'r': LORA_R,
            'lora_alpha': LORA_ALPHA,
            'scaling': LORA_ALPHA / LORA_R,
            'lora_dropout': 0.0,
            'fan_in_fan_out': ctx['conv1d'],
            'target_modules': sorted(LORA_TARGETS[name]),
            'modules': mods,
            'loss': lora_loss.item(),
            'grad_prefix': 'lora_grad.',
            'logits': 'lora_logits',
            'merged_prefix': 'merged.',
            'merged_loss': merged_loss,
            'merged_logits_max_abs_diff': merged_err,
            'fd_check': lora_fd,
        },
    }


# --------------------------------------------------------------------------------------------
# The three fixtures
# --------------------------------------------------------------------------------------------

SAMPLES = [
    'def add(a, b):\n    return a + b\n',
    'const total = numbers.reduce((sum, n) => sum + n, 0);',
    "x = 12345 + 0.5  # it's   fine\n\n",
    'caf\u00e9 \u2013 na\u0131\u0308ve \U0001F600 tabs\tend',
]


def tokenizer_samples(tok, extra):
    return [{'text': t, 'ids': tok.encode(t)} for t in SAMPLES + extra]


def make_gpt2(folder):
    tok = build_tokenizer('gpt2')
    eos = tok.specials['<|endoftext|>']
    cfg = {
        'activation_function': 'gelu_new',
        'architectures': ['GPT2LMHeadModel'],
        'attn_pdrop': 0.1,
        'bos_token_id': eos,
        'embd_pdrop': 0.1,
        'eos_token_id': eos,
        'initializer_range': 0.02,
        'layer_norm_epsilon': 1e-05,
        'model_type': 'gpt2',
        'n_ctx': 64,
        'n_embd': 32,
        'n_head': 4,
        'n_layer': 2,
        'n_positions': 64,
        'resid_pdrop': 0.1,
        'summary_activation': None,
        'summary_first_dropout': 0.1,
        'summary_proj_to_labels': True,
        'summary_type': 'cls_index',
        'summary_use_proj': True,
        'task_specific_params': {'text-generation': {'do_sample': True, 'max_length': 50}},
        'vocab_size': tok.size,
    }
    write_json(os.path.join(folder, 'config.json'), cfg)
    write_json(os.path.join(folder, 'generation_config.json'), {'_from_model_config': True, 'bos_token_id': eos, 'eos_token_id': eos, 'transformers_version': '4.26.0.dev0'})
    write_json(os.path.join(folder, 'tokenizer.json'), tokenizer_json(tok))
    # openai-community/gpt2's tokenizer_config.json is this one line; eos/bos come from the defaults
    write_json(os.path.join(folder, 'tokenizer_config.json'), {'model_max_length': cfg['n_positions']})
    write_safetensors(os.path.join(folder, 'model.safetensors'), gpt2_weights(cfg, 1001), 'F32')

    W = read_checkpoint(folder)
    assert 'lm_head.weight' not in W
    fwd = lambda ids, pos, attention_mask=None, past=None: gpt2_forward(W, cfg, ids, pos, attention_mask, past)
    res = run_checks('gpt2', fwd, tok, cfg['vocab_size'], 2001, ['def fibonacci(n):\n', 'const x = [1, 2, 3];'], eos, {eos})
    fwd_w = lambda W_, ids, pos, attention_mask=None, lora=None: gpt2_forward(W_, cfg, ids, pos, attention_mask, None, lora)[0]
    return tok, cfg, res, 'F32', [], {'W': W, 'forward': fwd_w, 'module_prefix': 'transformer.', 'conv1d': True}


def make_llama(folder):
    tok = build_tokenizer('llama')
    bos, eos = tok.specials['<|im_start|>'], tok.specials['<|im_end|>']
    cfg = {
        'architectures': ['LlamaForCausalLM'],
        'attention_bias': False,
        'attention_dropout': 0.0,
        'bos_token_id': bos,
        'eos_token_id': eos,
        'head_dim': 8,
        'hidden_act': 'silu',
        'hidden_size': 48,
        'initializer_range': 0.02,
        'intermediate_size': 88,
        'is_llama_config': True,
        'max_position_embeddings': 128,
        'mlp_bias': False,
        'model_type': 'llama',
        'num_attention_heads': 6,
        'num_hidden_layers': 2,
        'num_key_value_heads': 2,
        'pad_token_id': eos,
        'pretraining_tp': 1,
        'rms_norm_eps': 1e-05,
        'rope_interleaved': False,
        'rope_scaling': None,
        'rope_theta': 10000,
        'tie_word_embeddings': True,
        'torch_dtype': 'bfloat16',
        'transformers_version': '4.42.3',
        'use_cache': True,
        'vocab_size': tok.size,
    }
    write_json(os.path.join(folder, 'config.json'), cfg)
    write_json(os.path.join(folder, 'generation_config.json'), {'_from_model_config': True, 'bos_token_id': bos, 'eos_token_id': eos, 'pad_token_id': eos, 'transformers_version': '4.42.3'})
    write_json(os.path.join(folder, 'tokenizer.json'), tokenizer_json(tok))
    write_json(
        os.path.join(folder, 'tokenizer_config.json'),
        {
            'add_prefix_space': False,
            'added_tokens_decoder': added_tokens_decoder(tok, False),
            'additional_special_tokens': ['<|im_start|>', '<|im_end|>'],
            'bos_token': '<|im_start|>',
            'chat_template': SMOLLM2_CHAT_TEMPLATE,
            'clean_up_tokenization_spaces': False,
            'eos_token': '<|im_end|>',
            'model_max_length': cfg['max_position_embeddings'],
            'pad_token': '<|im_end|>',
            'tokenizer_class': 'GPT2Tokenizer',
            'unk_token': '<|endoftext|>',
            'vocab_size': tok.size,
        },
    )
    write_safetensors(os.path.join(folder, 'model.safetensors'), llama_weights(cfg, 1002, False, tok.size), 'BF16')

    W = read_checkpoint(folder)
    assert 'lm_head.weight' not in W
    fwd = lambda ids, pos, attention_mask=None, past=None: llama_forward(W, cfg, ids, pos, attention_mask, past)
    chat = '<|im_start|>user\nwrite add(a, b)<|im_end|>\n<|im_start|>assistant\n'
    res = run_checks('llama', fwd, tok, cfg['vocab_size'], 2002, [chat, 'for i in range(10):'], eos, {eos})
    fwd_w = lambda W_, ids, pos, attention_mask=None, lora=None: llama_forward(W_, cfg, ids, pos, attention_mask, None, lora)[0]
    return tok, cfg, res, 'BF16', [chat], {'W': W, 'forward': fwd_w, 'module_prefix': '', 'conv1d': False}


def make_qwen2(folder):
    tok = build_tokenizer('qwen2')
    eot, ims, ime = (tok.specials[s] for s in ['<|endoftext|>', '<|im_start|>', '<|im_end|>'])
    vocab = (tok.size + 63) // 64 * 64  # Qwen2.5 pads 151,665 tokens to 151,936 rows
    assert vocab > tok.size
    cfg = {
        'architectures': ['Qwen2ForCausalLM'],
        'attention_dropout': 0.0,
        'bos_token_id': eot,
        'eos_token_id': ime,
        'hidden_act': 'silu',
        'hidden_size': 32,
        'initializer_range': 0.02,
        'intermediate_size': 64,
        'max_position_embeddings': 256,
        'max_window_layers': 2,
        'model_type': 'qwen2',
        'num_attention_heads': 4,
        'num_hidden_layers': 2,
        'num_key_value_heads': 1,
        'rms_norm_eps': 1e-06,
        'rope_scaling': None,
        'rope_theta': 1000000.0,
        'sliding_window': 256,
        'tie_word_embeddings': False,
        'torch_dtype': 'float16',
        'transformers_version': '4.43.1',
        'use_cache': True,
        'use_sliding_window': False,
        'vocab_size': vocab,
    }
    rcfg = dict(cfg, head_dim=cfg['hidden_size'] // cfg['num_attention_heads'])  # Qwen2Attention's default
    write_json(os.path.join(folder, 'config.json'), cfg)
    write_json(
        os.path.join(folder, 'generation_config.json'),
        {
            'bos_token_id': eot,
            'pad_token_id': eot,
            'do_sample': True,
            'eos_token_id': [ime, eot],
            'repetition_penalty': 1.1,
            'temperature': 0.7,
            'top_p': 0.8,
            'top_k': 20,
            'transformers_version': '4.37.0',
        },
    )
    write_json(os.path.join(folder, 'tokenizer.json'), tokenizer_json(tok))
    write_json(
        os.path.join(folder, 'tokenizer_config.json'),
        {
            'add_bos_token': False,
            'add_prefix_space': False,
            'added_tokens_decoder': added_tokens_decoder(tok, False),
            'additional_special_tokens': ['<|im_start|>', '<|im_end|>'],
            'bos_token': None,
            'chat_template': QWEN25_CHAT_TEMPLATE,
            'clean_up_tokenization_spaces': False,
            'eos_token': '<|im_end|>',
            'errors': 'replace',
            'model_max_length': 1024,
            'pad_token': '<|endoftext|>',
            'split_special_tokens': False,
            'tokenizer_class': 'Qwen2Tokenizer',
            'unk_token': None,
        },
    )
    w = llama_weights(rcfg, 1003, True, tok.size)
    # two shards, cut in module order as save_pretrained(max_shard_size=...) cuts
    first = [k for k in w if k == 'model.embed_tokens.weight' or k.startswith('model.layers.0.')]
    shards = {'model-00001-of-00002.safetensors': first, 'model-00002-of-00002.safetensors': [k for k in w if k not in first]}
    total = 0
    weight_map = {}
    for fn, names in shards.items():
        total += write_safetensors(os.path.join(folder, fn), {k: w[k] for k in names}, 'F16')
        weight_map.update({k: fn for k in names})
    with open(os.path.join(folder, 'model.safetensors.index.json'), 'w') as f:
        f.write(json.dumps({'metadata': {'total_size': total}, 'weight_map': weight_map}, indent=2, sort_keys=True) + '\n')

    W = read_checkpoint(folder)
    assert 'lm_head.weight' in W and W['lm_head.weight'].shape[0] == vocab
    fwd = lambda ids, pos, attention_mask=None, past=None: llama_forward(W, rcfg, ids, pos, attention_mask, past)
    chat = '<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nsum a list<|im_end|>\n<|im_start|>assistant\n'
    res = run_checks('qwen2', fwd, tok, vocab, 2003, [chat, 'print(total)'], eot, {ime, eot})
    fwd_w = lambda W_, ids, pos, attention_mask=None, lora=None: llama_forward(W_, rcfg, ids, pos, attention_mask, None, lora)[0]
    return tok, cfg, res, 'F16', [chat], {'W': W, 'forward': fwd_w, 'module_prefix': '', 'conv1d': False}


def check_tokenizer(tok):
    for t in SAMPLES:
        assert tok.decode(tok.encode(t)) == (unicodedata.normalize('NFC', t) if tok.kind == 'qwen2' else t), (tok.kind, t)
    # every merge is reachable: the characters of a merged token encode back to that one token
    for a, b in tok.merges:
        assert bpe_word(list(a + b), tok.ranks) == [a + b], (tok.kind, a, b)


def self_checks():
    x = torch.linspace(-6, 6, 1001)
    assert (gelu_new(x) - F.gelu(x, approximate='tanh')).abs().max() < 1e-6
    w = torch.randn(7, generator=torch.Generator().manual_seed(5))
    h = torch.randn(3, 7, generator=torch.Generator().manual_seed(6))
    ref = w * h / torch.sqrt((h * h).mean(-1, keepdim=True) + 1e-5)
    assert (rms_norm(h, w, 1e-5) - ref).abs().max() < 1e-6
    # ties and carries of the BF16 rounding against torch's
    a = np.array([1.0, 1.00390625, 1.01171875, 1.0078125 + 2**-24, -3.14159265, 65504.0, 1e-40, 3.3895314e38], dtype='<f4')
    assert np.array_equal(bf16_bits_to_f32(f32_to_bf16_bits(a)), torch.from_numpy(a).to(torch.bfloat16).float().numpy())
    # repeat_kv is repeat_interleave: query head h reads kv head h // n_rep
    kv = torch.arange(2.0).view(1, 2, 1, 1)
    assert repeat_kv(kv, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def main():
    self_checks()
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, make) in enumerate([('gpt2', make_gpt2), ('llama', make_llama), ('qwen2', make_qwen2)]):
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        for fn in os.listdir(folder):
            os.remove(os.path.join(folder, fn))
        tok, cfg, res, dtype, extra_samples, ctx = make(folder)
        check_tokenizer(tok)
        expected = {
            'fixture': name,
            'architecture': cfg['architectures'][0],
            'weights_dtype': dtype,
            'compute_dtype': 'float32',
            'vocab_size': cfg['vocab_size'],
            'tokenizer_vocab_size': tok.size,
            'special_tokens': tok.specials,
            'input_ids': res['input_ids'],
            'logits': res['logits'],
            'kv': res['kv'],
            'padded': res['padded'],
            'greedy': res['greedy'],
            'tokenizer_samples': tokenizer_samples(tok, extra_samples),
        }
        write_expected(os.path.join(folder, 'expected.json'), expected)
        grads = make_grads(name, folder, os.path.join(OUT, 'lora', name), ctx, res, 4001 + seed)
        write_expected(os.path.join(folder, 'grads.json'), grads)
    write_rope_tables(os.path.join(OUT, 'rope-tables.json'))
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(OUT) for f in fs)
    print('wrote %s (%d bytes)' % (os.path.relpath(OUT, ROOT), total))


if __name__ == '__main__':
    sys.exit(main())
