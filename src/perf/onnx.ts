/**
 * The ONNX race (`coderl bench onnx`, and the app's Benchmarks panel): the same exported model
 * in our WGSL engine and in onnxruntime-web (its webgpu provider in a browser, wasm anywhere),
 * in one run, on the same inputs:
 *   1. a forward pass (B, T) -> logits (B, T, V) and values, read back to the CPU on both sides;
 *   2. greedy generation: B prompts of P tokens, N new tokens each (no EOS, so exactly B * N),
 *      ours on the GPU with a KV cache, ORT through OnnxPolicy on the KV-cache export.
 * Before timing, each engine's forward is checked against ours (max relative difference) and
 * its greedy tokens compared with ours (the share that agree). Warm-up runs are excluded; the
 * figures are medians of `reps` runs. Ratios are ours / theirs in speed (goal: 1.5x or more).
 */
import type { GpuRuntime } from '../gpu/runtime';
import { MODEL_PRESETS, type ModelConfig } from '../model/config';
import type { ForwardInput } from '../model/cpu';
import { generate } from '../model/generate';
import { GpuModel } from '../model/gpu';
import { initParams } from '../model/init';
import { paramTable } from '../model/params';
import { exportOnnx } from '../onnx/export';
import { inspectOnnxModel } from '../onnx/import';
import { maxRelDiff } from '../onnx/parity';
import { OnnxPolicy } from '../onnx/policy';
import { createSession, floats, int64Tensor, runSession, type Ort, type OrtSession } from '../onnx/runtime';
import { Rng } from '../util/random';

export type RacePreset = keyof typeof MODEL_PRESETS;

export interface OnnxRaceOptions {
  preset: RacePreset;
  /** the forward pass's shape */
  forward: { B: number; T: number };
  /** greedy generation: B prompts of promptLen tokens, newTokens each */
  generate: { B: number; promptLen: number; newTokens: number };
  /** untimed runs first, then timed runs (median) */
  warmup: number;
  reps: number;
  seed: number;
}

export const ONNX_RACE_DEFAULTS: OnnxRaceOptions = {
  preset: 'tiny',
  forward: { B: 4, T: 64 },
  generate: { B: 4, promptLen: 16, newTokens: 32 },
  warmup: 1,
  reps: 5,
  seed: 1,
};
/** Small enough for SwiftShader in CI: seconds per engine on the tiny preset. */
export const ONNX_RACE_QUICK: OnnxRaceOptions = {
  preset: 'tiny',
  forward: { B: 2, T: 32 },
  generate: { B: 2, promptLen: 8, newTokens: 12 },
  warmup: 1,
  reps: 3,
  seed: 1,
};

/** One onnxruntime-web configuration to race: a handle whose sessions use one execution provider. */
export interface RaceEngine {
  /** column name, e.g. 'ORT webgpu' */
  name: string;
  ort: Ort;
}

export interface RaceRow {
  engine: string;
  /** median ms of one forward pass (B, T), inputs up and logits back */
  forward_ms: number;
  /** median generated tokens per second (B * N tokens over the whole generate call) */
  generate_tokens_per_s: number;
  /** ORT rows: max relative difference of its logits from ours; 0 for ours */
  max_rel_diff: number;
  /** ORT rows: share of greedy tokens equal to ours (near-ties may differ); 1 for ours */
  same_tokens: number;
}

export interface OnnxRaceResult {
  preset: RacePreset;
  config: ModelConfig;
  forward: { B: number; T: number };
  generate: { B: number; prompt_len: number; new_tokens: number };
  reps: number;
  /** ours first, then each engine */
  rows: RaceRow[];
  /** ours / theirs in speed, per engine: forward (their ms / our ms) and generation (our tokens/s / theirs) */
  ratios: { engine: string; forward: number; generate: number }[];
  goal: number;
}

export const RACE_GOAL = 1.5;

export function validateRaceOptions(o: OnnxRaceOptions): ModelConfig {
  const cfg = MODEL_PRESETS[o.preset];
  if (!cfg) throw new Error(`onnx race: unknown preset '${o.preset}' (presets: ${Object.keys(MODEL_PRESETS).join(', ')})`);
  const pos = (x: number, what: string) => {
    if (!Number.isInteger(x) || x < 1) throw new Error(`onnx race: ${what} must be a positive integer, got ${x}`);
  };
  pos(o.forward.B, 'forward B');
  pos(o.forward.T, 'forward T');
  pos(o.generate.B, 'generate B');
  pos(o.generate.promptLen, 'prompt length');
  pos(o.generate.newTokens, 'new tokens');
  pos(o.reps, 'reps');
  if (!Number.isInteger(o.warmup) || o.warmup < 0) throw new Error(`onnx race: warmup must be a non-negative integer, got ${o.warmup}`);
  if (o.forward.T > cfg.contextLength)
    throw new Error(`onnx race: forward T ${o.forward.T} exceeds the ${o.preset} context ${cfg.contextLength}`);
  if (o.generate.promptLen + o.generate.newTokens > cfg.contextLength)
    throw new Error(
      `onnx race: prompt ${o.generate.promptLen} + new tokens ${o.generate.newTokens} exceed the ${o.preset} context ${cfg.contextLength}`,
    );
  return cfg;
}

export async function benchOnnxRace(
  rt: GpuRuntime,
  engines: RaceEngine[],
  o: OnnxRaceOptions,
  say: (m: string) => void = () => {},
): Promise<OnnxRaceResult> {
  const cfg = validateRaceOptions(o);
  const V = cfg.vocabSize;
  const snap = { config: cfg, params: initParams(paramTable(cfg), o.seed) };
  const rng = new Rng(o.seed + 11);
  const { B, T } = o.forward;
  const input: ForwardInput = { B, T, tokens: Uint32Array.from({ length: B * T }, () => Math.floor(rng.next() * V)) };
  const g = o.generate;
  const prompts = Array.from({ length: g.B }, () => Uint32Array.from({ length: g.promptLen }, () => Math.floor(rng.next() * V)));
  const genOpts = { maxNewTokens: g.newTokens, temperature: 0, seed: o.seed };
  const produced = g.B * g.newTokens;

  say(`${o.preset}: our engine`);
  const model = new GpuModel(rt, cfg, snap.params);
  let ours: { logits: Float32Array; tokens: number[][]; row: RaceRow };
  try {
    const fwd = await model.forward(input);
    const forwardMs = await timed(o, () => model.forward(input));
    const first = await generate(model, prompts, genOpts);
    const genMs = await timed(o, () => generate(model, prompts, genOpts));
    ours = {
      logits: fwd.logits,
      tokens: first.tokens,
      row: {
        engine: 'ours (WGSL)',
        forward_ms: forwardMs,
        generate_tokens_per_s: produced / (genMs / 1000),
        max_rel_diff: 0,
        same_tokens: 1,
      },
    };
  } finally {
    model.dispose();
  }

  say(`${o.preset}: exporting to ONNX`);
  const plainBytes = exportOnnx(snap);
  const kvBytes = exportOnnx(snap, { kvCache: true });
  const rows: RaceRow[] = [ours.row];
  for (const e of engines) {
    say(`${o.preset}: ${e.name}`);
    const [plain, kv] = [
      await createSession(e.ort, plainBytes, `race model (${e.name})`),
      await createSession(e.ort, kvBytes, `race model, KV cache (${e.name})`),
    ];
    const policy = new OnnxPolicy(e.ort, kv, inspectOnnxModel(kvBytes, 'race.onnx'), cfg);
    try {
      const logits = await ortForward(e.ort, plain, input);
      const forwardMs = await timed(o, () => ortForward(e.ort, plain, input));
      const first = await policy.generate(prompts, genOpts);
      const genMs = await timed(o, () => policy.generate(prompts, genOpts));
      rows.push({
        engine: e.name,
        forward_ms: forwardMs,
        generate_tokens_per_s: produced / (genMs / 1000),
        max_rel_diff: maxRelDiff(logits, ours.logits),
        same_tokens: agreement(first.tokens, ours.tokens),
      });
    } finally {
      policy.dispose(); // releases the KV session
      await plain.release();
    }
  }
  const r3 = (x: number) => Number(x.toPrecision(3));
  return {
    preset: o.preset,
    config: cfg,
    forward: { B, T },
    generate: { B: g.B, prompt_len: g.promptLen, new_tokens: g.newTokens },
    reps: o.reps,
    rows: rows.map((r) => ({
      ...r,
      forward_ms: r3(r.forward_ms),
      generate_tokens_per_s: r3(r.generate_tokens_per_s),
      max_rel_diff: Number(r.max_rel_diff.toExponential(2)),
      same_tokens: r3(r.same_tokens),
    })),
    ratios: rows.slice(1).map((r) => ({
      engine: r.engine,
      forward: r3(r.forward_ms / ours.row.forward_ms),
      generate: r3(ours.row.generate_tokens_per_s / r.generate_tokens_per_s),
    })),
    goal: RACE_GOAL,
  };
}

/** One forward of the plain export: logits (B, T, V) on the CPU. */
async function ortForward(ort: Ort, s: OrtSession, x: ForwardInput): Promise<Float32Array> {
  const { B, T } = x;
  const out = await runSession(
    s,
    {
      input_ids: int64Tensor(ort, x.tokens, [B, T]),
      attention_mask: int64Tensor(ort, new Array<number>(B * T).fill(1), [B, T]),
      position_ids: int64Tensor(
        ort,
        Array.from({ length: B * T }, (_, i) => i % T),
        [B, T],
      ),
    },
    'race model',
  );
  return floats(out.logits, 'race model: logits');
}

/** Warm-up runs, then the median ms of `reps` timed runs, each awaited to completion. */
async function timed(o: Pick<OnnxRaceOptions, 'warmup' | 'reps'>, f: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < o.warmup; i++) await f();
  const ms: number[] = [];
  for (let i = 0; i < o.reps; i++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Share of positions where the two token lists agree (rows compared position by position). */
export function agreement(a: number[][], b: number[][]): number {
  let same = 0;
  let total = 0;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? [];
    const y = b[i] ?? [];
    const n = Math.max(x.length, y.length);
    total += n;
    for (let j = 0; j < n; j++) if (x[j] === y[j]) same++;
  }
  return total ? same / total : 1;
}

/** The race as a table: one row per engine, then ours / theirs. */
export function formatOnnxRace(r: OnnxRaceResult, adapter?: string): string {
  const c = r.config;
  const pad = (s: string | number, w: number) => String(s).padStart(w);
  return [
    ...(adapter ? [`adapter: ${adapter}`] : []),
    `ONNX race, ${r.preset} (L=${c.nLayer} C=${c.dModel} NH=${c.nHead} V=${c.vocabSize}); forward B=${r.forward.B} T=${r.forward.T}; greedy generation B=${r.generate.B}, prompt ${r.generate.prompt_len}, ${r.generate.new_tokens} new tokens; medians of ${r.reps} warm runs`,
    `${'engine'.padEnd(14)}${pad('forward ms', 12)}${pad('gen tok/s', 12)}${pad('max rel diff', 14)}${pad('same tokens', 13)}`,
    ...r.rows.map(
      (x) =>
        `${x.engine.padEnd(14)}${pad(x.forward_ms, 12)}${pad(x.generate_tokens_per_s, 12)}${pad(x.max_rel_diff ? x.max_rel_diff.toExponential(2) : 0, 14)}${pad(x.same_tokens, 13)}`,
    ),
    ...r.ratios.map(
      (x) =>
        `ours / ${x.engine}: forward ${x.forward.toFixed(2)}x, generation ${x.generate.toFixed(2)}x (goal ${r.goal}x: ${Math.min(x.forward, x.generate) >= r.goal ? 'met' : 'not met'})`,
    ),
  ].join('\n');
}
