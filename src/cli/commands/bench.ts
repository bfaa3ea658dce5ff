import { benchEngine, ENGINE_BENCH_DEFAULTS, ENGINE_BENCH_QUICK, formatEngineBench, type EngineBenchOptions } from '../../../bench/engine';
import { benchRuntime } from '../../../bench/runtime';
import { benchScore, formatScoreBench } from '../../../bench/score';
import { loadTfjs } from '../../../bench/tfjs';
import { installTfjsNodeResolver, providerGpu } from '../../../bench/tfjs-node';
import { nodeProvider } from '../../gpu/node';
import type { GpuProvider } from '../../gpu/provider';
import { GpuRuntime } from '../../gpu/runtime';
import { MODEL_PRESETS } from '../../model/config';
import { UsageError, type Command, type Io, type Options } from '../command';

const SUITES = ['runtime', 'engine', 'score'] as const;

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark and print its figures (runtime, engine, score)',
  usage: 'coderl bench <suite> [--json] [--quick] [--sizes N,N] [--reps N] [--steps N] [--preset P] [--swiftshader]',
  description: [
    'Suites:',
    '  runtime   K small dispatches recorded into one submit vs one submit each (dispatches/s and',
    '            the ratio), and the round trip of a 4-byte readback. Results are validated first.',
    '  engine    our kernels against TensorFlow.js (WebGPU backend) on the same adapter: matmul',
    '            GFLOP/s at n = 256, 512, 1024, 2048 (our tiled and naive variants, each validated',
    '            against float64 first), training tokens/s of the tiny GPT (GpuTrainer vs the same',
    '            model in TF.js), dispatches/submits/readbacks of one training step, and',
    '            generation tokens/s. Medians of warm runs, each run to completion on the GPU.',
    '            --quick: n = 256 and 512, fewer repetitions, smaller batches (under 2 minutes',
    '            on SwiftShader). Progress goes to stderr; --json prints one JSON object.',
    '  score     sandbox programs/s with 1 worker, cores - 1 and cores (HumanEval-X JS, HumanEval Python),',
    '            validated against the known canonical results; static analysis + reward, cold and cached.',
  ].join('\n'),
  options: {
    json: { type: 'boolean', description: 'print one JSON object instead of a table' },
    quick: { type: 'boolean', description: 'fewer repeats (engine: also fewer sizes, smaller batches)' },
    sizes: { type: 'string', value: 'N,N', description: 'engine: matmul sizes n, comma-separated (default 256,512,1024,2048)' },
    reps: { type: 'string', value: 'N', description: 'engine: timed repetitions per matmul (median reported)' },
    steps: { type: 'string', value: 'N', description: 'engine: timed training steps' },
    preset: { type: 'string', value: 'P', description: `engine: model of the training-step figure (${Object.keys(MODEL_PRESETS).join(', ')}; default tiny)` },
    swiftshader: { type: 'boolean', description: 'use SwiftShader even if a hardware adapter exists' },
  },
  examples: [
    'npx coderl bench runtime',
    'npx coderl bench runtime --json',
    'npx coderl bench engine --quick',
    'npx coderl bench engine --sizes 256,512 --json',
    'npx coderl bench engine --preset small --steps 10',
  ],
  async run(options, positionals, io) {
    const suite = positionals[0];
    if (!suite || !(SUITES as readonly string[]).includes(suite)) {
      throw new UsageError(`coderl bench: ${suite ? `unknown suite '${suite}'` : 'name a suite'}; suites: ${SUITES.join(', ')}`);
    }
    if (suite !== 'engine') {
      for (const k of ['sizes', 'reps', 'steps', 'preset'] as const) {
        if (options[k] !== undefined) throw new UsageError(`coderl bench: --${k} applies to the engine suite only`);
      }
    }
    if (suite === 'score') {
      const r = await benchScore({ quick: options.quick === true });
      io.out(options.json ? JSON.stringify(r) : formatScoreBench(r));
      return 0;
    }
    const engineOpts = suite === 'engine' ? engineOptions(options) : null;
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    const rt = await GpuRuntime.create(provider);
    try {
      if (engineOpts) return await runEngine(rt, provider, engineOpts, options.json === true, io);
      const r = await benchRuntime(rt, options.quick ? { dispatches: 100, repeats: 1 } : {});
      if (options.json) {
        io.out(JSON.stringify(r));
      } else {
        io.out(
          [
            `adapter: ${r.adapter}`,
            `${r.dispatches} dispatches, one submit:        ${r.one_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `${r.dispatches} dispatches, one submit each:   ${r.per_dispatch_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `ratio (one submit / one each):      ${r.ratio}x`,
            `4-byte readback round trip (median): ${r.readback_ms} ms`,
          ].join('\n'),
        );
      }
      return 0;
    } finally {
      rt.dispose();
    }
  },
};

async function runEngine(rt: GpuRuntime, provider: GpuProvider, opts: EngineBenchOptions, json: boolean, io: Io): Promise<number> {
  const t0 = performance.now();
  const say = (m: string): void => io.err(`coderl bench engine: ${m} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  for (const note of provider.notes) io.err(`coderl bench engine: note: ${note}`);
  say('loading TF.js (webgpu backend)');
  installTfjsNodeResolver();
  const tf = await loadTfjs(providerGpu(provider));
  const r = await benchEngine(rt, tf, opts, say);
  say('done');
  io.out(json ? JSON.stringify(r) : formatEngineBench(r));
  return 0;
}

/** --quick picks the small preset; --sizes, --reps and --steps override it. */
function engineOptions(options: Options): EngineBenchOptions {
  const base = options.quick ? ENGINE_BENCH_QUICK : ENGINE_BENCH_DEFAULTS;
  const o: EngineBenchOptions = { ...base, train: { ...base.train }, generate: { ...base.generate } };
  if (typeof options.sizes === 'string') o.sizes = options.sizes.split(',').map((s) => positiveInt(s.trim(), '--sizes', 8192));
  if (typeof options.reps === 'string') o.reps = positiveInt(options.reps, '--reps', 1000);
  if (typeof options.steps === 'string') o.train.steps = positiveInt(options.steps, '--steps', 1000);
  if (typeof options.preset === 'string') {
    if (!Object.hasOwn(MODEL_PRESETS, options.preset)) throw new UsageError(`coderl bench: --preset must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got '${options.preset}'`);
    o.train.preset = options.preset as keyof typeof MODEL_PRESETS;
  }
  return o;
}

function positiveInt(s: string, flag: string, max: number): number {
  const n = Number(s);
  if (!/^\d+$/.test(s) || !Number.isInteger(n) || n < 1 || n > max) {
    throw new UsageError(`coderl bench: ${flag} takes positive integers up to ${max}, got '${s}'`);
  }
  return n;
}
