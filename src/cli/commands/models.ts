/**
 * Commands on imported Hugging Face models: `coderl generate` (sample a completion), `coderl
 * logits` (the raw logits of given ids, for checking our numbers against another framework) and
 * `coderl export-hf` (a lab checkpoint or an imported model written as a Hugging Face folder).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hfFolderFiles, labArch, labWeights } from '../../hf/export';
import { loraAdapterFiles } from '../../hf/peft';
import { loadModel } from '../../model/model-file';
import { hfCheckpointWeights, isHfPolicyCheckpoint } from '../../policy/hf-train';
import { hfReferenceName } from '../../rl/reference-hf';
import { promptFormatFor } from '../../rl/prompt-format';
import { Tokenizer } from '../../tokenizer';
import { labTokenizerToHf } from '../../tokenizer/export-hf';
import { intOption, readInput, UsageError, type Command } from '../command';
import { asUsage, formatOption, loadModelOption, openHfPolicy } from '../hf-model';
import { backendOption } from './train';

const common = {
  model: { type: 'string', description: 'a Hugging Face model folder (config.json, model.safetensors, tokenizer.json)', value: 'DIR' },
  backend: { type: 'string', description: 'cpu or webgpu (default cpu)', value: 'B' },
  context: { type: 'string', description: "the longest sequence served (default: the model's positions, at most 4096)", value: 'N' },
  adapter: {
    type: 'string',
    description: "a LoRA adapter in PEFT's format (coderl export-hf writes one), merged into the model",
    value: 'ADIR',
  },
} as const;

function numberOption(cmd: string, v: string | boolean | undefined, name: string, fallback: number, min: number, max: number): number {
  if (v === undefined) return fallback;
  const x = Number(v);
  if (typeof v !== 'string' || !(x >= min && x <= max))
    throw new UsageError(`coderl ${cmd}: --${name} must be a number in [${min}, ${max}], got '${String(v)}'`);
  return x;
}

export const generateCommand: Command = {
  name: 'generate',
  summary: 'sample a completion from an imported Hugging Face model',
  usage:
    'coderl generate --model DIR --prompt TEXT [--max-new N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--format auto|chat|completion] [--backend cpu|webgpu] [--json]',
  description: [
    "Encodes TEXT with the model's tokenizer and samples up to N new tokens (default 64) on the lab's",
    "engine, stopping at the model's end-of-sequence ids (generation_config.json). --format chat sends",
    "TEXT as a user message through the tokenizer's chat template; completion continues TEXT as it is;",
    'auto (the default) is chat when the tokenizer has a chat template. Temperature 0 is greedy.',
    '--json prints {tokens, text, finish, prompt_tokens, format}.',
  ].join('\n'),
  options: {
    ...common,
    prompt: { type: 'string', description: 'the prompt text', value: 'TEXT' },
    'max-new': { type: 'string', description: 'new tokens at most (default 64)', value: 'N' },
    temperature: { type: 'string', description: 'sampling temperature (default 0.7; 0 = greedy)', value: 'T' },
    'top-k': { type: 'string', description: 'keep the K most likely tokens (default 0 = off)', value: 'K' },
    'top-p': { type: 'string', description: 'nucleus sampling mass (default 1 = off)', value: 'P' },
    seed: { type: 'string', description: 'sampling seed (default 1)', value: 'S' },
    format: { type: 'string', description: 'auto, chat or completion (default auto)', value: 'F' },
    json: { type: 'boolean', description: 'print one JSON object' },
  },
  examples: [
    'npx coderl generate --model ~/models/SmolLM2-135M-Instruct --prompt "Write a JavaScript function that reverses a string."',
    'npx coderl generate --model data/hf-fixtures/gpt2 --prompt "function add(a, b) {" --temperature 0 --json',
  ],
  async run(options, _positionals, io) {
    if (typeof options.prompt !== 'string') throw new UsageError('coderl generate: --prompt TEXT is required');
    const backend = backendOption('generate', options.backend);
    const maxNew = intOption('generate', options, 'max-new', 1) ?? 64;
    const temperature = numberOption('generate', options.temperature, 'temperature', 0.7, 0, 10);
    const topK = intOption('generate', options, 'top-k', 0) ?? 0;
    const topP = numberOption('generate', options['top-p'], 'top-p', 1, 0, 1);
    const seed = intOption('generate', options, 'seed', 0) ?? 1;
    const setting = formatOption('generate', options.format);
    const open = await openHfPolicy('generate', options, backend, io, options.json === true);
    try {
      const { policy, model } = open;
      const promptText = options.prompt;
      const format = await asUsage('generate', () => promptFormatFor(setting, model.tokenizer, `${model.folder}/tokenizer_config.json`));
      const prompt = await asUsage('generate', () => format.messageIds(promptText));
      const room = policy.config.contextLength - prompt.length;
      if (room < 1)
        throw new UsageError(`coderl generate: the prompt is ${prompt.length} tokens; the context is ${policy.config.contextLength}`);
      const r = await policy.generate([prompt], {
        maxNewTokens: Math.min(maxNew, room),
        temperature,
        topK,
        topP,
        seed,
        eosId: model.tokenizer.eosId,
      });
      const tokens = r.tokens[0]!;
      const body = model.eosIds.includes(tokens.at(-1)!) ? tokens.slice(0, -1) : tokens;
      const text = model.tokenizer.decode(body);
      if (options.json === true) {
        io.out(JSON.stringify({ tokens, text, finish: r.finish[0], prompt_tokens: prompt.length, format: format.kind }));
      } else {
        io.out(text);
        io.err(
          `coderl generate: ${tokens.length} tokens (${r.finish[0]}), ${format.kind} format, ${r.stats.tokensPerSecond.toFixed(1)} tokens/s on ${backend}`,
        );
      }
      return 0;
    } finally {
      open.close();
    }
  },
};

export const logitsCommand: Command = {
  name: 'logits',
  summary: 'the logits an imported Hugging Face model gives for token ids',
  usage: 'coderl logits --model DIR --ids 1,2,3 [--backend cpu|webgpu] [--json]',
  description: [
    'Runs one forward over the ids (one sequence, positions 0..n-1) and prints the logits at every',
    "position, so anyone can check the lab's numbers against their own framework",
    '(transformers: model(torch.tensor([ids])).logits). --json prints {logits: [[...V floats] per position]};',
    'without it, the 5 most likely next tokens at each position.',
  ].join('\n'),
  options: {
    ...common,
    ids: { type: 'string', description: 'comma-separated token ids', value: 'IDS' },
    json: { type: 'boolean', description: 'print one JSON object' },
  },
  examples: [
    'npx coderl logits --model data/hf-fixtures/qwen2 --ids 1,2,3 --json',
    'npx coderl logits --model ~/models/gpt2 --ids 464,2068 --backend webgpu',
  ],
  async run(options, _positionals, io) {
    const text = typeof options.ids === 'string' ? options.ids : '';
    const ids = text.split(',').map((x) => Number(x.trim()));
    if (!text || ids.some((x) => !Number.isInteger(x) || x < 0))
      throw new UsageError(`coderl logits: --ids must be comma-separated token ids, got '${text}'`);
    const backend = backendOption('logits', options.backend);
    const open = await openHfPolicy('logits', options, backend, io, options.json === true);
    try {
      const V = open.policy.config.vocabSize;
      const bad = ids.findIndex((x) => x >= V);
      if (bad >= 0) throw new UsageError(`coderl logits: id ${ids[bad]} (position ${bad}) is outside the vocabulary 0..${V - 1}`);
      const { logits } = await open.policy.forward({ tokens: ids, B: 1, T: ids.length });
      const rows = ids.map((_, t) => Array.from(logits.subarray(t * V, (t + 1) * V)));
      if (options.json === true) io.out(JSON.stringify({ logits: rows }));
      else {
        const tok = open.model.tokenizer;
        rows.forEach((row, t) => {
          const top = row
            .map((v, i) => [v, i] as const)
            .sort((a, b) => b[0] - a[0])
            .slice(0, 5)
            .map(([v, i]) => `${i < tok.vocabSize ? JSON.stringify(tok.decode([i])) : `<${i}>`}:${v.toFixed(3)}`);
          io.out(`${t} ${ids[t]}: ${top.join('  ')}`);
        });
      }
      return 0;
    } finally {
      open.close();
    }
  },
};

export const exportHfCommand: Command = {
  name: 'export-hf',
  summary: 'write a lab checkpoint (as GPT2LMHeadModel) or an imported model as a Hugging Face folder',
  usage: 'coderl export-hf (--checkpoint C | --model DIR [--checkpoint POLICY.ckpt [--merge]]) --out OUT',
  description: [
    "--checkpoint C: the lab's GPT is GPT-2's architecture (pre-LayerNorm, tanh GELU, learned positions,",
    'tied head): it is written as a GPT2LMHeadModel folder (config.json, model.safetensors in F32 with',
    "transformers' tensor names, its tokenizer as tokenizer.json, tokenizer_config.json,",
    'generation_config.json) that transformers and `coderl generate --model OUT` load. The value head is',
    'not part of GPT2LMHeadModel and is left out. --model DIR: an imported model written again (F32).',
    '--model DIR --checkpoint POLICY.ckpt: a checkpoint of a run that trained DIR (coderl train --model DIR;',
    "sft.ckpt, policy.ckpt): trained with LoRA it is written as PEFT's adapter folder (adapter_config.json,",
    'adapter_model.safetensors with keys base_model.model.<module path>.lora_A.weight), which',
    'PeftModel.from_pretrained(base, OUT) loads and `coderl eval --model DIR --adapter OUT` evaluates; with',
    '--merge (or after full fine-tuning) as a model folder with the adapters merged into the weights.',
  ].join('\n'),
  options: {
    checkpoint: { type: 'string', description: 'a lab checkpoint with its tokenizer', value: 'C' },
    model: common.model,
    out: { type: 'string', description: 'the folder to write (created; files in it are replaced)', value: 'OUT' },
    merge: { type: 'boolean', description: 'with --model and a LoRA checkpoint: write the merged model, not the adapter' },
  },
  examples: [
    'npx coderl export-hf --checkpoint runs/tiny-1/sft.ckpt --out runs/tiny-1/hf',
    'npx coderl generate --model runs/tiny-1/hf --prompt "function add(a, b) {"',
    'npx coderl export-hf --model runs/tiny-1/hf --checkpoint runs/lora-1/policy.ckpt --out runs/lora-1/adapter',
    'npx coderl export-hf --model runs/tiny-1/hf --checkpoint runs/lora-1/policy.ckpt --merge --out runs/lora-1/merged',
  ],
  async run(options, _positionals, io) {
    if (typeof options.out !== 'string') throw new UsageError('coderl export-hf: --out OUT is required');
    if (typeof options.checkpoint !== 'string' && typeof options.model !== 'string')
      throw new UsageError('coderl export-hf: give --checkpoint C, --model DIR, or both (a checkpoint of a run that trained DIR)');
    if (options.merge === true && (typeof options.checkpoint !== 'string' || typeof options.model !== 'string'))
      throw new UsageError('coderl export-hf: --merge is for --model DIR --checkpoint POLICY.ckpt');
    let files: Map<string, Uint8Array>;
    if (typeof options.checkpoint === 'string' && typeof options.model === 'string') {
      const m = await loadModelOption('export-hf', options.model);
      const bytes = await readInput('export-hf', options.checkpoint);
      if (!isHfPolicyCheckpoint(bytes))
        throw new UsageError(
          `coderl export-hf: ${options.checkpoint} is not a checkpoint of a run on an imported model (coderl train --model); a lab checkpoint goes alone: --checkpoint C`,
        );
      const c = await asUsage('export-hf', () => hfCheckpointWeights(m, bytes, options.checkpoint as string));
      files =
        c.adapter && options.merge !== true
          ? loraAdapterFiles(c.adapter, hfReferenceName(m.folder).replace(/\/$/, ''), m.arch)
          : hfFolderFiles({
              arch: c.arch,
              weights: c.weights,
              tokenizerJson: m.tokenizer.tokenizerJson,
              tokenizerConfig: m.tokenizer.tokenizerConfig,
              bosId: m.tokenizer.bosId,
              eosIds: [...m.eosIds],
            });
    } else if (typeof options.checkpoint === 'string') {
      const snap = loadModel(await readInput('export-hf', options.checkpoint));
      if (!snap.tokenizer) throw new UsageError(`coderl export-hf: ${options.checkpoint} carries no tokenizer`);
      const tok = Tokenizer.fromJSON(snap.tokenizer);
      const hf = labTokenizerToHf(tok);
      files = hfFolderFiles({
        arch: labArch(snap.config),
        weights: labWeights(snap.config, snap.params),
        tokenizerJson: hf.tokenizerJson,
        tokenizerConfig: hf.tokenizerConfig,
        bosId: tok.eosId,
        eosIds: [tok.eosId],
      });
    } else {
      const m = await loadModelOption('export-hf', options.model);
      files = hfFolderFiles({
        arch: m.arch,
        weights: m.weights,
        tokenizerJson: m.tokenizer.tokenizerJson,
        tokenizerConfig: m.tokenizer.tokenizerConfig,
        bosId: m.tokenizer.bosId,
        eosIds: [...m.eosIds],
      });
    }
    await mkdir(options.out, { recursive: true });
    let bytes = 0;
    for (const [name, data] of files) {
      await writeFile(join(options.out, name), data);
      bytes += data.length;
    }
    io.out(`wrote ${options.out}: ${[...files.keys()].join(', ')} (${(bytes / 1e6).toFixed(2)} MB)`);
    return 0;
  },
};
