/**
 * Generation on the float64 CPU model with the same semantics as the GPU path (generate.ts):
 * left padding, a KV cache, the same counter-based uniforms and the same sampler, so both
 * backends choose the same tokens from the same logits.
 */
import { randUniformRef } from '../kernels/rand';
import { sampleRef } from '../kernels/sample';
import type { CpuModel, ForwardInput } from './cpu';
import {
  Collector,
  intersectMasks,
  padPrompts,
  validateGenerate,
  vocabLimitMask,
  type GenerateOptions,
  type GenerateResult,
} from './generate-common';

/** What generation needs of a float64 model: the lab GPT (cpu.ts) and the imported decoder (decoder-cpu.ts). */
export interface CpuDecoder<Cache> {
  readonly vocabSize: number;
  readonly contextLength: number;
  createKvCache(B: number, Tmax: number): Cache;
  /**
   * logits (BT, V) and, where the model has a value head, values (BT); with `lastOnly`, a model
   * that can gives only each row's last position (B, V) and says so (`lastOnly: true`)
   */
  forward(
    input: ForwardInput,
    kv: { cache: Cache; pos: number },
    lastOnly: boolean,
  ): { logits: Float64Array; values?: Float64Array; lastOnly?: boolean };
}

export function cpuGenerate(model: CpuModel, prompts: ArrayLike<number>[], opts: GenerateOptions): GenerateResult {
  return cpuGenerateOn(
    {
      vocabSize: model.config.vocabSize,
      contextLength: model.config.contextLength,
      createKvCache: (B, T) => model.createKvCache(B, T),
      forward: (i, kv) => model.forward(i, kv),
    },
    prompts,
    opts,
  );
}

export function cpuGenerateOn<Cache>(model: CpuDecoder<Cache>, prompts: ArrayLike<number>[], opts: GenerateOptions): GenerateResult {
  const { vocabSize: V, contextLength } = model;
  const { B, P, N } = validateGenerate(prompts, opts, contextLength);
  const t0 = performance.now();
  const { start, tokens, positions } = padPrompts(prompts, P);
  const cache = model.createKvCache(B, P + N);
  const collector = new Collector(B, N, opts);
  const baseMask = vocabLimitMask(B, V, opts.vocabLimit); // ids past the tokenizer's are never sampled

  const pre = model.forward({ tokens, positions, start, B, T: P }, { cache, pos: 0 }, true);
  let { logits, values } = pre;
  let rows = pre.lastOnly ? 1 : P; // logits hold `rows` positions per sequence; the last one is sampled from
  const prefillMs = performance.now() - t0;
  let steps = 0;
  for (let s = 0; s < N && !collector.done; s++) {
    const last = new Float64Array(B * V);
    const lastValues = new Float64Array(B);
    for (let b = 0; b < B; b++) {
      last.set(logits.subarray((b * rows + rows - 1) * V, (b * rows + rows) * V), b * V);
      lastValues[b] = values ? values[b * rows + rows - 1]! : 0;
    }
    const c = opts.constrain?.(s, collector.tokens) ?? null;
    const allowMask = intersectMasks(c?.allowMask, baseMask);
    const u = randUniformRef(opts.seed, s, B);
    const picked = sampleRef(last, B, V, u, {
      temperature: opts.temperature,
      topK: opts.topK ?? 0,
      topP: opts.topP ?? 1,
      bias: c?.bias ?? null,
      allowMask,
    });
    collector.push(picked.tokens, picked.logp, lastValues);
    steps++;
    if (s === N - 1 || collector.done) break;
    const stepPositions = Uint32Array.from(start, (st) => P + s - st);
    ({ logits, values } = model.forward({ tokens: picked.tokens, positions: stepPositions, start, B, T: 1 }, { cache, pos: P + s }, true));
    rows = 1;
  }
  return collector.result({ steps, submits: 0, prefillMs, totalMs: performance.now() - t0 });
}
