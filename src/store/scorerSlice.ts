/**
 * The scratch scorer: one completion of the built-in task (tasks/scratch.ts) scored in the page
 * exactly as `coderl score` scores it: the sandbox pool runs prompt + completion + tests, the
 * cached Analyzer lints and parses it, and computeReward turns both into the breakdown.
 *
 * The pool and the analyzer are created lazily on the first score and kept in this module
 * (they are not serialisable UI state). A failure to load either is shown as `error`; the
 * completion text lives in the store and is never touched by scoring.
 */
import type { StateCreator } from 'zustand';
import type { AnalysisResult, Analyzer, Finding } from '../analysis';
import { computeReward, DEFAULT_REWARD, type RewardBreakdown } from '../reward/reward';
import type { SandboxPool } from '../sandbox/pool';
import type { JobTask } from '../sandbox/protocol';
import { DEFAULT_LIMITS, type RunResult } from '../sandbox/result';
import { SCRATCH_TASKS, type ScratchLanguage } from '../tasks/scratch';
import type { LabState } from './index';
import { errorText } from '../util/errors';

export interface ScratchScore {
  /** the task's language: static analysis (lint, AST, complexity) applies to JavaScript only */
  language: ScratchLanguage;
  /** the completion that was scored (the editor may have changed since) */
  completion: string;
  run: RunResult;
  tests_passed: number;
  tests_total: number;
  /** null for Python (not analysed), or when the analysis could not be loaded (see `error`) */
  analysis: AnalysisResult | null;
  /** null when a JavaScript analysis is missing: a reward without it would not be the CLI's reward */
  reward: RewardBreakdown | null;
  /** wall-clock time of the whole score, ms */
  ms: number;
  /** 1 for the session's first score, then counting up */
  seq: number;
}

export interface ScorerSlice {
  scorer: {
    /** the selected built-in task */
    language: ScratchLanguage;
    completion: string;
    busy: boolean;
    result: ScratchScore | null;
    /** the sandbox or the analysis failed to load or crashed; shown as an alert */
    error: string | null;
  };
  setScratchCompletion(text: string): void;
  resetScratchCompletion(): void;
  /** selects the JavaScript or Python task; the editor gets its reference, the result is cleared */
  setScratchLanguage(language: ScratchLanguage): void;
  scoreScratch(): Promise<void>;
}

let pool: SandboxPool | null = null;
let analyzer: Promise<Analyzer> | null = null;

/** Pool messages that mean the sandbox itself failed, not the program. */
const POOL_FAILURE = /^(the sandbox worker crashed|sandbox workers fail to start|the worker did not start)/;

async function getPool(): Promise<SandboxPool> {
  if (!pool) {
    const { createBrowserPool } = await import('../sandbox/pool.browser');
    pool = createBrowserPool({ size: 1 });
  }
  return pool;
}

/** The page's one cached Analyzer, loaded on first use (shared with the rollout view's what-if rescoring). */
export function getAnalyzer(): Promise<Analyzer> {
  analyzer ??= (async () => {
    const [{ createAnalyzer }, { browserWasmLoader }] = await Promise.all([import('../analysis'), import('../analysis/wasm-browser')]);
    return createAnalyzer(browserWasmLoader, { cacheSize: 64 });
  })().catch((e: unknown) => {
    analyzer = null; // retried on the next score
    throw e;
  });
  return analyzer;
}

const message = (e: unknown): string => errorText(e);

/** A place in the scored completion to mark in its editor: character offsets into the completion. */
export interface ScratchMark {
  start: number;
  end: number;
  severity: Finding['severity'];
  message: string;
  /** tree-sitter, eslint, metrics or sandbox */
  source: string;
  code: string;
}

/** Offsets of line `line` (1-based, clamped) of `text`, from its first non-blank character to its end. */
export function lineSpan(text: string, line: number): { start: number; end: number } {
  let start = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', start);
    if (nl === -1) break;
    start = nl + 1;
  }
  const nl = text.indexOf('\n', start);
  const end = nl === -1 ? text.length : nl;
  const lead = /^[ \t]*/.exec(text.slice(start, end))![0].length;
  return { start: start + lead < end ? start + lead : start, end };
}

/**
 * The marks of a score in its completion (the editor holds the completion alone, and every
 * offset of the analysis is one into the completion: analyze() shifts tree-sitter's issues by
 * the prompt's length and re-bases ESLint's and the metrics' findings on the completion): every
 * diagnostic (syntax errors, lint, metrics), and the line the run failed at when the sandbox
 * places it in the completion, unless tree-sitter already marks a syntax error.
 */
export function scratchMarks(r: Pick<ScratchScore, 'analysis' | 'run' | 'completion'>): ScratchMark[] {
  const marks: ScratchMark[] = (r.analysis?.diagnostics ?? []).map((f) => ({
    start: f.start,
    end: f.end,
    severity: f.severity,
    message: f.message,
    source: f.source === 'ast' ? 'tree-sitter' : f.source,
    code: f.ruleId,
  }));
  const loc = r.run.location;
  if (loc?.in === 'completion' && r.run.message && r.analysis?.ast.valid !== false) {
    marks.push({ ...lineSpan(r.completion, loc.line), severity: 'error', message: r.run.message, source: 'sandbox', code: r.run.verdict });
  }
  return marks;
}

async function runProgram(lang: ScratchLanguage, completion: string): Promise<RunResult> {
  return runInSandbox(SCRATCH_TASKS[lang].task, completion);
}

/**
 * Runs `task`'s prompt + completion + tests on the page's one sandbox pool (shared with the rollout
 * view's what-if rescoring); a failure of the sandbox itself, not of the program, throws.
 */
export async function runInSandbox(task: JobTask, completion: string): Promise<RunResult> {
  const { task_id, language, prompt, entry_point, tests } = task;
  const p = await getPool();
  const run = await p.run({ task: { task_id, language, prompt, entry_point, tests }, completion, limits: DEFAULT_LIMITS });
  if (run.verdict === 'error' && run.message && POOL_FAILURE.test(run.message)) {
    if (run.message.startsWith('sandbox workers fail to start')) {
      p.close(); // a broken pool stays broken: the next score starts a fresh one
      if (pool === p) pool = null;
    }
    throw new Error(`The sandbox failed: ${run.message}`);
  }
  return run;
}

export const createScorerSlice: StateCreator<LabState, [], [], ScorerSlice> = (set, get) => {
  const patch = (p: Partial<ScorerSlice['scorer']>): void => set((s) => ({ scorer: { ...s.scorer, ...p } }));

  return {
    scorer: { language: 'javascript', completion: SCRATCH_TASKS.javascript.reference, busy: false, result: null, error: null },

    setScratchCompletion(text) {
      patch({ completion: text });
    },

    resetScratchCompletion() {
      patch({ completion: SCRATCH_TASKS[get().scorer.language].reference });
    },

    setScratchLanguage(language) {
      if (get().scorer.busy || language === get().scorer.language) return;
      patch({ language, completion: SCRATCH_TASKS[language].reference, result: null, error: null });
    },

    async scoreScratch() {
      if (get().scorer.busy) return;
      const { completion, language } = get().scorer;
      const { task } = SCRATCH_TASKS[language];
      const t0 = performance.now();
      patch({ busy: true, error: null });
      try {
        const [ran, analysed] = await Promise.allSettled([
          runProgram(language, completion),
          // the analyzer is JavaScript-only: Python gets the reward without lint/ast/complexity
          language === 'javascript' ? getAnalyzer().then((a) => a.analyze(completion, { prompt: task.prompt })) : Promise.resolve(null),
        ]);
        if (ran.status === 'rejected') {
          patch({ error: message(ran.reason), result: null });
          return;
        }
        const run = ran.value;
        const exec = {
          verdict: run.verdict,
          tests_passed: run.tests.filter((t) => t.status === 'passed').length,
          tests_total: run.tests.length,
        };
        const analysis = analysed.status === 'fulfilled' ? analysed.value : null;
        const reward = analysis || language === 'python' ? computeReward(completion, exec, analysis, DEFAULT_REWARD) : null;
        const error =
          analysed.status === 'rejected'
            ? `Static analysis could not be loaded: ${message(analysed.reason)}. The reward needs it and is not shown.`
            : null;
        patch({
          error,
          result: {
            language,
            completion,
            run,
            ...exec,
            analysis,
            reward,
            ms: performance.now() - t0,
            seq: (get().scorer.result?.seq ?? 0) + 1,
          },
        });
      } catch (e) {
        patch({ error: `Scoring failed: ${message(e)}` });
      } finally {
        patch({ busy: false });
      }
    },
  };
};
