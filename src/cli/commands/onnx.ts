import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { createAnalyzer } from '../../analysis';
import { nodeWasmLoader } from '../../analysis/wasm-node';
import { nodeProvider } from '../../gpu/node';
import { GpuRuntime } from '../../gpu/runtime';
import { loadModel, type ModelSnapshot } from '../../model/model-file';
import { MODEL_PRESETS } from '../../model/config';
import { initParams } from '../../model/init';
import { paramTable } from '../../model/params';
import { DEFAULT_REWARD } from '../../reward/reward';
import { evaluate } from '../../rl/evaluate';
import { createNodePool, phasedPoolSize } from '../../sandbox/pool.node';
import { loadSuite } from '../../tasks/suite';
import { formatIssue } from '../../tasks/types';
import { describeArch } from '../../model/arch';
import { describeHfModel, loadHfFolder } from '../../hf/load';
import { HF_FILES } from '../../hf/folder';
import { nodeFolder } from '../../hf/node';
import { exportDecoderOnnx } from '../../onnx/decoder-export';
import { exportOnnx, tokenizerSidecarPath } from '../../onnx/export';
import { importOnnxModel, OnnxImportError } from '../../onnx/import';
import { loadNodeOrt } from '../../onnx/node';
import { onnxParity, type ParityReport } from '../../onnx/parity';
import { intOption, readInput, UsageError, type Command, type Io, type Options } from '../command';
import { readSuiteArg, resolveSuiteArg } from '../suite-arg';
import { errorText } from '../../util/errors';

const SUBCOMMANDS = ['export', 'parity', 'eval'] as const;
type Sub = (typeof SUBCOMMANDS)[number];

/** Parity threshold of the issue: ORT within 1e-4 relative of our engine. */
export const PARITY_TOLERANCE = 1e-4;

/** Which options each subcommand takes (any other is a usage error). */
const ALLOWED: Record<Sub, string[]> = {
  export: ['checkpoint', 'model', 'out', 'kv-cache'],
  parity: ['checkpoint', 'json', 'seed', 'cpu-only'],
  eval: ['model', 'tokenizer', 'context', 'suite', 'k', 'samples', 'temperature', 'max-new-tokens', 'seed', 'workers', 'out'],
};

export const onnxCommand: Command = {
  name: 'onnx',
  summary: 'ONNX interop: export a checkpoint or a Hugging Face model, check parity with onnxruntime, evaluate an imported model',
  usage: 'coderl onnx export|parity|eval [options]',
  description: [
    'Subcommands:',
    '  export  --checkpoint C --out M.onnx [--kv-cache]',
    '          the policy and value head as an ONNX graph (opset 17, standard ops, weights as',
    '          initializers): inputs input_ids, attention_mask, position_ids (int64 [batch, sequence]);',
    '          outputs logits [batch, sequence, vocab] and values [batch, sequence]. --kv-cache adds',
    '          past_key_values.{i}.key/value inputs and present.{i}.key/value outputs laid out',
    '          [batch, heads, past_sequence, head_size]. The tokenizer goes next to it as M.tokenizer.json.',
    '  export  --model DIR --out M.onnx [--kv-cache]',
    '          a Hugging Face model folder (GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM) as the same',
    '          kind of graph, logits only (no value head); the KV cache is per key/value head:',
    '          [batch, kv_heads, past_sequence, head_size]. Float32 weights (F16 and BF16 widened), at most',
    '          2 GiB (one protobuf file). Its tokenizer.json (and tokenizer_config.json) are copied as they',
    "          are next to M.onnx: the lab's M.tokenizer.json format cannot hold a Hugging Face tokenizer.",
    '  parity  [--checkpoint C] [--json] [--seed S] [--cpu-only]',
    '          exports the model (without --checkpoint: a fresh tiny random model, seeded), runs both',
    '          graphs in onnxruntime-web (wasm) on random tokens and prints the max relative difference',
    '          |a-b| / max(|b|, rms(b)) of logits and values against the float64 CPU model, and the',
    `          WebGPU model when an adapter exists (not with --cpu-only). Exit 1 above ${PARITY_TOLERANCE}.`,
    '          --json prints {max_rel_diff, ...}.',
    '  eval    --model M.onnx --suite S [--tokenizer T] [--context N] [eval options]',
    '          pass@k of an imported ONNX causal LM (input_ids -> logits; optional attention_mask,',
    '          position_ids, KV cache, values) on a suite, sampled like `coderl eval`. The tokenizer',
    '          defaults to M.tokenizer.json; --context is needed unless the model is our export. S is a',
    "          suite file or a built-in suite's name (coderl suites).",
  ].join('\n'),
  options: {
    checkpoint: { type: 'string', description: 'export, parity: model checkpoint', value: 'C' },
    out: { type: 'string', description: 'export: the .onnx file to write; eval: scored samples as JSONL', value: 'FILE' },
    'kv-cache': { type: 'boolean', description: 'export: the KV-cache variant of the graph' },
    json: { type: 'boolean', description: 'parity: print one JSON object' },
    'cpu-only': { type: 'boolean', description: 'parity: skip the WebGPU comparison' },
    model: { type: 'string', description: 'export: a Hugging Face model folder; eval: the ONNX model', value: 'M' },
    tokenizer: { type: 'string', description: 'eval: its tokenizer JSON (default: M.tokenizer.json)', value: 'T' },
    context: { type: 'string', description: "eval: the model's context length (default: from our export metadata)", value: 'N' },
    suite: { type: 'string', description: "eval: suite JSONL (plain or .gz), or a built-in suite's name", value: 'S' },
    k: { type: 'string', description: 'eval: comma-separated k values (default 1,5,10)', value: 'K' },
    samples: { type: 'string', description: 'eval: samples per task (default: the largest k)', value: 'N' },
    temperature: { type: 'string', description: 'eval: sampling temperature (default 1)', value: 'T' },
    'max-new-tokens': { type: 'string', description: 'eval: completion length limit (default 48, capped by the context)', value: 'N' },
    seed: { type: 'string', description: 'parity: model and input seed; eval: sampling seed (default 1)', value: 'S' },
    workers: { type: 'string', description: `eval: sandbox workers (default ${phasedPoolSize()})`, value: 'N' },
  },
  examples: [
    'npx coderl onnx export --checkpoint runs/tiny-1/policy.ckpt --out policy.onnx',
    'npx coderl onnx export --model models/SmolLM2-135M --out smollm2/model.onnx --kv-cache',
    'npx coderl onnx parity --json',
    'npx coderl onnx eval --model policy.onnx --suite runs/tiny-1/tasks/heldout.jsonl --k 1',
  ],
  async run(options, positionals, io) {
    const sub = positionals[0] as Sub | undefined;
    if (!sub || !SUBCOMMANDS.includes(sub))
      throw new UsageError(
        `coderl onnx: ${sub ? `unknown subcommand '${sub}'` : 'name a subcommand'}; subcommands: ${SUBCOMMANDS.join(', ')}`,
      );
    if (positionals.length > 1) throw new UsageError(`coderl onnx ${sub}: unexpected argument '${positionals[1]}'`);
    for (const k of Object.keys(options)) {
      if (options[k] !== undefined && !ALLOWED[sub].includes(k))
        throw new UsageError(`coderl onnx ${sub}: --${k} does not apply (it takes ${ALLOWED[sub].map((x) => `--${x}`).join(', ')})`);
    }
    if (sub === 'export') return runExport(options, io);
    if (sub === 'parity') return runParity(options, io);
    return runEval(options, io);
  },
};

async function runExport(options: Options, io: Io): Promise<number> {
  if (typeof options.checkpoint === 'string' && typeof options.model === 'string')
    throw new UsageError('coderl onnx export: --checkpoint C or --model DIR, not both');
  if (typeof options.out !== 'string') throw new UsageError('coderl onnx export: --out M.onnx is required');
  if (typeof options.model === 'string') return runExportHf(options.model, options.out, options['kv-cache'] === true, io);
  if (typeof options.checkpoint !== 'string')
    throw new UsageError('coderl onnx export: --checkpoint C (a lab checkpoint) or --model DIR (a Hugging Face folder) is required');
  const snap = loadModel(await readInput('onnx export', options.checkpoint));
  const out = options.out;
  const tokPath = tokenizerSidecarPath(out);
  const kvCache = options['kv-cache'] === true;
  const bytes = exportOnnx(snap, { kvCache, tokenizerFile: snap.tokenizer ? basename(tokPath) : undefined });
  await writeFile(out, bytes);
  const c = snap.config;
  io.out(
    `wrote ${out}: ${(bytes.length / 1024).toFixed(1)} KiB, ${kvCache ? 'with' : 'without'} KV cache (L=${c.nLayer} C=${c.dModel} NH=${c.nHead} V=${c.vocabSize} T<=${c.contextLength})`,
  );
  if (snap.tokenizer) {
    await writeFile(tokPath, JSON.stringify(snap.tokenizer));
    io.out(`wrote ${tokPath}`);
  } else {
    io.err(`coderl onnx export: ${options.checkpoint} carries no tokenizer; no ${tokPath} written`);
  }
  return 0;
}

/**
 * A Hugging Face folder as ONNX (onnx/decoder-export.ts). The tokenizer files are copied as they
 * are: the lab's sidecar (M.tokenizer.json, Tokenizer.toJSON) is its own byte-level BPE with a
 * fixed pre-tokenizer and cannot express GPT-2's, Llama's or Qwen2's tokenizer.json. A different
 * file of the same name already at the destination is not overwritten.
 */
async function runExportHf(dir: string, out: string, kvCache: boolean, io: Io): Promise<number> {
  const model = await loadHfFolder(await nodeFolder(dir));
  io.err(`coderl onnx export: ${dir}: ${describeHfModel(model)}`);
  const copies: { from: string; to: string; bytes: Uint8Array }[] = [];
  for (const name of [HF_FILES.tokenizer, HF_FILES.tokenizerConfig]) {
    const from = join(dir, name);
    const to = join(dirname(out), name);
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(from));
    } catch {
      continue; // tokenizer_config.json is optional (loadHfFolder required tokenizer.json)
    }
    if (resolve(from) === resolve(to)) continue;
    let there: Uint8Array | null = null;
    try {
      there = new Uint8Array(await readFile(to));
    } catch {
      // nothing there yet
    }
    if (there && Buffer.compare(Buffer.from(there), Buffer.from(bytes)) !== 0)
      throw new UsageError(`coderl onnx export: ${to} exists and differs from ${from}; export into another folder`);
    copies.push({ from, to, bytes });
  }
  const bytes = exportDecoderOnnx(model.arch, model.weights, { kvCache, tokenizerFile: HF_FILES.tokenizer });
  await writeFile(out, bytes);
  io.out(
    `wrote ${out}: ${(bytes.length / 2 ** 20).toFixed(1)} MiB, ${kvCache ? 'with' : 'without'} KV cache (${describeArch(model.arch)}; logits only)`,
  );
  for (const c of copies) {
    await writeFile(c.to, c.bytes);
    io.out(`copied ${c.from} -> ${c.to} (as it is: the lab's M.tokenizer.json format cannot hold a Hugging Face tokenizer)`);
  }
  return 0;
}

async function runParity(options: Options, io: Io): Promise<number> {
  const seed = intOption('onnx parity', options, 'seed', 0) ?? 1;
  let snap: Pick<ModelSnapshot, 'config' | 'params'>;
  let what: string;
  if (typeof options.checkpoint === 'string') {
    snap = loadModel(await readInput('onnx parity', options.checkpoint));
    what = options.checkpoint;
  } else {
    const config = MODEL_PRESETS.tiny;
    snap = { config, params: initParams(paramTable(config), seed) };
    what = `a fresh tiny random model (seed ${seed})`;
  }
  let rt: GpuRuntime | null = null;
  if (options['cpu-only'] !== true) {
    try {
      rt = await GpuRuntime.create(await nodeProvider());
    } catch (e) {
      io.err(`coderl onnx parity: no WebGPU adapter, comparing with the CPU model only (${errorText(e).split('\n')[0]})`);
    }
  }
  let r: ParityReport;
  try {
    r = await onnxParity(await loadNodeOrt(), snap, { seed, gpu: rt });
  } finally {
    rt?.dispose();
  }
  const ok = r.max_rel_diff < PARITY_TOLERANCE;
  if (options.json) {
    io.out(
      JSON.stringify({
        max_rel_diff: r.max_rel_diff,
        max_rel_diff_logits: r.max_rel_diff_logits,
        max_rel_diff_values: r.max_rel_diff_values,
        tolerance: PARITY_TOLERANCE,
        ok,
        B: r.B,
        T: r.T,
        checks: r.checks,
      }),
    );
  } else {
    io.out(
      `parity of the ONNX export of ${what} in onnxruntime-web (wasm), B=${r.B} T=${r.T}; relative difference |a-b| / max(|b|, rms(b)):`,
    );
    for (const c of r.checks)
      io.out(`  ${c.graph.padEnd(10)} vs ${c.engine.padEnd(6)}  logits ${c.logits.toExponential(2)}  values ${c.values.toExponential(2)}`);
    io.out(`max_rel_diff: ${r.max_rel_diff.toExponential(2)} (${ok ? 'ok' : 'FAIL'}, tolerance ${PARITY_TOLERANCE})`);
  }
  return ok ? 0 : 1;
}

async function runEval(options: Options, io: Io): Promise<number> {
  const cmd = 'onnx eval';
  if (typeof options.model !== 'string') throw new UsageError(`coderl ${cmd}: --model M.onnx is required`);
  if (typeof options.suite !== 'string') throw new UsageError(`coderl ${cmd}: --suite S is required`);
  const kText = typeof options.k === 'string' ? options.k : '1,5,10';
  const ks = kText.split(',').map((x) => Number(x.trim()));
  if (ks.some((k) => !Number.isInteger(k) || k < 1))
    throw new UsageError(`coderl ${cmd}: --k must be comma-separated positive integers, got '${kText}'`);
  const samples = intOption(cmd, options, 'samples', 1) ?? Math.max(...ks);
  if (Math.max(...ks) > samples)
    throw new UsageError(`coderl ${cmd}: k = ${Math.max(...ks)} needs at least that many --samples (got ${samples})`);
  const temperature = options.temperature === undefined ? 1 : Number(options.temperature);
  if (!(temperature >= 0 && temperature <= 10))
    throw new UsageError(`coderl ${cmd}: --temperature must be a number in [0, 10], got '${String(options.temperature)}'`);
  if (temperature === 0 && samples > 1)
    throw new UsageError(`coderl ${cmd}: --temperature 0 (greedy) gives the same sample every time; use --samples 1`);
  const seed = intOption(cmd, options, 'seed', 0) ?? 1;
  const workers = intOption(cmd, options, 'workers', 1) ?? phasedPoolSize();
  const contextLength = intOption(cmd, options, 'context', 2);
  const tokPath = typeof options.tokenizer === 'string' ? options.tokenizer : tokenizerSidecarPath(options.model);
  const suiteArg = resolveSuiteArg(options.suite);

  const modelBytes = await readInput(cmd, options.model, 'model');
  const tokText = new TextDecoder().decode(await readInput(cmd, tokPath, 'tokenizer'));
  let imported;
  try {
    imported = await importOnnxModel(await loadNodeOrt(), modelBytes, tokText, {
      file: options.model,
      tokenizerFile: tokPath,
      contextLength,
    });
  } catch (e) {
    if (e instanceof OnnxImportError) {
      io.err(`coderl ${cmd}: ${e.message}`);
      return 1;
    }
    throw e;
  }
  const { policy, tokenizer: tok } = imported;
  try {
    const suite = await loadSuite(await readSuiteArg(cmd, suiteArg), suiteArg.path);
    for (const i of suite.issues) io.err(`coderl ${cmd}: ${formatIssue(i)}`);
    if (!suite.items.length) throw new UsageError(`coderl ${cmd}: ${suiteArg.label} holds no valid task`);
    const longest = Math.max(...suite.items.map((t) => tok.encode(t.prompt).length));
    const room = policy.config.contextLength - longest;
    if (room < 1)
      throw new UsageError(
        `coderl ${cmd}: the longest prompt has ${longest} tokens, the model's context is ${policy.config.contextLength}`,
      );
    const maxNewTokens = Math.min(intOption(cmd, options, 'max-new-tokens', 1) ?? 48, room);
    const [pool, analyzer] = await Promise.all([createNodePool({ size: workers }), createAnalyzer(nodeWasmLoader)]);
    try {
      const t0 = performance.now();
      const r = await evaluate(
        policy,
        tok,
        suite.items,
        { samples, temperature, k: ks, maxNewTokens },
        { pool, analyzer },
        DEFAULT_REWARD,
        seed,
      );
      if (typeof options.out === 'string') {
        const lines = r.records.map((x, i) =>
          JSON.stringify({ ...x, completion: r.rollouts[i]!.completion, finish: r.rollouts[i]!.finish }),
        );
        await writeFile(options.out, lines.join('\n') + '\n');
      }
      io.out(
        `model: ${options.model} (onnxruntime-web wasm${imported.info.kv ? ', KV cache' : ''}); suite: ${suiteArg.label} (${r.tasks} tasks), ${samples} samples per task at temperature ${temperature}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      for (const [fam, v] of Object.entries(r.byFamily)) io.out(`  ${fam}: pass@1 ${v.toFixed(4)}`);
      for (const [k, v] of Object.entries(r.passAtK)) io.out(`${k}: ${v.toFixed(4)}`);
      return 0;
    } finally {
      pool.close();
    }
  } finally {
    policy.dispose();
  }
}
