/**
 * One pipeline run, in a dedicated worker (rl/run-worker.ts runs rl/run-browser.ts: runPipeline
 * with the browser's store, sandbox, analyzer and a GPU runtime of its own), so the page stays
 * responsive: its status, the progress of each phase from the pipeline's events, the latest
 * metrics, and what the run directory of a name holds.
 *
 * The page picks the backend to ask for from its own GPU check (the worker falls back to cpu and
 * says why when its device fails) and the storage the run is kept in. Stop asks the worker to stop
 * between steps; the pipeline saves what is finished and ends with `stopped`, so starting the
 * same preset, seed, overrides and name resumes it. The live worker (store/worker-client.ts) stays
 * in this module, outside the store, and ends itself after its last message.
 */
import type { StateCreator } from 'zustand';
import { RL_PRESETS, resolveConfig, type RlConfig } from '../rl/config';
import type { Phase } from '../rl/pipeline';
import type { StoredRun, Summary } from '../rl/run-browser';
import { importedReference, type ReferenceRef } from '../rl/reference';
import { RUN_WORKER, type ToRunWorker } from '../rl/run-protocol';
import { runStorage } from '../rl/run-dir-browser';
import type { PhaseStart } from '../util/eta';
import type { MetricLine } from '../rl/run-files';
import type { LabState } from './index';
import { errorText } from '../util/errors';
import { askedBackend, startWorker, type WorkerHandle } from './worker-client';
import { hfReferenceModels } from './modelsSlice';
import { estimateFor, saveCalibration, type PageEstimate } from './estimate';
import { WORK_PHASES, type PhaseState, type WorkPhase } from '../rl/estimate';

export type RunStatus = 'idle' | 'running' | 'stopping' | 'stopped' | 'done' | 'error';

/** Metrics lines kept in the store (the run directory's metrics.jsonl has them all). */
export const METRICS_KEPT = 300;

export interface RunSlice {
  run: {
    status: RunStatus;
    /** the run directory of the run in flight or the last one */
    name: string | null;
    backend: 'webgpu' | 'cpu' | null;
    /** e.g. why the run is on the cpu backend */
    note: string | null;
    phase: Phase | null;
    progress: Record<WorkPhase, number>;
    /** when each phase became active in this session (for its ETA, util/eta.ts) */
    started: Partial<Record<WorkPhase, PhaseStart>>;
    phases: Record<WorkPhase, PhaseState>;
    message: string;
    error: string | null;
    summary: Summary | null;
    metrics: MetricLine[];
    /** what the run directory of `stored.run` holds, as last read */
    stored: StoredRun | null;
    /** names of the stored runs, as last read */
    runs: string[];
    /** of a running run: no; pausing (asked, the step in flight finishes); paused (waiting, everything loaded) */
    pause: 'no' | 'pausing' | 'paused';
    /** the KL reference (ONNX or Hugging Face) of the run in flight or the last one (config.rl.reference); null: the SFT policy */
    reference: ReferenceRef | null;
    /** the estimate the run started with (rl/estimate.ts), for the whole run's time left */
    estimate: PageEstimate | null;
    /** ms each phase finished in this session took, scaled to the whole phase */
    took: Partial<Record<WorkPhase, number>>;
  };
  /**
   * starts (or resumes) the run `name`; refused while one runs or the settings are invalid. An ONNX
   * KL reference the config names is sent along when it is imported in this page (matched by name
   * and SHA-256), a Hugging Face one as its id in the model store; otherwise the worker reads it
   * from the run directory.
   */
  startRun(preset: string, seed: number, overridesJson: string, name: string, suiteText?: string): Promise<void>;
  stopRun(): void;
  /** a running run waits after the step in flight, keeping its device and models, until resumeRun */
  pauseRun(): void;
  resumeRun(): void;
  /** reads what the run directory `name` holds into `stored`, and the list of runs */
  inspectRun(name: string): Promise<void>;
  /** re-reads the list of runs (and the inspected one), e.g. after another tab changed them */
  refreshRuns(): Promise<void>;
  /** deletes a stored run (not the one running); panels showing it let go of it */
  deleteRun(name: string): Promise<void>;
}

/** The config a preset and overrides text give, or why they give none (the RlConfigError's message). */
export function parseSettings(preset: string, overridesJson: string): { cfg: RlConfig; error: null } | { cfg: null; error: string } {
  let over: unknown = {};
  if (overridesJson.trim()) {
    try {
      over = JSON.parse(overridesJson);
    } catch (e) {
      return { cfg: null, error: `not valid JSON: ${errorText(e)}` };
    }
  }
  try {
    return { cfg: resolveConfig(preset, over), error: null };
  } catch (e) {
    return { cfg: null, error: errorText(e) };
  }
}

/** The overrides that turn the config's preset into the config (what "use its settings" fills in). */
export function overridesOf(cfg: RlConfig): Record<string, unknown> {
  const diff = (base: unknown, v: unknown): unknown => {
    if (isObject(base) && isObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const d = diff(base[k], x);
        if (d !== undefined) out[k] = d;
      }
      return Object.keys(out).length ? out : undefined;
    }
    return JSON.stringify(base) === JSON.stringify(v) ? undefined : v;
  };
  return (diff(RL_PRESETS[cfg.preset] ?? {}, cfg) as Record<string, unknown> | undefined) ?? {};
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const fill = <T>(v: T) => Object.fromEntries(WORK_PHASES.map((p) => [p, v])) as Record<WorkPhase, T>;

let stopRequested = false;
/** the run in flight's worker, null before it is spawned and after the run ends */
let live: WorkerHandle<ToRunWorker> | null = null;
let inspectSeq = 0;

export const createRunSlice: StateCreator<LabState, [], [], RunSlice> = (set, get) => {
  const patch = (p: Partial<RunSlice['run']>): void => set((s) => ({ run: { ...s.run, ...p } }));

  /** Phase states and progress after an event of `phase`: every earlier phase is finished. */
  function advance(phase: Phase, progress: number, rmEnabled: boolean): void {
    const at = phase === 'done' ? WORK_PHASES.length : WORK_PHASES.indexOf(phase);
    const { phases, progress: prog } = get().run;
    const nextPhases = { ...phases };
    const nextProgress = { ...prog };
    WORK_PHASES.forEach((p, i) => {
      if (i < at && (nextPhases[p] === 'pending' || nextPhases[p] === 'active')) {
        nextPhases[p] = !rmEnabled && (p === 'rm' || p === 'rm-samples') ? 'off' : 'done';
        nextProgress[p] = 1;
      }
    });
    let started = get().run.started;
    const took = { ...get().run.took };
    const now = performance.now();
    for (const p of WORK_PHASES) {
      const s = started[p];
      if (phases[p] === 'active' && nextPhases[p] === 'done' && s) took[p] = (now - s.t) / Math.max(0.05, 1 - s.p);
    }
    if (phase !== 'done') {
      const p = Math.min(1, Math.max(0, progress));
      if (phases[phase] !== 'active') started = { ...started, [phase]: { t: now, p } };
      nextPhases[phase] = 'active';
      nextProgress[phase] = p;
    }
    patch({ phase, phases: nextPhases, progress: nextProgress, started, took });
  }

  /**
   * After a stop, the phases' states from what the run directory holds (the pipeline says when a
   * phase starts, not when it ends): nothing is left active, finished stages are done, and PPO's
   * bar counts the saved iterations.
   */
  function settleStopped(files: string[], cfg: RlConfig): void {
    const phases = { ...get().run.phases };
    const progress = { ...get().run.progress };
    for (const p of WORK_PHASES) if (phases[p] === 'active') phases[p] = 'pending';
    const finished = (ps: WorkPhase[], state: PhaseState = 'done') => ps.forEach((p) => ((phases[p] = state), (progress[p] = 1)));
    if (files.includes('sft.json')) finished(['setup', 'sft', 'sft-eval']);
    if (!cfg.rm.enabled) finished(['rm-samples', 'rm'], 'off');
    else if (files.includes('rm.json')) finished(['rm-samples', 'rm']);
    progress.ppo = files.filter((f) => f.startsWith('rollouts/')).length / Math.max(1, cfg.rl.iterations);
    patch({ phases, progress });
  }

  return {
    run: {
      status: 'idle',
      name: null,
      backend: null,
      note: null,
      phase: null,
      progress: fill(0),
      phases: fill<PhaseState>('pending'),
      started: {},
      message: '',
      error: null,
      summary: null,
      metrics: [],
      stored: null,
      runs: [],
      pause: 'no',
      reference: null,
      estimate: null,
      took: {},
    },

    async startRun(preset, seed, overridesJson, name, suiteText) {
      const { status } = get().run;
      if (status === 'running' || status === 'stopping') return;
      const { cfg, error } = parseSettings(preset, overridesJson);
      if (!cfg) {
        patch({ status: 'error', error });
        return;
      }
      stopRequested = false;
      const imported = importedReference(cfg.rl.reference, get().evaluation.onnxModels);
      const reference = imported ? { bytes: imported.bytes, tokenizerText: imported.tokenizerText } : undefined;
      // a Hugging Face model of the Models panel: the worker copies it from the model store itself
      const hfModels = hfReferenceModels(get().models.items);
      const hf = importedReference(cfg.rl.reference, hfModels);
      const hfReference = hf ? { id: hf.id } : undefined;
      // the model the run trains (config.pretrained), found as the reference is
      const trained = importedReference(cfg.pretrained, hfModels);
      const hfPolicy = trained ? { id: trained.id } : undefined;
      patch({
        status: 'running',
        name,
        backend: null,
        note: null,
        phase: null,
        progress: fill(0),
        phases: fill<PhaseState>('pending'),
        started: {},
        message: 'waiting for the GPU',
        error: null,
        summary: null,
        metrics: [],
        pause: 'no',
        reference: cfg.rl.reference ?? null,
        estimate: null,
        took: {},
      });
      try {
        const { backend, note } = await askedBackend(get, 'run', get().setup.backend);
        // the cost model is the lab GPT's: an imported model has no estimate (nor calibrates one), as in coderl train
        const estimate = cfg.pretrained ? null : estimateFor(cfg, seed, backend, get().gpu);
        patch({ backend, note, message: 'starting the run worker', estimate });
        const { kind: storage } = await runStorage();
        const worker = startWorker(
          () => new Worker(new URL('../rl/run-worker.ts', import.meta.url), { type: 'module', name: `coderl run ${name}` }),
          RUN_WORKER,
          {
            start: { type: 'start', cfg, seed, run: name, backend, storage, suiteText, reference, hfReference, hfPolicy },
            lost: 'the run worker stopped without a word (it crashed, or the browser ended it, e.g. out of memory). What finished is saved; Resume continues from the last checkpoint.',
            onMessage: (m) => {
              if (m.type === 'event') {
                advance(m.event.phase, m.event.progress, cfg.rm.enabled);
                patch({ message: m.event.message });
              } else if (m.type === 'metrics') {
                patch({ metrics: [...get().run.metrics.slice(1 - METRICS_KEPT), { stage: m.stage, ...m.metrics }] });
              } else if (m.type === 'paused') {
                patch({ pause: 'paused' });
              } else if (m.type === 'resumed') {
                patch({ pause: 'no' });
              } else {
                patch({ backend: m.backend, note: m.note ?? get().run.note });
              }
            },
          },
        );
        live = worker;
        if (stopRequested) worker.post({ type: 'stop' }); // asked for before the worker existed
        const last = await worker.done;
        if (live === worker) live = null;
        patch({ pause: 'no' });
        if (last.type === 'done') {
          advance('done', 1, cfg.rm.enabled);
          saveCalibration(get().run);
          patch({ status: 'done', summary: last.summary });
        } else if (last.type === 'stopped') {
          const { readStoredRun } = await import('../rl/run-browser');
          settleStopped((await readStoredRun(name)).files, cfg);
          patch({ status: 'stopped', message: last.message });
        } else if (last.type === 'error') {
          patch({ status: 'error', error: last.message });
        }
      } catch (e) {
        patch({ status: 'error', error: errorText(e), pause: 'no' });
      }
      await get().inspectRun(name);
    },

    stopRun() {
      if (get().run.status !== 'running') return;
      stopRequested = true;
      live?.post({ type: 'stop' });
      patch({ status: 'stopping', message: 'stopping after the current step (finished work is saved)' });
    },

    pauseRun() {
      if (get().run.status !== 'running' || get().run.pause !== 'no' || !live) return;
      live.post({ type: 'pause' });
      patch({ pause: 'pausing' });
    },

    resumeRun() {
      if (get().run.status !== 'running' || get().run.pause === 'no') return;
      live?.post({ type: 'resume' });
      // 'pausing' ends at once (the worker never waited); 'paused' ends with its `resumed`
      if (get().run.pause === 'pausing') patch({ pause: 'no' });
    },

    async refreshRuns() {
      const name = get().run.stored?.run;
      if (name) return get().inspectRun(name);
      try {
        const { listStoredRuns } = await import('../rl/run-browser');
        patch({ runs: await listStoredRuns() });
      } catch {
        // no storage: nothing to list
      }
    },

    async deleteRun(name) {
      const r = get().run;
      if ((r.status === 'running' || r.status === 'stopping') && r.name === name)
        throw new Error(`run "${name}" is running; stop it before deleting it`);
      const { runStorage } = await import('../rl/run-dir-browser');
      await (await runStorage()).remove(name);
      if (get().rollouts.run === name) {
        set((s) => ({
          rollouts: { ...s.rollouts, status: 'idle', error: null, run: null, iterations: [], iteration: null, records: [], selected: null },
        }));
      }
      await get().inspectRun(name);
    },

    async inspectRun(name) {
      const seq = ++inspectSeq;
      try {
        const { listStoredRuns, readStoredRun } = await import('../rl/run-browser');
        const runs = await listStoredRuns();
        const stored = await readStoredRun(name);
        if (seq === inspectSeq) patch({ stored, runs });
      } catch {
        if (seq === inspectSeq) patch({ stored: null }); // an invalid name, or no storage: nothing stored
      }
    },
  };
};
