/**
 * Episodes as the policy-gradient step sees them: a prompt, the sampled action ids, and per
 * action the old log-prob, the value, the reference log-prob, the advantage and the return.
 * Here: evaluating sequences under a model (per-action log-probs at the sampling temperature and
 * values, from one forward pass), and packing episodes into RlBatches.
 */
import { rowLogprob, rowLogprobEntropy } from '../kernels/logprob';
import type { PolicyBackend } from '../model/backend';
import type { RlBatch } from '../model/optim';
import { chunks, completionBatch, stepGroups, type Sequence } from './data';

export interface Episode {
  seq: Sequence;
  /** per action (ids after the prompt) */
  oldLogp: Float64Array;
  values: Float64Array;
  refLogp: Float64Array;
  advantages: Float64Array;
  returns: Float64Array;
}

export function actionCount(s: Sequence): number {
  return s.ids.length - s.promptLength;
}

/**
 * Per-action log-probs (logits / temperature) and values of each sequence under `backend`
 * (forward passes of at most `opts.batch` sequences, default 32). Row t of a sequence predicts
 * ids[t + 1], so action a (ids[promptLength + a]) is row promptLength + a - 1: the value there is
 * the value of the state the action was taken in.
 *
 * The sequences go through the model sorted by length (the results come back in the given order),
 * so a short one is not padded to the longest of its neighbours; every row depends only on its
 * own sequence's earlier tokens, so the numbers do not depend on which sequences share a pass.
 * The forward is told which rows' logits are read (the action rows; none with `opts.logits`
 * false, for a caller that needs only the values) and which rows are read at all (the action
 * rows): the float64 decoder computes the LM head on the first only, and nothing past a
 * sequence's last action. A backend that computes a shared prefix once (sharesPrefixes) gets the
 * sequences of one prompt in one pass instead, sorted by prompt, so a GRPO group's prompt is
 * computed once, not once per sample.
 */
export async function scoreActions(
  backend: PolicyBackend,
  seqs: readonly Sequence[],
  padId: number,
  invTemp: number,
  opts: { batch?: number; entropy?: boolean; logits?: boolean } = {},
): Promise<{ logp: Float64Array[]; values: Float64Array[]; entropy: Float64Array[] }> {
  const { batch = 32, entropy: withEntropy = false, logits: withLogits = true } = opts;
  const V = backend.config.vocabSize;
  const logp: Float64Array[] = new Array(seqs.length);
  const values: Float64Array[] = new Array(seqs.length);
  const entropy: Float64Array[] = new Array(seqs.length);
  const byLength = (x: number, y: number) => seqs[x]!.ids.length - seqs[y]!.ids.length || x - y;
  const prompt = backend.sharesPrefixes ? seqs.map((s) => s.ids.slice(0, s.promptLength).join(',')) : null;
  const order = seqs
    .map((_, i) => i)
    .sort(prompt ? (x, y) => (prompt[x]! < prompt[y]! ? -1 : prompt[x]! > prompt[y]! ? 1 : byLength(x, y)) : byLength);
  for (const idx of chunks(order, batch)) {
    const part = idx.map((i) => seqs[i]!);
    const b = completionBatch(part, padId, backend.config.contextLength);
    const logitRows = withLogits ? b.mask : new Float32Array(b.B * b.T);
    const out = await backend.forward({ tokens: b.tokens, B: b.B, T: b.T, logitRows, readRows: b.mask });
    part.forEach((s, i) => {
      const n = actionCount(s);
      const lp = new Float64Array(withLogits ? n : 0);
      const vs = new Float64Array(n);
      const ent = new Float64Array(withLogits && withEntropy ? n : 0);
      for (let a = 0; a < n; a++) {
        const row = i * b.T + s.promptLength + a - 1;
        const target = s.ids[s.promptLength + a]!;
        if (withLogits && withEntropy) {
          const r = rowLogprobEntropy(out.logits, row, V, invTemp, target);
          lp[a] = r.logp;
          ent[a] = r.entropy;
        } else if (withLogits) {
          lp[a] = rowLogprob(out.logits, row, V, invTemp, target);
        }
        vs[a] = out.values[row]!;
      }
      logp[idx[i]!] = lp;
      values[idx[i]!] = vs;
      entropy[idx[i]!] = ent;
    });
  }
  return { logp, values, entropy };
}

/** Packs episodes into one RlBatch (right-padded; the mask selects the actions). */
export function packEpisodes(eps: readonly Episode[], padId: number, maxT: number): RlBatch {
  const base = completionBatch(
    eps.map((e) => e.seq),
    padId,
    maxT,
  );
  const { B, T } = base;
  const z = () => new Float32Array(B * T);
  const b: RlBatch = { ...base, oldLogp: z(), oldValues: z(), advantages: z(), returns: z(), refLogp: z() };
  eps.forEach((e, i) => {
    for (let a = 0; a < actionCount(e.seq); a++) {
      const r = i * T + e.seq.promptLength + a - 1;
      b.oldLogp[r] = e.oldLogp[a]!;
      b.oldValues[r] = e.values[a]!;
      b.advantages[r] = e.advantages[a]!;
      b.returns[r] = e.returns[a]!;
      b.refLogp[r] = e.refLogp[a]!;
    }
  });
  return b;
}

/** A minibatch as the backend wants it: its micro-batches (stepGroups) of episodes. */
export function episodeBatches(eps: readonly Episode[], backend: Pick<PolicyBackend, 'kind' | 'config'>, padId: number): RlBatch[] {
  return stepGroups(eps, (e) => e.seq.ids.length, backend).map((part) => packEpisodes(part, padId, backend.config.contextLength));
}
