/**
 * Experiment setup: a preset, a seed, a run name, where the tasks come from (built-in families
 * or a suite file), the model the run trains (the lab's GPT, or an imported Hugging Face model with LoRA or
 * full fine-tuning), the KL reference (the SFT policy or an imported model), the settings form and the JSON overrides it edits (validated as `coderl train
 * --set` validates them), Start, Pause/Continue and Stop, one progress bar per pipeline phase,
 * and the summary.
 * The run directory of the name is read as the name changes: a finished run shows its stored
 * summary, an unfinished one resumes on Start. A stored run exports as one `.coderl-run` file,
 * and such a file imports as the run it names (run-transfer.ts).
 */
import { useCallback, useEffect, useId, useMemo, useState, type FormEvent, type KeyboardEvent } from 'react';
import { RL_PRESETS } from '../../rl/config';
import type { Summary } from '../../rl/pipeline';
import { rmSummaryText } from '../../rl/stages/evaluation';
import type { ReferenceRef } from '../../rl/reference';
import { RUN_BUNDLE_EXT } from '../../rl/run-bundle';
import { exportRun, importRun } from '../../rl/run-transfer';
import { checkRunName } from '../../rl/run-dir-browser';
import { useLab } from '../../store';
import { overridesOf, parseSettings } from '../../store/runSlice';
import { downloadBlob } from '../download';
import { effective } from '../setup/fields';
import { SettingsForm } from '../setup/SettingsForm';
import { PolicyPicker } from '../setup/PolicyPicker';
import { ReferencePicker } from '../setup/ReferencePicker';
import { storedReference } from '../setup/reference';
import { SuitePicker } from '../setup/SuitePicker';
import { BackendPicker, RunPlan } from '../setup/RunPlan';
import { ReferenceText, RunProgress } from './RunProgress';
import { errorText } from '../../util/errors';
import { refusedText } from '../../util/refused';

const PRESETS = Object.keys(RL_PRESETS);

const STORE_TEXT = { opfs: 'OPFS', indexeddb: 'IndexedDB' } as const;

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '—');

function nameProblem(name: string): string | null {
  try {
    checkRunName(name);
    return null;
  } catch (e) {
    return errorText(e);
  }
}

export function ExperimentPanel() {
  const status = useLab((s) => s.run.status);
  const runName = useLab((s) => s.run.name);
  const liveSummary = useLab((s) => s.run.summary);
  const stored = useLab((s) => s.run.stored);
  const runs = useLab((s) => s.run.runs);
  const start = useLab((s) => s.startRun);
  const stop = useLab((s) => s.stopRun);
  const pause = useLab((s) => s.run.pause);
  const pauseRun = useLab((s) => s.pauseRun);
  const resumeRun = useLab((s) => s.resumeRun);
  const inspect = useLab((s) => s.inspectRun);
  // what the user enters lives in the store (setupSlice), so a remounted panel finds it
  const { preset, seed, name, overrides, suiteText, formKey } = useLab((s) => s.setup);
  const patchSetup = useLab((s) => s.patchSetup);
  const setOverridesByHand = useLab((s) => s.setOverridesByHand);
  const setPreset = (v: string): void => patchSetup({ preset: v });
  const setSeed = (v: string): void => patchSetup({ seed: v });
  const setName = (v: string | null): void => patchSetup({ name: v });
  const setOverrides = useCallback((v: string): void => patchSetup({ overrides: v }), [patchSetup]);
  const setSuiteText = useCallback((v: string | null): void => patchSetup({ suiteText: v }), [patchSetup]);
  /** fields of the settings form holding invalid text */
  const [drafts, setDrafts] = useState(0);
  const onDrafts = useCallback((n: number) => setDrafts(n), []);
  /** why the policy model, as chosen, cannot be trained (a memory plan over budget, ...) */
  const [policyProblem, setPolicyProblem] = useState<string | null>(null);
  const onPolicyProblem = useCallback((p: string | null) => setPolicyProblem(p), []);
  const id = useId();

  const runDir = name ?? `${preset}-seed${seed}`;
  const settings = useMemo(() => parseSettings(preset, overrides), [preset, overrides]);
  const seedValue = Number(seed);
  const seedOk = seed.trim() !== '' && Number.isSafeInteger(seedValue) && seedValue >= 0;
  const nameError = nameProblem(runDir);
  const busy = status === 'running' || status === 'stopping';
  const valid = settings.cfg !== null && seedOk && nameError === null && drafts === 0 && policyProblem === null;
  const parsedOver = useMemo(() => {
    try {
      const v: unknown = overrides.trim() ? JSON.parse(overrides) : {};
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  }, [overrides]);
  const shown = useMemo(() => (parsedOver ? effective(preset, parsedOver) : null), [preset, parsedOver]);

  useEffect(() => {
    if (nameError || busy) return;
    const t = setTimeout(() => void inspect(runDir), 250);
    return () => clearTimeout(t);
  }, [runDir, nameError, busy, inspect]);
  // another tab may have added, imported or deleted runs: re-read the list when the page comes back
  const refreshRuns = useLab((s) => s.refreshRuns);
  useEffect(() => {
    const again = (): void => {
      if (document.visibilityState === 'visible') void refreshRuns();
    };
    window.addEventListener('focus', again);
    document.addEventListener('visibilitychange', again);
    return () => {
      window.removeEventListener('focus', again);
      document.removeEventListener('visibilitychange', again);
    };
  }, [refreshRuns]);

  const submit = (e?: FormEvent): void => {
    e?.preventDefault();
    if (valid && !busy) void start(preset, seedValue, overrides, runDir, settings.cfg?.tasks.suite ? (suiteText ?? undefined) : undefined);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) submit(e);
  };
  const here = stored?.run === runDir ? stored : null;
  const differs =
    here?.config && settings.cfg && (JSON.stringify(here.config.cfg) !== JSON.stringify(settings.cfg) || here.config.seed !== seedValue);
  const useStored = (): void => {
    const c = here?.config;
    if (!c) return;
    setPreset(c.cfg.preset);
    setSeed(String(c.seed));
    setOverridesByHand(JSON.stringify(overridesOf(c.cfg)));
  };

  return (
    <div className="exp" data-testid="experiment">
      <p className="exp-start-here" data-testid="exp-start-here">
        <strong>Start here:</strong> pick a preset (<code>quick</code> runs every stage in a few minutes, <code>tiny</code> is the real
        experiment), press <strong>Start</strong>, watch the <em>Training curves</em>, then open a rollout under <em>Rollouts</em> to see
        each token's numbers and its reward.
      </p>
      <form className="exp-form" onSubmit={submit} aria-label="Experiment settings">
        <label htmlFor={`${id}-preset`}>Preset</label>
        <select id={`${id}-preset`} value={preset} disabled={busy} onChange={(e) => setPreset(e.target.value)} data-testid="exp-preset">
          {PRESETS.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-seed`}>Seed</label>
        <input
          id={`${id}-seed`}
          type="number"
          min={0}
          step={1}
          value={seed}
          disabled={busy}
          aria-invalid={!seedOk}
          onChange={(e) => setSeed(e.target.value)}
          data-testid="exp-seed"
        />
        <label htmlFor={`${id}-name`}>Run name</label>
        <div>
          <input
            id={`${id}-name`}
            value={runDir}
            disabled={busy}
            list={`${id}-runs`}
            aria-invalid={nameError !== null}
            aria-describedby={nameError ? `${id}-name-error` : undefined}
            onChange={(e) => setName(e.target.value)}
            data-testid="exp-name"
          />
          <datalist id={`${id}-runs`}>
            {runs.map((r) => (
              <option key={r} value={r} />
            ))}
          </datalist>
          {nameError && (
            <p id={`${id}-name-error`} className="field-error" data-testid="exp-name-error">
              {nameError}
            </p>
          )}
        </div>
        <BackendPicker disabled={busy} />
        <div className="exp-wide">
          <RunPlan cfg={settings.cfg} seed={seedOk ? seedValue : 1} />
        </div>
        <div className="exp-buttons">
          <button type="submit" disabled={!valid || busy} data-testid="exp-start">
            {here?.config && !here.summary ? 'Resume' : 'Start'}
          </button>
          <button
            type="button"
            onClick={pause === 'no' ? pauseRun : resumeRun}
            disabled={status !== 'running'}
            aria-pressed={pause !== 'no'}
            data-testid="exp-pause"
          >
            {pause === 'no' ? 'Pause' : 'Continue'}
          </button>
          <button type="button" onClick={stop} disabled={status !== 'running'} data-testid="exp-stop">
            Stop
          </button>
        </div>
        <div className="exp-wide">
          <SuitePicker
            preset={preset}
            overrides={parsedOver}
            cfg={shown}
            onOverrides={setOverrides}
            suiteText={suiteText}
            onSuiteText={setSuiteText}
            disabled={busy}
          />
          <PolicyPicker
            preset={preset}
            overrides={parsedOver}
            cfg={shown}
            onOverrides={setOverrides}
            disabled={busy}
            onProblem={onPolicyProblem}
          />
          <ReferencePicker preset={preset} overrides={parsedOver} cfg={shown} onOverrides={setOverrides} disabled={busy} />
          <SettingsForm
            resetKey={formKey}
            preset={preset}
            overrides={overrides}
            onOverrides={setOverrides}
            configError={settings.error}
            disabled={busy}
            onDrafts={onDrafts}
          />
          {drafts > 0 && (
            <p className="field-error" data-testid="exp-drafts">
              {drafts === 1 ? 'One setting needs' : `${drafts} settings need`} a fix before the run can start.
            </p>
          )}
        </div>
        <label htmlFor={`${id}-over`}>Overrides (JSON)</label>
        <div>
          <textarea
            id={`${id}-over`}
            className="exp-overrides"
            rows={4}
            spellCheck={false}
            value={overrides}
            disabled={busy}
            aria-invalid={settings.error !== null}
            aria-describedby={`${id}-over-help${settings.error ? ` ${id}-over-error` : ''}`}
            onChange={(e) => setOverridesByHand(e.target.value)}
            onKeyDown={onKeyDown}
            data-testid="exp-overrides"
          />
          <p id={`${id}-over-help`} className="hint">
            Preset fields to change, as for <code>coderl train --set</code>, e.g. {'{"rl":{"algo":"grpo"}}'}. Ctrl/Cmd+Enter starts.
          </p>
          {settings.error && (
            <p id={`${id}-over-error`} className="field-error" role="alert" data-testid="exp-overrides-error">
              {settings.error}
            </p>
          )}
        </div>
      </form>
      {here && !busy && (
        <div className="hint" data-testid="exp-stored" data-files={here.files.length} data-finished={String(here.summary !== null)}>
          {here.files.length === 0 ? (
            <>
              No run named “{here.run}” is stored yet; it will be kept in {STORE_TEXT[here.kind]}.
            </>
          ) : (
            <details>
              <summary>
                Stored in {STORE_TEXT[here.kind]}: {here.files.length} files, {here.summary ? 'finished' : 'unfinished (Start resumes it)'}
              </summary>
              <ul className="exp-files">
                {here.files.map((f) => (
                  <li key={f}>{f}</li>
                ))}
              </ul>
            </details>
          )}
          {here.files.length > 0 && <DeleteRun run={here.run} files={here.files.length} />}
          {differs && (
            <p>
              It was started with other settings (seed {here.config!.seed}, preset {here.config!.cfg.preset}).{' '}
              <button type="button" className="link" onClick={useStored} data-testid="exp-use-stored">
                Use its settings
              </button>
            </p>
          )}
        </div>
      )}
      {!busy && <RunTransfer run={here && here.files.length > 0 ? here.run : null} onImported={setName} />}
      <RunProgress />
      <SummaryView
        summary={(runName === runDir ? liveSummary : null) ?? here?.summary ?? null}
        reference={here?.config ? storedReference(here.config) : undefined}
      />
    </div>
  );
}

/** Deletes a stored run after an inline confirmation (Escape or Cancel keeps it). */
function DeleteRun({ run, files }: { run: string; files: number }) {
  const del = useLab((s) => s.deleteRun);
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setAsking(false);
    setError(null);
  }, [run]);
  const confirm = async (): Promise<void> => {
    try {
      await del(run);
      setAsking(false);
    } catch (e) {
      setError(`Could not delete “${run}”: ${errorText(e)}`);
    }
  };
  if (!asking) {
    return (
      <p>
        <button type="button" className="link" onClick={() => setAsking(true)} data-testid="exp-delete">
          Delete run…
        </button>
      </p>
    );
  }
  return (
    <div role="group" aria-label={`Delete run ${run}`} className="exp-confirm" onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}>
      <p>
        Delete run “{run}” and its {files} files from this browser? This cannot be undone; export it first to keep a copy.
      </p>
      <button type="button" onClick={() => void confirm()} data-testid="exp-delete-confirm" autoFocus>
        Delete
      </button>{' '}
      <button type="button" onClick={() => setAsking(false)} data-testid="exp-delete-cancel">
        Cancel
      </button>
      {error && (
        <p role="alert" className="field-error" data-testid="exp-delete-error">
          {error}
        </p>
      )}
    </div>
  );
}

/** Export the selected stored run (`run`, null when nothing is stored) and import a run file. */
function RunTransfer({ run, onImported }: { run: string | null; onImported(name: string): void }) {
  const inspect = useLab((s) => s.inspectRun);
  const runs = useLab((s) => s.run.runs);
  const [error, setError] = useState<{ kind: 'import' | 'export'; message: string } | null>(null);
  /** a file refused because its run name is taken: it can be imported under another name */
  const [clash, setClash] = useState<{ file: File; name: string } | null>(null);
  const id = useId();

  const doExport = async (run: string): Promise<void> => {
    setError(null);
    try {
      downloadBlob(`${run}${RUN_BUNDLE_EXT}`, await exportRun(run));
    } catch (e) {
      setError({ kind: 'export', message: `Export failed: ${errorText(e)}` });
    }
  };
  const doImport = async (file: File, as?: string): Promise<void> => {
    setError(null);
    try {
      const name = await importRun(new Uint8Array(await file.arrayBuffer()), as);
      setClash(null);
      await inspect(name);
      onImported(name);
    } catch (e) {
      const message = errorText(e);
      setError({ kind: 'import', message: refusedText(file.name, e, as) });
      if (/already exists/.test(message)) {
        const base = as ?? /a run named "(.*)" already exists/.exec(message)?.[1] ?? 'imported';
        setClash({ file, name: nextFreeName(base, runs) });
      } else if (!as) {
        setClash(null);
      }
    }
  };

  return (
    <div className="hint exp-transfer" data-testid="exp-transfer">
      {run && (
        <button type="button" onClick={() => void doExport(run)} data-testid="exp-export">
          Export run
        </button>
      )}{' '}
      <label htmlFor={`${id}-import`}>Import run…</label>{' '}
      <input
        id={`${id}-import`}
        type="file"
        accept={RUN_BUNDLE_EXT}
        aria-label="Import run"
        data-testid="exp-import"
        onChange={(e) => {
          const input = e.currentTarget;
          const file = input.files?.[0];
          if (file) void doImport(file).finally(() => (input.value = '')); // the same file can be picked again
        }}
      />
      {error && (
        <div role="alert" className="alert" data-testid={`exp-${error.kind}-error`}>
          {error.message}
        </div>
      )}
      {clash && (
        <form
          className="exp-import-as"
          onSubmit={(e) => {
            e.preventDefault();
            void doImport(clash.file, clash.name);
          }}
        >
          <label htmlFor={`${id}-as`}>Import as</label>{' '}
          <input
            id={`${id}-as`}
            value={clash.name}
            onChange={(e) => setClash({ ...clash, name: e.target.value })}
            aria-invalid={nameProblem(clash.name) !== null}
            data-testid="exp-import-as-name"
          />{' '}
          <button type="submit" disabled={nameProblem(clash.name) !== null} data-testid="exp-import-as">
            Import
          </button>{' '}
          <button type="button" className="link" onClick={() => setClash(null)}>
            Cancel
          </button>
          {nameProblem(clash.name) && <p className="field-error">{nameProblem(clash.name)}</p>}
        </form>
      )}
    </div>
  );
}

/** `base-2`, `base-3`, … : the first not among `taken`. */
function nextFreeName(base: string, taken: readonly string[]): string {
  const stem = base.replace(/-\d+$/, '');
  for (let i = 2; ; i++) if (!taken.includes(`${stem}-${i}`)) return `${stem}-${i}`;
}

/** A run's summary; `reference` is its stored config's KL reference (null: the SFT policy; undefined: its config is not read). */
function SummaryView({ summary: s, reference }: { summary: Summary | null; reference: ReferenceRef | null | undefined }) {
  if (!s) return null;
  const rows: [string, keyof Summary['sft'] & keyof Summary['rl']][] = [
    ['held-out pass@1', 'heldout_pass1'],
    ['train-task pass@1', 'train_pass1'],
    ['RL-task pass@1', 'rl_tasks_pass1'],
  ];
  return (
    <div className="exp-summary" data-testid="exp-summary">
      <h3>Summary</h3>
      <table>
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">SFT</th>
            <th scope="col">
              RL ({s.rl.algo}, {s.rl.iterations} it.)
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, k]) => (
            <tr key={k}>
              <th scope="row">{label}</th>
              <td data-testid={`exp-sft-${k}`} data-value={s.sft[k] as number}>
                {pct(s.sft[k] as number)}
              </td>
              <td data-testid={`exp-rl-${k}`} data-value={s.rl[k] as number}>
                {pct(s.rl[k] as number)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p data-testid="exp-rm">
        Reward model: {s.rm === null ? 'disabled' : 'skipped' in s.rm ? `skipped (${s.rm.skipped})` : rmSummaryText(s.rm)}
      </p>
      <p className="hint">
        <span data-testid="exp-minutes" data-value={s.minutes}>
          {s.minutes.toFixed(1)} minutes
        </span>{' '}
        · {s.backend} backend · preset {s.preset} · seed {s.seed} · SFT best step {s.sft.best_step} of {s.sft.steps}
        {reference !== undefined && (
          <>
            {' '}
            · <ReferenceText reference={reference} testId="exp-summary-reference" />
          </>
        )}
      </p>
    </div>
  );
}
