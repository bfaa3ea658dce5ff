/**
 * The imported-model benchmark (`coderl bench models`): prefill and decode tokens/s of the three
 * Hugging Face architectures the lab runs (model/arch.ts) at their real dimensions, with random
 * weights, on our engine (DecoderGpu + generateOn) and on the same model exported to ONNX
 * (onnx/decoder-export.ts, KV-cache variant) in onnxruntime-web, on the same inputs.
 *
 * Measured per model and batch size B (B prompts of P random tokens, N new tokens, greedy):
 *   prefill   ms from the inputs to the first sampled token on the CPU (ours: generateOn with one
 *             new token; ORT: the prefill run, its logits read back and argmaxed), B*P / time;
 *   decode    the N - 1 following steps, B*(N-1) / time (ours: generateOn(N) - generateOn(1), the
 *             sampling on the GPU and a readback every 8 steps; ORT: one run per step fed the
 *             previous present.* tensors, which stay on the GPU with the webgpu provider
 *             (preferredOutputLocation 'gpu-buffer'), the step's logits read back and argmaxed);
 *   per step  dispatches and submits of one decode step (ours: rt.stats; ORT: counted by wrapping
 *             the WebGPU calls of the page, gpuCounters below);
 *   memory    GPU bytes held: ours weights (DecoderGpu.weightBytes), KV cache and activations
 *             (the rest of the peak during a generation); ORT's peak of live buffers, counted the
 *             same way (its breakdown is its own);
 *   load      ms to upload the weights (ours) or create the session (ORT), and the first
 *             generation's extra time over a warm one (pipeline / shader compilation).
 * ORT's graph computes the prefill's last-position logits only (lastLogitsOnly), as ours does.
 * Before the timed runs are counted, ORT's prefill logits are compared with ours (max relative
 * difference) and its greedy tokens with ours (the share equal). Medians of `reps` warm runs.
 */
import type { GpuRuntime } from '../gpu/runtime';
import { archFromHfConfig, decoderTensors, type DecoderArch } from '../model/arch';
import { DecoderGpu } from '../model/decoder-gpu';
import { generateOn } from '../model/generate';
import { exportDecoderOnnx } from '../onnx/decoder-export';
import { kvNames } from '../onnx/export';
import { maxRelDiff } from '../onnx/parity';
import { floatTensor, int64Tensor, OrtError, providersOf, type Ort, type OrtSession, type OrtTensor } from '../onnx/runtime';
import { agreement, median } from './onnx';

/** config.json of each model, as the Hub has it (the fields the lab reads): SmolLM2-135M, Qwen2.5-0.5B, GPT-2 small. */
export const MODEL_CONFIGS = {
  'smollm2-135m': {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    num_hidden_layers: 30,
    hidden_size: 576,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    head_dim: 64,
    intermediate_size: 1536,
    vocab_size: 49152,
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    rope_scaling: null,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
  },
  'qwen2.5-0.5b': {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    num_hidden_layers: 24,
    hidden_size: 896,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    intermediate_size: 4864,
    vocab_size: 151936,
    max_position_embeddings: 32768,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    rope_scaling: null,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    use_sliding_window: false,
  },
  gpt2: {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    n_layer: 12,
    n_embd: 768,
    n_head: 12,
    n_positions: 1024,
    vocab_size: 50257,
    layer_norm_epsilon: 1e-5,
    activation_function: 'gelu_new',
  },
} as const;

export type ModelName = keyof typeof MODEL_CONFIGS;
export const MODEL_NAMES = Object.keys(MODEL_CONFIGS) as ModelName[];

/** full: the real shapes; quick: the real widths with 1 layer and a 4096 vocabulary; tiny: toy widths (tests). */
export type ModelsSize = 'full' | 'quick' | 'tiny';

/** The architecture of a model at a size (quick and tiny keep its kind: norm, positions, MLP, biases, GQA ratio). */
export function benchArch(name: ModelName, size: ModelsSize): DecoderArch {
  const a = archFromHfConfig(MODEL_CONFIGS[name], `${name} config.json`);
  if (size === 'full') return a;
  if (size === 'quick') return { ...a, nLayer: 1, vocabSize: 4096, maxPositions: Math.min(a.maxPositions, 1024) };
  // tiny: a fifth of the heads' size, 2 layers, 512 ids; the kv-head grouping kept
  const headDim = 16;
  const dModel = a.family === 'gpt2' ? a.nHead * headDim : Math.max(32, Math.round(a.dModel / 8 / 16) * 16);
  return { ...a, nLayer: 2, dModel, headDim, dFf: 2 * dModel, vocabSize: 512, maxPositions: Math.min(a.maxPositions, 256) };
}

export interface ModelsBenchOptions {
  models: ModelName[];
  size: ModelsSize;
  /** batch sizes */
  batches: number[];
  /** P: prompt tokens per row */
  promptLen: number;
  /** N: new tokens per row (greedy), at least 2 */
  newTokens: number;
  /** timed runs after the warm-up; medians reported */
  reps: number;
  seed: number;
  /** the GPU's memory bandwidth in GB/s: adds each row's decode bound (weights read once per step) */
  bandwidthGBs?: number;
}

export const MODELS_BENCH_DEFAULTS: ModelsBenchOptions = {
  models: MODEL_NAMES,
  size: 'full',
  batches: [1, 8, 32],
  promptLen: 64,
  newTokens: 32,
  reps: 3,
  seed: 1,
};

/** A couple of minutes on SwiftShader (0.3 GFLOP/s): one layer, a 4096 vocabulary, B = 1 and 4, prompt 16, 6 new, 2 runs. */
export const MODELS_BENCH_QUICK: ModelsBenchOptions = {
  ...MODELS_BENCH_DEFAULTS,
  size: 'quick',
  batches: [1, 4],
  promptLen: 16,
  newTokens: 6,
  reps: 2,
};

/** Seconds: toy widths, B = 1 and 2 (the tests of the command's plumbing). */
export const MODELS_BENCH_TINY: ModelsBenchOptions = {
  ...MODELS_BENCH_QUICK,
  size: 'tiny',
  batches: [1, 2],
  promptLen: 6,
  newTokens: 4,
  reps: 1,
};

export function validateModelsOptions(o: ModelsBenchOptions): void {
  const pos = (x: number, what: string) => {
    if (!Number.isInteger(x) || x < 1) throw new Error(`bench models: ${what} must be a positive integer, got ${x}`);
  };
  if (!o.models.length) throw new Error('bench models: no models');
  for (const m of o.models)
    if (!(m in MODEL_CONFIGS)) throw new Error(`bench models: unknown model '${m}' (models: ${MODEL_NAMES.join(', ')})`);
  if (!o.batches.length) throw new Error('bench models: no batch sizes');
  for (const b of o.batches) pos(b, 'a batch size');
  pos(o.promptLen, 'the prompt length');
  pos(o.reps, 'reps');
  if (!Number.isInteger(o.newTokens) || o.newTokens < 2)
    throw new Error(`bench models: new tokens must be an integer >= 2, got ${o.newTokens}`);
  for (const m of o.models) {
    const a = benchArch(m, o.size);
    if (o.promptLen + o.newTokens > Math.min(a.maxPositions, 4096))
      throw new Error(
        `bench models: prompt ${o.promptLen} + new tokens ${o.newTokens} exceed ${m}'s ${Math.min(a.maxPositions, 4096)} positions`,
      );
  }
  if (o.bandwidthGBs !== undefined && !(o.bandwidthGBs > 0))
    throw new Error(`bench models: bandwidth must be positive, got ${o.bandwidthGBs}`);
}

// ---------------------------------------------------------------------------------------------
// weights, prompts, traffic

/**
 * Random engine tensors (arch.ts decoderTensors), seeded: matrices and embeddings uniform with
 * std 0.02 (GPT-2's init), norm weights near 1, biases small. xorshift32 per tensor: fast enough
 * for half a billion values.
 */
export function randomDecoderWeights(arch: DecoderArch, seed: number): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  let k = 0;
  for (const t of decoderTensors(arch)) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    let s = (Math.imul(seed + 1, 0x9e3779b1) ^ Math.imul(++k, 0x85ebca6b)) >>> 0 || 1;
    const isNorm = /norm\w*\.w$/.test(t.name);
    const isBias = t.name.endsWith('.b');
    const [mid, half] = isNorm ? [1, 0.1] : isBias ? [0, 0.02] : [0, 0.02 * Math.sqrt(3)];
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      data[i] = mid + half * ((s >>> 0) / 2147483648 - 1);
    }
    out.set(t.name, data);
  }
  return out;
}

/** B prompts of P ids, seeded by (seed, B): the same for both engines. */
export function benchPrompts(V: number, B: number, P: number, seed: number): Uint32Array[] {
  let s = (Math.imul(seed + 7, 0x27d4eb2d) ^ Math.imul(B, 0x165667b1)) >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  return Array.from({ length: B }, () => Uint32Array.from({ length: P }, () => Math.floor(next() * V)));
}

/**
 * Bytes one decode step of B rows must move at least, keys 0..S-1 in the cache: every layer
 * matrix and vector once, the LM head matrix once (the embedding when tied), B embedding (and
 * learned position) rows; the KV cache read (S rows per row, layer, k and v) and the new row written.
 */
export function decodeTraffic(a: DecoderArch, B: number, S: number): { weights: number; kv: number } {
  const { dModel: C, vocabSize: V, nLayer: L, nKvHead: NKV, headDim: HS } = a;
  let weights = V * C * 4 + B * C * 4 * (a.positions.kind === 'learned' ? 2 : 1);
  for (const t of decoderTensors(a)) if (!['embed', 'pos', 'head'].includes(t.name)) weights += 4 * t.shape.reduce((x, y) => x * y, 1);
  return { weights, kv: L * 2 * B * NKV * (S + 1) * HS * 4 };
}

export function parameterCount(a: DecoderArch): number {
  return decoderTensors(a).reduce((s, t) => s + t.shape.reduce((x, y) => x * y, 1), 0);
}

// ---------------------------------------------------------------------------------------------
// counting WebGPU calls

/**
 * What the wrapped WebGPU calls saw since install, for all devices of the realm. Buffers are
 * charged to the engine named by `active` when they are created (and credited back to it when
 * destroyed); dispatches and submits are counted globally: run one engine at a time.
 */
export interface GpuCounters {
  dispatches: number;
  submits: number;
  /** the engine new buffers are charged to */
  active: string;
  /** bytes of buffers created and not yet destroyed, per engine */
  live: Record<string, number>;
  /** the largest live[engine] since resetPeak(engine) */
  peak: Record<string, number>;
  resetPeak(engine: string): void;
}

const COUNTERS = Symbol.for('coderl.gpuCounters');

/**
 * Wraps createBuffer, GPUBuffer.destroy, dispatchWorkgroups(Indirect) and queue.submit on their
 * prototypes (found from `device`'s own objects, so Dawn in Node and a browser alike), once per
 * realm; every device of the realm is counted from then on, onnxruntime's included.
 */
export function gpuCounters(device: GPUDevice): GpuCounters {
  const host = globalThis as Record<symbol, unknown>;
  const have = host[COUNTERS] as GpuCounters | undefined;
  if (have) return have;
  const c: GpuCounters = {
    dispatches: 0,
    submits: 0,
    active: 'other',
    live: {},
    peak: {},
    resetPeak(engine) {
      this.peak[engine] = this.live[engine] ?? 0;
    },
  };
  const owner = new WeakMap<object, { engine: string; size: number }>();
  type Fn = (this: unknown, ...args: unknown[]) => unknown;
  const wrap = (proto: object, name: string, f: (orig: Fn) => Fn) => {
    const p = proto as Record<string, Fn>;
    if (typeof p[name] === 'function') p[name] = f(p[name]);
  };
  const probe = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE });
  wrap(
    Object.getPrototypeOf(probe) as object,
    'destroy',
    (orig) =>
      function (this: unknown) {
        const o = owner.get(this as object);
        if (o) {
          c.live[o.engine] = (c.live[o.engine] ?? 0) - o.size;
          owner.delete(this as object);
        }
        return orig.call(this);
      },
  );
  probe.destroy();
  wrap(
    Object.getPrototypeOf(device) as object,
    'createBuffer',
    (orig) =>
      function (this: unknown, ...args: unknown[]) {
        const b = orig.apply(this, args) as GPUBuffer;
        const e = c.active;
        owner.set(b, { engine: e, size: b.size });
        c.live[e] = (c.live[e] ?? 0) + b.size;
        c.peak[e] = Math.max(c.peak[e] ?? 0, c.live[e]);
        return b;
      },
  );
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  const passProto = Object.getPrototypeOf(pass) as object;
  for (const name of ['dispatchWorkgroups', 'dispatchWorkgroupsIndirect'])
    wrap(
      passProto,
      name,
      (orig) =>
        function (this: unknown, ...args: unknown[]) {
          c.dispatches++;
          return orig.apply(this, args);
        },
    );
  pass.end();
  enc.finish();
  wrap(
    Object.getPrototypeOf(device.queue) as object,
    'submit',
    (orig) =>
      function (this: unknown, ...args: unknown[]) {
        c.submits++;
        return orig.apply(this, args);
      },
  );
  host[COUNTERS] = c;
  return c;
}

// ---------------------------------------------------------------------------------------------
// results

export interface EngineRow {
  B: number;
  prefill_ms: number;
  prefill_tokens_per_s: number;
  /** the N - 1 decode steps */
  decode_ms: number;
  /** null when the decode time was not measurable (ours: generateOn(N) - generateOn(1) <= 0, the machine's noise) */
  decode_tokens_per_s: number | null;
  /** one decode step (B tokens): per decoded token of a row */
  dispatches_per_step: number;
  submits_per_step: number;
  /** GPU bytes the engine held at its peak during this B's generations (null: not counted) */
  peak_bytes: number | null;
  /** ours: weights (DecoderGpu.weightBytes), KV cache (B rows, P + N positions), activations (the rest of the peak) */
  memory?: { weights: number; kv_cache: number; activations: number };
  /** other engines: against ours */
  max_rel_diff?: number;
  same_tokens?: number;
  /** with bandwidthGBs: decode tokens/s if a step took (weights read) / bandwidth; achieved / that */
  bound?: { tokens_per_s: number; achieved: number; weight_bytes_per_step: number; with_kv_tokens_per_s: number };
}

export interface EngineModelResult {
  engine: string;
  /** ms: weights uploaded (ours) or the session created (ORT: parse, optimise, initializers uploaded) */
  upload_ms: number | null;
  /** ms: the first B's first generation over a warm one (pipelines / shaders compiled) */
  compile_ms: number | null;
  rows: EngineRow[];
  /** a failure (the model did not fit, the provider refused it) instead of (more) rows */
  error?: string;
}

export interface ModelBenchResult {
  model: ModelName;
  arch: DecoderArch;
  parameters: number;
  engines: EngineModelResult[];
  /** ours / each other engine, per batch size: decode and prefill tokens/s */
  ratios: { engine: string; B: number; decode: number | null; prefill: number }[];
}

export interface ModelsBenchResult {
  adapter: string;
  size: ModelsSize;
  prompt_len: number;
  new_tokens: number;
  reps: number;
  bandwidth_gb_s?: number;
  models: ModelBenchResult[];
}

const r3 = (x: number) => Number(x.toPrecision(3));
export type Progress = (m: string) => void;

/** One generation's figures. */
interface Run {
  prefillMs: number;
  decodeMs: number;
  /** the whole call */
  totalMs: number;
  tokens: number[][];
  /** (B, V) the prefill's last-position logits, where the engine reads them back anyway (ORT) */
  prefillLogits?: Float32Array;
  /** dispatches and submits of the N - 1 decode steps */
  dispatches: number;
  submits: number;
}

/** An engine with a model loaded. */
interface Runner {
  name: string;
  uploadMs: number;
  /** counted buffers are charged to this name; null: not counted */
  tag: string | null;
  generate(prompts: Uint32Array[], N: number): Promise<Run>;
  /** (B, V): the last position's logits of each prompt */
  prefillLogits(prompts: Uint32Array[]): Promise<Float32Array>;
  dispose(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// ours

async function loadOurs(
  rt: GpuRuntime,
  arch: DecoderArch,
  weights: ReadonlyMap<string, Float32Array>,
  seed: number,
): Promise<Runner & { model: DecoderGpu }> {
  const t0 = performance.now();
  const model = new DecoderGpu(rt, arch, weights);
  await rt.device.queue.onSubmittedWorkDone();
  const uploadMs = performance.now() - t0;
  const gen = (prompts: Uint32Array[], n: number) => generateOn(model, prompts, { maxNewTokens: n, temperature: 0, seed, checkEvery: 8 });
  return {
    name: 'ours',
    uploadMs,
    tag: 'ours',
    model,
    /** generateOn(1) (prefill) then generateOn(N): decode = the difference, in time and in counts */
    async generate(prompts, N) {
      const s0 = { ...rt.stats };
      const t0 = performance.now();
      await gen(prompts, 1);
      const t1 = performance.now();
      const s1 = { ...rt.stats };
      const full = await gen(prompts, N);
      const t2 = performance.now();
      const s2 = rt.stats;
      return {
        prefillMs: t1 - t0,
        decodeMs: t2 - t1 - (t1 - t0),
        totalMs: t2 - t0,
        tokens: full.tokens,
        dispatches: s2.dispatches - s1.dispatches - (s1.dispatches - s0.dispatches),
        submits: s2.submits - s1.submits - (s1.submits - s0.submits),
      };
    },
    async prefillLogits(prompts) {
      const B = prompts.length;
      const P = prompts[0]!.length;
      const s = model.allocStep(B, P, true);
      const cache = model.createKvCache(B, P);
      try {
        const tokens = new Uint32Array(B * P);
        prompts.forEach((p, b) => tokens.set(p, b * P));
        model.writeInput(s, { B, T: P, tokens });
        const rec = rt.record('bench prefill logits');
        await model.recordForward(rec, s, { cache, pos: 0 });
        const out = rec.read(s.logits, 0, B * model.vocabSize * 4);
        await rec.submit();
        return new Float32Array(await out);
      } finally {
        model.destroyStep(s);
        model.destroyKvCache(cache);
      }
    },
    async dispose() {
      model.dispose();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// onnxruntime-web

/** The ONNX model the ORT engines run: the KV-cache export, last-position logits at the prefill. */
export function benchOnnxBytes(arch: DecoderArch, weights: ReadonlyMap<string, Float32Array>): Uint8Array {
  return exportDecoderOnnx(arch, weights, { kvCache: true, lastLogitsOnly: true, contextLength: Math.min(arch.maxPositions, 4096) });
}

export interface OrtEngineOptions {
  /** column name, e.g. 'ORT webgpu' */
  name: string;
  ort: Ort;
  /** keep present.* on the GPU between steps (webgpu provider only) */
  gpuKv: boolean;
  /** counts the WebGPU calls (webgpu provider); null: dispatches, submits and memory are not reported */
  counters: GpuCounters | null;
}

async function loadOrt(e: OrtEngineOptions, arch: DecoderArch, bytes: Uint8Array): Promise<Runner> {
  const L = arch.nLayer;
  const presentNames = Array.from({ length: L }, (_, i) => [kvNames(i).presentKey, kvNames(i).presentValue]).flat();
  const t0 = performance.now();
  let session: OrtSession;
  try {
    session = await e.ort.InferenceSession.create(bytes, {
      executionProviders: providersOf(e.ort),
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3,
      ...(e.gpuKv
        ? { preferredOutputLocation: Object.fromEntries([['logits', 'cpu'], ...presentNames.map((n) => [n, 'gpu-buffer'])]) }
        : {}),
    });
  } catch (err) {
    throw new OrtError(`onnxruntime cannot load the model: ${String(err).replace(/\s+/g, ' ')}`);
  }
  const uploadMs = performance.now() - t0;
  const c = e.counters;
  return {
    name: e.name,
    uploadMs,
    tag: c ? e.name : null,
    generate: (prompts, N) => ortGenerate(e.ort, session, arch, prompts, N, c),
    async prefillLogits(prompts) {
      return (await ortGenerate(e.ort, session, arch, prompts, 1, c)).prefillLogits;
    },
    dispose: () => session.release(),
  };
}

/**
 * Greedy generation through the KV-cache graph: the prefill with empty pasts, then one run per
 * token fed the previous presents (GPU tensors with gpuKv, freed once used); logits are read back
 * and argmaxed on the CPU at every step.
 */
async function ortGenerate(
  ort: Ort,
  s: OrtSession,
  a: DecoderArch,
  prompts: Uint32Array[],
  N: number,
  c: GpuCounters | null,
): Promise<Run & { prefillLogits: Float32Array }> {
  const { nLayer: L, nKvHead: NKV, headDim: HS, vocabSize: V } = a;
  const B = prompts.length;
  const P = prompts[0]!.length;
  const tokens: number[][] = Array.from({ length: B }, () => []);
  const argmax = (logits: Float32Array) => {
    const ids = new Array<number>(B);
    for (let b = 0; b < B; b++) {
      let best = 0;
      const o = b * V;
      for (let v = 1; v < V; v++) if (logits[o + v]! > logits[o + best]!) best = v;
      ids[b] = best;
      tokens[b]!.push(best);
    }
    return ids;
  };
  const flat = new Array<number>(B * P);
  prompts.forEach((p, b) => p.forEach((id, t) => (flat[b * P + t] = id)));
  const t0 = performance.now();
  let feeds: Record<string, OrtTensor> = {
    input_ids: int64Tensor(ort, flat, [B, P]),
    attention_mask: int64Tensor(ort, new Array<number>(B * P).fill(1), [B, P]),
    position_ids: int64Tensor(
      ort,
      Array.from({ length: B * P }, (_, i) => i % P),
      [B, P],
    ),
  };
  for (let l = 0; l < L; l++) {
    feeds[kvNames(l).pastKey] = floatTensor(ort, new Float32Array(0), [B, NKV, 0, HS]);
    feeds[kvNames(l).pastValue] = floatTensor(ort, new Float32Array(0), [B, NKV, 0, HS]);
  }
  let out = await runOrt(s, feeds);
  const prefillLogits = (await out.logits!.getData()) as Float32Array;
  let next = argmax(prefillLogits);
  const t1 = performance.now();
  const c0 = c ? { d: c.dispatches, s: c.submits } : { d: 0, s: 0 };
  try {
    for (let step = 1; step < N; step++) {
      const S = P + step;
      feeds = {
        input_ids: int64Tensor(ort, next, [B, 1]),
        attention_mask: int64Tensor(ort, new Array<number>(B * S).fill(1), [B, S]),
        position_ids: int64Tensor(ort, new Array<number>(B).fill(S - 1), [B, 1]),
      };
      for (let l = 0; l < L; l++) {
        feeds[kvNames(l).pastKey] = out[kvNames(l).presentKey]!;
        feeds[kvNames(l).pastValue] = out[kvNames(l).presentValue]!;
      }
      const prev = out;
      out = await runOrt(s, feeds);
      disposeKv(prev, L);
      next = argmax((await out.logits!.getData()) as Float32Array);
    }
  } finally {
    disposeKv(out, L);
  }
  const t2 = performance.now();
  return {
    prefillMs: t1 - t0,
    decodeMs: t2 - t1,
    totalMs: t2 - t0,
    tokens,
    prefillLogits,
    dispatches: c ? c.dispatches - c0.d : NaN,
    submits: c ? c.submits - c0.s : NaN,
  };
}

async function runOrt(s: OrtSession, feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> {
  try {
    return await s.run(feeds);
  } catch (e) {
    throw new OrtError(`onnxruntime failed to run the model: ${String(e).replace(/\s+/g, ' ')}`);
  }
}

/** Frees a step's present.* tensors (GPU buffers with gpuKv; CPU tensors are let go). */
function disposeKv(out: Record<string, OrtTensor>, L: number): void {
  for (let l = 0; l < L; l++) for (const n of [kvNames(l).presentKey, kvNames(l).presentValue]) out[n]?.dispose();
}

// ---------------------------------------------------------------------------------------------
// the whole run

/**
 * Model by model: random weights, ours loaded, the export made and every ORT session created;
 * then per B a cold generation on each engine (the first B's gives the compile time), and `reps`
 * rounds of one warm generation per engine, interleaved so a change in the machine's load falls
 * on every engine alike. ORT's prefill logits and greedy tokens are checked against ours. An
 * engine that fails (out of memory, over a limit, an op its provider lacks) is reported with its
 * error and the others go on.
 */
export async function benchModels(
  rt: GpuRuntime,
  engines: OrtEngineOptions[],
  o: ModelsBenchOptions,
  say: Progress = () => {},
): Promise<ModelsBenchResult> {
  validateModelsOptions(o);
  const counters = gpuCounters(rt.device);
  const P = o.promptLen;
  const N = o.newTokens;
  const models: ModelBenchResult[] = [];
  for (const name of o.models) {
    const arch = benchArch(name, o.size);
    const results = new Map<string, EngineModelResult>();
    const runners: Runner[] = [];
    const fail = (engine: string, err: unknown) => {
      const msg = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
      say(`${name}: ${engine} FAILED: ${msg}`);
      const r = results.get(engine) ?? { engine, upload_ms: null, compile_ms: null, rows: [] };
      results.set(engine, { ...r, error: msg });
      const i = runners.findIndex((x) => x.name === engine);
      if (i >= 0)
        void runners
          .splice(i, 1)[0]!
          .dispose()
          .catch(() => {});
    };
    const withTag = async <T>(r: Runner, f: () => Promise<T>): Promise<T> => {
      counters.active = r.tag ?? 'other';
      try {
        return await f();
      } finally {
        counters.active = 'other';
      }
    };
    // the weights and the model bytes live in here only: gone before the timed runs
    const load = async () => {
      say(`${name}: random weights (${(parameterCount(arch) / 1e6).toFixed(1)}M parameters)`);
      const weights = randomDecoderWeights(arch, o.seed);
      try {
        say(`${name}: ours: uploading the weights`);
        counters.active = 'ours';
        runners.push(await loadOurs(rt, arch, weights, o.seed));
      } catch (err) {
        fail('ours', err);
      } finally {
        counters.active = 'other';
      }
      results.set('ours', results.get('ours') ?? { engine: 'ours', upload_ms: r3(runners[0]?.uploadMs ?? NaN), compile_ms: 0, rows: [] });
      if (!engines.length) return;
      let bytes: Uint8Array;
      try {
        say(`${name}: exporting to ONNX (KV cache, last-position prefill logits)`);
        bytes = benchOnnxBytes(arch, weights);
      } catch (err) {
        for (const e of engines) fail(e.name, err);
        return;
      }
      weights.clear(); // uploaded and exported: let it go before ORT copies the model
      for (const e of engines) {
        say(`${name}: ${e.name}: creating the session (${(bytes.length / 2 ** 20).toFixed(1)} MiB)`);
        counters.active = e.counters ? e.name : 'other';
        try {
          const r = await loadOrt(e, arch, bytes);
          runners.push(r);
          results.set(e.name, { engine: e.name, upload_ms: r3(r.uploadMs), compile_ms: 0, rows: [] });
        } catch (err) {
          fail(e.name, err);
        } finally {
          counters.active = 'other';
        }
      }
    };
    await load();
    const ours = runners.find((r) => r.name === 'ours') ?? null;

    try {
      for (const [bi, B] of o.batches.entries()) {
        const prompts = benchPrompts(arch.vocabSize, B, P, o.seed);
        const cold = new Map<Runner, Run>();
        for (const r of [...runners]) {
          say(`${name}: B=${B}: ${r.name} (warm-up${bi === 0 ? ', compiling' : ''})`);
          if (r.tag) counters.resetPeak(r.tag);
          try {
            cold.set(r, await withTag(r, () => r.generate(prompts, N)));
          } catch (err) {
            fail(r.name, err);
          }
        }
        const runs = new Map<Runner, Run[]>(runners.map((r) => [r, []]));
        for (let rep = 0; rep < o.reps; rep++)
          for (const r of [...runners]) {
            say(`${name}: B=${B}: ${r.name}, run ${rep + 1}/${o.reps}`);
            try {
              runs.get(r)!.push(await withTag(r, () => r.generate(prompts, N)));
            } catch (err) {
              fail(r.name, err);
            }
          }
        const oursUp = ours && runners.includes(ours) ? ours : null;
        let refLogits: Float32Array | null = null;
        if (oursUp && runners.length > 1) {
          try {
            refLogits = await withTag(oursUp, () => oursUp.prefillLogits(prompts));
          } catch (err) {
            fail(oursUp.name, err);
          }
        }
        const refTokens = oursUp ? cold.get(oursUp)?.tokens : undefined;
        for (const r of [...runners]) {
          const rr = runs.get(r)!;
          const res = results.get(r.name)!;
          const prefillMs = median(rr.map((x) => x.prefillMs));
          // ours' decode time is a difference of two generations: within the machine's noise it can come out <= 0
          const decodeMs = median(rr.map((x) => x.decodeMs));
          if (bi === 0) res.compile_ms = r3(Math.max(0, cold.get(r)!.totalMs - median(rr.map((x) => x.totalMs))));
          const last = rr.at(-1)!;
          const row: EngineRow = {
            B,
            prefill_ms: r3(prefillMs),
            prefill_tokens_per_s: r3((B * P) / (prefillMs / 1000)),
            decode_ms: r3(decodeMs),
            decode_tokens_per_s: decodeMs > 0 ? r3((B * (N - 1)) / (decodeMs / 1000)) : null,
            dispatches_per_step: r3(last.dispatches / (N - 1)),
            submits_per_step: r3(last.submits / (N - 1)),
            peak_bytes: r.tag ? (counters.peak[r.tag] ?? 0) : null,
          };
          if (r === ours) {
            const weightBytes = (r as Runner & { model: DecoderGpu }).model.weightBytes;
            const kv = arch.nLayer * 2 * B * arch.nKvHead * (P + N) * arch.headDim * 4;
            row.memory = { weights: weightBytes, kv_cache: kv, activations: Math.max(0, (row.peak_bytes ?? 0) - weightBytes - kv) };
            if (o.bandwidthGBs) row.bound = bandwidthBound(arch, B, P, N, row.decode_tokens_per_s ?? NaN, o.bandwidthGBs);
          } else {
            try {
              if (refLogits)
                row.max_rel_diff = Number(
                  maxRelDiff(cold.get(r)!.prefillLogits ?? (await withTag(r, () => r.prefillLogits(prompts))), refLogits).toExponential(2),
                );
            } catch (err) {
              fail(r.name, err);
            }
            if (refTokens) row.same_tokens = r3(agreement(cold.get(r)!.tokens, refTokens));
          }
          res.rows.push(row);
        }
      }
    } finally {
      for (const r of runners) await r.dispose();
    }
    const list = [...results.values()];
    models.push({ model: name, arch, parameters: parameterCount(arch), engines: list, ratios: ratiosOf(list) });
  }
  const a = rt.adapterSummary;
  return {
    adapter: `${a.vendor} ${a.architecture} ${a.description}`.trim(),
    size: o.size,
    prompt_len: P,
    new_tokens: N,
    reps: o.reps,
    ...(o.bandwidthGBs ? { bandwidth_gb_s: o.bandwidthGBs } : {}),
    models,
  };
}

/** The decode bound of B rows at `gbs` GB/s: one step reads the weights once (decodeTraffic), keys at mid-generation. */
export function bandwidthBound(
  a: DecoderArch,
  B: number,
  P: number,
  N: number,
  achieved: number,
  gbs: number,
): NonNullable<EngineRow['bound']> {
  const t = decodeTraffic(a, B, P + Math.floor(N / 2));
  const bound = B / (t.weights / (gbs * 1e9));
  return {
    tokens_per_s: r3(bound),
    achieved: r3(achieved / bound),
    weight_bytes_per_step: t.weights,
    with_kv_tokens_per_s: r3(B / ((t.weights + t.kv) / (gbs * 1e9))),
  };
}

export function ratiosOf(results: EngineModelResult[]): ModelBenchResult['ratios'] {
  const ours = results.find((r) => r.engine === 'ours');
  if (!ours) return [];
  const out: ModelBenchResult['ratios'] = [];
  for (const e of results)
    if (e !== ours)
      for (const row of e.rows) {
        const mine = ours.rows.find((x) => x.B === row.B);
        if (mine)
          out.push({
            engine: e.engine,
            B: row.B,
            decode: mine.decode_tokens_per_s && row.decode_tokens_per_s ? r3(mine.decode_tokens_per_s / row.decode_tokens_per_s) : null,
            prefill: r3(mine.prefill_tokens_per_s / row.prefill_tokens_per_s),
          });
      }
  return out;
}

/** The result as tables: per model the engines' load times, one row per engine and B, then ours / theirs. */
export function formatModelsBench(r: ModelsBenchResult): string {
  const pad = (s: string | number, w: number) => String(s).padStart(w);
  const mib = (b: number | null | undefined) =>
    b === null || b === undefined || !Number.isFinite(b) ? '-' : (b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 2 : 0);
  const num = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : String(x));
  const lines = [
    `adapter: ${r.adapter}`,
    `imported-model bench (${r.size} shapes, random weights): prompt ${r.prompt_len} tokens, ${r.new_tokens} new (greedy); medians of ${r.reps} warm run${r.reps > 1 ? 's' : ''}`,
  ];
  for (const m of r.models) {
    const a = m.arch;
    lines.push(
      '',
      `${m.model} (${a.hfArchitecture}: ${a.nLayer} layer${a.nLayer > 1 ? 's' : ''}, d ${a.dModel}, ${a.nHead}/${a.nKvHead} heads of ${a.headDim}, ffn ${a.dFf}, vocab ${a.vocabSize}; ${(m.parameters / 1e6).toFixed(1)}M parameters)`,
    );
    for (const e of m.engines) {
      lines.push(
        `  ${e.engine}: load ${num(e.upload_ms)} ms (${e.engine === 'ours' ? 'weights upload' : 'session create'}) + ${num(e.compile_ms)} ms (first-run compile)`,
      );
      if (e.error) lines.push(`  ${e.engine}: FAILED: ${e.error}`);
    }
    lines.push(
      `  ${'engine'.padEnd(11)}${pad('B', 4)}${pad('prefill tok/s', 15)}${pad('decode tok/s', 14)}${pad('disp/step', 11)}${pad('subm/step', 11)}${pad('GPU MiB', 9)}${pad('w/kv/act MiB', 19)}${pad('rel diff', 10)}${pad('same', 6)}`,
    );
    for (const e of m.engines)
      for (const x of e.rows)
        lines.push(
          `  ${e.engine.padEnd(11)}${pad(x.B, 4)}${pad(x.prefill_tokens_per_s, 15)}${pad(num(x.decode_tokens_per_s), 14)}${pad(num(x.dispatches_per_step), 11)}${pad(num(x.submits_per_step), 11)}${pad(mib(x.peak_bytes), 9)}${pad(x.memory ? `${mib(x.memory.weights)}/${mib(x.memory.kv_cache)}/${mib(x.memory.activations)}` : '-', 19)}${pad(x.max_rel_diff === undefined ? '-' : x.max_rel_diff.toExponential(1), 10)}${pad(num(x.same_tokens), 6)}`,
        );
    for (const e of m.engines)
      for (const x of e.rows)
        if (x.bound)
          lines.push(
            `  ${e.engine} B=${x.B}: decode bound at ${r.bandwidth_gb_s} GB/s (${(x.bound.weight_bytes_per_step / 2 ** 20).toFixed(0)} MiB of weights read a step): ${x.bound.tokens_per_s} tok/s (${x.bound.with_kv_tokens_per_s} counting the KV cache); achieved ${num(x.decode_tokens_per_s)} = ${(x.bound.achieved * 100).toFixed(1)}% of the bound`,
          );
    for (const q of m.ratios)
      lines.push(
        `  ours / ${q.engine}, B=${q.B}: decode ${q.decode === null ? '- (not measured)' : `${q.decode.toFixed(2)}x`}, prefill ${q.prefill.toFixed(2)}x`,
      );
  }
  return lines.join('\n');
}
