/**
 * Where a run's tasks come from: the built-in families (any subset), or a suite file the user
 * opens (JSONL as the scorer takes it, gzipped too). A file is read and checked at once
 * (rl/tasks/from-suite.ts: every load issue, too few tasks or no solutions is shown inline and
 * changes nothing); a good one sets config.tasks.suite (name, SHA-256, size) in the overrides and
 * hands its text up, which the run directory keeps on Start.
 */
import { useId, useState } from 'react';
import { FAMILIES, FAMILY_DOC, type Family } from '../../rl/tasks';
import { readSuiteSource, type SuiteRef } from '../../rl/tasks/from-suite';
import { bytesToText } from '../../tasks/bytes';
import { getPath, withOverride } from './fields';
import type { RlConfig } from '../../rl/config';

interface Props {
  preset: string;
  /** the parsed overrides (null while the JSON is invalid: the picker is then disabled) */
  overrides: Record<string, unknown> | null;
  /** the preset merged with the overrides */
  cfg: RlConfig | null;
  onOverrides(text: string): void;
  /** the opened file's text, or null */
  suiteText: string | null;
  onSuiteText(text: string | null): void;
  disabled: boolean;
}

export function SuitePicker({ preset, overrides, cfg, onOverrides, suiteText, onSuiteText, disabled }: Props) {
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  const [reading, setReading] = useState(false);
  const ref = (cfg?.tasks.suite ?? null) as SuiteRef | null;
  const off = disabled || overrides === null || cfg === null;
  const families = (cfg?.tasks.families ?? []) as Family[];

  const setPath = (path: string, value: unknown): void => onOverrides(JSON.stringify(withOverride(overrides, preset, path, value)));
  const builtIn = (): void => {
    setError(null);
    onSuiteText(null);
    setPath('tasks.suite', undefined);
  };
  const open = async (file: File): Promise<void> => {
    setError(null);
    setReading(true);
    try {
      const text = await bytesToText(new Uint8Array(await file.arrayBuffer()));
      const { ref } = await readSuiteSource(text, file.name);
      onSuiteText(text);
      setPath('tasks.suite', ref);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setReading(false);
    }
  };
  const toggle = (f: Family, on: boolean): void => {
    const next = FAMILIES.filter((x) => (x === f ? on : families.includes(x)));
    setPath('tasks.families', next);
  };

  return (
    <fieldset className="exp-suite" data-testid="exp-suite" data-source={ref ? 'file' : 'builtin'} disabled={off}>
      <legend>Tasks</legend>
      <label>
        <input type="radio" name={`${id}-src`} checked={!ref} onChange={builtIn} data-testid="exp-suite-builtin" /> Built-in families
      </label>
      {!ref && (
        <div className="exp-families" role="group" aria-label="Task families">
          {FAMILIES.map((f) => (
            <label key={f} title={FAMILY_DOC[f]}>
              <input type="checkbox" checked={families.includes(f)} onChange={(e) => toggle(f, e.target.checked)} data-testid={`exp-family-${f}`} /> {f}
            </label>
          ))}
          {getPath(overrides, 'tasks.families') !== undefined && families.length === 0 && <p className="field-error" role="alert">Pick at least one family.</p>}
        </div>
      )}
      <label htmlFor={`${id}-file`}>
        <input type="radio" name={`${id}-src`} checked={!!ref} readOnly tabIndex={-1} aria-hidden /> A suite file:
      </label>{' '}
      <input id={`${id}-file`} type="file" accept=".jsonl,.json,.gz,application/gzip" aria-label="Open a suite file (JSONL)" data-testid="exp-suite-file"
        aria-describedby={error ? `${id}-error` : `${id}-help`}
        onChange={(e) => {
          const input = e.currentTarget;
          const file = input.files?.[0];
          if (file) void open(file).finally(() => (input.value = ''));
        }} />
      {reading && <span className="hint"> reading…</span>}
      <p id={`${id}-help`} className="hint" data-testid="exp-suite-info">
        {ref ? (
          <>
            <strong>{ref.name}</strong>: {ref.tasks} tasks, split by task into train (those with a solution), RL and held-out;
            {suiteText === null ? ' its text is kept in the run directory (open it again for a new run).' : ' kept in the run directory on Start.'}
          </>
        ) : (
          <>JSONL with task_id, language, prompt, entry_point, tests and, for SFT, canonical_solution (the scorer's format; the lab's exported splits load as they are).</>
        )}
      </p>
      {error && <p id={`${id}-error`} className="field-error" role="alert" data-testid="exp-suite-error">{error}</p>}
    </fieldset>
  );
}
