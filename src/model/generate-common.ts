/**
 * What both backends' generation share: options and their validation, left padding of the
 * prompts, and the collection of sampled ids with EOS / stop-sequence handling.
 */
import { NO_TOKEN } from '../kernels/sample';

export interface GenerateOptions {
  maxNewTokens: number;
  /** 0 = greedy */
  temperature: number;
  /** 0 = off */
  topK?: number;
  /** 1 = off */
  topP?: number;
  seed: number;
  /** a sequence stops after emitting this id (kept in its tokens) */
  eosId?: number;
  /** a sequence stops once its generated ids end with one of these id sequences (kept) */
  stop?: number[][];
  /** decode steps per submit between stop checks (default 8) */
  checkEvery?: number;
  /**
   * Constrained decoding: called before every step with each sequence's tokens so far;
   * returns an additive bias (B, V) and/or an allow-mask bitset (B, ceil(V / 32)), 1 = allowed.
   */
  constrain?: (step: number, generated: number[][]) => { bias?: Float32Array<ArrayBuffer>; allowMask?: Uint32Array<ArrayBuffer> } | null;
  /**
   * Only ids below this are ever sampled: a model whose vocabulary is padded past its tokenizer's
   * (Qwen2.5: 151,936 rows for 151,665 tokens) never emits an id the tokenizer cannot decode.
   * Applied as an allow-mask, intersected with constrain()'s.
   */
  vocabLimit?: number;
}

/** The allow-mask (B, ceil(V / 32)) of ids below `limit`, or null when every id is below it. */
export function vocabLimitMask(B: number, V: number, limit: number | undefined): Uint32Array<ArrayBuffer> | null {
  if (limit === undefined || limit >= V) return null;
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`generate: vocabLimit must be a positive integer, got ${limit}`);
  const W = Math.ceil(V / 32);
  const row = new Uint32Array(W);
  for (let w = 0; w < W; w++) {
    const lo = w * 32;
    row[w] = limit >= lo + 32 ? 0xffffffff : limit <= lo ? 0 : (2 ** (limit - lo) - 1) >>> 0;
  }
  const mask = new Uint32Array(B * W);
  for (let b = 0; b < B; b++) mask.set(row, b * W);
  return mask;
}

/** Both masks: their intersection, or whichever exists. */
export function intersectMasks(
  a: Uint32Array<ArrayBuffer> | null | undefined,
  b: Uint32Array<ArrayBuffer> | null | undefined,
): Uint32Array<ArrayBuffer> | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return Uint32Array.from(a, (x, i) => x & b[i]!);
}

export type FinishReason = 'eos' | 'stop' | 'length' | 'no-token';

export interface GenerateResult {
  /** generated ids per sequence (prompt excluded), cut after the stop condition */
  tokens: number[][];
  /** log-probability of each generated id under the sampling distribution before top-k/top-p */
  logprobs: number[][];
  /** value head at the position before each generated id (the state the action was taken in) */
  values: number[][];
  finish: FinishReason[];
  /**
   * prefillMs: on the CPU the prompt's forward; on the GPU the time to the first readback
   * (prefill plus the first `checkEvery` steps, which share its submit). decodeMs: the rest.
   */
  stats: { steps: number; submits: number; prefillMs: number; decodeMs: number; tokensPerSecond: number };
}

/** Checks the prompts and options; returns B, the padded prompt length P and N new tokens. */
export function validateGenerate(
  prompts: ArrayLike<number>[],
  opts: GenerateOptions,
  contextLength: number,
): { B: number; P: number; N: number } {
  const B = prompts.length;
  if (B < 1) throw new Error('generate: no prompts');
  if (prompts.some((p) => p.length < 1)) throw new Error('generate: every prompt needs at least one token');
  const P = Math.max(...prompts.map((p) => p.length));
  const N = opts.maxNewTokens;
  if (!Number.isInteger(N) || N < 1) throw new Error(`generate: maxNewTokens must be a positive integer, got ${N}`);
  if (P + N > contextLength) throw new Error(`generate: prompt (${P}) + maxNewTokens (${N}) exceeds contextLength ${contextLength}`);
  if (!(opts.temperature >= 0)) throw new Error(`generate: temperature must be >= 0, got ${opts.temperature}`);
  return { B, P, N };
}

/** Left padding: row b's prompt occupies [start[b], P) and its positions count from there. */
export function padPrompts(
  prompts: ArrayLike<number>[],
  P: number,
): { start: Uint32Array<ArrayBuffer>; tokens: Uint32Array<ArrayBuffer>; positions: Uint32Array<ArrayBuffer> } {
  const B = prompts.length;
  const start = Uint32Array.from(prompts, (p) => P - p.length);
  const tokens = new Uint32Array(B * P);
  const positions = new Uint32Array(B * P);
  prompts.forEach((p, b) => {
    for (let t = 0; t < P; t++) {
      const i = t - start[b]!;
      tokens[b * P + t] = i >= 0 ? p[i]! : p[0]!;
      positions[b * P + t] = Math.max(0, i);
    }
  });
  return { start, tokens, positions };
}

/** Accumulates each step's sampled ids, log-probs and values, and decides when rows finish. */
export class Collector {
  readonly tokens: number[][];
  readonly logprobs: number[][];
  readonly values: number[][];
  private readonly finish: (FinishReason | null)[];

  constructor(
    private readonly B: number,
    private readonly N: number,
    private readonly opts: GenerateOptions,
  ) {
    this.tokens = Array.from({ length: B }, () => []);
    this.logprobs = Array.from({ length: B }, () => []);
    this.values = Array.from({ length: B }, () => []);
    this.finish = new Array<FinishReason | null>(B).fill(null);
  }

  get done(): boolean {
    return this.finish.every((f) => f !== null);
  }

  /** One step: ids (B), their log-probs (B) and the values of the states they were sampled in (B). */
  push(ids: ArrayLike<number>, logp: ArrayLike<number>, values: ArrayLike<number>): void {
    for (let b = 0; b < this.B; b++) {
      if (this.finish[b] !== null) continue;
      const id = ids[b]!;
      if (id === NO_TOKEN) {
        this.finish[b] = 'no-token';
        continue;
      }
      const g = this.tokens[b]!;
      g.push(id);
      this.logprobs[b]!.push(logp[b]!);
      this.values[b]!.push(values[b]!);
      if (this.opts.eosId !== undefined && id === this.opts.eosId) this.finish[b] = 'eos';
      else if (this.opts.stop?.some((st) => endsWith(g, st))) this.finish[b] = 'stop';
      else if (g.length === this.N) this.finish[b] = 'length';
    }
  }

  result(t: { steps: number; submits: number; prefillMs: number; totalMs: number }): GenerateResult {
    const produced = this.tokens.reduce((a, g) => a + g.length, 0);
    return {
      tokens: this.tokens,
      logprobs: this.logprobs,
      values: this.values,
      finish: this.finish.map((f) => f ?? 'length'),
      stats: {
        steps: t.steps,
        submits: t.submits,
        prefillMs: t.prefillMs,
        decodeMs: t.totalMs - t.prefillMs,
        tokensPerSecond: produced / (t.totalMs / 1000),
      },
    };
  }
}

function endsWith(seq: number[], suffix: number[]): boolean {
  if (suffix.length === 0 || suffix.length > seq.length) return false;
  for (let i = 0; i < suffix.length; i++) if (seq[seq.length - suffix.length + i] !== suffix[i]) return false;
  return true;
}
