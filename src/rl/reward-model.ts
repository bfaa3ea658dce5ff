/**
 * Stage 2, the reward model: a copy of the SFT model that learns to score prompt + completion,
 * trained on samples of the SFT policy labelled by execution (the test-based part of the reward).
 *
 * - `bt`: pairwise Bradley-Terry, loss -log sigmoid(r_preferred - r_other) over pairs of
 *   samples of the same task with different labels;
 * - `regression`: 0.5 (r - label)^2.
 * Tasks are split so that held-out pairwise accuracy measures generalisation to tasks the
 * model never saw labelled. With rm.valShare a share of the training tasks validates instead:
 * every rm.evalEvery steps their pairs' accuracy is measured and the best step's model is the
 * result (early stopping; the held-out tasks play no part in the choice).
 *
 * The score (rm.score): the value head at the last row ('value'); beta times the completion's mean
 * log-prob under the model's own LM head ('likelihood', SimPO's length-normalised implicit reward,
 * which before training is the SFT policy's likelihood, itself a ranking of the held-out pairs
 * that RmResult.baselines reports); or their sum.
 *
 * Every step trains through the backends' policy-gradient step, with r from a forward pass of the
 * same parameters just before (exact: the step's forward recomputes the same numbers), so no extra
 * kernel is needed (rmStep):
 * - the value part: the value loss alone at the last row, target r - N dL/dr, so the step's value
 *   gradient (r - target) / N is dL/dr (regression's target is then the label);
 * - the likelihood part: the policy term with oldLogp the log-probs just computed (ratio 1) and
 *   every action of a sequence given the advantage -N beta dL/dr / L, so that dL/dlogp of each of
 *   its L actions is beta dL/dr / L.
 */
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import type { PolicyBackend } from '../model/backend';
import type { RlBatch } from '../model/optim';
import { Rng } from '../util/random';
import type { RewardModelConfig } from './config';
import { actionCount, episodeBatches, scoreActions, type Episode } from './episodes';
import { completionBatch, type Sequence } from './data';
import { meanStd } from './advantages';
import { hashString } from './tasks/families';

export interface LabelledSample {
  task_id: string;
  seq: Sequence;
  /** execution label: higher is better */
  label: number;
}

export interface Pair {
  better: number;
  worse: number;
}

export interface RmPoint {
  step: number;
  loss: number;
  /** pairwise accuracy on the validation tasks' pairs, on the steps that validate */
  valAccuracy?: number;
}

export interface RmResult {
  params: Float32Array;
  /** pairwise accuracy on held-out tasks' pairs (NaN when there are none) */
  heldoutAccuracy: number;
  trainAccuracy: number;
  heldoutPairs: number;
  trainPairs: number;
  /**
   * with rm.valShare > 0: the validation pairs, the best step's accuracy on them, that step (the
   * result's model; 0 is the model before training), and the accuracy before training
   */
  valPairs?: number;
  valAccuracy?: number;
  bestStep?: number;
  valStartAccuracy?: number;
  /** mean and std of the scores of the training samples: the PPO reward standardises with them */
  scoreMean: number;
  scoreStd: number;
  history: RmPoint[];
  /**
   * What the held-out pairs' ranking would be without training, for reading heldoutAccuracy
   * against: the starting model's mean log-prob per completion token (the SFT policy's own
   * likelihood), and the longer or the shorter completion first. A tie counts half here (chance is
   * 50%; completions cut at rl.maxNewTokens often tie in length); NaN without held-out pairs.
   */
  baselines: RmBaselines;
}

export interface RmBaselines {
  policyMeanLogp: number;
  longer: number;
  shorter: number;
}

/** Every pair of samples of one task whose labels differ, the better first. */
export function makePairs(samples: readonly LabelledSample[]): Pair[] {
  const byTask = new Map<string, number[]>();
  samples.forEach((s, i) => byTask.set(s.task_id, [...(byTask.get(s.task_id) ?? []), i]));
  const pairs: Pair[] = [];
  for (const idx of byTask.values()) {
    for (let x = 0; x < idx.length; x++) {
      for (let y = x + 1; y < idx.length; y++) {
        const a = samples[idx[x]!]!;
        const b = samples[idx[y]!]!;
        if (a.label > b.label) pairs.push({ better: idx[x]!, worse: idx[y]! });
        else if (b.label > a.label) pairs.push({ better: idx[y]!, worse: idx[x]! });
      }
    }
  }
  return pairs;
}

/** How a reward model scores a sequence (RewardModelConfig.score and .beta). */
export type RmScoring = Pick<RewardModelConfig, 'score' | 'beta'>;

interface ScoreParts {
  /** the score of each sequence */
  scores: number[];
  /** per action: log-probs (with a likelihood part) and values (with a value part) */
  logp: Float64Array[];
  values: Float64Array[];
}

const hasValue = (s: RmScoring) => s.score !== 'likelihood';
const hasLikelihood = (s: RmScoring) => s.score !== 'value';

async function scoreParts(rm: PolicyBackend, seqs: readonly Sequence[], padId: number, scoring: RmScoring): Promise<ScoreParts> {
  const { logp, values } = await scoreActions(rm, seqs, padId, 1, { logits: hasLikelihood(scoring) });
  const scores = seqs.map((_, i) => {
    const v = values[i]!;
    const lp = logp[i]!;
    let s = hasValue(scoring) ? v[v.length - 1]! : 0;
    if (hasLikelihood(scoring)) s += (scoring.beta * lp.reduce((a, b) => a + b, 0)) / Math.max(1, lp.length);
    return s;
  });
  return { scores, logp, values };
}

/**
 * The reward model's score of each sequence: the value head at its last row (rm.score "value"),
 * beta times the mean log-prob of its completion tokens under the model's own LM head
 * ("likelihood", SimPO's implicit reward), or their sum ("value+likelihood").
 */
export async function rmScores(rm: PolicyBackend, seqs: readonly Sequence[], padId: number, scoring: RmScoring): Promise<number[]> {
  return (await scoreParts(rm, seqs, padId, scoring)).scores;
}

/** The scores of the samples `pairs` name, indexed as `samples` (only those samples go through the model). */
async function pairScores(
  rm: PolicyBackend,
  samples: readonly LabelledSample[],
  pairs: readonly Pair[],
  padId: number,
  scoring: RmScoring,
): Promise<number[]> {
  const idx = [...new Set(pairs.flatMap((p) => [p.better, p.worse]))];
  const r = await rmScores(
    rm,
    idx.map((i) => samples[i]!.seq),
    padId,
    scoring,
  );
  const scores: number[] = [];
  idx.forEach((i, k) => (scores[i] = r[k]!));
  return scores;
}

function pairAccuracy(pairs: readonly Pair[], scores: readonly number[], tie = 0): number {
  if (!pairs.length) return NaN;
  let right = 0;
  for (const p of pairs) right += scores[p.better]! > scores[p.worse]! ? 1 : scores[p.better] === scores[p.worse] ? tie : 0;
  return right / pairs.length;
}

const VALUE_ONLY: RlLossConfig = { clip: 0.2, vclip: 0, vfCoef: 1, entCoef: 0, klCoef: 0, invTemp: 1 };
const LIKELIHOOD_ONLY: RlLossConfig = { ...VALUE_ONLY, vfCoef: 0 };

/** An RlBatch whose only loss is the value at each sequence's last row, pulled toward `targets`. */
function valueBatch(seqs: readonly Sequence[], targets: readonly number[], padId: number, maxT: number): RlBatch {
  const base = completionBatch(seqs, padId, maxT);
  const { B, T } = base;
  const mask = new Float32Array(B * T);
  const returns = new Float32Array(B * T);
  seqs.forEach((s, i) => {
    const row = i * T + s.promptLength + actionCount(s) - 2;
    mask[row] = 1;
    returns[row] = targets[i]!;
  });
  const z = () => new Float32Array(B * T);
  return { ...base, mask, returns, oldLogp: z(), oldValues: z(), advantages: z(), refLogp: z() };
}

/**
 * The micro-batches of a step whose gradient is dL/dscore = g for each sequence, when the score
 * has a likelihood part: the policy-gradient term with oldLogp the log-probs just computed
 * (ratio 1, inside the clip) gives dL/dlogp_a = -A_a / N over the N action tokens, so
 * A_a = -N beta g / L for each of a sequence's L actions; with a value part too, the value at
 * the last action is pulled toward v - N g (gradient (v - target) / N = g) and every other
 * action's toward its own value (no gradient).
 */
function scoreGradBatches(
  rm: PolicyBackend,
  seqs: readonly Sequence[],
  parts: ScoreParts,
  g: readonly number[],
  scoring: RmScoring,
  padId: number,
): RlBatch[] {
  const N = seqs.reduce((a, s) => a + actionCount(s), 0);
  const eps: Episode[] = seqs.map((seq, i) => {
    const L = actionCount(seq);
    const values = parts.values[i]!;
    const returns = new Float64Array(L);
    if (hasValue(scoring)) {
      returns.set(values);
      returns[L - 1] = values[L - 1]! - N * g[i]!;
    }
    return {
      seq,
      oldLogp: parts.logp[i]!,
      values,
      refLogp: new Float64Array(L),
      advantages: new Float64Array(L).fill((-N * scoring.beta * g[i]!) / L),
      returns,
    };
  });
  return episodeBatches(eps, rm, padId);
}

/** One step's examples: pairs (the better first) for Bradley-Terry, or sequences and their labels for regression. */
export type RmBatch =
  | { objective: 'bt'; pairs: readonly (readonly [Sequence, Sequence])[] }
  | { objective: 'regression'; seqs: readonly Sequence[]; labels: readonly number[] };

function batchSeqs(batch: RmBatch): Sequence[] {
  return batch.objective === 'bt' ? batch.pairs.flatMap(([b, w]) => [b, w]) : [...batch.seqs];
}

/**
 * The loss of a batch given its sequences' scores (in batchSeqs order), and dL/dscore of each:
 * Bradley-Terry's mean -log sigmoid(r_better - r_worse), or regression's mean 0.5 (r - label)^2.
 */
export function rmLoss(batch: RmBatch, scores: readonly number[]): { loss: number; grad: number[] } {
  const grad = new Array<number>(scores.length);
  let loss = 0;
  if (batch.objective === 'bt') {
    const P = batch.pairs.length;
    for (let k = 0; k < P; k++) {
      const d = scores[2 * k]! - scores[2 * k + 1]!;
      loss += Math.log1p(Math.exp(-Math.abs(d))) + Math.max(0, -d); // -log sigmoid(d), stable
      const g = -1 / (1 + Math.exp(d)) / P; // dL / dr_better = -(1 - sigmoid(d)) / P; dL / dr_worse = -that
      grad[2 * k] = g;
      grad[2 * k + 1] = -g;
    }
    return { loss: loss / P, grad };
  }
  const n = scores.length;
  scores.forEach((r, i) => {
    const e = r - batch.labels[i]!;
    loss += 0.5 * e * e;
    grad[i] = e / n;
  });
  return { loss: loss / n, grad };
}

/**
 * One optimizer step of the reward model on `batch`: its scores under the current parameters, the
 * loss and its gradient with respect to each score, carried into the model by the backend's
 * policy-gradient step (see scoreGradBatches and valueBatch). Returns the loss before the step.
 */
export async function rmStep(rm: PolicyBackend, batch: RmBatch, scoring: RmScoring, padId: number): Promise<number> {
  const seqs = batchSeqs(batch);
  const parts = await scoreParts(rm, seqs, padId, scoring);
  const { loss, grad } = rmLoss(batch, parts.scores);
  if (hasLikelihood(scoring)) {
    await rm.rlStep(scoreGradBatches(rm, seqs, parts, grad, scoring, padId), scoring.score === 'likelihood' ? LIKELIHOOD_ONLY : VALUE_ONLY);
  } else {
    const N = seqs.length;
    const targets = parts.scores.map((r, i) => r - N * grad[i]!);
    await rm.rlStep([valueBatch(seqs, targets, padId, rm.config.contextLength)], VALUE_ONLY);
  }
  return loss;
}

/** Every task's samples got the same label: there is nothing to rank (the pipeline then runs without a reward model). */
export class NoPairsError extends Error {
  override readonly name = 'NoPairsError';
  constructor(samples: number) {
    super(
      `reward model: no training pairs among ${samples} samples (every task's samples got the same label); raise rm.samplesPerTask, or train SFT longer so that some samples pass`,
    );
  }
}

export interface RmHooks<P extends PolicyBackend = PolicyBackend> {
  onPoint?: (p: RmPoint) => void | Promise<void>;
  /**
   * A model holding `params` (the factory's fromParams), for early stopping when the best step is
   * not the last: the result is then scored with it, and it is returned as RmTrained.model.
   */
  reload?: (params: Float32Array) => P;
}

/** The result, and the model that holds its parameters: `rm` itself, or the reloaded best step's (the caller disposes it). */
export interface RmTrained<P extends PolicyBackend = PolicyBackend> extends RmResult {
  model: P;
}

export async function trainRewardModel<P extends PolicyBackend>(
  rm: P,
  samples: readonly LabelledSample[],
  cfg: RewardModelConfig,
  seed: number,
  padId: number,
  hooks: RmHooks<P> = {},
): Promise<RmTrained<P>> {
  const heldTask = (id: string) => (hashString(`${seed}/rm/${id}`) % 1000) / 1000 < cfg.heldoutShare;
  // validation: a share of the remaining tasks, by a second hash (so the held-out split is the same with or without it)
  const valTask = (id: string) => !heldTask(id) && cfg.valShare > 0 && (hashString(`${seed}/rm-val/${id}`) % 1000) / 1000 < cfg.valShare;
  const split = (id: string) => (heldTask(id) ? 'held' : valTask(id) ? 'val' : 'train');
  const trainIdx = samples.map((_, i) => i).filter((i) => split(samples[i]!.task_id) === 'train');
  const allPairs = makePairs(samples);
  const pairsOf = (w: string) => allPairs.filter((p) => split(samples[p.better]!.task_id) === w);
  const trainPairs = pairsOf('train');
  const heldPairs = pairsOf('held');
  const valPairs = pairsOf('val');
  if (cfg.objective === 'bt' && !trainPairs.length) throw new NoPairsError(samples.length);
  const validate = async (): Promise<number> => pairAccuracy(valPairs, await pairScores(rm, samples, valPairs, padId, cfg));
  const baselines = await rankBaselines(rm, samples, heldPairs, padId);
  // early stopping's candidates start with the model before any step (bestStep 0): with a likelihood
  // part it already ranks pairs, and training that only loses on validation is not kept
  let best: { step: number; acc: number; params: Float32Array } | null = valPairs.length
    ? { step: 0, acc: await validate(), params: await rm.getParams() }
    : null;
  const valStart = best?.acc;
  const rng = new Rng(seed);
  const pick = <T>(xs: readonly T[], n: number): T[] =>
    Array.from({ length: Math.min(n, xs.length) }, () => xs[Math.floor(rng.next() * xs.length)]!);
  const history: RmPoint[] = [];
  for (let step = 1; step <= cfg.steps; step++) {
    const batch: RmBatch =
      cfg.objective === 'bt'
        ? { objective: 'bt', pairs: pick(trainPairs, cfg.batch).map((p) => [samples[p.better]!.seq, samples[p.worse]!.seq] as const) }
        : (() => {
            const idx = pick(trainIdx, cfg.batch);
            return { objective: 'regression', seqs: idx.map((i) => samples[i]!.seq), labels: idx.map((i) => samples[i]!.label) };
          })();
    const loss = await rmStep(rm, batch, cfg, padId);
    const point: RmPoint = { step, loss };
    if (valPairs.length && (step % cfg.evalEvery === 0 || step === cfg.steps)) {
      point.valAccuracy = await validate();
      // the first best is kept on ties: fewer steps for the same validation accuracy
      if (!best || point.valAccuracy > best.acc) best = { step, acc: point.valAccuracy, params: await rm.getParams() };
    }
    history.push(point);
    await hooks.onPoint?.(point);
  }
  let model = rm;
  if (best && best.step !== cfg.steps) {
    if (!hooks.reload) throw new Error('trainRewardModel: early stopping (rm.valShare) needs hooks.reload');
    model = hooks.reload(best.params);
  }
  const scores = await rmScores(
    model,
    samples.map((s) => s.seq),
    padId,
    cfg,
  );
  const { mean, std } = meanStd(trainIdx.map((i) => scores[i]!));
  return {
    model,
    params: best?.params ?? (await rm.getParams()),
    heldoutAccuracy: pairAccuracy(heldPairs, scores),
    trainAccuracy: pairAccuracy(trainPairs, scores),
    heldoutPairs: heldPairs.length,
    trainPairs: trainPairs.length,
    ...(best ? { valPairs: valPairs.length, valAccuracy: best.acc, bestStep: best.step, valStartAccuracy: valStart! } : {}),
    scoreMean: mean,
    scoreStd: std,
    history,
    baselines,
  };
}

/** The untrained rankings of `pairs` (RmResult.baselines); only the pairs' samples go through the model. */
async function rankBaselines(
  rm: PolicyBackend,
  samples: readonly LabelledSample[],
  pairs: readonly Pair[],
  padId: number,
): Promise<RmBaselines> {
  // the likelihood score at beta 1 is the mean log-prob per completion token
  const meanLogp = await pairScores(rm, samples, pairs, padId, { score: 'likelihood', beta: 1 });
  const longer = pairAccuracy(
    pairs,
    samples.map((s) => actionCount(s.seq)),
    0.5,
  );
  // with ties at half, every pair the longer-first ranking gets wrong the shorter-first gets right
  return { policyMeanLogp: pairAccuracy(pairs, meanLogp, 0.5), longer, shorter: 1 - longer };
}
