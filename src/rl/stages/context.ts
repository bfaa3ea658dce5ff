/**
 * What the stages of a run share. The run (RunBase) is opened first: the options, the run
 * directory, the clock kept in state.json, events and metrics lines, the stop checks. Setup then
 * adds what it makes (RunContext): the tokenizer, the task set, the policy spec (model config and
 * tokenizer) every policy of the run is made from, the evaluation subsets, the exploration hook.
 */
import type { BackendKind, ModelConfig, Policy, PolicyFactory, PolicySpec } from '../../policy';
import type { TextTokenizer } from '../../tokenizer/types';
import type { RlConfig } from '../config';
import type { ExploreHook } from '../explore-hook';
import type { PromptFormat } from '../prompt-format';
import type { Metrics } from '../ppo-loop';
import { readJson, writeJson, type RunDir } from '../run-dir';
import type { Scorer } from '../scorer';
import type { GeneratedTask, TaskSet } from '../tasks';

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
  /** makes the run's policies (policy/lab-gpt.ts labGptFactory; the caller owns the GPU runtime, if any) */
  policies: PolicyFactory;
  store: RunDir;
  scorer: Scorer;
  /** exploration hook factory (explore-hook.ts), given the tokenizer */
  exploreFor?: (tok: TextTokenizer) => ExploreHook | undefined;
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
  reference?: (tok: TextTokenizer, model: ModelConfig) => Promise<Policy>;
}

/** The run as it starts, before setup. */
export interface RunBase {
  readonly options: PipelineOptions;
  readonly cfg: RlConfig;
  readonly seed: number;
  readonly store: RunDir;
  readonly scorer: Scorer;
  readonly policies: PolicyFactory;
  /** where the run's policies run (config.json and summary.json record it) */
  readonly backend: BackendKind;
  /** a progress event (onEvent) */
  emit(phase: Phase, progress: number, message: string): void;
  /** a line of metrics.jsonl (`stage` first, non-finite numbers as null), then onMetrics */
  metric(stage: string, m: Metrics): Promise<void>;
  /** milliseconds the run has run, over every start */
  elapsed(): number;
  /** state.json: the elapsed time so far */
  saveState(): Promise<void>;
  /** between stages: waits while paused (the gate), then throws StoppedError if asked to stop */
  pauseOrStop(): Promise<void>;
}

/** The run after setup: what every training and evaluation stage reads. */
export interface RunContext extends RunBase {
  readonly tok: TextTokenizer;
  /** the model config (cfg.model with the tokenizer's vocabulary) and the tokenizer */
  readonly spec: PolicySpec;
  readonly set: TaskSet;
  /** fixed strided subsets of the train and rl splits their pass@1 is measured on */
  readonly trainEval: GeneratedTask[];
  readonly rlEval: GeneratedTask[];
  /** shapes the PPO rollouts only */
  readonly explore: ExploreHook | undefined;
  /** how task prompts (and repair turns) reach the policy in every stage: cfg.promptFormat resolved for the tokenizer */
  readonly format: PromptFormat;
}

interface State {
  elapsedMs: number;
}

/** Opens the run: the clock (continued from state.json), events, metrics, the stop checks. */
export async function openRun(o: PipelineOptions): Promise<RunBase> {
  const { cfg, seed, store } = o;
  const started = performance.now();
  const state = (await readJson<State>(store, 'state.json')) ?? { elapsedMs: 0 };
  const elapsed = () => state.elapsedMs + performance.now() - started;
  return {
    options: o,
    cfg,
    seed,
    store,
    scorer: o.scorer,
    policies: o.policies,
    backend: o.policies.backend,
    emit: (phase, progress, message) => o.onEvent?.({ phase, progress, message }),
    metric: async (stage, m) => {
      const line = { stage, ...m };
      await store.append(
        'metrics.jsonl',
        `${JSON.stringify(line, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))}\n`,
      );
      o.onMetrics?.(stage, m);
    },
    elapsed,
    saveState: () => writeJson(store, 'state.json', { ...state, elapsedMs: elapsed() }),
    pauseOrStop: async () => {
      await o.gate?.();
      if (o.shouldStop?.()) throw new StoppedError();
    },
  };
}

/** The run stopped on request; its directory resumes it. */
export class StoppedError extends Error {
  override readonly name = 'StoppedError';
  constructor() {
    super('stopped; the run directory holds everything finished so far and resumes from there');
  }
}
