/**
 * Token sequences for the RL pipeline. Prompt and completion are encoded separately and
 * concatenated (then EOS), exactly as generation sees them: the prompt is encoded alone and the
 * completion is sampled after it, so training never sees a merge across the boundary that
 * sampling could not produce.
 *
 * Batches are right-padded: causal attention means padding after a sequence never changes its
 * rows, and positions count from 0 at each sequence's first token, as in left-padded generation.
 */
import type { PolicyBackend } from '../model/backend';
import type { TokenBatch } from '../model/optim';
import type { TextTokenizer } from '../tokenizer/types';

export interface Sequence {
  /** prompt ids then completion ids (EOS included when the completion ended with it) */
  ids: number[];
  /** number of prompt ids: the completion's first id is at ids[promptLength] */
  promptLength: number;
}

export function encodeExample(tok: TextTokenizer, prompt: string, completion: string, withEos = true): Sequence {
  const p = Array.from(tok.encode(prompt));
  const c = Array.from(tok.encode(completion));
  if (withEos) c.push(tok.eosId);
  return { ids: [...p, ...c], promptLength: p.length };
}

/**
 * A right-padded batch: input ids[t], target ids[t + 1]; the mask selects the targets that are
 * completion tokens (the prompt is masked out). Sequences longer than `maxT + 1` are an error
 * naming the row.
 */
export function completionBatch(seqs: readonly Sequence[], padId: number, maxT: number): TokenBatch {
  if (!seqs.length) throw new Error('completionBatch: no sequences');
  const T = Math.max(...seqs.map((s) => s.ids.length - 1));
  seqs.forEach((s, b) => {
    if (s.ids.length - 1 > maxT)
      throw new Error(`completionBatch: sequence ${b} has ${s.ids.length} tokens; the model's context is ${maxT} (+1 for the last target)`);
    if (s.promptLength < 1 || s.promptLength >= s.ids.length) throw new Error(`completionBatch: sequence ${b} has no completion tokens`);
  });
  const B = seqs.length;
  const tokens = new Uint32Array(B * T).fill(padId);
  const targets = new Uint32Array(B * T).fill(padId);
  const mask = new Float32Array(B * T);
  seqs.forEach((s, b) => {
    for (let t = 0; t < s.ids.length - 1; t++) {
      tokens[b * T + t] = s.ids[t]!;
      targets[b * T + t] = s.ids[t + 1]!;
      // target t + 1 is a completion token when t + 1 >= promptLength
      if (t + 1 >= s.promptLength) mask[b * T + t] = 1;
    }
  });
  return { B, T, tokens, targets, mask };
}

/** Sequences per micro-batch on the cpu backend. */
export const CPU_MICRO = 4;

/**
 * The micro-batches of one optimizer step. On the cpu backend the items are sorted by length and
 * cut into groups of CPU_MICRO (gradient accumulation), so short sequences are not padded to
 * the longest: cost is proportional to B x T there. The GPU trainer needs one shape per step
 * and gets one group.
 */
export function stepGroups<T>(items: readonly T[], length: (x: T) => number, backend: Pick<PolicyBackend, 'kind'>): T[][] {
  if (backend.kind !== 'cpu') return [[...items]];
  return chunks(
    [...items].sort((a, b) => length(a) - length(b)),
    CPU_MICRO,
  );
}

/** Splits `xs` into chunks of at most `size`. */
export function chunks<T>(xs: readonly T[], size: number): T[][] {
  if (!(size >= 1)) throw new Error(`chunks: size must be >= 1, got ${size}`);
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}
