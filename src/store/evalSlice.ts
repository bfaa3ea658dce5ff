/**
 * One evaluation, `coderl eval` in the browser: a policy checkpoint (a stored run's `*.ckpt`, or
 * one of the Checkpoints panel) on a suite (a built-in benchmark such as HumanEval-X JavaScript,
 * fetched from the app's own assets by store/builtin-suites.ts; a stored run's split; or a JSONL
 * file the user opens) with pass@k, in a dedicated worker (rl/eval-worker.ts runs rl/eval-suite.ts's evalSuite with a
 * GPU runtime, sandbox pool and analyzer of its own) so the page stays responsive.
 *
 * The page reads the checkpoint's bytes and parses the suite (its load issues are shown before
 * anything runs), then hands both to a fresh worker. Stop terminates the worker: an evaluation
 * saves nothing. The live worker (store/worker-client.ts) stays in this module, outside the store.
 *
 * An ONNX model imported in the Checkpoints panel (app/onnx/OnnxImport.tsx) is kept here too
 * (`onnxModels`: its file's bytes, tokenizer text and context length, while the page is open) and
 * is offered like a checkpoint; the worker loads it in onnxruntime-web. A Hugging Face model of
 * the Models panel (store/modelsSlice.ts) is offered too; the worker reads it from the model store
 * and samples it on our engine, its prompts in the form's format (auto, chat or completion). The
 * Experiment setup offers the same models as a run's KL reference (app/setup/ReferencePicker.tsx).
 */
import type { StateCreator } from 'zustand';
import { loadCheckpointBrowser } from '../container/browser';
import { summarise, type CheckpointInfo } from '../lab/saved-models';
import { EVAL_WORKER, type EvalReport, type HfEvalModel, type OnnxEvalModel, type ToEvalWorker } from '../rl/eval-protocol';
import { PROMPT_FORMATS, type PromptFormatSetting } from '../rl/prompt-format';
import { completeModels } from './modelsSlice';
import { settingsProblems, type EvalProgress, type EvalSettings } from '../rl/eval-suite';
import type { ReferenceRef } from '../rl/reference';
import type { RunBackend } from '../rl/run-protocol';
import { runStorage } from '../rl/run-dir-browser';
import { builtinSuite } from '../tasks/builtin-suites';
import type { LoadIssue, Task } from '../tasks/types';
import { fetchBuiltinSuite } from './builtin-suites';
import type { LabState } from './index';
import { errorText } from '../util/errors';
import { askedBackend, startWorker, type WorkerHandle } from './worker-client';

export type EvalStatus = 'idle' | 'running' | 'done' | 'stopped' | 'error';

/** The built-in splits a run directory holds, as tasks/<split>.jsonl. */
export const SPLITS = ['heldout', 'rl', 'train', 'val'] as const;
export type Split = (typeof SPLITS)[number];

/**
 * A checkpoint to evaluate: a file of a stored run, one stored in the Checkpoints panel, an ONNX
 * model imported there, or a Hugging Face model of the Models panel (by its id in the model store).
 */
export type CheckpointRef =
  | { kind: 'run'; run: string; file: string }
  | { kind: 'stored'; name: string }
  | { kind: 'onnx'; name: string }
  | { kind: 'hf'; id: string };
/** A suite: a built-in one (tasks/builtin-suites.ts, by name), a split of a stored run, or the file the user opened. */
export type SuiteRef = { kind: 'builtin'; name: string } | { kind: 'run'; run: string; split: Split } | { kind: 'file'; name: string };

export const checkpointKey = (r: CheckpointRef): string =>
  r.kind === 'run' ? `run:${r.run}/${r.file}` : r.kind === 'hf' ? `hf:${r.id}` : `${r.kind}:${r.name}`;
export const suiteKey = (r: SuiteRef): string => (r.kind === 'run' ? `run:${r.run}/${r.split}` : `${r.kind}:${r.name}`);

/** A `*.ckpt` of a stored run, as its header describes it. */
export interface RunCheckpoint {
  file: string;
  info: CheckpointInfo | null;
  /** why it cannot be read (info is null then) */
  problem: string | null;
}

export interface StoredRunSources {
  run: string;
  /** the run's policy checkpoints (reward models are left out), sorted by name */
  checkpoints: RunCheckpoint[];
  /** reward-model checkpoints left out, for the hint */
  rewardModels: string[];
  splits: Split[];
}

export interface LoadedSuite {
  ref: SuiteRef;
  /** what the UI calls it, e.g. "HumanEval-X JavaScript", "e2e-run: held-out split" or the file's name */
  label: string;
  tasks: Task[];
  issues: LoadIssue[];
}

/** An ONNX model imported in the Checkpoints panel, as the eval worker loads it again. */
export interface OnnxModelEntry {
  /** the model file's name (one entry per name: a later import replaces it) */
  name: string;
  bytes: Uint8Array;
  tokenizerText: string;
  /** the context length it was loaded with (given, or from its metadata) */
  contextLength: number;
  vocabSize: number;
  /** what config.rl.reference records when a run uses it as its KL reference (rl/reference.ts referenceRef) */
  ref: ReferenceRef;
}

export interface EvalSlice {
  evaluation: {
    /** ONNX models imported in the Checkpoints panel, kept while the page is open */
    onnxModels: OnnxModelEntry[];
    /** what the stored runs hold, as last scanned */
    runs: StoredRunSources[];
    scanning: boolean;
    /** why the last scan failed */
    scanError: string | null;
    suite: LoadedSuite | null;
    /** the file the user opened last, kept while a run's split is chosen */
    fileSuite: LoadedSuite | null;
    /** why the last suite could not be read */
    suiteError: string | null;
    status: EvalStatus;
    backend: RunBackend | null;
    /** e.g. why the evaluation is on the cpu backend */
    note: string | null;
    progress: EvalProgress | null;
    /** what the evaluation in flight, or the last one, evaluated */
    job: { checkpoint: string; suite: string; settings: EvalSettings } | null;
    report: EvalReport | null;
    error: string | null;
  };
  /** keeps an imported ONNX model for evaluation (replacing one of the same name) */
  addOnnxModel(m: OnnxModelEntry): void;
  /** lists the stored runs' policy checkpoints and splits */
  scanEvalSources(): Promise<void>;
  /** loads a built-in suite (by name) as the suite */
  loadBuiltinSuite(name: string): Promise<void>;
  /** loads a split of a stored run as the suite */
  loadRunSuite(run: string, split: Split): Promise<void>;
  /** loads a JSONL (or .jsonl.gz) file as the suite; its bad lines become issues */
  openSuiteFile(file: File): Promise<void>;
  /** chooses the file opened last as the suite again */
  chooseFileSuite(): void;
  /** evaluates `ref` on the loaded suite; refused while one runs or the settings are invalid */
  startEval(ref: CheckpointRef, settings: EvalSettings, backend: 'auto' | 'cpu'): Promise<void>;
  stopEval(): void;
}

/** The form's fields, as typed. */
export interface EvalForm {
  samples: string;
  k: string;
  temperature: string;
  maxNewTokens: string;
  seed: string;
  /** blank: every task */
  limit: string;
  /** how prompts reach the model (rl/prompt-format.ts): auto, chat or completion */
  format: PromptFormatSetting;
}

export const DEFAULT_EVAL_FORM: EvalForm = {
  samples: '10',
  k: '1,5,10',
  temperature: '1',
  maxNewTokens: '48',
  seed: '1',
  limit: '',
  format: 'auto',
};

/** The settings a form gives, or why not, field by field (parse errors first, then settingsProblems). */
export function parseEvalForm(f: EvalForm): { settings: EvalSettings | null; problems: Partial<Record<keyof EvalForm, string>> } {
  const problems: Partial<Record<keyof EvalForm, string>> = {};
  const num = (field: keyof EvalForm, what: string): number => {
    const t = f[field].trim();
    const v = t === '' ? NaN : Number(t);
    if (!Number.isFinite(v)) problems[field] = `${what} must be a number, got '${f[field]}'`;
    return v;
  };
  const samples = num('samples', 'samples per task');
  const parts = f.k.split(',').map((x) => x.trim());
  const k = parts.map(Number);
  if (parts.some((p) => p === '' || !Number.isFinite(Number(p))))
    problems.k = `k must be comma-separated integers, e.g. 1,5,10; got '${f.k}'`;
  const temperature = num('temperature', 'temperature');
  const maxNewTokens = num('maxNewTokens', 'max new tokens');
  const seed = num('seed', 'seed');
  const limit = f.limit.trim() === '' ? null : num('limit', 'the task limit');
  if (!PROMPT_FORMATS.includes(f.format)) problems.format = `the prompt format must be one of ${PROMPT_FORMATS.join(', ')}`;
  const settings: EvalSettings = { samples, k, temperature, maxNewTokens, seed, limit, format: f.format };
  for (const [field, p] of Object.entries(settingsProblems(settings))) problems[field as keyof EvalForm] ??= p;
  return { settings: Object.keys(problems).length ? null : settings, problems };
}

/** A checkpoint that can be sampled as a policy: a valid config, a tokenizer, and not a reward model. */
export function policyProblem(info: CheckpointInfo | null): string | null {
  if (!info) return 'unreadable';
  if (!info.config) return 'no valid model config';
  if (!info.tokenizer) return 'no tokenizer';
  if (info.meta.stage === 'rm') return 'a reward model, not a policy';
  return null;
}

const SPLIT_TEXT: Record<Split, string> = { heldout: 'held-out split', rl: 'RL split', train: 'train split', val: 'validation split' };
export const splitLabel = (s: Split): string => SPLIT_TEXT[s];

/** the evaluation in flight's worker; null when none runs */
let live: WorkerHandle<ToEvalWorker> | null = null;
let scanSeq = 0;
/** bumped by every start and stop: an evaluation whose number is no longer current has been stopped */
let evalSeq = 0;
let suiteSeq = 0;

/** What one stored run offers: its readable policy checkpoints and its splits. */
async function scanRun(run: string): Promise<StoredRunSources> {
  const store = (await runStorage()).open(run);
  const files = await store.files();
  const checkpoints: RunCheckpoint[] = [];
  const rewardModels: string[] = [];
  for (const file of files.filter((f) => !f.includes('/') && f.endsWith('.ckpt'))) {
    let c: RunCheckpoint;
    try {
      const bytes = await store.read(file);
      c = { file, info: bytes ? summarise(bytes) : null, problem: bytes ? null : 'it is no longer stored' };
    } catch (e) {
      c = { file, info: null, problem: errorText(e) };
    }
    if (c.info?.meta.stage === 'rm') rewardModels.push(file);
    else checkpoints.push(c);
  }
  return { run, checkpoints, rewardModels, splits: SPLITS.filter((s) => files.includes(`tasks/${s}.jsonl`)) };
}

async function readCheckpoint(
  ref: CheckpointRef,
  onnxModels: readonly OnnxModelEntry[],
  models: LabState['models'],
): Promise<Uint8Array | OnnxEvalModel | HfEvalModel> {
  if (ref.kind === 'hf') {
    // the worker reads the model from the store itself (its weights never pass through the page)
    const m = completeModels(models.items).find((x) => x.id === ref.id);
    if (!m || !models.store)
      throw new Error(`the Hugging Face model ${ref.id} is no longer stored; import it again in the Hugging Face models panel`);
    return { kind: 'hf', id: m.id, name: m.manifest.name, storage: models.store };
  }
  if (ref.kind === 'onnx') {
    const m = onnxModels.find((x) => x.name === ref.name);
    if (!m) throw new Error(`the ONNX model ${ref.name} is no longer loaded; import it again in the Checkpoints panel`);
    return { kind: 'onnx', bytes: m.bytes, tokenizerText: m.tokenizerText, file: m.name, contextLength: m.contextLength };
  }
  if (ref.kind === 'stored') {
    return loadCheckpointBrowser(ref.name);
  }
  const bytes = await (await runStorage()).open(ref.run).read(ref.file);
  if (!bytes) throw new Error(`${ref.run}/${ref.file} is no longer stored`);
  return bytes;
}

export const createEvalSlice: StateCreator<LabState, [], [], EvalSlice> = (set, get) => {
  const patch = (p: Partial<EvalSlice['evaluation']>): void => set((s) => ({ evaluation: { ...s.evaluation, ...p } }));

  /** Parses `bytes` as the suite `ref`, read from `file` (unless a later load has started since). */
  async function loadSuiteBytes(seq: number, ref: SuiteRef, file: string, label: string, read: () => Promise<Uint8Array>): Promise<void> {
    try {
      const { loadSuite } = await import('../tasks/suite');
      const { items, issues } = await loadSuite(await read(), file);
      if (seq !== suiteSeq) return;
      const suite: LoadedSuite = { ref, label, tasks: items, issues };
      patch(ref.kind === 'file' ? { suite, fileSuite: suite, suiteError: null } : { suite, suiteError: null });
    } catch (e) {
      if (seq === suiteSeq) patch({ suite: null, suiteError: `Could not read ${label}: ${errorText(e)}` });
    }
  }

  return {
    evaluation: {
      onnxModels: [],
      runs: [],
      scanning: false,
      scanError: null,
      suite: null,
      fileSuite: null,
      suiteError: null,
      status: 'idle',
      backend: null,
      note: null,
      progress: null,
      job: null,
      report: null,
      error: null,
    },

    addOnnxModel(m) {
      patch({ onnxModels: [...get().evaluation.onnxModels.filter((x) => x.name !== m.name), m] });
    },

    async scanEvalSources() {
      const seq = ++scanSeq;
      patch({ scanning: true });
      try {
        const names = await (await runStorage()).runs();
        const runs: StoredRunSources[] = [];
        for (const run of names) runs.push(await scanRun(run));
        if (seq === scanSeq) patch({ runs, scanError: null });
      } catch (e) {
        if (seq === scanSeq) patch({ scanError: `Could not read the stored runs: ${errorText(e)}` });
      } finally {
        if (seq === scanSeq) patch({ scanning: false });
      }
    },

    async loadBuiltinSuite(name) {
      const seq = ++suiteSeq;
      const s = builtinSuite(name);
      if (!s) {
        patch({ suite: null, suiteError: `There is no built-in suite named "${name}".` });
        return;
      }
      await loadSuiteBytes(seq, { kind: 'builtin', name }, s.file, s.title, () => fetchBuiltinSuite(s));
    },

    async loadRunSuite(run, split) {
      const seq = ++suiteSeq;
      const ref: SuiteRef = { kind: 'run', run, split };
      await loadSuiteBytes(seq, ref, `tasks/${split}.jsonl`, `${run}: ${splitLabel(split)}`, async () => {
        const bytes = await (await runStorage()).open(run).read(`tasks/${split}.jsonl`);
        if (!bytes) throw new Error(`tasks/${split}.jsonl is no longer stored`);
        return bytes;
      });
    },

    async openSuiteFile(file) {
      const seq = ++suiteSeq;
      await loadSuiteBytes(
        seq,
        { kind: 'file', name: file.name },
        file.name,
        `"${file.name}"`,
        async () => new Uint8Array(await file.arrayBuffer()),
      );
    },

    chooseFileSuite() {
      const fileSuite = get().evaluation.fileSuite;
      if (fileSuite) {
        suiteSeq++; // a split still loading does not replace it
        patch({ suite: fileSuite, suiteError: null });
      }
    },

    async startEval(ref, settings, backendChoice) {
      if (get().evaluation.status === 'running') return;
      const suite = get().evaluation.suite;
      const problems = Object.values(settingsProblems(settings));
      const job = { checkpoint: checkpointKey(ref), suite: suite ? suiteKey(suite.ref) : '', settings };
      if (!suite || !suite.tasks.length || problems.length) {
        patch({ status: 'error', job, error: problems[0] ?? 'choose a suite with at least one valid task first' });
        return;
      }
      const my = ++evalSeq;
      patch({ status: 'running', job, backend: null, note: null, progress: null, report: null, error: null });
      try {
        const checkpoint = await readCheckpoint(ref, get().evaluation.onnxModels, get().models);
        let backend: RunBackend = 'cpu';
        let note: string | null = null;
        // an ONNX model runs in onnxruntime-web, not on our engine
        if (backendChoice === 'auto' && ref.kind !== 'onnx') ({ backend, note } = await askedBackend(get, 'evaluation'));
        if (my !== evalSeq) return; // stopped while the checkpoint was read or the GPU settled
        patch({ backend, note });
        const worker = startWorker(
          () => new Worker(new URL('../rl/eval-worker.ts', import.meta.url), { type: 'module', name: 'coderl eval' }),
          EVAL_WORKER,
          {
            start: { type: 'start', checkpoint, tasks: suite.tasks, settings, backend },
            // a checkpoint's bytes move (they were read for this worker); an ONNX model's are copied (the store keeps them)
            transfer: checkpoint instanceof Uint8Array ? [checkpoint.buffer as ArrayBuffer] : [],
            onMessage: (m) => {
              if (m.type === 'progress') patch({ progress: m.progress });
              else patch({ backend: m.backend, note: m.note ?? get().evaluation.note });
            },
          },
        );
        live = worker;
        const last = await worker.done;
        if (live === worker) live = null;
        if (my !== evalSeq) return;
        if (last.type === 'done') patch({ status: 'done', report: last.report });
        else if (last.type === 'error') patch({ status: 'error', error: last.message });
      } catch (e) {
        if (my === evalSeq) patch({ status: 'error', error: errorText(e) });
      }
    },

    stopEval() {
      if (get().evaluation.status !== 'running') return;
      evalSeq++;
      patch({ status: 'stopped' });
      live?.terminate();
      live = null;
    },
  };
};
