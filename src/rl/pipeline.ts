/**
 * The staged pipeline, the same code headless (`coderl train`) and in the app:
 *   tasks + tokenizer -> SFT (early-stopped) -> reward model -> PPO / GRPO -> evaluation.
 * Everything a run makes goes to a RunDir: config.json, tasks/*.jsonl, tokenizer.json,
 * metrics.jsonl (one JSON object per line, `stage` first), rollouts/iter-NNNN.jsonl,
 * checkpoints (sft.ckpt, rm.ckpt, policy.ckpt with its optimizer state), and summary.json.
 *
 * Exploration switches shape the PPO rollouts only: the reward model's samples and every
 * evaluation sample the policy as it is, so the switches' effects are measured on equal terms.
 *
 * Resumable: each finished stage leaves its checkpoint and result, which a rerun loads instead
 * of redoing the stage; SFT resumes from its last validation (sft-progress.json), PPO after the
 * last finished iteration (at most the iteration in flight is lost). Seeds are derived from (seed, stage, iteration), so a resumed run samples
 * what the uninterrupted run would have.
 */
import { loadModel, saveModel } from '../model/model-file';
import type { BackendKind, PolicyBackend } from '../model/backend';
import type { ModelConfig } from '../model/config';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM, type OptimConfig } from '../model/optim';
import type { OptimizerState } from '../model/model-file';
import { paramTable } from '../model/params';
import { trainTokenizer, type Tokenizer } from '../tokenizer';
import type { Task } from '../tasks/types';
import { checkAlarms } from './alarms';
import type { RlConfig } from './config';
import { evaluate, type EvalResult } from './evaluate';
import { KlController } from './advantages';
import { ppoIteration, toSequence, type Metrics } from './ppo-loop';
import { NoPairsError, trainRewardModel, type LabelledSample, type RmResult } from './reward-model';
import { sampleTasks } from './sample';
import type { ExploreHook } from './explore-hook';
import { scoreRollouts, type Scorer } from './scorer';
import { runSft, type SftProgress } from './sft';
import { rolloutFile } from './run-files';
import { readJson, readText, writeJson, type RunDir } from './run-dir';
import { buildTaskSet, suiteJsonl, type GeneratedTask, type TaskSet } from './tasks';
import { readSuiteSource, SUITE_FILE, taskSetFromSuite } from './tasks/from-suite';

export type Phase = 'setup' | 'sft' | 'sft-eval' | 'rm-samples' | 'rm' | 'ppo' | 'eval' | 'done';

export interface PipelineEvent {
  phase: Phase;
  /** 0..1 within the phase */
  progress: number;
  message: string;
}

export interface PipelineOptions {
  cfg: RlConfig;
  seed: number;
  backend: BackendKind;
  /** creates a backend of the run's kind (the caller owns the GPU runtime, if any) */
  makeBackend: (config: ModelConfig, params: Float32Array, optim: OptimConfig, optimizer?: OptimizerState | null) => PolicyBackend;
  store: RunDir;
  scorer: Scorer;
  /** exploration hook factory (explore-hook.ts), given the tokenizer */
  exploreFor?: (tok: Tokenizer) => ExploreHook | undefined;
  onEvent?: (e: PipelineEvent) => void;
  onMetrics?: (stage: string, m: Metrics) => void;
  /** asked between steps and iterations; true stops the run after saving (resumable) */
  shouldStop?: () => boolean;
  /**
   * Awaited between steps and iterations, just before shouldStop is asked: a paused run waits in
   * it, holding its device, model and sandbox, and carries on where it was when it resolves.
   */
  gate?: () => Promise<void>;
  /**
   * The text of the suite file cfg.tasks.suite names, for a run that has not kept it yet; it is
   * saved in the run directory (tasks/suite.jsonl), which is read on every later start.
   */
  suiteText?: string;
  /**
   * The frozen reference of the KL penalty, instead of the SFT policy (e.g. an imported ONNX
   * model): given the run's tokenizer and model config, it must check its tokenizer is the same
   * (the KL compares log-probs of the same ids). Called at setup (checked and disposed of at once,
   * so a reference that does not fit is refused before SFT) and again when PPO starts; the
   * pipeline disposes of what it returns.
   */
  reference?: (tok: Tokenizer, model: ModelConfig) => Promise<PolicyBackend>;
}

export interface StageEval {
  heldout_pass1: number;
  /** on a fixed subset of the train split (SFT's data) */
  train_pass1: number;
  /** on a fixed subset of the rl split (PPO's tasks) */
  rl_tasks_pass1: number;
  heldout_passk: Record<string, number>;
  heldout_by_family: Record<string, number>;
}

export interface Summary {
  preset: string;
  seed: number;
  backend: BackendKind;
  sft: StageEval & { steps: number; best_step: number; best_val_loss: number };
  /** null when disabled; `skipped` says why when it could not be trained */
  rm: { heldout_pairwise_accuracy: number; train_pairwise_accuracy: number; heldout_pairs: number } | { skipped: string } | null;
  rl: StageEval & { iterations: number; algo: string };
  minutes: number;
  explore: RlConfig['explore'];
}

/** Tasks of the train and rl splits their pass@1 is measured on (a fixed subset keeps evaluation cheap). */
export const TRAIN_EVAL_TASKS = 48;

type RmJson = Omit<RmResult, 'params'> | { skipped: string };

interface State {
  elapsedMs: number;
}

/** Where two configs differ, as `path (stored X, given Y)`, the first few. */
export function configDiff(stored: unknown, given: unknown, limit = 4): string[] {
  const out: string[] = [];
  const show = (v: unknown) => (v === undefined ? 'none' : JSON.stringify(v).slice(0, 80));
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (out.length > limit) return;
    const obj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
    if (obj(a) && obj(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])]) walk(a[k], b[k], path ? `${path}.${k}` : k);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(`${path} (stored ${show(a)}, given ${show(b)})`);
    }
  };
  walk(stored, given, '');
  return out.length > limit ? [...out.slice(0, limit), '…'] : out;
}

/** The run's tasks: the built-in families, or the suite file the config names (checked against its hash). */
async function taskSet(o: PipelineOptions): Promise<TaskSet> {
  const { cfg, seed, store } = o;
  const ref = cfg.tasks.suite;
  if (!ref) return buildTaskSet({ seed, ...cfg.tasks });
  let text = await readText(store, SUITE_FILE);
  if (text === null) {
    if (o.suiteText === undefined)
      throw new Error(
        `the run's tasks come from the suite file "${ref.name}", which is not in the run directory (${SUITE_FILE}); open the file again to start the run`,
      );
    text = o.suiteText;
  }
  const { tasks, ref: got } = await readSuiteSource(text, ref.name);
  if (got.sha256 !== ref.sha256) {
    throw new Error(
      `the suite file "${ref.name}" is not the one the run was started with (SHA-256 ${got.sha256.slice(0, 12)}…, the config has ${ref.sha256.slice(0, 12)}…); use a new run name for a changed file`,
    );
  }
  const other = tasks.find((t) => t.language !== 'javascript');
  if (other && (cfg.explore.syntax || cfg.explore.api !== 'off')) {
    throw new Error(
      `the suite file "${ref.name}" has ${other.language} tasks (${other.task_id}); syntax-constrained and API-guided exploration work on JavaScript only: turn explore.syntax and explore.api off`,
    );
  }
  await store.write(SUITE_FILE, text);
  return taskSetFromSuite(tasks, ref.name, { seed, ...cfg.tasks });
}

/** A strided subset (the splits are sorted by task id, so a prefix would be one family). */
function evalSubset(tasks: readonly GeneratedTask[]): GeneratedTask[] {
  const step = Math.max(1, Math.floor(tasks.length / TRAIN_EVAL_TASKS));
  return tasks.filter((_, i) => i % step === 0).slice(0, TRAIN_EVAL_TASKS);
}

export async function runPipeline(o: PipelineOptions): Promise<Summary> {
  const { cfg, seed, store } = o;
  const started = performance.now();
  const state = (await readJson<State>(store, 'state.json')) ?? { elapsedMs: 0 };
  const elapsed = () => state.elapsedMs + performance.now() - started;
  const saveState = () => writeJson(store, 'state.json', { ...state, elapsedMs: elapsed() });
  const emit = (phase: Phase, progress: number, message: string) => o.onEvent?.({ phase, progress, message });
  const metric = async (stage: string, m: Metrics) => {
    const line = { stage, ...m };
    await store.append('metrics.jsonl', `${JSON.stringify(line, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))}\n`);
    o.onMetrics?.(stage, m);
  };

  // setup: config, tasks, tokenizer
  emit('setup', 0, 'tasks and tokenizer');
  const existing = await readJson<{ cfg: RlConfig; seed: number; backend: string }>(store, 'config.json');
  if (existing && (JSON.stringify(existing.cfg) !== JSON.stringify(cfg) || existing.seed !== seed)) {
    const what = existing.seed !== seed ? [`seed (stored ${existing.seed}, given ${seed})`] : configDiff(existing.cfg, cfg);
    throw new Error(
      `the run directory holds a run with a different config or seed: ${what.join('; ')}; resume it with the same settings, or use a new directory`,
    );
  }
  const named = cfg.rl.reference;
  if (named && !o.reference)
    throw new Error(
      `the run's KL reference is the ONNX model "${named.name}" (SHA-256 ${named.sha256.slice(0, 12)}…), which was not given; pass it (coderl train --reference)`,
    );
  if (o.reference && !named)
    throw new Error(
      'a KL reference model was given but the config does not name it (config.rl.reference), so the run directory would not say what it was trained against',
    );
  if (!existing) await writeJson(store, 'config.json', { cfg, seed, backend: o.backend });
  const done = await readJson<Summary>(store, 'summary.json');
  if (done) {
    emit('done', 1, 'the run is finished; its summary is in summary.json');
    return done;
  }
  const set = await taskSet(o);
  for (const k of ['train', 'val', 'rl', 'heldout'] as const) await store.write(`tasks/${k}.jsonl`, suiteJsonl(set[k]));
  const tok = trainTokenizer(
    [...set.train, ...set.val].map((t) => t.prompt + t.demonstration),
    { vocabSize: cfg.model.vocabSize },
  );
  await writeJson(store, 'tokenizer.json', tok.toJSON());
  const model: ModelConfig = { ...cfg.model, vocabSize: tok.vocabSize };
  const longest = Math.max(...[...set.train, ...set.val, ...set.rl, ...set.heldout].map((t) => tok.encode(t.prompt).length));
  const room = Math.max(cfg.rl.maxNewTokens, cfg.eval.maxNewTokens);
  if (longest + room > model.contextLength)
    throw new Error(`the longest prompt has ${longest} tokens; with ${room} new tokens it exceeds the context of ${model.contextLength}`);
  // a KL reference that cannot score this run's sequences (another tokenizer, a shorter context)
  // is refused now, not after SFT's minutes; it is loaded again, and kept, when PPO starts
  if (o.reference) (await referenceBackend(o.reference, tok, model)).dispose();
  emit(
    'setup',
    1,
    `${set.train.length} train, ${set.val.length} val, ${set.rl.length} rl, ${set.heldout.length} held-out tasks; vocabulary ${tok.vocabSize}`,
  );
  const explore = o.exploreFor?.(tok);
  const trainEval = evalSubset(set.train);
  const rlEval = evalSubset(set.rl);
  const evalBoth = async (policy: PolicyBackend): Promise<{ held: EvalResult; train: EvalResult; rl: EvalResult }> => {
    const held = await evaluate(policy, tok, set.heldout, cfg.eval, o.scorer, cfg.reward, (seed * 17 + 1) >>> 0);
    const train = await evaluate(policy, tok, trainEval, { ...cfg.eval, k: [1] }, o.scorer, cfg.reward, (seed * 17 + 2) >>> 0);
    const rl = await evaluate(policy, tok, rlEval, { ...cfg.eval, k: [1] }, o.scorer, cfg.reward, (seed * 17 + 3) >>> 0);
    return { held, train, rl };
  };
  const stageEval = (r: { held: EvalResult; train: EvalResult; rl: EvalResult }): StageEval => ({
    heldout_pass1: r.held.passAtK['pass@1']!,
    train_pass1: r.train.passAtK['pass@1']!,
    rl_tasks_pass1: r.rl.passAtK['pass@1']!,
    heldout_passk: r.held.passAtK,
    heldout_by_family: r.held.byFamily,
  });
  const snapshot = async (b: PolicyBackend, withOptim: boolean, meta: Record<string, unknown>) =>
    saveModel({
      config: model,
      tokenizer: tok.toJSON(),
      params: await b.getParams(),
      optimizer: withOptim ? await b.getOptimizerState() : null,
      meta,
    });

  // stage 1: SFT
  type SftJson = StageEval & { steps: number; best_step: number; best_val_loss: number };
  let sftJson = await readJson<SftJson>(store, 'sft.json');
  let sftParams: Float32Array;
  if (sftJson && (await store.read('sft.ckpt'))) {
    sftParams = loadModel((await store.read('sft.ckpt'))!, model).params;
    emit('sft', 1, 'SFT loaded from the run directory');
  } else {
    const optim = { ...DEFAULT_OPTIM, lr: cfg.sft.lr, weightDecay: cfg.sft.weightDecay };
    // an interrupted SFT continues from its last validation (sft-progress.json with the two
    // checkpoints of that step; a set that does not match is ignored and SFT starts over)
    const progress = await readJson<SftProgress>(store, 'sft-progress.json');
    const [resumeBytes, bestBytes] = progress ? [await store.read('sft-resume.ckpt'), await store.read('sft-best.ckpt')] : [null, null];
    const resumeSnap = resumeBytes ? loadModel(resumeBytes, model) : null;
    const bestSnap = bestBytes ? loadModel(bestBytes, model) : null;
    const resumable =
      progress && resumeSnap?.optimizer && resumeSnap.meta?.step === progress.step && bestSnap?.meta?.step === progress.step;
    const b = resumable
      ? o.makeBackend(model, resumeSnap.params, optim, resumeSnap.optimizer)
      : o.makeBackend(model, initParams(paramTable(model), seed), optim);
    if (resumable) emit('sft', progress.step / cfg.sft.maxSteps, `SFT resumes at step ${progress.step}`);
    try {
      const r = await runSft(b, tok, set.train, set.val, cfg.sft, seed, {
        onPoint: async (p) => {
          emit(
            'sft',
            p.step / cfg.sft.maxSteps,
            `step ${p.step} loss ${p.loss.toFixed(3)}${p.val_loss !== undefined ? ` val ${p.val_loss.toFixed(3)}` : ''}`,
          );
          await metric('sft', { step: p.step, 'loss/train': p.loss, ...(p.val_loss !== undefined ? { 'loss/val': p.val_loss } : {}) });
        },
        onCheckpoint: async (p, best) => {
          await store.write('sft-resume.ckpt', await snapshot(b, true, { stage: 'sft-resume', step: p.step }));
          await store.write(
            'sft-best.ckpt',
            saveModel({
              config: model,
              tokenizer: tok.toJSON(),
              params: best,
              meta: { stage: 'sft-best', step: p.step, best_step: p.bestStep },
            }),
          );
          await writeJson(store, 'sft-progress.json', p);
        },
        resume: resumable ? { progress, best: bestSnap!.params } : undefined,
        shouldStop: o.shouldStop,
        gate: o.gate,
      });
      // stopped mid-stage: a rerun continues from the last validation (metrics.jsonl then holds
      // the SFT steps after it twice, at most evalEvery of them)
      if (r.steps < cfg.sft.maxSteps && !r.stoppedEarly) throw new StoppedError();
      sftParams = r.best;
      const best = o.makeBackend(model, sftParams, optim);
      try {
        emit('sft-eval', 0, 'evaluating the early-stopped SFT checkpoint');
        const ev = stageEval(await evalBoth(best));
        sftJson = { ...ev, steps: r.steps, best_step: r.bestStep, best_val_loss: r.bestValLoss };
        await store.write(
          'sft.ckpt',
          saveModel({ config: model, tokenizer: tok.toJSON(), params: sftParams, meta: { stage: 'sft', step: r.bestStep } }),
        );
        await writeJson(store, 'sft.json', sftJson);
        await metric('sft-eval', { 'eval/heldout_pass@1': ev.heldout_pass1, 'eval/train_pass@1': ev.train_pass1 });
        emit('sft-eval', 1, `SFT held-out pass@1 ${ev.heldout_pass1.toFixed(3)}`);
      } finally {
        best.dispose();
      }
    } finally {
      b.dispose();
    }
    await saveState();
  }
  await o.gate?.();
  if (o.shouldStop?.()) throw new StoppedError();

  // stage 2: reward model
  let rmJson = cfg.rm.enabled ? await readJson<RmJson>(store, 'rm.json') : null;
  let rmParams: Float32Array | null = null;
  if (cfg.rm.enabled) {
    if (rmJson && 'skipped' in rmJson) {
      // trained before and found nothing to rank: PPO runs without the reward model
    } else if (rmJson && (await store.read('rm.ckpt'))) {
      rmParams = loadModel((await store.read('rm.ckpt'))!, model).params;
    } else {
      emit('rm-samples', 0, 'sampling the SFT policy for the reward model');
      const sft = o.makeBackend(model, sftParams, DEFAULT_OPTIM);
      let samples: LabelledSample[];
      try {
        const tasks: Task[] = [...set.rl, ...trainEval];
        const s = await sampleTasks(sft, tok, tasks, {
          samplesPerTask: cfg.rm.samplesPerTask,
          temperature: cfg.rl.temperature,
          maxNewTokens: cfg.rl.maxNewTokens,
          seed: (seed * 23 + 5) >>> 0,
        });
        const usable = s.filter((x) => x.tokens.length > 0);
        const recs = await scoreRollouts(o.scorer, usable, cfg.reward);
        samples = usable.map((x, i) => ({
          task_id: x.task.task_id,
          seq: toSequence(x),
          label: recs[i]!.tests_passed / Math.max(1, recs[i]!.tests_total) + (recs[i]!.passed ? 1 : 0),
        }));
      } finally {
        sft.dispose();
      }
      const rm = o.makeBackend(model, sftParams, { ...DEFAULT_OPTIM, lr: cfg.rm.lr, weightDecay: 0 });
      try {
        const r = await trainRewardModel(rm, samples, cfg.rm, seed, tok.padId, {
          onPoint: async (p) => {
            emit('rm', p.step / cfg.rm.steps, `step ${p.step} loss ${p.loss.toFixed(3)}`);
            await metric('rm', { step: p.step, 'loss/rm': p.loss });
          },
        });
        rmParams = r.params;
        const { params: _p, ...rest } = r;
        rmJson = rest;
        await store.write('rm.ckpt', await snapshot(rm, false, { stage: 'rm' }));
        await writeJson(store, 'rm.json', rmJson);
        await metric('rm-eval', {
          'rm/heldout_pairwise_accuracy': r.heldoutAccuracy,
          'rm/train_pairwise_accuracy': r.trainAccuracy,
          'rm/heldout_pairs': r.heldoutPairs,
        });
      } catch (e) {
        if (!(e instanceof NoPairsError)) throw e;
        rmJson = { skipped: e.message };
        await writeJson(store, 'rm.json', rmJson);
        emit('rm', 1, `${e.message}; PPO runs without the reward model`);
      } finally {
        rm.dispose();
      }
    }
    await saveState();
  }
  await o.gate?.();
  if (o.shouldStop?.()) throw new StoppedError();

  // stage 3: PPO / GRPO
  const rlOptim: OptimConfig = { ...DEFAULT_OPTIM, lr: cfg.rl.lr, gradClip: cfg.rl.gradClip, weightDecay: 0 };
  type PpoState = { iteration: number; klCoef: number; history: Metrics[] };
  let ppoState = await readJson<PpoState>(store, 'ppo-state.json');
  const policyCkpt = ppoState ? await store.read('policy.ckpt') : null;
  let policy: PolicyBackend;
  if (ppoState && policyCkpt) {
    const snap = loadModel(policyCkpt, model);
    policy = o.makeBackend(model, snap.params, rlOptim, snap.optimizer);
  } else {
    ppoState = { iteration: 0, klCoef: cfg.rl.kl.coef, history: [] };
    policy = o.makeBackend(model, sftParams, rlOptim);
  }
  let ref: PolicyBackend;
  try {
    ref = o.reference ? await referenceBackend(o.reference, tok, model) : o.makeBackend(model, sftParams, DEFAULT_OPTIM);
  } catch (e) {
    policy.dispose();
    throw e;
  }
  const rmBackend = rmParams ? o.makeBackend(model, rmParams, DEFAULT_OPTIM) : null;
  let finalEval: StageEval;
  try {
    const kl = new KlController(ppoState.klCoef, cfg.rl.kl.adaptive, cfg.rl.kl.target, cfg.rl.kl.horizon);
    const ctx = {
      policy,
      ref,
      tok,
      scorer: o.scorer,
      cfg,
      seed,
      tasks: set.rl,
      explore,
      rm:
        rmBackend && rmJson && !('skipped' in rmJson)
          ? { backend: rmBackend, mean: rmJson.scoreMean, std: rmJson.scoreStd, weight: cfg.rm.weight }
          : null,
    };
    for (let it = ppoState.iteration; it < cfg.rl.iterations; it++) {
      await o.gate?.();
      if (o.shouldStop?.()) break;
      emit('ppo', it / cfg.rl.iterations, `iteration ${it + 1}/${cfg.rl.iterations}`);
      const { metrics, rollouts } = await ppoIteration(ctx, it, kl);
      emit(
        'ppo',
        (it + 1) / cfg.rl.iterations,
        `iteration ${it + 1}/${cfg.rl.iterations}: reward ${(metrics['env/reward_mean'] as number).toFixed(3)}, pass rate ${(metrics['env/pass_rate'] as number).toFixed(3)}`,
      );
      if ((it + 1) % cfg.rl.evalEvery === 0 && it + 1 < cfg.rl.iterations) {
        const ev = await evaluate(policy, tok, set.heldout, cfg.eval, o.scorer, cfg.reward, (seed * 17 + 1) >>> 0);
        metrics['eval/heldout_pass@1'] = ev.passAtK['pass@1']!;
      }
      const history: Metrics[] = [...ppoState.history, metrics];
      metrics.alarms = checkAlarms(history);
      await store.write(rolloutFile(it + 1), rollouts.map((r) => JSON.stringify(r)).join('\n') + '\n');
      await store.write('policy.ckpt', await snapshot(policy, true, { stage: 'ppo', iteration: it + 1 }));
      ppoState = { iteration: it + 1, klCoef: kl.coef, history };
      await writeJson(store, 'ppo-state.json', ppoState);
      await metric('ppo', metrics);
      await saveState();
    }
    if (ppoState.iteration < cfg.rl.iterations) throw new StoppedError();
    emit('eval', 0, 'evaluating the RL policy');
    finalEval = stageEval(await evalBoth(policy));
    await metric('rl-eval', { 'eval/heldout_pass@1': finalEval.heldout_pass1, 'eval/train_pass@1': finalEval.train_pass1 });
    emit('eval', 1, `RL held-out pass@1 ${finalEval.heldout_pass1.toFixed(3)}`);
  } finally {
    policy.dispose();
    ref.dispose();
    rmBackend?.dispose();
  }
  const summary: Summary = {
    preset: cfg.preset,
    seed,
    backend: o.backend,
    sft: sftJson!,
    rm: !rmJson
      ? null
      : 'skipped' in rmJson
        ? { skipped: rmJson.skipped }
        : {
            heldout_pairwise_accuracy: rmJson.heldoutAccuracy,
            train_pairwise_accuracy: rmJson.trainAccuracy,
            heldout_pairs: rmJson.heldoutPairs,
          },
    rl: { ...finalEval, iterations: cfg.rl.iterations, algo: cfg.rl.algo },
    minutes: elapsed() / 60000,
    explore: cfg.explore,
  };
  await writeJson(store, 'summary.json', summary);
  await saveState();
  emit('done', 1, `held-out pass@1: SFT ${summary.sft.heldout_pass1.toFixed(3)} -> RL ${summary.rl.heldout_pass1.toFixed(3)}`);
  return summary;
}

/** The caller's KL reference, checked to score this run's sequences: same vocabulary, context long enough. */
async function referenceBackend(
  make: NonNullable<PipelineOptions['reference']>,
  tok: Tokenizer,
  model: ModelConfig,
): Promise<PolicyBackend> {
  const ref = await make(tok, model);
  const c = ref.config;
  if (c.vocabSize !== model.vocabSize || c.contextLength < model.contextLength) {
    ref.dispose();
    throw new Error(
      `the KL reference model has vocabulary ${c.vocabSize} and context ${c.contextLength}; the run needs vocabulary ${model.vocabSize} and context >= ${model.contextLength}`,
    );
  }
  return ref;
}

/** The run stopped on request; its directory resumes it. */
export class StoppedError extends Error {
  override readonly name = 'StoppedError';
  constructor() {
    super('stopped; the run directory holds everything finished so far and resumes from there');
  }
}
