/**
 * Test support for the ONNX tests: a tiny model, a byte-level tokenizer, and a hand-written
 * ONNX causal LM that is not our exporter's (a "bigram" model: an embedding and a MatMul).
 */
import type { ModelConfig } from '../model/config';
import { initParams } from '../model/init';
import { paramTable } from '../model/params';
import { EOS, PAD, Tokenizer } from '../tokenizer';
import { attr, GraphBuilder } from './graph';
import { DataType, encodeModel } from './proto';

/** The tiny shapes: quick on the CPU. */
export const TINY: ModelConfig = { nLayer: 2, dModel: 32, nHead: 2, contextLength: 32, vocabSize: 64 };

/** A random model, weights 5x GPT-2's init so activations are far from zero everywhere. */
export function tinySnapshot(config: ModelConfig = TINY, seed = 1, scale = 5): { config: ModelConfig; params: Float32Array } {
  return { config, params: initParams(paramTable(config), seed).map((x) => x * scale) };
}

/** Bytes only (no merges) plus EOS and PAD: 258 ids, one per byte. */
export function byteTokenizer(): Tokenizer {
  return new Tokenizer([], [EOS, PAD]);
}

/**
 * A bigram LM over V ids: logits[t] = onehot(ids[t]) @ W, W[a, next[a]] = margin, else 0; the
 * graph is Gather(I (V, V), input_ids) then MatMul(W): inputs input_ids only, output logits
 * only (no mask, positions, cache or value head). `tweak` edits the graph before encoding.
 */
export function bigramModel(
  V: number,
  next: ReadonlyMap<number, number>,
  o: { margin?: number; tweak?: (g: GraphBuilder) => void } = {},
): Uint8Array {
  const g = new GraphBuilder();
  const eye = new Float32Array(V * V);
  const w = new Float32Array(V * V);
  for (let a = 0; a < V; a++) eye[a * V + a] = 1;
  for (const [a, b] of next) w[a * V + b] = o.margin ?? 20;
  const ids = g.input('input_ids', DataType.INT64, ['batch', 'sequence']);
  const h = g.op('Gather', [g.weight('embedding', [V, V], eye), ids], { attrs: [attr.int('axis', 0)] }); // (B, T, V)
  g.op('MatMul', [h, g.weight('transition', [V, V], w)], { out: 'logits' }); // (B, T, V)
  g.output('logits', DataType.FLOAT, ['batch', 'sequence', V]);
  o.tweak?.(g);
  return encodeModel(g.model({ graphName: 'bigram', producer: 'hand-written test model' }));
}

/** The transition map that makes the bigram model continue `after` with `ids` then `eos`. */
export function chain(after: number, ids: readonly number[], eos: number): Map<number, number> {
  const seq = [after, ...ids, eos];
  if (new Set(seq.slice(0, -1)).size !== seq.length - 1)
    throw new Error(`chain: ids repeat (${seq.join(', ')}); a bigram cannot follow them`);
  return new Map(seq.slice(0, -1).map((a, i) => [a, seq[i + 1]!]));
}

/** Two tasks for the bigram model: it completes both with " x*2}", which passes the first only. */
export const BIGRAM_SUITE = [
  {
    task_id: 'double',
    language: 'javascript' as const,
    prompt: 'function f(x) {\n  return',
    entry_point: 'f',
    tests: 'console.assert(f(3) === 6);\n',
  },
  {
    task_id: 'plus-four',
    language: 'javascript' as const,
    prompt: 'function g(x) {\n    return',
    entry_point: 'g',
    tests: 'console.assert(g(3) === 7);\n',
  },
];
export const BIGRAM_COMPLETION = ' x*2}';

/** The bigram model that writes BIGRAM_COMPLETION then EOS after any prompt ending in "n", and its tokenizer. */
export function bigramForSuite(): { model: Uint8Array; tok: Tokenizer } {
  const tok = byteTokenizer();
  const after = tok.encode('n')[0]!;
  return { model: bigramModel(tok.vocabSize, chain(after, Array.from(tok.encode(BIGRAM_COMPLETION)), tok.eosId)), tok };
}
