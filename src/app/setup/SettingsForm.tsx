/**
 * The settings form over the JSON overrides: one input per field of setup/fields.ts, grouped in
 * collapsible sections, each showing the preset's value merged with the overrides. A valid edit
 * rewrites the overrides text (with what the form derives for settings it does not show,
 * applyField); an invalid one stays in its input with the validator's message beside it and a
 * reset to the preset's value (and blocks Start through `onDrafts`), so nothing typed is lost;
 * while it does, a notice under the form says the JSON is not updated and what it keeps. A
 * whole-config error that concerns a shown field (e.g. from the JSON box) is shown at that field
 * too. Drafts are dropped when the preset changes or the JSON text is edited by hand (`resetKey`).
 */
import { useEffect, useId, useMemo, useState } from 'react';
import './setup.css';
import {
  applyField,
  changedCount,
  effective,
  fieldError,
  fieldOfError,
  fieldView,
  parseField,
  SECTIONS,
  staleNotice,
  type Drafts,
  type Field,
} from './fields';

interface Props {
  preset: string;
  /** the overrides JSON text (the source of truth) */
  overrides: string;
  onOverrides(text: string): void;
  /** the whole config's error (parseSettings), if any */
  configError: string | null;
  disabled: boolean;
  /** changes when the JSON text is edited by hand: typed drafts no longer apply and are dropped */
  resetKey: number;
  /** how many fields hold text that is not a valid value (Start waits for none) */
  onDrafts(invalid: number): void;
}

function parseOverrides(text: string): Record<string, unknown> | null {
  if (!text.trim()) return {};
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function SettingsForm({ preset, overrides, onOverrides, configError, disabled, resetKey, onDrafts }: Props) {
  const id = useId();
  const [drafts, setDrafts] = useState<Drafts>({});
  /** sections the user opened (a section with an error is open regardless) */
  const [opened, setOpened] = useState<Record<string, boolean>>({});
  useEffect(() => setDrafts({}), [preset, resetKey]);
  const over = useMemo(() => parseOverrides(overrides), [overrides]);
  const cfg = useMemo(() => effective(preset, over ?? {}), [preset, over]);
  const errorField = configError ? fieldOfError(configError) : null;
  const invalid = Object.values(drafts).filter((d) => d.error !== null).length;
  useEffect(() => onDrafts(invalid), [invalid, onDrafts]);

  if (!cfg) return null;
  if (!over) {
    return (
      <p className="hint" data-testid="exp-form-blocked">
        The settings form needs valid JSON overrides (an object); fix them below.
      </p>
    );
  }

  const drop = (f: Field): void => setDrafts(({ [f.path]: _gone, ...rest }) => rest);
  const commit = (f: Field, value: unknown): void => {
    drop(f);
    onOverrides(JSON.stringify(applyField(over, preset, f.path, value)));
  };
  /** typed text: a valid value goes into the overrides at once, the text stays as typed until blur */
  const edit = (f: Field, text: string): void => {
    const parsed = parseField(f, text);
    const error = parsed.error ?? fieldError(preset, f.path, parsed.value, over);
    setDrafts((d) => ({ ...d, [f.path]: { text, error } }));
    if (error === null) onOverrides(JSON.stringify(applyField(over, preset, f.path, parsed.value)));
  };
  const stale = staleNotice(preset, over, drafts);
  const blur = (f: Field): void => {
    if (drafts[f.path]?.error === null) drop(f);
  };

  return (
    <div className="exp-settings" data-testid="exp-settings" data-invalid={invalid}>
      {SECTIONS.map((s) => {
        const changed = changedCount(preset, over, s, drafts);
        const bad = s.fields.some((f) => drafts[f.path]?.error || errorField === f);
        return (
          <details
            key={s.id}
            open={bad || opened[s.id] === true}
            data-testid={`exp-section-${s.id}`}
            onToggle={(e) => {
              const open = e.currentTarget.open;
              setOpened((o) => (o[s.id] === open ? o : { ...o, [s.id]: open }));
            }}
          >
            <summary>
              {s.title}
              {changed > 0 && <span className="hint"> · {changed} changed</span>}
              {bad && <span className="field-error"> · needs a fix</span>}
            </summary>
            <div className="exp-fields">
              {s.fields.map((f) => {
                const fid = `${id}-${f.path.replace(/\./g, '-')}`;
                const draft = drafts[f.path];
                const view = fieldView(preset, over, f, draft, configError);
                const { value, error, hint } = view;
                const describedBy = [hint ? `${fid}-hint` : '', error ? `${fid}-error` : ''].filter(Boolean).join(' ') || undefined;
                const common = {
                  id: fid,
                  disabled,
                  'aria-invalid': error !== null,
                  'aria-describedby': describedBy,
                  'data-testid': `exp-field-${f.path}`,
                };
                return (
                  <div key={f.path} className={`exp-field${view.changed ? ' changed' : ''}${error ? ' invalid' : ''}`}>
                    <label htmlFor={fid}>{f.label}</label>
                    {f.kind === 'bool' ? (
                      <input type="checkbox" checked={value === true} onChange={(e) => commit(f, e.target.checked)} {...common} />
                    ) : f.kind === 'enum' ? (
                      <select value={String(value)} onChange={(e) => commit(f, e.target.value)} {...common}>
                        {f.values!.map((v) => (
                          <option key={v} value={v}>
                            {v}
                          </option>
                        ))}
                      </select>
                    ) : (
                      <input
                        type="text"
                        inputMode="decimal"
                        spellCheck={false}
                        value={draft?.text ?? String(value)}
                        onChange={(e) => edit(f, e.target.value)}
                        onBlur={() => blur(f)}
                        {...common}
                      />
                    )}
                    {(view.reset || hint) && (
                      <span className="exp-field-note">
                        {view.reset && (
                          <button
                            type="button"
                            className="link"
                            disabled={disabled}
                            aria-label={`Reset ${f.label} to the preset's ${String(view.presetValue)}`}
                            data-testid={`exp-field-reset-${f.path}`}
                            onClick={() => commit(f, view.presetValue)}
                          >
                            reset
                          </button>
                        )}{' '}
                        {hint && (
                          <span id={`${fid}-hint`} className="hint">
                            {hint}
                          </span>
                        )}
                      </span>
                    )}
                    {error && (
                      <p id={`${fid}-error`} className="field-error" role="alert" data-testid={`exp-field-error-${f.path}`}>
                        {error}
                      </p>
                    )}
                  </div>
                );
              })}
            </div>
          </details>
        );
      })}
      {stale && (
        <p className="field-error exp-json-stale" role="status" data-testid="exp-json-stale">
          {stale}
        </p>
      )}
    </div>
  );
}
