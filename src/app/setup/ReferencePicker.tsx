/**
 * The KL penalty's frozen reference: the SFT policy (the default), an ONNX model imported in the
 * Checkpoints panel, or a Hugging Face model of the Models panel, as `coderl train --reference`
 * makes them. A choice sets config.rl.reference ({name, sha256}) in the overrides; on Start the
 * run slice sends the ONNX model and its tokenizer (or the Hugging Face model's id) to the run
 * worker, which keeps them in the run directory (rl/reference.ts, rl/reference-hf.ts).
 */
import { useEffect, useId, useMemo } from 'react';
import type { RlConfig } from '../../rl/config';
import { isHfReference } from '../../rl/reference';
import { useLab } from '../../store';
import { hfReferenceModels } from '../../store/modelsSlice';
import { withOverride } from './fields';
import { referenceChoice, referenceFor } from './reference';

interface Props {
  preset: string;
  /** the parsed overrides (null while the JSON is invalid: the picker is then disabled) */
  overrides: Record<string, unknown> | null;
  /** the preset merged with the overrides */
  cfg: RlConfig | null;
  onOverrides(text: string): void;
  disabled: boolean;
}

export function ReferencePicker({ preset, overrides, cfg, onOverrides, disabled }: Props) {
  const id = useId();
  const models = useLab((s) => s.evaluation.onnxModels);
  const items = useLab((s) => s.models.items);
  const loaded = useLab((s) => s.models.loaded);
  const refresh = useLab((s) => s.refreshModels);
  const hfModels = useMemo(() => hfReferenceModels(items), [items]);
  const named = cfg?.rl.reference;
  const choice = referenceChoice(named, models, hfModels);
  const off = disabled || overrides === null || cfg === null;
  useEffect(() => {
    if (!loaded) void refresh();
  }, [loaded, refresh]);

  const choose = (value: string): void => {
    onOverrides(JSON.stringify(withOverride(overrides, preset, 'rl.reference', referenceFor(value, models, named, hfModels))));
  };

  return (
    <fieldset
      className="exp-suite exp-reference"
      data-testid="exp-reference"
      data-source={named ? (isHfReference(named) ? 'hf' : 'onnx') : 'sft'}
      disabled={off}
    >
      <legend>KL reference</legend>
      <label htmlFor={`${id}-ref`}>Frozen model the KL penalty compares the policy to</label>{' '}
      <select
        id={`${id}-ref`}
        value={choice.value}
        onChange={(e) => choose(e.target.value)}
        aria-describedby={`${id}-info`}
        data-testid="exp-reference-select"
      >
        {choice.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <p
        id={`${id}-info`}
        className="hint"
        data-testid="exp-reference-info"
        data-name={named?.name ?? ''}
        data-sha256={named?.sha256 ?? ''}
      >
        {choice.detail}
      </p>
      {models.length === 0 && hfModels.length === 0 && (
        <p className="hint" data-testid="exp-reference-none">
          No other model is imported. To use one, export a checkpoint as ONNX in the Checkpoints panel (the model and its tokenizer file)
          and load both there under <em>Import ONNX model</em>, or import a Hugging Face model folder with this run&apos;s tokenizer in the
          Hugging Face models panel (e.g. this run&apos;s SFT checkpoint written by <code>coderl export-hf</code>).
        </p>
      )}
    </fieldset>
  );
}
