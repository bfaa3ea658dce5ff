/**
 * Pure helpers of the Experiment setup's KL reference choice (ReferencePicker.tsx): the SFT
 * policy, an ONNX model imported in the Checkpoints panel (the store's evaluation.onnxModels), or
 * a Hugging Face model of the Models panel (models.items, each with the record of its manifest).
 * The choice is config.rl.reference in the overrides, as `coderl train --reference` records it;
 * the run slice sends the matching ONNX model's files, or the Hugging Face model's id, to the run worker.
 */
import { describeReference, importedReference, isHfReference, type ReferenceRef } from '../../rl/reference';
import type { OnnxModelEntry } from '../../store/evalSlice';
import type { StoredModel } from '../../store/modelsSlice';

/** A stored Hugging Face model with its record (store/modelsSlice.ts hfReferenceModels). */
export type HfReferenceModel = StoredModel & { ref: ReferenceRef };

/** The select's value for the SFT policy. */
export const SFT_REFERENCE = 'sft';
/** The select's value for a reference the config names that this page has not imported. */
export const STORED_REFERENCE = 'stored';

const onnxValue = (m: OnnxModelEntry): string => `onnx:${m.name}`;
const hfValue = (m: HfReferenceModel): string => `hf:${m.id}`;
const hfLabel = (m: HfReferenceModel): string => `Hugging Face: ${m.manifest.name}${m.id !== m.manifest.name ? ` (${m.id})` : ''}`;

export interface ReferenceChoice {
  options: { value: string; label: string }[];
  /** the option the config's reference is */
  value: string;
  /** what that option is, in a sentence or two */
  detail: string;
}

/** The select's options and current value for the config's reference `named` and the imported (and stored) models. */
export function referenceChoice(
  named: ReferenceRef | undefined,
  models: readonly OnnxModelEntry[],
  hfModels: readonly HfReferenceModel[] = [],
): ReferenceChoice {
  const options = [
    { value: SFT_REFERENCE, label: 'SFT policy (default)' },
    ...models.map((m) => ({ value: onnxValue(m), label: `ONNX: ${m.name}` })),
    ...hfModels.map((m) => ({ value: hfValue(m), label: hfLabel(m) })),
  ];
  if (!named)
    return { options, value: SFT_REFERENCE, detail: 'The frozen SFT checkpoint of the run, as coderl train uses without --reference.' };
  const h = isHfReference(named) ? importedReference(named, hfModels) : null;
  if (h) {
    return {
      options,
      value: hfValue(h),
      detail:
        `${describeReference(named)}: ${h.manifest.summary.description}. It runs on the run's engine in the run's worker, ` +
        "must use the run's tokenizer (every id's bytes and the end-of-sequence id: e.g. this run's SFT checkpoint exported with coderl export-hf), " +
        'and is copied into the run directory on Start.',
    };
  }
  const m = isHfReference(named) ? null : importedReference(named, models);
  if (m) {
    return {
      options,
      value: onnxValue(m),
      detail:
        `${describeReference(named)}: vocabulary ${m.vocabSize}, context ${m.contextLength}. It runs in onnxruntime-web (wasm) in the run's worker, ` +
        "must use the run's tokenizer (the same preset, seed and tasks, e.g. an export of this run's own SFT checkpoint), and is kept in the run directory on Start.",
    };
  }
  const hf = isHfReference(named);
  return {
    options: [...options, { value: STORED_REFERENCE, label: `${hf ? 'Hugging Face' : 'ONNX'}: ${named.name} (not imported)` }],
    value: STORED_REFERENCE,
    detail: `${describeReference(named)} is not imported in this page: a run that kept it in its run directory resumes with it; a new run needs it imported in the ${hf ? 'Hugging Face models' : 'Checkpoints'} panel.`,
  };
}

/** config.rl.reference for a select value: undefined for the SFT policy, the model's record for an imported one, `current` for the stored one. */
export function referenceFor(
  value: string,
  models: readonly OnnxModelEntry[],
  current: ReferenceRef | undefined,
  hfModels: readonly HfReferenceModel[] = [],
): ReferenceRef | undefined {
  if (value === SFT_REFERENCE) return undefined;
  if (value === STORED_REFERENCE) return current;
  const h = hfModels.find((x) => hfValue(x) === value);
  if (h) return h.ref;
  const m = models.find((x) => onnxValue(x) === value);
  if (!m) throw new Error(`no imported model is offered as ${JSON.stringify(value)}`);
  return m.ref;
}

/**
 * The KL reference a stored run's config.json names (null: the SFT policy). The file is read as
 * it is: an imported run's config may lack any field, or hold a malformed reference, and the
 * panel must still show the run.
 */
export function storedReference(config: unknown): ReferenceRef | null {
  const r: unknown = (config as { cfg?: { rl?: { reference?: unknown } } } | null)?.cfg?.rl?.reference;
  if (typeof r !== 'object' || r === null) return null;
  const { name, sha256 } = r as Record<string, unknown>;
  return typeof name === 'string' && typeof sha256 === 'string' ? { name, sha256 } : null;
}
