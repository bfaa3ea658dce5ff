/**
 * How long a run will take, phase by phase, before it starts: a cost model over what each phase
 * does (sequences trained, tokens sampled, programs scored), with per-unit times measured on the
 * 2-core build machine for the cpu backend and for webgpu on a software adapter (SwiftShader).
 * A hardware GPU has no built-in figure: the app scales these by what a finished run on the same
 * machine measured (`calibration`), and while a run goes, the phases it has finished correct the
 * rest (runEta).
 */
import type { ModelConfig } from '../model/config';
import type { RlConfig } from './config';
import type { Phase } from './stages/context';
import { evalSubset } from './stages/evaluation';
import { buildTaskSet } from './tasks';

/** The phases with work in them, in pipeline order (`done` is the end, not a phase). */
export const WORK_PHASES = ['setup', 'sft', 'sft-eval', 'rm-samples', 'rm', 'ppo', 'eval'] as const satisfies readonly Phase[];
export type WorkPhase = (typeof WORK_PHASES)[number];

/** Where a run's model runs, for its per-unit times. */
export type EstimateBackend = 'cpu' | 'webgpu-software' | 'webgpu';

/** The estimate's kind for a run on `backend` with an adapter that is (or is not) a software one. */
export function estimateKind(backend: 'cpu' | 'webgpu', software: boolean): EstimateBackend {
  return backend === 'cpu' ? 'cpu' : software ? 'webgpu-software' : 'webgpu';
}

/** pending; active; done (this run, or an earlier one of the same directory); off (disabled by the config) */
export type PhaseState = 'pending' | 'active' | 'done' | 'off';

/** Tasks per split, and the train/rl subsets evaluation samples (stages/evaluation.ts evalSubset). */
export interface TaskCounts {
  train: number;
  val: number;
  rl: number;
  heldout: number;
  trainEval: number;
  rlEval: number;
}

export interface PhaseEstimate {
  phase: WorkPhase;
  /** seconds; 0 for a phase the config turns off */
  seconds: number;
  /** what the phase does, counted ("450 steps of 16 sequences") */
  work: string;
}

export interface RunEstimate {
  phases: PhaseEstimate[];
  seconds: number;
  /** true when SFT may stop early (the estimate counts every step it may take) */
  upperBound: boolean;
}

/**
 * Per-unit seconds on the 2-core build machine for the `tiny` model (2 layers, width 64,
 * vocabulary 512, context 128), from `coderl train --preset tiny` (docs/results.md): an SFT
 * step of 16 sequences 0.222 s, a PPO iteration of 128 rollouts of 24 tokens 1.0 s sampling,
 * 1.6 s scoring (2 sandbox workers) and 4.6 s update (2 epochs). Other models scale by their
 * per-token work (modelWork).
 */
const CPU = {
  /** forward and backward of one sequence of the full context */
  trainSeq: 0.014,
  /** one sampled token of one row of a batch */
  decodeToken: 0.00033,
  /** one program through the sandbox, analysis and reward (2 workers) */
  score: 0.0125,
  /** a PPO/GRPO update pass over a sequence costs this many SFT sequence passes (old log-probs, the clipped loss) */
  ppoPass: 1.3,
  setup: 2,
};

/**
 * webgpu on SwiftShader against the cpu backend, per unit of model work, measured in Chromium on
 * the build machine (README, "Backends": an SFT step of `quick` 6.2 s against 0.25 s), and the
 * seconds its setup takes compiling the kernels' pipelines: every kernel is emulated on the CPU.
 */
const SOFTWARE_SLOWDOWN = { trainSeq: 25, decodeToken: 25, setup: 18 };

/** Per-token work of a model relative to `tiny`'s (matmul weights per layer and the output layer). */
export function modelWork(m: ModelConfig): number {
  const per = (L: number, d: number, V: number) => 12 * L * d * d + V * d;
  return per(m.nLayer, m.dModel, m.vocabSize) / per(2, 64, 512);
}

/**
 * The run's phases and their seconds for `backend` (`webgpu` uses the cpu figures until
 * `calibration`, actual over estimated seconds of an earlier run on this machine, says better).
 * `workers` is the sandbox pool's size.
 */
export function estimateRun(cfg: RlConfig, counts: TaskCounts, backend: EstimateBackend, workers = 2, calibration = 1): RunEstimate {
  const w = modelWork(cfg.model);
  const ctx = cfg.model.contextLength / 128;
  const slow = backend === 'webgpu-software' ? SOFTWARE_SLOWDOWN : { trainSeq: 1, decodeToken: 1, setup: 0 };
  const trainSeq = CPU.trainSeq * w * ctx * slow.trainSeq * calibration;
  const decode = CPU.decodeToken * w * slow.decodeToken * calibration;
  const score = (CPU.score * 2) / Math.max(1, workers);
  const sampleRow = (maxNew: number) => maxNew * decode + score;
  const evalRows = (counts.heldout + counts.trainEval + counts.rlEval) * cfg.eval.samples;
  const evalSeconds = evalRows * sampleRow(cfg.eval.maxNewTokens);
  const { rl, rm, sft } = cfg;
  const rollouts = rl.promptsPerIteration * rl.samplesPerPrompt;
  const midEvals = rl.iterations > 0 ? Math.floor((rl.iterations - 1) / rl.evalEvery) : 0;
  const iteration = rollouts * sampleRow(rl.maxNewTokens) * (cfg.explore.repair ? 1.5 : 1) + rl.epochs * rollouts * CPU.ppoPass * trainSeq;
  const rmRows = rm.enabled ? (counts.rl + counts.trainEval) * rm.samplesPerTask : 0;
  const phases: PhaseEstimate[] = [
    {
      phase: 'setup',
      seconds: CPU.setup + slow.setup,
      work: `${counts.train + counts.val + counts.rl + counts.heldout} tasks, the tokenizer`,
    },
    { phase: 'sft', seconds: sft.maxSteps * sft.batch * trainSeq, work: `up to ${sft.maxSteps} steps of ${sft.batch} sequences` },
    { phase: 'sft-eval', seconds: evalSeconds, work: `${evalRows} samples of up to ${cfg.eval.maxNewTokens} tokens, scored` },
    {
      phase: 'rm-samples',
      seconds: rmRows * sampleRow(rl.maxNewTokens),
      work: rm.enabled ? `${rmRows} samples, scored` : 'off',
    },
    {
      phase: 'rm',
      seconds: rm.enabled ? rm.steps * rm.batch * (rm.objective === 'bt' ? 2 : 1) * trainSeq : 0,
      work: rm.enabled ? `${rm.steps} steps of ${rm.batch} ${rm.objective === 'bt' ? 'pairs' : 'sequences'}` : 'off',
    },
    {
      phase: 'ppo',
      seconds: rl.iterations * iteration + midEvals * counts.heldout * cfg.eval.samples * sampleRow(cfg.eval.maxNewTokens),
      work: `${rl.iterations} iterations of ${rl.promptsPerIteration} x ${rl.samplesPerPrompt} rollouts`,
    },
    { phase: 'eval', seconds: evalSeconds, work: `${evalRows} samples, scored` },
  ];
  return { phases, seconds: phases.reduce((a, p) => a + p.seconds, 0), upperBound: sft.maxSteps > sft.evalEvery * sft.patience };
}

/** Task counts per split for a config and seed: the built-in families are drawn (cheap); a suite's are its shares of its size. */
export function taskCounts(cfg: RlConfig, seed: number): TaskCounts {
  const suite = cfg.tasks.suite;
  if (!suite) {
    const set = buildTaskSet({ seed, ...cfg.tasks });
    return {
      train: set.train.length,
      val: set.val.length,
      rl: set.rl.length,
      heldout: set.heldout.length,
      trainEval: evalSubset(set.train).length,
      rlEval: evalSubset(set.rl).length,
    };
  }
  const n = suite.tasks;
  const heldout = Math.max(1, Math.round(n * cfg.tasks.heldoutShare));
  const rl = Math.max(1, Math.round(n * cfg.tasks.rlShare));
  const rest = Math.max(1, n - heldout - rl);
  const val = Math.round(rest * cfg.tasks.valShare);
  return { train: rest - val, val, rl, heldout, trainEval: Math.min(48, rest - val), rlEval: Math.min(48, rl) };
}

/** Where a run is: each phase's state and progress, and when (ms) the active phase started and at what progress. */
export interface RunProgressState {
  phases: Record<WorkPhase, PhaseState>;
  progress: Record<WorkPhase, number>;
  /** ms each finished phase took in this session (absent: finished before this session, or not timed) */
  took: Partial<Record<WorkPhase, number>>;
}

/**
 * Seconds the timed phases took (`took`, ms) and the seconds `est` gave them: their ratio is how
 * far off the estimate ran (phases estimated at under half a second are left out as noise).
 */
export function elapsedOverEstimate(est: RunEstimate, took: Partial<Record<WorkPhase, number>>): { actual: number; expected: number } {
  let actual = 0;
  let expected = 0;
  for (const p of est.phases) {
    const t = took[p.phase];
    if (t !== undefined && p.seconds > 0.5) {
      actual += t / 1000;
      expected += p.seconds;
    }
  }
  return { actual, expected };
}

/**
 * Time left for each unfinished phase and the whole run, in seconds: the active phase at its own
 * rate once it has moved (else its estimate, less what is done), the pending ones at their
 * estimate scaled by how this run's finished phases compared with theirs (actual over estimated).
 */
export function runEta(
  est: RunEstimate,
  state: RunProgressState,
  activeLeft: number | null,
): { phases: Partial<Record<WorkPhase, number>>; total: number; scale: number } {
  // a phase is timed when it finishes (took): the finished phases say how far off the estimate runs
  const { actual, expected } = elapsedOverEstimate(est, state.took);
  const scale = expected > 0 ? Math.min(20, Math.max(0.05, actual / expected)) : 1;
  const phases: Partial<Record<WorkPhase, number>> = {};
  let total = 0;
  for (const p of est.phases) {
    const s = state.phases[p.phase];
    if (s === 'done' || s === 'off') continue;
    const left = s === 'active' && activeLeft !== null ? activeLeft : p.seconds * scale * (1 - (state.progress[p.phase] ?? 0));
    phases[p.phase] = left;
    total += left;
  }
  return { phases, total, scale };
}
