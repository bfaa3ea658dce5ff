/**
 * The KL penalty's frozen reference: the SFT policy (the default), or an ONNX model imported in
 * the Checkpoints panel, as `coderl train --reference` makes it. A choice sets
 * config.rl.reference ({name, sha256}) in the overrides; on Start the run slice sends the model
 * and its tokenizer to the run worker, which keeps them in the run directory (rl/reference.ts).
 */
import { useId } from 'react';
import type { RlConfig } from '../../rl/config';
import { useLab } from '../../store';
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
  const named = cfg?.rl.reference;
  const choice = referenceChoice(named, models);
  const off = disabled || overrides === null || cfg === null;

  const choose = (value: string): void => {
    onOverrides(JSON.stringify(withOverride(overrides, preset, 'rl.reference', referenceFor(value, models, named))));
  };

  return (
    <fieldset className="exp-suite exp-reference" data-testid="exp-reference" data-source={named ? 'onnx' : 'sft'} disabled={off}>
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
      {models.length === 0 && (
        <p className="hint" data-testid="exp-reference-none">
          No ONNX model is imported. To use one, export a checkpoint as ONNX in the Checkpoints panel (the model and its tokenizer file),
          then load both there under <em>Import ONNX model</em>.
        </p>
      )}
    </fieldset>
  );
}
