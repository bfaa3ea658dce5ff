/**
 * The Experiment panel's settings form: which config fields it shows, how a field's text becomes
 * an override, and each field's own error. The overrides object (what `coderl train --set`
 * takes) stays the one source of truth: the form edits paths in it, and a value equal to the
 * preset's removes the path again. A field is checked by resolving the preset with that one
 * override, so the form says exactly what the config validator (rl/config.ts) says, no second
 * copy of the rules.
 */
import { mergeConfig, resolveConfig, RL_PRESETS, type RlConfig } from '../../rl/config';
import { DEFAULT_REWARD } from '../../reward/reward';
import { errorText } from '../../util/errors';

export type FieldKind = 'int' | 'num' | 'bool' | 'enum';

export interface Field {
  /** dotted config path, e.g. "rl.kl.coef" */
  path: string;
  label: string;
  kind: FieldKind;
  /** enum choices */
  values?: readonly string[];
  hint?: string;
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
      { path: 'rm.samplesPerTask', label: 'Samples per task', kind: 'int' },
      { path: 'rm.steps', label: 'Steps', kind: 'int' },
      { path: 'rm.weight', label: 'Weight in the PPO reward', kind: 'num' },
    ],
  },
  {
    id: 'rl',
    title: 'Reinforcement learning',
    fields: [
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
  const same = JSON.stringify(getPath(RL_PRESETS[preset], path)) === JSON.stringify(value);
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

/**
 * The validator's word on `path` = `value` alone over the preset: null when it is fine, else the
 * message with the "config.<path>: " prefix cut. An error about another field that this value
 * causes (e.g. GRPO with one sample per prompt) is returned whole.
 */
export function fieldError(preset: string, path: string, value: unknown): string | null {
  try {
    resolveConfig(preset, withOverride({}, preset, path, value));
    return null;
  } catch (e) {
    const msg = errorText(e);
    const own = `config.${path}: `;
    return msg.startsWith(own) ? msg.slice(own.length) : msg;
  }
}

/** The field a whole-config error message names (`config.<path>: ...`), if the form shows it. */
export function fieldOfError(message: string): Field | null {
  const m = /^config\.([\w.]+): /.exec(message);
  return (m && FIELDS.find((f) => f.path === m[1])) ?? null;
}
