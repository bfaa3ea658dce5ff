/**
 * Stage 1, supervised fine-tuning: cross-entropy on prompt -> demonstration with the
 * prompt masked, minibatches drawn from a seeded shuffle, the validation loss every
 * `evalEvery` steps, early stopping after `patience` validations without improvement, and the
 * best parameters kept.
 */
import type { PolicyBackend } from '../model/backend';
import type { TokenBatch } from '../model/optim';
import type { TextTokenizer } from '../tokenizer/types';
import { Rng, shuffle } from '../util/random';
import type { SftConfig } from './config';
import { completionBatch, encodeExample, stepGroups, type Sequence } from './data';
import { scoreActions } from './episodes';
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

export function sftSequences(tok: TextTokenizer, tasks: readonly GeneratedTask[]): Sequence[] {
  return tasks.map((t) => encodeExample(tok, t.prompt, t.demonstration));
}

/** Mean cross-entropy of the completion tokens of `seqs` under the backend's current parameters (forward only). */
export async function validationLoss(backend: PolicyBackend, seqs: readonly Sequence[], padId: number, batch: number): Promise<number> {
  const { logp } = await scoreActions(backend, seqs, padId, 1, { batch });
  let sum = 0;
  let n = 0;
  for (const lp of logp) {
    for (const x of lp) sum -= x;
    n += lp.length;
  }
  return sum / n;
}

/** The step's micro-batches (stepGroups) of SFT sequences. */
export function microBatches(seqs: Sequence[], padId: number, backend: Pick<PolicyBackend, 'kind' | 'config'>): TokenBatch[] {
  return stepGroups(seqs, (s) => s.ids.length, backend).map((part) => completionBatch(part, padId, backend.config.contextLength));
}

/**
 * Where an interrupted SFT stage stands, saved at each validation: with the backend's
 * parameters and optimizer state at `step` and the best parameters, `runSft` continues exactly
 * where it stopped (the batch order is replayed from the seed).
 */
export interface SftProgress {
  step: number;
  bestStep: number;
  bestValLoss: number;
  /** validations since the last improvement */
  bad: number;
  history: SftPoint[];
}

export interface SftHooks {
  onPoint?: (p: SftPoint) => void | Promise<void>;
  /** asked between steps; true stops the stage (the best parameters so far are kept) */
  shouldStop?: () => boolean;
  /** awaited between steps, before shouldStop (a paused run waits in it) */
  gate?: () => Promise<void>;
  /** after each validation: the progress to save with the backend's state and `best` */
  onCheckpoint?: (p: SftProgress, best: Float32Array) => void | Promise<void>;
  /** continue from saved progress: the backend already holds that step's parameters and optimizer state */
  resume?: { progress: SftProgress; best: Float32Array };
}

export async function runSft(
  backend: PolicyBackend,
  tok: TextTokenizer,
  train: readonly GeneratedTask[],
  val: readonly GeneratedTask[],
  cfg: SftConfig,
  seed: number,
  hooks: SftHooks = {},
): Promise<SftResult> {
  if (!train.length) throw new Error('SFT: the train split is empty');
  if (!val.length) throw new Error('SFT: the validation split is empty (tasks.valShare > 0 is needed for early stopping)');
  const trainSeqs = sftSequences(tok, train);
  const valSeqs = sftSequences(tok, val);
  const rng = new Rng(seed);
  let order: number[] = [];
  const nextBatch = (): Sequence[] => {
    const out: Sequence[] = [];
    while (out.length < Math.min(cfg.batch, trainSeqs.length)) {
      if (!order.length)
        order = shuffle(
          trainSeqs.map((_, i) => i),
          rng,
        );
      out.push(trainSeqs[order.pop()!]!);
    }
    return out;
  };
  let history: SftPoint[] = [];
  let best: Float32Array;
  let bestValLoss: number;
  let bestStep = 0;
  let bad = 0;
  let step = 0;
  let stoppedEarly = false;
  if (hooks.resume) {
    const p = hooks.resume.progress;
    ({ step, bestStep, bestValLoss, bad } = p);
    history = [...p.history];
    best = hooks.resume.best;
    for (let k = 0; k < step; k++) nextBatch(); // the batches already trained on
  } else {
    best = await backend.getParams();
    bestValLoss = await validationLoss(backend, valSeqs, tok.padId, 64);
    history.push({ step: 0, loss: NaN, val_loss: bestValLoss });
  }
  while (step < cfg.maxSteps) {
    await hooks.gate?.();
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
    if (evalNow) await hooks.onCheckpoint?.({ step, bestStep, bestValLoss, bad, history }, best);
  }
  return { best, bestStep, bestValLoss, steps: step, stoppedEarly, history };
}
