/**
 * Where a run's tasks come from: the built-in families (any subset), a built-in benchmark suite
 * (tasks/builtin-suites.ts: HumanEval-X JavaScript, HumanEval Python; fetched from the app's own
 * assets), or a suite file the user opens (JSONL as the scorer takes it, gzipped too). A suite is
 * read and checked at once (rl/tasks/from-suite.ts: every load issue, too few tasks or no
 * solutions is shown inline and changes nothing); a good one sets config.tasks.suite (name,
 * SHA-256, size) in the overrides and hands its text up, which the run directory keeps on Start.
 * A built-in suite is recorded as `coderl train --suite NAME` records it (its file's name), and
 * its text is fetched again when the overrides name it without one (e.g. a stored run's settings).
 */
import { useEffect, useId, useRef, useState } from 'react';
import { FAMILIES, FAMILY_DOC, type Family } from '../../rl/tasks';
import { readSuiteSource, sha256Hex, type SuiteRef } from '../../rl/tasks/from-suite';
import { fetchBuiltinSuite } from '../../store/builtin-suites';
import { BUILTIN_SUITES, builtinSuiteLabel, type BuiltinSuite } from '../../tasks/builtin-suites';
import { bytesToText } from '../../tasks/bytes';
import { getPath, withOverride } from './fields';
import type { RlConfig } from '../../rl/config';
import { errorText } from '../../util/errors';

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

/** The built-in suite a recorded suite is: the same file name and size (its text is then checked against the SHA-256). */
function builtinOf(ref: SuiteRef | null): BuiltinSuite | undefined {
  return ref ? BUILTIN_SUITES.find((s) => s.file === ref.name && s.tasks === ref.tasks) : undefined;
}

export function SuitePicker({ preset, overrides, cfg, onOverrides, suiteText, onSuiteText, disabled }: Props) {
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  const [reading, setReading] = useState(false);
  /** bumped by every choice: a suite still being read when another is chosen is dropped */
  const seq = useRef(0);
  const ref = (cfg?.tasks.suite ?? null) as SuiteRef | null;
  const benchmark = builtinOf(ref);
  const off = disabled || overrides === null || cfg === null;
  const families = (cfg?.tasks.families ?? []) as Family[];

  const setPath = (path: string, value: unknown): void => onOverrides(JSON.stringify(withOverride(overrides, preset, path, value)));
  const builtIn = (): void => {
    seq.current++;
    setError(null);
    onSuiteText(null);
    setPath('tasks.suite', undefined);
  };
  /** reads and checks a suite named `name`; a good one becomes the run's tasks */
  const load = async (name: string, read: () => Promise<Uint8Array>): Promise<void> => {
    const my = ++seq.current;
    setError(null);
    setReading(true);
    try {
      const text = await bytesToText(await read());
      const { ref } = await readSuiteSource(text, name);
      if (my !== seq.current) return;
      onSuiteText(text);
      setPath('tasks.suite', ref);
    } catch (e) {
      if (my === seq.current) setError(errorText(e));
    } finally {
      if (my === seq.current) setReading(false);
    }
  };
  const open = (file: File): Promise<void> => load(file.name, async () => new Uint8Array(await file.arrayBuffer()));
  const choose = (s: BuiltinSuite): Promise<void> => load(s.file, () => fetchBuiltinSuite(s));

  // a built-in suite named without its text (a stored run's settings): fetch it, if it is still the same file
  const wantSha = benchmark && suiteText === null ? ref!.sha256 : null;
  useEffect(() => {
    if (!benchmark || wantSha === null) return;
    let live = true;
    void fetchBuiltinSuite(benchmark)
      .then(bytesToText)
      .then(async (text) => {
        if (live && (await sha256Hex(text)) === wantSha) onSuiteText(text);
      })
      .catch(() => undefined); // the hint then asks for the file
    return () => {
      live = false;
    };
  }, [benchmark, wantSha, onSuiteText]);
  const toggle = (f: Family, on: boolean): void => {
    const next = FAMILIES.filter((x) => (x === f ? on : families.includes(x)));
    setPath('tasks.families', next);
  };

  return (
    <fieldset
      className="exp-suite"
      data-testid="exp-suite"
      data-source={ref ? (benchmark ? 'benchmark' : 'file') : 'builtin'}
      data-suite={benchmark?.name}
      disabled={off}
    >
      <legend>Tasks</legend>
      <label>
        <input type="radio" name={`${id}-src`} checked={!ref} onChange={builtIn} data-testid="exp-suite-builtin" /> Built-in families
      </label>
      {!ref && (
        <div className="exp-families" role="group" aria-label="Task families">
          {FAMILIES.map((f) => (
            <label key={f} title={FAMILY_DOC[f]}>
              <input
                type="checkbox"
                checked={families.includes(f)}
                onChange={(e) => toggle(f, e.target.checked)}
                data-testid={`exp-family-${f}`}
              />{' '}
              {f}
            </label>
          ))}
          {getPath(overrides, 'tasks.families') !== undefined && families.length === 0 && (
            <p className="field-error" role="alert">
              Pick at least one family.
            </p>
          )}
        </div>
      )}
      <div className="exp-benchmarks" role="group" aria-label="Built-in benchmark suites">
        {BUILTIN_SUITES.map((s) => (
          <label key={s.name} title={`${s.description} (${s.source})`}>
            <input
              type="radio"
              name={`${id}-src`}
              checked={benchmark === s}
              onChange={() => void choose(s)}
              data-testid={`exp-suite-${s.name}`}
            />{' '}
            {builtinSuiteLabel(s)}
          </label>
        ))}
      </div>
      <label htmlFor={`${id}-file`}>
        <input type="radio" name={`${id}-src`} checked={!!ref && !benchmark} readOnly tabIndex={-1} aria-hidden /> A suite file:
      </label>{' '}
      <input
        id={`${id}-file`}
        type="file"
        accept=".jsonl,.json,.gz,application/gzip"
        aria-label="Open a suite file (JSONL)"
        data-testid="exp-suite-file"
        aria-describedby={error ? `${id}-error` : `${id}-help`}
        onChange={(e) => {
          const input = e.currentTarget;
          const file = input.files?.[0];
          if (file) void open(file).finally(() => (input.value = ''));
        }}
      />
      {reading && <span className="hint"> reading…</span>}
      <p id={`${id}-help`} className="hint" data-testid="exp-suite-info">
        {benchmark && ref ? (
          <>
            <strong>{benchmark.title}</strong> ({benchmark.file}, shipped with the app): {ref.tasks} {benchmark.language} tasks, split by
            task into train (those with a solution), RL and held-out;
            {suiteText === null
              ? ' its text is kept in the run directory (choose it again for a new run).'
              : ' kept in the run directory on Start.'}
          </>
        ) : ref ? (
          <>
            <strong>{ref.name}</strong>: {ref.tasks} tasks, split by task into train (those with a solution), RL and held-out;
            {suiteText === null
              ? ' its text is kept in the run directory (open it again for a new run).'
              : ' kept in the run directory on Start.'}
          </>
        ) : (
          <>
            JSONL with task_id, language, prompt, entry_point, tests and, for SFT, canonical_solution (the scorer's format; the lab's
            exported splits load as they are).
          </>
        )}
      </p>
      {error && (
        <p id={`${id}-error`} className="field-error" role="alert" data-testid="exp-suite-error">
          {error}
        </p>
      )}
    </fieldset>
  );
}
