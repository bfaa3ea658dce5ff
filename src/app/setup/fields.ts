/**
 * The Experiment panel's settings form: which config fields it shows, how a field's text becomes
 * an override, and each field's own error. The overrides object (what `coderl train --set`
 * takes) stays the one source of truth: the form edits paths in it, and a value equal to the
 * preset's removes the path again. A field is checked by resolving the preset with the current
 * overrides and that field's new value, so the form says exactly what the config validator
 * (rl/config.ts) says, no second copy of the rules.
 *
 * What the form does not show it derives (applyField: eval.k follows eval.samples), and an error
 * about a setting it does not show is put at the field that causes it, in words naming that
 * field (explainError). How each field looks (fieldView), how many a section has changed
 * (changedCount) and the notice that the JSON lags an invalid field (staleNotice) are computed
 * here, so the component only renders them.
 */
import { mergeConfig, resolveConfig, RL_PRESETS, type RlConfig } from '../../rl/config';
import { DEFAULT_REWARD } from '../../reward/reward';
import { errorText } from '../../util/errors';
import { PROMPT_FORMATS } from '../../rl/prompt-format';

export type FieldKind = 'int' | 'num' | 'bool' | 'enum';

export interface Field {
  /** dotted config path, e.g. "rl.kl.coef" */
  path: string;
  label: string;
  kind: FieldKind;
  /** enum choices */
  values?: readonly string[];
  hint?: string;
  /** what the setting means when the config leaves it out (an optional setting the presets do not set) */
  absent?: unknown;
}

export interface Section {
  id: string;
  title: string;
  fields: Field[];
}

const REWARD_HINT: Record<string, string> = {
  testPass: 'per share of tests passed',
  allPass: 'bonus when every test passes',
  astValid: 'bonus for a syntactically valid program',
  lint: 'penalty per lint finding',
  lintCap: 'findings counted at most',
  complexity: 'penalty per unit of complexity over the free amount',
  complexityFree: 'complexity allowed without penalty',
  length: 'penalty per token over the free length',
  lengthFree: 'tokens allowed without penalty',
};

export const SECTIONS: Section[] = [
  {
    id: 'sft',
    title: 'Supervised fine-tuning',
    fields: [
      { path: 'sft.lr', label: 'Learning rate', kind: 'num' },
      { path: 'sft.batch', label: 'Batch (sequences)', kind: 'int' },
      { path: 'sft.maxSteps', label: 'Max steps', kind: 'int' },
      { path: 'sft.evalEvery', label: 'Validate every', kind: 'int', hint: 'steps' },
      { path: 'sft.patience', label: 'Patience', kind: 'int', hint: 'validations without improvement before early stopping' },
    ],
  },
  {
    id: 'rm',
    title: 'Reward model',
    fields: [
      { path: 'rm.enabled', label: 'Train a reward model', kind: 'bool' },
      {
        path: 'rm.objective',
        label: 'Objective',
        kind: 'enum',
        values: ['bt', 'regression'],
        hint: 'pairwise Bradley-Terry, or regression on the pass fraction',
      },
      {
        path: 'rm.score',
        label: 'Score',
        kind: 'enum',
        values: ['value', 'likelihood', 'value+likelihood'],
        hint: 'a head at the last token, beta x the mean token log-prob, or both',
      },
      { path: 'rm.beta', label: 'Likelihood scale', kind: 'num', hint: 'beta' },
      { path: 'rm.samplesPerTask', label: 'Samples per task', kind: 'int' },
      { path: 'rm.steps', label: 'Steps', kind: 'int' },
      { path: 'rm.lr', label: 'Learning rate', kind: 'num', hint: 'a fresh value head wants about 1e-3' },
      {
        path: 'rm.valShare',
        label: 'Validation share',
        kind: 'num',
        hint: 'training tasks that validate instead; 0: keep the last step, else the best validated one',
      },
      { path: 'rm.evalEvery', label: 'Validate every', kind: 'int', hint: 'steps' },
      { path: 'rm.weight', label: 'Weight in the PPO reward', kind: 'num' },
    ],
  },
  {
    id: 'rl',
    title: 'Reinforcement learning',
    fields: [
      {
        path: 'promptFormat',
        label: 'Prompt format',
        kind: 'enum',
        values: PROMPT_FORMATS,
        absent: 'auto',
        hint: "how prompts and repair turns reach the model: auto is the chat template when the model has one (never the lab's GPT)",
      },
      { path: 'rl.algo', label: 'Algorithm', kind: 'enum', values: ['ppo', 'grpo'] },
      { path: 'rl.iterations', label: 'Iterations', kind: 'int' },
      { path: 'rl.promptsPerIteration', label: 'Prompts per iteration', kind: 'int' },
      { path: 'rl.samplesPerPrompt', label: 'Samples per prompt', kind: 'int', hint: 'the group size for GRPO' },
      { path: 'rl.lr', label: 'Learning rate', kind: 'num' },
      { path: 'rl.clip', label: 'Clip range', kind: 'num' },
      { path: 'rl.entCoef', label: 'Entropy bonus', kind: 'num' },
      { path: 'rl.kl.coef', label: 'KL coefficient', kind: 'num' },
      { path: 'rl.kl.adaptive', label: 'Adaptive KL', kind: 'bool' },
      { path: 'rl.targetKl', label: 'Target KL (early stop)', kind: 'num', hint: '0: never' },
      { path: 'rl.epochs', label: 'Epochs', kind: 'int' },
      { path: 'rl.minibatch', label: 'Minibatch', kind: 'int' },
      { path: 'rl.temperature', label: 'Temperature', kind: 'num' },
      { path: 'rl.maxNewTokens', label: 'Max new tokens', kind: 'int' },
    ],
  },
  {
    id: 'explore',
    title: 'Exploration',
    fields: [
      { path: 'explore.syntax', label: 'Syntax-constrained sampling', kind: 'bool' },
      { path: 'explore.api', label: 'API-guided exploration', kind: 'enum', values: ['off', 'bias', 'mask'] },
      { path: 'explore.repair', label: 'Error-driven repair', kind: 'bool' },
    ],
  },
  {
    id: 'reward',
    title: 'Reward weights',
    fields: Object.keys(DEFAULT_REWARD).map((k) => ({ path: `reward.${k}`, label: k, kind: 'num' as const, hint: REWARD_HINT[k] })),
  },
  {
    id: 'eval',
    title: 'Evaluation',
    fields: [
      { path: 'eval.samples', label: 'Samples per task', kind: 'int' },
      { path: 'eval.temperature', label: 'Temperature', kind: 'num' },
    ],
  },
];

export const FIELDS: Field[] = SECTIONS.flatMap((s) => s.fields);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function getPath(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const k of path.split('.')) v = isObject(v) ? v[k] : undefined;
  return v;
}

/** The preset with the overrides merged in, unvalidated: what the form shows. */
export function effective(preset: string, overrides: unknown): RlConfig | null {
  const base = RL_PRESETS[preset];
  return base ? mergeConfig(structuredClone(base), isObject(overrides) ? overrides : {}) : null;
}

/**
 * `overrides` with `path` set to `value`; when `value` is the preset's own, the path is removed
 * instead (and objects it leaves empty), so the overrides stay the difference from the preset.
 */
export function withOverride(overrides: unknown, preset: string, path: string, value: unknown): Record<string, unknown> {
  const out = isObject(overrides) ? structuredClone(overrides) : {};
  const keys = path.split('.');
  const same = JSON.stringify(getPath(RL_PRESETS[preset], path) ?? fieldAt(path)?.absent) === JSON.stringify(value);
  const chain: Record<string, unknown>[] = [out];
  for (const k of keys.slice(0, -1)) {
    const here = chain[chain.length - 1]!;
    if (!isObject(here[k])) {
      if (same) return out; // nothing to remove
      here[k] = {};
    }
    chain.push(here[k] as Record<string, unknown>);
  }
  const last = keys[keys.length - 1]!;
  if (same) {
    delete chain[chain.length - 1]![last];
    for (let i = chain.length - 1; i > 0; i--) if (Object.keys(chain[i]!).length === 0) delete chain[i - 1]![keys[i - 1]!];
  } else {
    chain[chain.length - 1]![last] = value;
  }
  return out;
}

/** A field's text as a value, or why it is none. */
export function parseField(f: Field, text: string): { value: number | string; error: null } | { value: null; error: string } {
  if (f.kind === 'enum')
    return f.values?.includes(text) ? { value: text, error: null } : { value: null, error: `must be one of ${f.values?.join(', ')}` };
  const t = text.trim();
  if (t === '') return { value: null, error: 'required' };
  const v = Number(t);
  if (!Number.isFinite(v)) return { value: null, error: `not a number: "${t}"` };
  if (f.kind === 'int' && !Number.isInteger(v)) return { value: null, error: `must be a whole number, got ${t}` };
  return { value: v, error: null };
}

/** A field by path (a path the form shows). */
export function fieldAt(path: string): Field | undefined {
  return FIELDS.find((f) => f.path === path);
}

/** "Section → Label": a field named where its label alone is ambiguous ("Learning rate" is in two sections). */
export function fieldName(f: Field): string {
  const s = SECTIONS.find((x) => x.fields.includes(f));
  return s ? `${s.title} → ${f.label}` : f.label;
}

/**
 * `withOverride`, plus what the form derives for settings it does not show: setting
 * eval.samples clamps the pass@k list eval.k to values <= samples ([1] when none is left), so a
 * smaller sample count is never an error about a field the form hides. A k list that is the
 * preset's (or a clamped prefix of it) follows the preset's again as samples grow; a k list of
 * the user's own is only clamped.
 */
export function applyField(overrides: unknown, preset: string, path: string, value: unknown): Record<string, unknown> {
  const out = withOverride(overrides, preset, path, value);
  if (path === 'eval.samples' && typeof value === 'number' && Number.isInteger(value) && value >= 1) {
    const presetK = RL_PRESETS[preset]?.eval.k ?? [1];
    const cur = getPath(effective(preset, out), 'eval.k');
    const curK = Array.isArray(cur) ? (cur as unknown[]) : presetK;
    const followsPreset = curK.length > 0 && curK.every((k, i) => presetK[i] === k);
    const base = followsPreset ? presetK : curK;
    const k = base.filter((x): x is number => typeof x === 'number' && x <= value);
    return withOverride(out, preset, 'eval.k', k.length ? k : [1]);
  }
  return out;
}

/**
 * A whole-config error (`config.<path>: ...`) as the form shows it: at the field it names, or,
 * for a setting the form does not show, at the shown field that causes it, in a sentence naming
 * that field; `field` is null when no shown field has to do with it (e.g. model.*).
 */
export function explainError(message: string): { field: Field | null; text: string } {
  const m = /^config\.([\w.]+): ([\s\S]*)$/.exec(message);
  if (!m) return { field: null, text: message };
  const [, path, rest] = m as unknown as [string, string, string];
  if (path === 'eval.k') {
    const range = /in 1\.\.eval\.samples \((\d+)\), got ([\s\S]*)$/.exec(rest);
    const text = range
      ? `the pass@k list eval.k, set in the Overrides JSON, is ${range[2]}; every k must be a whole number from 1 to Samples per task (${range[1]}): raise Samples per task, or edit eval.k in the JSON`
      : `the pass@k list eval.k, set in the Overrides JSON: ${rest}`;
    return { field: fieldAt('eval.samples')!, text };
  }
  const grpo = /^GRPO needs groups of at least 2, got (\d+)$/.exec(rest);
  if (path === 'rl.samplesPerPrompt' && grpo) {
    return {
      field: fieldAt(path)!,
      text: `with Algorithm grpo, Samples per prompt is the group size and must be at least 2, got ${grpo[1]}: raise it, or set Algorithm to ppo`,
    };
  }
  const field = fieldAt(path);
  return field ? { field, text: rest } : { field: null, text: message };
}

function validatorError(preset: string, overrides: unknown): string | null {
  try {
    resolveConfig(preset, overrides);
    return null;
  } catch (e) {
    return errorText(e);
  }
}

/**
 * The validator's word on `path` = `value` over the preset and the current `overrides` (with
 * what applyField derives): null when it is fine, or when the only error is one the overrides
 * had already (the whole-config error shows that); else the message, for this field without
 * the "config.<path>: " prefix, for another field (e.g. GRPO with one sample per prompt) naming
 * the shown field.
 */
export function fieldError(preset: string, path: string, value: unknown, overrides: unknown = {}): string | null {
  let msg = validatorError(preset, applyField(overrides, preset, path, value));
  if (msg !== null && msg === validatorError(preset, overrides)) {
    // the overrides' own error (checked first) may hide this value's: check the value alone, for its own range only
    const alone = validatorError(preset, applyField({}, preset, path, value));
    msg = alone?.startsWith(`config.${path}: must be`) ? alone : null;
  }
  if (msg === null) return null;
  const { field, text } = explainError(msg);
  if (!field || field.path === path) return text;
  return `${fieldName(field)}: ${text}`;
}

/** The field a whole-config error message is shown at (explainError), if any. */
export function fieldOfError(message: string): Field | null {
  return explainError(message).field;
}

/** Text typed into a field: kept while it has focus (so "0." is not rewritten to "0"), and while it is invalid. */
export interface Draft {
  text: string;
  error: string | null;
}

export type Drafts = Record<string, Draft>;

/** The preset's own value of a field. */
export function presetValue(preset: string, f: Field): unknown {
  return getPath(RL_PRESETS[preset], f.path) ?? f.absent;
}

/** The value a field shows for a config: its setting, or what leaving it out means. */
function shownValue(cfg: RlConfig | null, f: Field): unknown {
  return getPath(cfg, f.path) ?? f.absent;
}

/** Whether a field differs from the preset: its value does, or it holds invalid text (a change not yet in the overrides). */
export function isChanged(preset: string, overrides: unknown, f: Field, draft?: Draft): boolean {
  if (draft && draft.error !== null) return true;
  return JSON.stringify(shownValue(effective(preset, overrides), f)) !== JSON.stringify(presetValue(preset, f));
}

/** How many fields of a section differ from the preset (for its "n changed"). */
export function changedCount(preset: string, overrides: unknown, s: Section, drafts: Drafts): number {
  return s.fields.filter((f) => isChanged(preset, overrides, f, drafts[f.path])).length;
}

export interface FieldView {
  /** the value shown (a draft's text wins in the input) */
  value: unknown;
  error: string | null;
  changed: boolean;
  /** offer a reset to the preset's value: the field is changed, or shows an error */
  reset: boolean;
  presetValue: unknown;
  /** the field's hint, with what the form derives from it */
  hint: string | undefined;
}

/** What one field shows: value, error (its draft's, else the whole-config error explained at it), change mark, reset. */
export function fieldView(preset: string, overrides: unknown, f: Field, draft: Draft | undefined, configError: string | null): FieldView {
  const cfg = effective(preset, overrides);
  const explained = configError ? explainError(configError) : null;
  const error = draft?.error ?? (explained?.field === f ? explained.text : null);
  const changed = isChanged(preset, overrides, f, draft);
  const k = f.path === 'eval.samples' ? getPath(cfg, 'eval.k') : undefined;
  const hint = Array.isArray(k)
    ? [f.hint, `pass@k is reported for k = ${k.join(', ')} (a smaller count drops the larger k)`].filter(Boolean).join('; ')
    : f.hint;
  return { value: shownValue(cfg, f), error, changed, reset: changed || error !== null, presetValue: presetValue(preset, f), hint };
}

/**
 * Why the Overrides JSON does not match the form, or null when it does: while a field holds
 * invalid text its change is not in the JSON, which keeps the last valid value; this says so,
 * naming each such field and the value the JSON keeps.
 */
export function staleNotice(preset: string, overrides: unknown, drafts: Drafts): string | null {
  const cfg = effective(preset, overrides);
  const stale = FIELDS.filter((f) => drafts[f.path] && drafts[f.path]!.error !== null).map((f) => {
    const kept = shownValue(cfg, f);
    const whose = JSON.stringify(kept) === JSON.stringify(presetValue(preset, f)) ? "the preset's" : 'your last valid value';
    return `${fieldName(f)} holds "${drafts[f.path]!.text}", so the JSON keeps ${f.path} at ${JSON.stringify(kept)} (${whose})`;
  });
  if (!stale.length) return null;
  return `Overrides (JSON) not updated: ${stale.join('; ')}. Fix or reset ${stale.length === 1 ? 'that field' : 'those fields'} and the JSON follows.`;
}
