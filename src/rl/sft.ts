/**
 * Stage 1, supervised fine-tuning: cross-entropy on prompt -> demonstration with the
 * prompt masked, minibatches drawn from a seeded shuffle, the validation loss every
 * `evalEvery` steps, early stopping after `patience` validations without improvement, and the
 * best parameters kept.
 */
import type { PolicyBackend } from '../model/backend';
import type { TokenBatch } from '../model/optim';
import type { Tokenizer } from '../tokenizer';
import { Rng } from '../util/random';
import type { SftConfig } from './config';
import { chunks, completionBatch, encodeExample, type Sequence } from './data';
import type { GeneratedTask } from './tasks';

export interface SftPoint {
  step: number;
  loss: number;
  val_loss?: number;
}

export interface SftResult {
  /** the parameters with the lowest validation loss */
  best: Float32Array;
  bestStep: number;
  bestValLoss: number;
  steps: number;
  stoppedEarly: boolean;
  history: SftPoint[];
}

export function sftSequences(tok: Tokenizer, tasks: readonly GeneratedTask[]): Sequence[] {
  return tasks.map((t) => encodeExample(tok, t.prompt, t.demonstration));
}

/** Mean masked cross-entropy of `seqs` under the backend's current parameters (forward only). */
export async function validationLoss(backend: PolicyBackend, seqs: readonly Sequence[], padId: number, batch: number): Promise<number> {
  const V = backend.config.vocabSize;
  let sum = 0;
  let n = 0;
  for (const part of chunks(seqs, batch)) {
    const b = completionBatch(part, padId, backend.config.contextLength);
    const { logits } = await backend.forward({ tokens: b.tokens, B: b.B, T: b.T });
    for (let r = 0; r < b.B * b.T; r++) {
      if (!b.mask[r]) continue;
      let m = -Infinity;
      for (let i = 0; i < V; i++) m = Math.max(m, logits[r * V + i]!);
      let s = 0;
      for (let i = 0; i < V; i++) s += Math.exp(logits[r * V + i]! - m);
      sum += m + Math.log(s) - logits[r * V + b.targets[r]!]!;
      n++;
    }
  }
  return sum / n;
}

/**
 * The step's micro-batches. On the cpu backend the sequences are sorted by length and cut into
 * micro-batches of CPU_MICRO (gradient accumulation), so short sequences are not padded to the
 * longest: cost is proportional to B x T there. The GPU trainer needs one shape per step and
 * gets one batch.
 */
export function microBatches(seqs: Sequence[], padId: number, backend: Pick<PolicyBackend, 'kind' | 'config'>): TokenBatch[] {
  const maxT = backend.config.contextLength;
  if (backend.kind !== 'cpu') return [completionBatch(seqs, padId, maxT)];
  const sorted = [...seqs].sort((a, b) => a.ids.length - b.ids.length);
  return chunks(sorted, CPU_MICRO).map((part) => completionBatch(part, padId, maxT));
}

const CPU_MICRO = 4;

export interface SftHooks {
  onPoint?: (p: SftPoint) => void | Promise<void>;
  /** asked between steps; true stops the stage (the best parameters so far are kept) */
  shouldStop?: () => boolean;
}

export async function runSft(backend: PolicyBackend, tok: Tokenizer, train: readonly GeneratedTask[], val: readonly GeneratedTask[], cfg: SftConfig, seed: number, hooks: SftHooks = {}): Promise<SftResult> {
  if (!train.length) throw new Error('SFT: the train split is empty');
  if (!val.length) throw new Error('SFT: the validation split is empty (tasks.valShare > 0 is needed for early stopping)');
  const trainSeqs = sftSequences(tok, train);
  const valSeqs = sftSequences(tok, val);
  const rng = new Rng(seed);
  let order: number[] = [];
  const nextBatch = (): Sequence[] => {
    const out: Sequence[] = [];
    while (out.length < Math.min(cfg.batch, trainSeqs.length)) {
      if (!order.length) {
        order = trainSeqs.map((_, i) => i);
        for (let i = order.length - 1; i > 0; i--) {
          const j = Math.floor(rng.next() * (i + 1));
          [order[i], order[j]] = [order[j]!, order[i]!];
        }
      }
      out.push(trainSeqs[order.pop()!]!);
    }
    return out;
  };
  const history: SftPoint[] = [];
  let best = await backend.getParams();
  let bestValLoss = await validationLoss(backend, valSeqs, tok.padId, 64);
  let bestStep = 0;
  let bad = 0;
  let step = 0;
  let stoppedEarly = false;
  history.push({ step: 0, loss: NaN, val_loss: bestValLoss });
  while (step < cfg.maxSteps) {
    if (hooks.shouldStop?.()) break;
    const batches = microBatches(nextBatch(), tok.padId, backend);
    step++;
    const evalNow = step % cfg.evalEvery === 0 || step === cfg.maxSteps;
    const r = await backend.trainStep(batches, true);
    const point: SftPoint = { step, loss: r.loss ?? NaN };
    if (evalNow) {
      point.val_loss = await validationLoss(backend, valSeqs, tok.padId, 64);
      if (point.val_loss < bestValLoss) {
        bestValLoss = point.val_loss;
        bestStep = step;
        best = await backend.getParams();
        bad = 0;
      } else if (++bad >= cfg.patience) {
        stoppedEarly = true;
      }
    }
    history.push(point);
    await hooks.onPoint?.(point);
    if (stoppedEarly) break;
  }
  return { best, bestStep, bestValLoss, steps: step, stoppedEarly, history };
}
