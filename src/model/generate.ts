/**
 * Batched generation on the GPU with a KV cache preallocated at prompt + maxNewTokens
 * positions. B prompts are left-padded to one length P and prefilled in one forward; then
 * each decode step samples on the GPU (temperature, top-k, top-p, optional bias and mask),
 * feeds the sampled ids straight into the next step's embedding, and records the token, its
 * log-probability and the value estimate. Several steps share one submit; tokens are read
 * back only to check stop conditions (every `checkEvery` steps), or at every step when a
 * `constrain` hook needs them.
 */
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { randUniform } from '../kernels/rand';
import { sample } from '../kernels/sample';
import {
  Collector,
  intersectMasks,
  padPrompts,
  validateGenerate,
  vocabLimitMask,
  type GenerateOptions,
  type GenerateResult,
} from './generate-common';
import type { GpuModel, KvCache } from './gpu';
import { allocActs, destroyActs, type ActBuffers } from './gpu-acts';

export type { GenerateOptions, GenerateResult } from './generate-common';

/** The buffers of one forward shape (B, T): inputs tokens, positions, start; outputs logits, values. */
export interface StepBuffers {
  B: number;
  T: number;
  tokens: GPUBuffer; // (B, T) u32
  positions: GPUBuffer; // (B, T) u32
  start: GPUBuffer; // (B) u32
  /** (B, T, V), or (B, V) when `lastOnly`: the last position's logits of each row */
  logits: GPUBuffer;
  /** (B, T) or (B) with `lastOnly` */
  values: GPUBuffer;
  lastOnly: boolean;
}

/** What generation needs of a model on the GPU: the lab GPT (gpu.ts) and the imported decoder (decoder-gpu.ts). */
export interface GpuDecoder<Cache, Step extends StepBuffers = StepBuffers> {
  readonly rt: GpuRuntime;
  readonly vocabSize: number;
  readonly contextLength: number;
  createKvCache(B: number, Tmax: number): Cache;
  destroyKvCache(cache: Cache): void;
  /** buffers for (B, T); `lastOnly` asks for the last position's logits only (a prefill), where the model can */
  allocStep(B: number, T: number, lastOnly: boolean): Step;
  destroyStep(s: Step): void;
  /** records a forward of s.T new positions from `pos` that extends the cache; tokens / positions may live elsewhere */
  recordForward(
    rec: Recorder,
    s: Step,
    kv: { cache: Cache; pos: number; tokens?: BufferBinding; positions?: BufferBinding },
  ): Promise<void>;
}

/** The lab GPT as a GpuDecoder: its activations for (B, T) serve as step buffers (it computes every position's logits). */
export function labDecoder(model: GpuModel): GpuDecoder<KvCache, ActBuffers & StepBuffers> {
  return {
    rt: model.rt,
    vocabSize: model.config.vocabSize,
    contextLength: model.config.contextLength,
    createKvCache: (B, Tmax) => model.createKvCache(B, Tmax),
    destroyKvCache: (cache) => {
      for (const l of cache.layers) {
        l.k.destroy();
        l.v.destroy();
      }
    },
    allocStep: (B, T) => Object.assign(allocActs(model.rt, model.config, B, T), { lastOnly: false }),
    destroyStep: (s) => destroyActs(s),
    recordForward: (rec, s, kv) => model.recordForward(rec, s, kv),
  };
}

export function generate(model: GpuModel, prompts: ArrayLike<number>[], opts: GenerateOptions): Promise<GenerateResult> {
  return generateOn(labDecoder(model), prompts, opts);
}

/** Generation on any GpuDecoder (see the file's comment). */
export async function generateOn<Cache, Step extends StepBuffers>(
  model: GpuDecoder<Cache, Step>,
  prompts: ArrayLike<number>[],
  opts: GenerateOptions,
): Promise<GenerateResult> {
  const { rt, vocabSize: V, contextLength } = model;
  const { B, P, N } = validateGenerate(prompts, opts, contextLength);
  const t0 = performance.now();
  const submits0 = rt.stats.submits;
  const { start, tokens, positions } = padPrompts(prompts, P);

  const cache = model.createKvCache(B, P + N);
  const prefill = model.allocStep(B, P, true);
  const step = model.allocStep(B, 1, true);
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
  const collector = new Collector(B, N, opts);
  const checkEvery = opts.constrain ? 1 : Math.max(1, opts.checkEvery ?? 8);
  let prefillMs = 0;
  let steps = 0;

  try {
    // Prefill: the whole prompt in one forward; keep the last position's logits and value.
    let rec: Recorder = rt.record('generate prefill');
    await model.recordForward(rec, prefill, { cache, pos: 0 });
    for (let b = 0; b < B; b++) {
      const row = prefill.lastOnly ? b : b * P + P - 1;
      rec.copy(prefill.logits, row * V * 4, out.lastLogits, b * V * 4, V * 4);
      rec.copy(prefill.values, row * 4, out.lastValues, b * 4, 4);
    }
    let pendingFrom = 0;
    // ids past the tokenizer's are masked at every step; the buffer holds this base mask unless a step's constraint replaced it
    const baseMask = vocabLimitMask(B, V, opts.vocabLimit);
    let maskIsBase = false;
    if (baseMask) {
      q.writeBuffer(out.mask, 0, baseMask);
      maskIsBase = true;
    }
    for (let s = 0; s < N; s++) {
      let useBias = false;
      let useMask = baseMask !== null;
      if (opts.constrain) {
        const c = opts.constrain(s, collector.tokens);
        if (c?.bias) {
          if (c.bias.length !== B * V) throw new Error(`generate: constrain() bias has ${c.bias.length} values, expected B*V = ${B * V}`);
          q.writeBuffer(out.bias, 0, c.bias);
          useBias = true;
        }
        if (c?.allowMask) {
          if (c.allowMask.length !== B * Math.ceil(V / 32))
            throw new Error(`generate: constrain() allowMask has ${c.allowMask.length} words, expected ${B * Math.ceil(V / 32)}`);
          q.writeBuffer(out.mask, 0, intersectMasks(c.allowMask, baseMask)!);
          useMask = true;
          maskIsBase = false;
        } else if (baseMask && !maskIsBase) {
          q.writeBuffer(out.mask, 0, baseMask);
          maskIsBase = true;
        }
      }
      rec.dispatch(rand, { out: out.u }, { n: B, seed: opts.seed, stream: s });
      rec.dispatch(
        sampler,
        { logits: out.lastLogits, u: out.u, bias: out.bias, allowMask: out.mask, tokens: out.sampled, logp: out.stepLogp },
        {
          B,
          V,
          temperature: opts.temperature,
          topK: opts.topK ?? 0,
          topP: opts.topP ?? 1,
          useBias,
          useMask,
        },
      );
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
        const [tkv, lpv, vlv] = [new Uint32Array(await tk), new Float32Array(await lp), new Float32Array(await vl)];
        for (let r = 0; r < s + 1 - pendingFrom; r++)
          collector.push(tkv.subarray(r * B, (r + 1) * B), lpv.subarray(r * B, (r + 1) * B), vlv.subarray(r * B, (r + 1) * B));
        pendingFrom = s + 1;
        if (collector.done) break;
        rec = rt.record(`generate steps ${s + 1}..`);
      }
    }
  } finally {
    model.destroyStep(prefill);
    model.destroyStep(step);
    model.destroyKvCache(cache);
    for (const b of Object.values(out)) b.destroy();
  }

  return collector.result({ steps, submits: rt.stats.submits - submits0, prefillMs, totalMs: performance.now() - t0 });
}
