/** The reward model's Bradley-Terry training through the value-only policy-gradient step. */
import { describe, expect, test } from 'vitest';
import { createBackend } from '../model/backend';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM } from '../model/optim';
import { paramTable } from '../model/params';
import { Rng } from '../util/random';
import { resolveConfig } from './config';
import { hashString } from './tasks/families';
import {
  makePairs,
  NoPairsError,
  rmLoss,
  rmScores,
  rmStep,
  trainRewardModel,
  type LabelledSample,
  type RmBatch,
  type RmScoring,
} from './reward-model';

const V = 16;
const config = { nLayer: 1, dModel: 16, nHead: 2, contextLength: 16, vocabSize: V };

/** Tasks of 4 prompt ids; a sample is better when its completion holds token 7, worse when it holds 9. */
function toySamples(n: number): LabelledSample[] {
  const rng = new Rng(5);
  const out: LabelledSample[] = [];
  for (let t = 0; t < n; t++) {
    const prompt = Array.from({ length: 4 }, () => 1 + Math.floor(rng.next() * 5));
    for (const good of [true, false]) {
      const body = Array.from({ length: 3 }, () => 1 + Math.floor(rng.next() * 5));
      body[Math.floor(rng.next() * 3)] = good ? 7 : 9;
      out.push({ task_id: `t${t}`, seq: { ids: [...prompt, ...body, 0], promptLength: 4 }, label: good ? 1 : 0 });
    }
  }
  return out;
}

describe('reward model', () => {
  test('pairs: every differently-labelled pair within a task, better first', () => {
    const s = [
      { task_id: 'a', seq: { ids: [1, 2], promptLength: 1 }, label: 1 },
      { task_id: 'a', seq: { ids: [1, 3], promptLength: 1 }, label: 0 },
      { task_id: 'a', seq: { ids: [1, 4], promptLength: 1 }, label: 0 },
      { task_id: 'b', seq: { ids: [1, 5], promptLength: 1 }, label: 1 },
    ];
    expect(makePairs(s)).toEqual([
      { better: 0, worse: 1 },
      { better: 0, worse: 2 },
    ]);
  });

  test.each(['value', 'likelihood'] as const)(
    'Bradley-Terry training ranks held-out pairs it never saw: score %s',
    async (score) => {
      const cfg = { ...resolveConfig('tiny').rm, score, steps: 60, batch: 8, lr: 1e-2, heldoutShare: 0.3 };
      const rm = createBackend('cpu', {
        config,
        params: initParams(paramTable(config), 2),
        optim: { ...DEFAULT_OPTIM, lr: cfg.lr, weightDecay: 0 },
      });
      const samples = toySamples(40);
      const before = await rmScores(
        rm,
        samples.map((s) => s.seq),
        15,
        cfg,
      );
      const r = await trainRewardModel(rm, samples, cfg, 1, 15);
      expect(r.heldoutPairs).toBeGreaterThan(4);
      expect(r.history[r.history.length - 1]!.loss).toBeLessThan(r.history[0]!.loss);
      expect(r.trainAccuracy).toBeGreaterThan(0.9);
      expect(r.heldoutAccuracy).toBeGreaterThan(0.8);
      const after = await rmScores(
        rm,
        samples.map((s) => s.seq),
        15,
        cfg,
      );
      expect(after).not.toEqual(before);
      expect(Number.isFinite(r.scoreStd) && r.scoreStd > 0).toBe(true);
    },
    120_000,
  );

  // One step with Adam at beta1 = beta2 = 0, eps 1 and lr 1 moves every parameter by -g / (|g| + 1): the
  // step's gradient g read back exactly, then checked against central differences of the loss
  // (rmLoss of rmScores, float64 on the float32 forward) along random directions.
  for (const [score, objective] of [
    ['value', 'bt'],
    ['likelihood', 'bt'],
    ['value+likelihood', 'bt'],
    ['value+likelihood', 'regression'],
  ] as const) {
    test(`a step's gradient is the gradient of the loss of the scores: ${score}, ${objective}`, async () => {
      const scoring: RmScoring = { score, beta: 1.7 };
      const params = initParams(paramTable(config), 4);
      const optim = { ...DEFAULT_OPTIM, lr: 1, beta1: 0, beta2: 0, eps: 1, weightDecay: 0, gradClip: 0 };
      const make = (p: Float32Array) => createBackend('cpu', { config, params: p, optim });
      const samples = toySamples(6);
      const batch: RmBatch =
        objective === 'bt'
          ? { objective, pairs: [0, 1, 2, 3, 4].map((t) => [samples[2 * t]!.seq, samples[2 * t + 1]!.seq] as const) }
          : { objective, seqs: samples.map((x) => x.seq), labels: samples.map((x, i) => x.label + 0.3 * i) };
      const seqs = batch.objective === 'bt' ? batch.pairs.flat() : batch.seqs;
      const lossAt = async (p: Float32Array) => rmLoss(batch, await rmScores(make(p), seqs, 15, scoring)).loss;
      const m = make(params);
      const loss = await rmStep(m, batch, scoring, 15);
      expect(loss).toBeCloseTo(await lossAt(params), 6);
      const after = await m.getParams();
      const g = Float64Array.from(after, (x, i) => {
        const d = params[i]! - x; // = g / (|g| + 1)
        return d / (1 - Math.abs(d));
      });
      expect(Math.hypot(...g)).toBeGreaterThan(1e-3);
      const rng = new Rng(9);
      for (let k = 0; k < 3; k++) {
        const u = Float64Array.from(params, () => rng.next() - 0.5);
        const h = 1e-2 / Math.hypot(...u);
        const shifted = (sgn: number) => Float32Array.from(params, (x, i) => x + sgn * h * u[i]!);
        const fd = ((await lossAt(shifted(1))) - (await lossAt(shifted(-1)))) / (2 * h);
        const dot = g.reduce((a, x, i) => a + x * u[i]!, 0);
        expect(Math.abs(dot - fd)).toBeLessThan(0.02 * Math.abs(fd) + 2e-4);
      }
    }, 60_000);
  }

  test('early stopping: validation tasks apart from the held-out ones, the best step kept and scored with its own parameters', async () => {
    const cfg = { ...resolveConfig('tiny').rm, steps: 30, batch: 8, lr: 3e-2, heldoutShare: 0.3, valShare: 0.3, evalEvery: 5 };
    const make = (params: Float32Array) =>
      createBackend('cpu', { config, params, optim: { ...DEFAULT_OPTIM, lr: cfg.lr, weightDecay: 0 } });
    const samples = toySamples(40);
    const plain = await trainRewardModel(make(initParams(paramTable(config), 2)), samples, { ...cfg, valShare: 0 }, 1, 15);
    expect(plain.bestStep).toBeUndefined();
    const reloaded: Float32Array[] = [];
    const rm = make(initParams(paramTable(config), 2));
    const r = await trainRewardModel(rm, samples, cfg, 1, 15, {
      reload: (p) => {
        reloaded.push(p);
        return make(p);
      },
    });
    // the held-out tasks are the same with and without validation; validation takes from the training pairs
    expect(r.heldoutPairs).toBe(plain.heldoutPairs);
    expect(r.valPairs).toBeGreaterThan(4);
    expect(r.trainPairs + r.valPairs!).toBe(plain.trainPairs);
    const validated = r.history.filter((h) => h.valAccuracy !== undefined);
    expect(validated.map((h) => h.step)).toEqual([5, 10, 15, 20, 25, 30]);
    // the candidates: the untrained model (step 0), then every validated step; the first best is kept
    const bestAcc = Math.max(r.valStartAccuracy!, ...validated.map((h) => h.valAccuracy!));
    expect(r.valAccuracy).toBe(bestAcc);
    expect(r.bestStep).toBe(r.valStartAccuracy === bestAcc ? 0 : validated.find((h) => h.valAccuracy === bestAcc)!.step);
    expect(r.bestStep).toBeGreaterThan(0); // the toy task is learnt: training beats the random head
    // the result's model holds the kept step's parameters: reloaded unless it was the last step
    expect(reloaded.length).toBe(r.bestStep === cfg.steps ? 0 : 1);
    expect(r.model === rm).toBe(r.bestStep === cfg.steps);
    expect(Array.from(await r.model.getParams())).toEqual(Array.from(r.params));
    await expect(
      trainRewardModel(make(initParams(paramTable(config), 2)), samples, { ...cfg, evalEvery: 1, lr: 0 }, 1, 15),
    ).rejects.toThrow(/early stopping \(rm.valShare\) needs hooks.reload/);
  }, 120_000);

  test('early stopping keeps the untrained model when every step loses on validation', async () => {
    // the likelihood of the untrained model ranks the toy pairs one way; the training tasks' labels
    // are flipped, so every step moves the validation pairs the wrong way
    const cfg = {
      ...resolveConfig('tiny').rm,
      score: 'likelihood' as const,
      steps: 12,
      batch: 8,
      lr: 3e-2,
      heldoutShare: 0.3,
      valShare: 0.3,
      evalEvery: 4,
    };
    const params = initParams(paramTable(config), 2);
    const make = (p: Float32Array) => createBackend('cpu', { config, params: p, optim: { ...DEFAULT_OPTIM, lr: cfg.lr, weightDecay: 0 } });
    const held = (id: string) => (hashString(`1/rm/${id}`) % 1000) / 1000 < cfg.heldoutShare;
    const val = (id: string) => !held(id) && (hashString(`1/rm-val/${id}`) % 1000) / 1000 < cfg.valShare;
    // the untrained model's ranking of each task's pair decides its validation label: right before training
    const m = make(params);
    const start = await rmScores(
      m,
      toySamples(40).map((x) => x.seq),
      15,
      cfg,
    );
    const samples = toySamples(40).map((x, i) => {
      const other = i % 2 ? i - 1 : i + 1;
      const startRight = start[i]! > start[other]! ? 1 : 0; // this one ranks first before training
      return { ...x, label: val(x.task_id) ? startRight : 1 - startRight };
    });
    const r = await trainRewardModel(make(params), samples, cfg, 1, 15, { reload: make });
    expect(r.valStartAccuracy).toBe(1);
    expect(r.bestStep).toBe(0);
    expect(r.history.filter((h) => h.valAccuracy !== undefined).every((h) => h.valAccuracy! < 1)).toBe(true);
    expect(Array.from(await r.model.getParams())).toEqual(Array.from(params));
    m.dispose();
  }, 120_000);

  test("baselines: the held-out pairs ranked untrained, by the starting model's mean log-prob per completion token and by length", async () => {
    const cfg = { ...resolveConfig('tiny').rm, steps: 2, batch: 4, lr: 1e-2, heldoutShare: 0.4 };
    const params = initParams(paramTable(config), 3);
    const make = () => createBackend('cpu', { config, params, optim: { ...DEFAULT_OPTIM, lr: cfg.lr, weightDecay: 0 } });
    // the better sample of each task is one token longer
    const samples = toySamples(30).map((x) => (x.label ? { ...x, seq: { ...x.seq, ids: [...x.seq.ids.slice(0, -1), 3, 0] } } : x));
    const r = await trainRewardModel(make(), samples, cfg, 1, 15);
    expect(r.heldoutPairs).toBeGreaterThan(4);
    expect(r.baselines.longer).toBe(1);
    expect(r.baselines.shorter).toBe(0);
    // completions of one length: every pair ties, and a tie counts half
    const same = await trainRewardModel(make(), toySamples(30), cfg, 1, 15);
    expect([same.baselines.longer, same.baselines.shorter]).toEqual([0.5, 0.5]);
    // the mean log-prob, one sequence at a time through the untrained model's full logits
    const m = make();
    const meanLogp = async (ids: number[], promptLength: number) => {
      const { logits } = await m.forward({ tokens: Int32Array.from(ids), B: 1, T: ids.length });
      let sum = 0;
      for (let t = promptLength; t < ids.length; t++) {
        const row = Array.from(logits.subarray((t - 1) * V, t * V));
        const max = Math.max(...row);
        const lse = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
        sum += row[ids[t]!]! - lse;
      }
      return sum / (ids.length - promptLength);
    };
    const byTask = new Map<string, LabelledSample[]>();
    for (const x of samples) byTask.set(x.task_id, [...(byTask.get(x.task_id) ?? []), x]);
    const heldTasks = [...byTask.keys()].filter((id) => (hashString(`1/rm/${id}`) % 1000) / 1000 < cfg.heldoutShare);
    let right = 0;
    for (const id of heldTasks) {
      const [good, bad] = [...byTask.get(id)!].sort((a, b) => b.label - a.label);
      if ((await meanLogp(good!.seq.ids, 4)) > (await meanLogp(bad!.seq.ids, 4))) right++;
    }
    expect(heldTasks.length).toBe(r.heldoutPairs);
    expect(r.baselines.policyMeanLogp).toBeCloseTo(right / heldTasks.length, 10);
    m.dispose();
  }, 120_000);

  test('all samples labelled alike: a clear error the pipeline turns into a skipped stage', async () => {
    const cfg = { ...resolveConfig('tiny').rm, steps: 1 };
    const rm = createBackend('cpu', { config, params: initParams(paramTable(config), 2), optim: DEFAULT_OPTIM });
    const samples = toySamples(3).map((s) => ({ ...s, label: 0 }));
    await expect(trainRewardModel(rm, samples, cfg, 1, 15)).rejects.toThrow(NoPairsError);
  });
});
