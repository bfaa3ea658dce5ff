/**
 * Batched generation on the GPU with a KV cache preallocated at prompt + maxNewTokens
 * positions. B prompts are left-padded to one length P and prefilled in one forward; then
 * each decode step samples on the GPU (temperature, top-k, top-p, optional bias and mask),
 * feeds the sampled ids straight into the next step's embedding, and records the token, its
 * log-probability and the value estimate. Several steps share one submit; tokens are read
 * back only to check stop conditions (every `checkEvery` steps), or at every step when a
 * `constrain` hook needs them.
 */
import type { Recorder } from '../gpu/recorder';
import { randUniform } from '../kernels/rand';
import { NO_TOKEN, sample } from '../kernels/sample';
import type { GpuModel, KvCache } from './gpu';
import { allocActs, destroyActs, type ActBuffers } from './gpu-acts';

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
  stats: { steps: number; submits: number; prefillMs: number; decodeMs: number; tokensPerSecond: number };
}

export async function generate(model: GpuModel, prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult> {
  const { rt, config } = model;
  const { vocabSize: V, contextLength } = config;
  const B = prompts.length;
  if (B < 1) throw new Error('generate: no prompts');
  if (prompts.some((p) => p.length < 1)) throw new Error('generate: every prompt needs at least one token');
  const P = Math.max(...prompts.map((p) => p.length));
  const N = opts.maxNewTokens;
  if (!Number.isInteger(N) || N < 1) throw new Error(`generate: maxNewTokens must be a positive integer, got ${N}`);
  if (P + N > contextLength) throw new Error(`generate: prompt (${P}) + maxNewTokens (${N}) exceeds contextLength ${contextLength}`);
  const t0 = performance.now();
  const submits0 = rt.stats.submits;

  // Left padding: row b's prompt occupies [start[b], P); its positions count from there.
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

  const cache = model.createKvCache(B, P + N);
  const prefill = allocActs(rt, config, B, P);
  const step = allocActs(rt, config, B, 1);
  // Step-major outputs; the positions table has a 256-byte row stride so each row can be bound.
  const stride = Math.ceil(B / 64) * 64;
  const out = {
    tokens: rt.storage(N * B * 4, 'generated tokens'), // (N, B) u32
    logp: rt.storage(N * B * 4, 'generated logp'), // (N, B)
    values: rt.storage(N * B * 4, 'generated values'), // (N, B)
    sampled: rt.storage(B * 4, 'sampled'), // (B) u32
    stepLogp: rt.storage(B * 4, 'sampled logp'), // (B)
    u: rt.storage(B * 4, 'uniforms'), // (B)
    lastLogits: rt.storage(B * V * 4, 'last logits'), // (B, V)
    lastValues: rt.storage(B * 4, 'last values'), // (B)
    stepPositions: rt.storage(N * stride * 4, 'step positions'), // (N, stride) u32
    bias: rt.storage(B * V * 4, 'logit bias'), // (B, V)
    mask: rt.storage(B * Math.ceil(V / 32) * 4, 'allow mask'), // (B, W) u32
  };
  const q = rt.device.queue;
  q.writeBuffer(prefill.tokens, 0, tokens);
  q.writeBuffer(prefill.positions, 0, positions);
  q.writeBuffer(prefill.start, 0, start);
  q.writeBuffer(step.start, 0, start);
  const table = new Uint32Array(N * stride);
  for (let s = 0; s < N; s++) for (let b = 0; b < B; b++) table[s * stride + b] = P + s - start[b]!;
  q.writeBuffer(out.stepPositions, 0, table);

  const [rand, sampler] = await Promise.all([rt.compile(randUniform), rt.compile(sample)]);
  const generated: number[][] = prompts.map(() => []);
  const logprobs: number[][] = prompts.map(() => []);
  const values: number[][] = prompts.map(() => []);
  const finish: (FinishReason | null)[] = prompts.map(() => null);
  const checkEvery = opts.constrain ? 1 : Math.max(1, opts.checkEvery ?? 8);
  let prefillMs = 0;
  let steps = 0;

  try {
    // Prefill: the whole prompt in one forward; keep the last position's logits and value.
    let rec: Recorder = rt.record('generate prefill');
    await model.recordForward(rec, prefill, { cache, pos: 0 });
    for (let b = 0; b < B; b++) {
      const row = b * P + P - 1;
      rec.copy(prefill.logits, row * V * 4, out.lastLogits, b * V * 4, V * 4);
      rec.copy(prefill.values, row * 4, out.lastValues, b * 4, 4);
    }
    let pendingFrom = 0;
    for (let s = 0; s < N; s++) {
      let useBias = false;
      let useMask = false;
      if (opts.constrain) {
        const c = opts.constrain(s, generated);
        if (c?.bias) {
          if (c.bias.length !== B * V) throw new Error(`generate: constrain() bias has ${c.bias.length} values, expected B*V = ${B * V}`);
          q.writeBuffer(out.bias, 0, c.bias);
          useBias = true;
        }
        if (c?.allowMask) {
          if (c.allowMask.length !== B * Math.ceil(V / 32)) throw new Error(`generate: constrain() allowMask has ${c.allowMask.length} words, expected ${B * Math.ceil(V / 32)}`);
          q.writeBuffer(out.mask, 0, c.allowMask);
          useMask = true;
        }
      }
      rec.dispatch(rand, { out: out.u }, { n: B, seed: opts.seed, stream: s });
      rec.dispatch(sampler, { logits: out.lastLogits, u: out.u, bias: out.bias, allowMask: out.mask, tokens: out.sampled, logp: out.stepLogp }, {
        B, V, temperature: opts.temperature, topK: opts.topK ?? 0, topP: opts.topP ?? 1, useBias, useMask,
      });
      rec.copy(out.sampled, 0, out.tokens, s * B * 4, B * 4);
      rec.copy(out.stepLogp, 0, out.logp, s * B * 4, B * 4);
      rec.copy(out.lastValues, 0, out.values, s * B * 4, B * 4);
      steps++;
      const last = s === N - 1;
      if (!last) {
        const positionsRow = { buffer: out.stepPositions, offset: s * stride * 4, size: B * 4 };
        await model.recordForward(rec, step, { cache, pos: P + s, tokens: out.sampled, positions: positionsRow });
        rec.copy(step.logits, 0, out.lastLogits, 0, B * V * 4);
        rec.copy(step.values, 0, out.lastValues, 0, B * 4);
      }
      if (last || (s + 1 - pendingFrom) % checkEvery === 0) {
        const range = [pendingFrom * B * 4, (s + 1 - pendingFrom) * B * 4] as const;
        const tk = rec.read(out.tokens, ...range);
        const lp = rec.read(out.logp, ...range);
        const vl = rec.read(out.values, ...range);
        await rec.submit();
        if (pendingFrom === 0) prefillMs = performance.now() - t0;
        collect(new Uint32Array(await tk), new Float32Array(await lp), new Float32Array(await vl), pendingFrom, s + 1);
        pendingFrom = s + 1;
        if (finish.every((f) => f !== null)) break;
        rec = rt.record(`generate steps ${s + 1}..`);
      }
    }
  } finally {
    for (const a of [prefill, step] as ActBuffers[]) destroyActs(a);
    for (const l of cache.layers) {
      l.k.destroy();
      l.v.destroy();
    }
    for (const b of Object.values(out)) b.destroy();
  }

  function collect(tk: Uint32Array, lp: Float32Array, vl: Float32Array, from: number, to: number): void {
    for (let s = from; s < to; s++) {
      for (let b = 0; b < B; b++) {
        if (finish[b] !== null) continue;
        const i = (s - from) * B + b;
        const id = tk[i]!;
        if (id === NO_TOKEN) {
          finish[b] = 'no-token';
          continue;
        }
        generated[b]!.push(id);
        logprobs[b]!.push(lp[i]!);
        values[b]!.push(vl[i]!);
        if (opts.eosId !== undefined && id === opts.eosId) finish[b] = 'eos';
        else if (opts.stop?.some((st) => endsWith(generated[b]!, st))) finish[b] = 'stop';
        else if (generated[b]!.length === N) finish[b] = 'length';
      }
    }
  }

  const total = performance.now() - t0;
  const produced = generated.reduce((a, g) => a + g.length, 0);
  return {
    tokens: generated,
    logprobs,
    values,
    finish: finish.map((f) => f ?? 'length'),
    stats: { steps, submits: rt.stats.submits - submits0, prefillMs, decodeMs: total - prefillMs, tokensPerSecond: produced / (total / 1000) },
  };
}

function endsWith(seq: number[], suffix: number[]): boolean {
  if (suffix.length === 0 || suffix.length > seq.length) return false;
  for (let i = 0; i < suffix.length; i++) if (seq[seq.length - suffix.length + i] !== suffix[i]) return false;
  return true;
}
