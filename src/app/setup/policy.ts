/**
 * Pure helpers of the Experiment setup's policy model choice (PolicyPicker.tsx): the lab's GPT,
 * trained from scratch (the default), or a Hugging Face model of the Models panel, trained as
 * `coderl train --model DIR` trains it, with LoRA or fully. The choice lives in the overrides,
 * the one source of truth:
 * - a model sets config.pretrained (its record), cfg.model (its shape at the run's context: the
 *   current one, or the model's positions when that is shorter) and sft.maxSteps 0 (SFT skipped
 *   unless the form's Max steps says otherwise, as the CLI does);
 * - the lab's GPT removes all of that again, and lora;
 * - LoRA writes config.lora {rank, alpha, targets}, the targets always resolved (the
 *   architecture's default, model/lora.ts DEFAULT_LORA_TARGETS), as the CLI records them.
 * The memory plan line (rl/pretrained.ts runMemoryPlan) is computed here too.
 */
import { BASE_DTYPES, RL_PRESETS, type BaseDtype, type RlConfig, type RunLoraConfig } from '../../rl/config';
import type { DecoderArch } from '../../model/arch';
import { DEFAULT_LORA_TARGETS } from '../../model/lora';
import { describeMemoryPlan, MemoryPlanError } from '../../model/memory-plan';
import { hfWeightFormat } from '../../hf/load';
import { loraTargetNames, pretrainedModelConfig, pretrainedRunConfig, runMemoryPlan } from '../../rl/pretrained';
import { describeReference, importedReference, type ReferenceRef } from '../../rl/reference';
import { errorText } from '../../util/errors';
import { effective, getPath, withOverride } from './fields';
import type { HfReferenceModel } from './reference';

/** The select's value for the lab's GPT. */
export const LAB_POLICY = 'lab';
/** The select's value for a model the config names that this page has not stored. */
export const STORED_POLICY = 'stored';
/** The rank LoRA starts at when it is turned on (alpha 2 x rank). */
export const DEFAULT_LORA_RANK = 8;

const hfValue = (m: HfReferenceModel): string => `hf:${m.id}`;
const hfLabel = (m: HfReferenceModel): string => `Hugging Face: ${m.manifest.name}${m.id !== m.manifest.name ? ` (${m.id})` : ''}`;

export interface PolicyChoice {
  options: { value: string; label: string }[];
  /** the option the config's policy is */
  value: string;
  /** the stored model chosen (null: the lab's GPT, or a model not stored here) */
  model: HfReferenceModel | null;
  /** what that option is, in a sentence or two */
  detail: string;
}

/** The select's options and current value for the config's imported model `named` (config.pretrained) and the stored models. */
export function policyChoice(named: ReferenceRef | undefined, hfModels: readonly HfReferenceModel[]): PolicyChoice {
  const options = [
    { value: LAB_POLICY, label: "The lab's GPT (trained from scratch, default)" },
    ...hfModels.map((m) => ({ value: hfValue(m), label: hfLabel(m) })),
  ];
  if (!named)
    return {
      options,
      value: LAB_POLICY,
      model: null,
      detail: "A small GPT of the preset's shape with a tokenizer learnt from the run's tasks, trained from scratch: SFT, then RL.",
    };
  const m = importedReference(named, hfModels);
  if (m)
    return {
      options,
      value: hfValue(m),
      model: m,
      detail:
        `${describeReference(named)}: ${m.manifest.summary.description}. Trained with its own tokenizer and a fresh value head, ` +
        'SFT skipped unless Supervised fine-tuning → Max steps says otherwise; copied into the run directory on Start.',
    };
  return {
    options: [...options, { value: STORED_POLICY, label: `Hugging Face: ${named.name} (not imported)` }],
    value: STORED_POLICY,
    model: null,
    detail: `${describeReference(named)} is not imported in this page: a run that kept it in its run directory resumes with it; a new run needs it imported in the Hugging Face models panel.`,
  };
}

/** The stored model a select value names; null for the lab's GPT; undefined for the stored one (nothing changes). */
export function policyFor(value: string, hfModels: readonly HfReferenceModel[]): HfReferenceModel | null | undefined {
  if (value === LAB_POLICY) return null;
  if (value === STORED_POLICY) return undefined;
  const m = hfModels.find((x) => hfValue(x) === value);
  if (!m) throw new Error(`no stored model is offered as ${JSON.stringify(value)}`);
  return m;
}

/** The config paths the choice of an imported model writes (the lab's GPT removes them all). */
const MODEL_PATHS = ['model.nLayer', 'model.dModel', 'model.nHead', 'model.contextLength', 'model.vocabSize'] as const;

/** `overrides` without `path` (and the objects that leaves empty), for a path no preset has (pretrained, lora). */
const without = (overrides: unknown, preset: string, path: 'pretrained' | 'lora'): Record<string, unknown> =>
  withOverride(overrides, preset, path, undefined);

/** The LoRA targets of `lora` that `a` has, in its module order; its default when none is left. */
function targetsFor(a: DecoderArch, targets: readonly string[] | undefined): string[] {
  const names = loraTargetNames(a);
  const kept = names.filter((n) => targets?.includes(n));
  return kept.length ? kept : [...DEFAULT_LORA_TARGETS[a.family]];
}

/**
 * The overrides with the policy model chosen: `choice` null for the lab's GPT (pretrained, lora,
 * the model's shape and sft.maxSteps removed), or a stored model with its architecture.
 */
export function withPolicyModel(
  overrides: unknown,
  preset: string,
  choice: { ref: ReferenceRef; arch: DecoderArch } | null,
): Record<string, unknown> {
  if (!choice) {
    let out = without(without(overrides, preset, 'pretrained'), preset, 'lora');
    for (const p of [...MODEL_PATHS, 'sft.maxSteps']) out = withOverride(out, preset, p, getPath(RL_PRESETS[preset], p));
    return out;
  }
  const cur = effective(preset, overrides);
  const a = choice.arch;
  let out = withOverride(overrides, preset, 'pretrained', choice.ref);
  const ctx = Math.min(cur?.model.contextLength ?? a.maxPositions, a.maxPositions);
  const shape = pretrainedModelConfig(a, ctx);
  for (const p of MODEL_PATHS) out = withOverride(out, preset, p, shape[p.slice('model.'.length) as keyof typeof shape]);
  // from the lab's GPT, SFT is skipped; from another imported model the user's Max steps stays
  if (!cur?.pretrained) out = withOverride(out, preset, 'sft.maxSteps', 0);
  const lora = cur?.lora;
  if (lora) out = withOverride(out, preset, 'lora', { ...lora, targets: targetsFor(a, lora.targets) });
  return out;
}

/** LoRA on (the default rank, alpha 2 x rank, the architecture's default targets) or off (full fine-tuning). */
export function withLoraOn(overrides: unknown, preset: string, a: DecoderArch, on: boolean): Record<string, unknown> {
  if (!on) return without(overrides, preset, 'lora');
  return withOverride(overrides, preset, 'lora', {
    rank: DEFAULT_LORA_RANK,
    alpha: 2 * DEFAULT_LORA_RANK,
    targets: [...DEFAULT_LORA_TARGETS[a.family]],
  });
}

/** The LoRA settings as the form shows them: the config's, the targets resolved. */
export function loraShown(lora: RunLoraConfig, a: DecoderArch): { rank: number; alpha: number; targets: string[]; lrRatio: number } {
  return {
    rank: lora.rank,
    alpha: lora.alpha ?? 2 * lora.rank,
    targets: lora.targets ?? [...DEFAULT_LORA_TARGETS[a.family]],
    lrRatio: lora.lrRatio ?? 1,
  };
}

/** A new rank; alpha follows it (2 x rank) while it is 2 x the old rank, else it stays the user's. */
export function withLoraRank(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  rank: number,
): Record<string, unknown> {
  const l = loraShown(lora, a);
  const alpha = l.alpha === 2 * l.rank ? 2 * rank : l.alpha;
  return withOverride(overrides, preset, 'lora', { ...lora, rank, alpha, targets: l.targets });
}

export function withLoraAlpha(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  alpha: number,
): Record<string, unknown> {
  return withOverride(overrides, preset, 'lora', { ...lora, alpha, targets: loraShown(lora, a).targets });
}

/** config.lora with an optional field set, or left out when it is the default; the targets resolved. */
function withLoraOptional<K extends 'lrRatio' | 'baseDtype'>(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  key: K,
  value: NonNullable<RunLoraConfig[K]>,
  dflt: NonNullable<RunLoraConfig[K]>,
): Record<string, unknown> {
  const { [key]: _old, ...rest } = lora;
  return withOverride(overrides, preset, 'lora', {
    ...rest,
    ...(value === dflt ? {} : { [key]: value }),
    targets: loraShown(lora, a).targets,
  });
}

/** LoRA+'s ratio (lora_B's learning rate over lora_A's); 1, plain LoRA, leaves the field out. */
export function withLoraRatio(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  lrRatio: number,
): Record<string, unknown> {
  return withLoraOptional(overrides, preset, lora, a, 'lrRatio', lrRatio, 1);
}

/** How the frozen base is stored on the GPU (config.lora.baseDtype); "auto", the default, leaves the field out. */
export function withLoraBaseDtype(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  baseDtype: BaseDtype,
): Record<string, unknown> {
  return withLoraOptional(overrides, preset, lora, a, 'baseDtype', baseDtype, 'auto');
}

/**
 * The base-storage choices for a model stored in `dtypes`, each with what it does there: "auto"
 * names the format it resolves to (hf/load.ts hfWeightFormat), a 16-bit one whether it is exact.
 */
export function baseDtypeOptions(dtypes: readonly string[]): { value: BaseDtype; label: string }[] {
  const own = hfWeightFormat(dtypes);
  return BASE_DTYPES.map((value) => ({
    value,
    label:
      value === 'auto'
        ? `auto (${own.toUpperCase()})`
        : value === 'f32'
          ? 'F32'
          : `${value.toUpperCase()} (${own === value ? 'exact' : 'rounds'})`,
  }));
}

/** A target module checked or not; the targets stay in the architecture's module order. */
export function withLoraTarget(
  overrides: unknown,
  preset: string,
  lora: RunLoraConfig,
  a: DecoderArch,
  name: string,
  on: boolean,
): Record<string, unknown> {
  const have = new Set(loraShown(lora, a).targets);
  if (on) have.add(name);
  else have.delete(name);
  const targets = loraTargetNames(a).filter((n) => have.has(n));
  return withOverride(overrides, preset, 'lora', { ...lora, targets });
}

/** The LoRA settings typed into the form. */
export type LoraField = 'rank' | 'alpha' | 'lrRatio';

/** A typed rank or alpha as a value, or why it is none (the config validator's bounds: rl/config.ts checkLora). */
export function parseLoraField(kind: LoraField, text: string): { value: number; error: null } | { value: null; error: string } {
  const t = text.trim();
  const v = Number(t);
  if (t === '' || !Number.isFinite(v)) return { value: null, error: t === '' ? 'required' : `not a number: "${t}"` };
  if (kind === 'rank' && (!Number.isInteger(v) || v < 1 || v > 1024))
    return { value: null, error: `the rank must be a whole number from 1 to 1024, got ${t}` };
  if (kind === 'alpha' && (v <= 0 || v > 1e4)) return { value: null, error: `alpha must be a number above 0 and at most 10000, got ${t}` };
  if (kind === 'lrRatio' && (v <= 0 || v > 1000))
    return { value: null, error: `the ratio must be a number above 0 and at most 1000 (1: plain LoRA), got ${t}` };
  return { value: v, error: null };
}

/**
 * The memory plan line of one RL step on `a` (stored in `dtypes`, the model's) for the form's config (unvalidated: a config the
 * plan cannot be made of gives null, its error is shown elsewhere), or the MemoryPlanError's
 * message as an error (the run would be refused: Start waits for a fix).
 */
export function memoryPlanLine(
  cfg: RlConfig | null,
  a: DecoderArch,
  dtypes: readonly string[] = ['F32'],
): { text: string; error: boolean } | null {
  if (!cfg) return null;
  try {
    return { text: `Memory plan: ${describeMemoryPlan(runMemoryPlan(cfg, a, undefined, dtypes))}`, error: false };
  } catch (e) {
    if (e instanceof MemoryPlanError) return { text: `The run does not fit: ${errorText(e)}`, error: true };
    return null;
  }
}

/**
 * What the run worker would refuse of the form's config on `a` (rl/pretrained.ts
 * pretrainedRunConfig: a context longer than the model's positions, LoRA targets it lacks), in
 * its words; null when nothing.
 */
export function pretrainedProblem(cfg: RlConfig | null, a: DecoderArch, folder: string): string | null {
  if (!cfg) return null;
  try {
    pretrainedRunConfig(cfg, a, folder);
    return null;
  } catch (e) {
    return errorText(e);
  }
}
