/**
 * An ONNX causal LM as a frozen PolicyBackend: `forward` (per-token logits and values: scoring,
 * the KL reference), `generate` (sampling, pass@k) and `describe`, run in onnxruntime. Training
 * calls are errors saying the model is frozen (policy/onnx.ts adds the tokenizer, which makes it
 * a Policy of the RL stages). Generation has the CPU backend's semantics (cpu-generate.ts):
 * left-padded prompts, the same counter-based uniforms and the same sampler (sampleRef), so our
 * own exported model samples the same tokens through ORT as through the engine.
 *
 * How the model is stepped depends on its inputs (import.ts):
 *   past_key_values   prefill once, then one token per step fed the previous step's present
 *   no cache          the whole sequence again at every step
 *   ragged prompts without both attention_mask and position_ids: each row runs alone, unpadded
 *   (a padded batch would attend to the padding, or shift the positions)
 * `kind` is 'cpu': ORT's wasm backend runs on the CPU, and the only consumer of `kind` (the
 * micro-batching of training steps, rl/data.ts) never sees a frozen model.
 */
import type { PolicyBackend } from '../model/backend';
import type { ModelConfig } from '../model/config';
import { checkInput, defaultPositions, type ForwardInput } from '../model/cpu';
import { paramTable } from '../model/params';
import { Collector, padPrompts, validateGenerate, type GenerateOptions, type GenerateResult } from '../model/generate-common';
import { randUniformRef } from '../kernels/rand';
import { NO_TOKEN, sampleRef } from '../kernels/sample';
import { kvNames } from './export';
import type { OnnxModelInfo } from './import';
import { floats, floatTensor, int64Tensor, runSession, type Ort, type OrtSession, type OrtTensor } from './runtime';

/** The last position's logits (B, V) and values (B) of a step. */
interface Last {
  logits: Float32Array;
  values: Float32Array;
}

/** One model call's result for rows of length T. */
interface RunOut {
  logits: Float32Array; // (B, T, V)
  values: Float32Array; // (B, T)
  present: OrtTensor[]; // key, value per layer
}

export class OnnxPolicy implements PolicyBackend {
  readonly kind = 'cpu';

  constructor(
    private readonly ort: Ort,
    private readonly session: OrtSession,
    readonly info: OnnxModelInfo,
    readonly config: ModelConfig,
  ) {}

  /**
   * What it is (src/policy's PolicyDescription): the shape our exporter recorded, else what its KV
   * cache shows; the parameter count of a foreign graph is unknown (null).
   */
  describe() {
    const c = this.config;
    const { config: ours, kv, file } = this.info;
    const shape = ours
      ? `${ours.nLayer} layers, d_model ${ours.dModel}, ${ours.nHead} heads`
      : kv
        ? `${kv.layers} layers, ${kv.heads} heads`
        : 'layers unknown';
    return {
      family: 'onnx',
      architecture: `${file}: ${shape}`,
      parameters: ours ? paramTable(ours).count : null,
      vocabSize: c.vocabSize,
      contextLength: c.contextLength,
      backend: 'onnxruntime' as const,
    };
  }

  /** Left padding is exact only when the model takes both the mask and the positions. */
  private get canPad(): boolean {
    return this.info.hasAttentionMask && this.info.hasPositionIds;
  }

  /** Logits (BT, V) and values (BT; 0 without a value head) for (B, T). */
  async forward(input: ForwardInput): Promise<{ logits: Float32Array; values: Float32Array }> {
    const { B, T } = input;
    const V = this.config.vocabSize;
    checkInput(input, V, this.config.contextLength);
    const positions = input.positions ?? defaultPositions(B, T);
    const start = input.start ?? new Uint32Array(B);
    if (this.canPad || Array.from(start).every((s) => s === 0)) {
      const r = await this.run(B, T, input.tokens, positions, start, this.emptyPast(B));
      return { logits: r.logits, values: r.values };
    }
    // each row alone, without its padding (padding rows stay 0)
    const logits = new Float32Array(B * T * V);
    const values = new Float32Array(B * T);
    for (let b = 0; b < B; b++) {
      const s = start[b]!;
      const n = T - s;
      const row = (a: ArrayLike<number>) => Array.from({ length: n }, (_, i) => a[b * T + s + i]!);
      const r = await this.run(1, n, row(input.tokens), row(positions), [0], this.emptyPast(1));
      logits.set(r.logits, (b * T + s) * V);
      values.set(r.values, b * T + s);
    }
    return { logits, values };
  }

  async generate(prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult> {
    const V = this.config.vocabSize;
    const { B, P, N } = validateGenerate(prompts, opts, this.config.contextLength);
    const t0 = performance.now();
    const ragged = prompts.some((p) => p.length !== P);
    const steppers = ragged && !this.canPad ? prompts.map((p) => this.stepper([p])) : [this.stepper(prompts)];
    const collector = new Collector(B, N, opts);
    const gather = (parts: Last[]): Last =>
      parts.length === 1 ? parts[0]! : { logits: concat(parts.map((x) => x.logits)), values: concat(parts.map((x) => x.values)) };

    let last = gather(await sequential(steppers.map((s) => () => s.prefill())));
    const prefillMs = performance.now() - t0;
    let steps = 0;
    for (let s = 0; s < N && !collector.done; s++) {
      const c = opts.constrain?.(s, collector.tokens) ?? null;
      const u = randUniformRef(opts.seed, s, B);
      const picked = sampleRef(last.logits, B, V, u, {
        temperature: opts.temperature,
        topK: opts.topK ?? 0,
        topP: opts.topP ?? 1,
        bias: c?.bias ?? null,
        allowMask: c?.allowMask ?? null,
      });
      collector.push(picked.tokens, picked.logp, last.values);
      steps++;
      if (s === N - 1 || collector.done) break;
      const next = picked.tokens.map((t) => (t === NO_TOKEN ? 0 : t)); // a row with no token is finished; feed any id
      const per = steppers.length === 1 ? [next] : Array.from(next, (t) => Uint32Array.of(t));
      last = gather(await sequential(steppers.map((st, i) => () => st.step(per[i]!))));
    }
    return collector.result({ steps, submits: 0, prefillMs, totalMs: performance.now() - t0 });
  }

  /** Prefill and one-token steps over left-padded prompts (KV cache when the model has one). */
  private stepper(prompts: ArrayLike<number>[]): { prefill(): Promise<Last>; step(tokens: Uint32Array): Promise<Last> } {
    const B = prompts.length;
    const P = Math.max(...prompts.map((p) => p.length));
    const pad = padPrompts(prompts, P);
    const rows = Array.from({ length: B }, (_, b) => Array.from(pad.tokens.subarray(b * P, (b + 1) * P)));
    const posOf = (b: number, j: number) => Math.max(0, j - pad.start[b]!);
    let past = this.emptyPast(B);
    const last = (r: RunOut, T: number): Last => {
      const V = this.config.vocabSize;
      const logits = new Float32Array(B * V);
      const values = new Float32Array(B);
      for (let b = 0; b < B; b++) {
        logits.set(r.logits.subarray((b * T + T - 1) * V, (b * T + T) * V), b * V);
        values[b] = r.values[b * T + T - 1]!;
      }
      return { logits, values };
    };
    const full = async (): Promise<Last> => {
      const T = rows[0]!.length;
      const r = await this.run(
        B,
        T,
        rows.flat(),
        rows.flatMap((row, b) => row.map((_, j) => posOf(b, j))),
        pad.start,
        past,
      );
      if (this.info.kv) past = r.present;
      return last(r, T);
    };
    return {
      prefill: full,
      step: async (tokens) => {
        rows.forEach((row, b) => row.push(tokens[b]!));
        if (!this.info.kv) return full();
        const S = rows[0]!.length;
        const r = await this.run(
          B,
          1,
          tokens,
          Array.from({ length: B }, (_, b) => posOf(b, S - 1)),
          pad.start,
          past,
        );
        past = r.present;
        return last(r, 1);
      },
    };
  }

  /** Empty past_key_values (past_sequence 0), or none for a model without a cache. */
  private emptyPast(B: number): OrtTensor[] {
    const kv = this.info.kv;
    if (!kv) return [];
    return Array.from({ length: 2 * kv.layers }, () => floatTensor(this.ort, new Float32Array(0), [B, kv.heads, 0, kv.headSize]));
  }

  /**
   * One model call on T new tokens per row after `past` (P rows): attention_mask (B, P + T) is 1
   * from start[b] on, positions as given.
   */
  private async run(
    B: number,
    T: number,
    tokens: ArrayLike<number>,
    positions: ArrayLike<number>,
    start: ArrayLike<number>,
    past: OrtTensor[],
  ): Promise<RunOut> {
    const { ort, info } = this;
    const P = past.length ? past[0]!.dims[2]! : 0;
    const S = P + T;
    const feeds: Record<string, OrtTensor> = { input_ids: int64Tensor(ort, tokens, [B, T]) };
    if (info.hasAttentionMask)
      feeds.attention_mask = int64Tensor(
        ort,
        Array.from({ length: B * S }, (_, i) => (i % S >= start[Math.floor(i / S)]! ? 1 : 0)),
        [B, S],
      );
    if (info.hasPositionIds) feeds.position_ids = int64Tensor(ort, positions, [B, T]);
    const L = info.kv?.layers ?? 0;
    for (let i = 0; i < L; i++) {
      feeds[kvNames(i).pastKey] = past[2 * i]!;
      feeds[kvNames(i).pastValue] = past[2 * i + 1]!;
    }
    const out = await runSession(this.session, feeds, info.file);
    const logits = floats(out.logits, `${info.file}: logits`);
    const V = this.config.vocabSize;
    if (logits.length !== B * T * V)
      throw new Error(`${info.file}: logits has ${logits.length} values, expected batch ${B} x sequence ${T} x vocab ${V}`);
    const values = info.hasValues ? floats(out.values, `${info.file}: values`) : new Float32Array(B * T);
    const present: OrtTensor[] = [];
    for (let i = 0; i < L; i++) present.push(out[kvNames(i).presentKey]!, out[kvNames(i).presentValue]!);
    return { logits, values, present };
  }

  trainStep(): Promise<never> {
    return this.frozen('trainStep');
  }

  rlStep(): Promise<never> {
    return this.frozen('rlStep');
  }

  getParams(): Promise<never> {
    return this.frozen('getParams');
  }

  getOptimizerState(): Promise<never> {
    return this.frozen('getOptimizerState');
  }

  setOptim(): void {
    throw frozenError(this.info.file, 'setOptim');
  }

  dispose(): void {
    void this.session.release();
  }

  private frozen(what: string): Promise<never> {
    return Promise.reject(frozenError(this.info.file, what));
  }
}

/** A training or saving call on an imported model: it is frozen. */
export function frozenError(file: string, what: string): Error {
  return new Error(`${file}: an imported ONNX model is frozen: it samples, scores and serves as the KL reference, but cannot ${what}`);
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Runs the thunks one after another (one ORT session runs one call at a time). */
async function sequential<T>(fns: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  for (const f of fns) out.push(await f());
  return out;
}
