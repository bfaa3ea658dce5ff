/**
 * Stage 2, the reward model: a copy of the SFT model whose scalar head, read at the last
 * position of prompt + completion, is trained on samples of the SFT policy labelled by
 * execution (the test-based part of the reward).
 *
 * - `bt`: pairwise Bradley-Terry, loss -log sigmoid(r_preferred - r_other) over pairs of
 *   samples of the same task with different labels;
 * - `regression`: 0.5 (r - label)^2.
 * Tasks are split so that held-out pairwise accuracy measures generalisation to tasks the
 * model never saw labelled. With rm.valShare a share of the training tasks validates instead:
 * every rm.evalEvery steps their pairs' accuracy is measured and the best step's model is the
 * result (early stopping; the held-out tasks play no part in the choice).
 *
 * Both objectives train through the backends' policy-gradient step with only the value loss on
 * (vfCoef 1, advantages 0, entropy 0): regression sets the value target to the label; for
 * Bradley-Terry the step's value gradient (r - target) / N is made equal to the pairwise
 * gradient by setting target = r - N dL/dr, with r from a forward pass of the same parameters
 * just before (exact: the step's forward recomputes the same r). No extra kernel is needed.
 */
import type { RlLossConfig } from '../kernels/ppo_loss_ref';
import type { PolicyBackend } from '../model/backend';
import type { RlBatch } from '../model/optim';
import { Rng } from '../util/random';
import type { RewardModelConfig } from './config';
import { actionCount, scoreActions } from './episodes';
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
  /** with rm.valShare > 0: the validation pairs, the best step's accuracy on them, and that step (the result's model) */
  valPairs?: number;
  valAccuracy?: number;
  bestStep?: number;
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

/** The reward model's score of each sequence: the value head at its last row. */
export async function rmScores(rm: PolicyBackend, seqs: readonly Sequence[], padId: number): Promise<number[]> {
  const { values } = await scoreActions(rm, seqs, padId, 1, { logits: false });
  return values.map((v) => v[v.length - 1]!);
}

function pairAccuracy(pairs: readonly Pair[], scores: readonly number[], tie = 0): number {
  if (!pairs.length) return NaN;
  let right = 0;
  for (const p of pairs) right += scores[p.better]! > scores[p.worse]! ? 1 : scores[p.better] === scores[p.worse] ? tie : 0;
  return right / pairs.length;
}

const VALUE_ONLY: RlLossConfig = { clip: 0.2, vclip: 0, vfCoef: 1, entCoef: 0, klCoef: 0, invTemp: 1 };

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
  const maxT = rm.config.contextLength;
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
  // the validation pairs' samples, scored at each validation (indices into samples, and back)
  const valIdx = [...new Set(valPairs.flatMap((p) => [p.better, p.worse]))];
  const validate = async (): Promise<number> => {
    const r = await rmScores(
      rm,
      valIdx.map((i) => samples[i]!.seq),
      padId,
    );
    const scores: number[] = [];
    valIdx.forEach((i, k) => (scores[i] = r[k]!));
    return pairAccuracy(valPairs, scores);
  };
  const baselines = await rankBaselines(rm, samples, heldPairs, padId);
  let best: { step: number; acc: number; params: Float32Array } | null = null;
  const rng = new Rng(seed);
  const pick = <T>(xs: readonly T[], n: number): T[] =>
    Array.from({ length: Math.min(n, xs.length) }, () => xs[Math.floor(rng.next() * xs.length)]!);
  const history: RmPoint[] = [];
  for (let step = 1; step <= cfg.steps; step++) {
    let seqs: Sequence[];
    let targets: number[];
    let loss = 0;
    if (cfg.objective === 'bt') {
      const pairs = pick(trainPairs, cfg.batch);
      seqs = pairs.flatMap((p) => [samples[p.better]!.seq, samples[p.worse]!.seq]);
      const r = await rmScores(rm, seqs, padId);
      const N = seqs.length;
      const P = pairs.length;
      targets = new Array<number>(N);
      for (let k = 0; k < P; k++) {
        const d = r[2 * k]! - r[2 * k + 1]!;
        const sig = 1 / (1 + Math.exp(-d));
        loss += Math.log1p(Math.exp(-Math.abs(d))) + Math.max(0, -d); // -log sigmoid(d), stable
        const g = -(1 - sig) / P; // dL / dr_better; dL / dr_worse = -g
        targets[2 * k] = r[2 * k]! - N * g;
        targets[2 * k + 1] = r[2 * k + 1]! + N * g;
      }
      loss /= P;
    } else {
      const idx = pick(trainIdx, cfg.batch);
      seqs = idx.map((i) => samples[i]!.seq);
      targets = idx.map((i) => samples[i]!.label);
    }
    const out = await rm.rlStep([valueBatch(seqs, targets, padId, maxT)], VALUE_ONLY);
    if (cfg.objective === 'regression') loss = out.sums.valueLoss / out.sums.tokens;
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
  );
  const { mean, std } = meanStd(trainIdx.map((i) => scores[i]!));
  return {
    model,
    params: best?.params ?? (await rm.getParams()),
    heldoutAccuracy: pairAccuracy(heldPairs, scores),
    trainAccuracy: pairAccuracy(trainPairs, scores),
    heldoutPairs: heldPairs.length,
    trainPairs: trainPairs.length,
    ...(best ? { valPairs: valPairs.length, valAccuracy: best.acc, bestStep: best.step } : {}),
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
  const idx = [...new Set(pairs.flatMap((p) => [p.better, p.worse]))];
  const { logp } = await scoreActions(
    rm,
    idx.map((i) => samples[i]!.seq),
    padId,
    1,
  );
  const meanLogp: number[] = [];
  idx.forEach((i, k) => (meanLogp[i] = logp[k]!.reduce((a, b) => a + b, 0) / Math.max(1, logp[k]!.length)));
  const longer = pairAccuracy(
    pairs,
    samples.map((s) => actionCount(s.seq)),
    0.5,
  );
  // with ties at half, every pair the longer-first ranking gets wrong the shorter-first gets right
  return { policyMeanLogp: pairAccuracy(pairs, meanLogp, 0.5), longer, shorter: 1 - longer };
}
