/**
 * The model a run trains: the lab's GPT from scratch (the default) or a Hugging Face model of the
 * Models panel, as `coderl train --model DIR` trains it; for a model, LoRA (rank, alpha, target
 * modules) or full fine-tuning, and the memory plan of one RL step. A choice edits the overrides
 * (setup/policy.ts says what it writes); a model's architecture is read from its stored
 * config.json when it is chosen (kept per model and content for the page's life). Start waits,
 * through `onProblem`, while that is read, when it cannot be, when the plan does not fit the
 * budget and while a LoRA field holds invalid text. On Start the run slice sends the model's id
 * and the run worker copies it into the run directory (rl/reference-hf.ts).
 */
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import { HF_FILES } from '../../hf/folder';
import { hfModelStore } from '../../hf/browser';
import { archFromHfConfig, type DecoderArch } from '../../model/arch';
import { DEFAULT_LORA_TARGETS } from '../../model/lora';
import type { BaseDtype, RlConfig } from '../../rl/config';
import { loraTargetNames } from '../../rl/pretrained';
import { useLab } from '../../store';
import { hfReferenceModels } from '../../store/modelsSlice';
import { errorText } from '../../util/errors';
import {
  baseDtypeOptions,
  loraShown,
  type LoraField,
  memoryPlanLine,
  parseLoraField,
  policyChoice,
  policyFor,
  pretrainedProblem,
  withLoraAlpha,
  withLoraBaseDtype,
  withLoraOn,
  withLoraRank,
  withLoraRatio,
  withLoraTarget,
  withPolicyModel,
} from './policy';
import type { HfReferenceModel } from './reference';

interface Props {
  preset: string;
  /** the parsed overrides (null while the JSON is invalid: the picker is then disabled) */
  overrides: Record<string, unknown> | null;
  /** the preset merged with the overrides (unvalidated) */
  cfg: RlConfig | null;
  onOverrides(text: string): void;
  disabled: boolean;
  /** why the run cannot start as set here (null: it can) */
  onProblem(problem: string | null): void;
}

/** Architectures read, by model id and content. */
const archs = new Map<string, Promise<DecoderArch>>();
const archKey = (m: HfReferenceModel): string => `${m.id}\n${m.ref.sha256}`;

/** The stored model's architecture, from its config.json (hf/browser.ts HfModelStore). */
function readArch(m: HfReferenceModel): Promise<DecoderArch> {
  const key = archKey(m);
  let p = archs.get(key);
  if (!p) {
    const file = `${m.manifest.name}/${HF_FILES.config}`;
    p = (async () => {
      const folder = await (await hfModelStore()).open(m.id);
      const text = new TextDecoder().decode(await folder.read(HF_FILES.config));
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (e) {
        throw new Error(`${file}: not JSON (${errorText(e)})`, { cause: e });
      }
      return archFromHfConfig(json, file);
    })();
    p.catch(() => archs.delete(key)); // read again next time
    archs.set(key, p);
  }
  return p;
}

type ArchState = { key: string; arch: DecoderArch; error: null } | { key: string; arch: null; error: string };

/** The chosen model's architecture: null while it is read (or no model is chosen). */
function useArch(model: HfReferenceModel | null): ArchState | null {
  const [got, setGot] = useState<ArchState | null>(null);
  const key = model ? archKey(model) : null;
  useEffect(() => {
    if (!model) return;
    let live = true;
    const k = archKey(model);
    readArch(model).then(
      (arch) => live && setGot({ key: k, arch, error: null }),
      (e: unknown) => live && setGot({ key: k, arch: null, error: `cannot read the model's architecture: ${errorText(e)}` }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the key says when the model is another
  }, [key]);
  return got && got.key === key ? got : null;
}

interface Draft {
  text: string;
  error: string | null;
}

export function PolicyPicker({ preset, overrides, cfg, onOverrides, disabled, onProblem }: Props) {
  const id = useId();
  const items = useLab((s) => s.models.items);
  const loaded = useLab((s) => s.models.loaded);
  const refresh = useLab((s) => s.refreshModels);
  const hfModels = useMemo(() => hfReferenceModels(items), [items]);
  const named = cfg?.pretrained;
  const choice = policyChoice(named, hfModels);
  const model = choice.model;
  const got = useArch(model);
  const arch = got?.arch ?? null;
  const [pending, setPending] = useState<string | null>(null);
  const [chooseError, setChooseError] = useState<string | null>(null);
  const [drafts, setDrafts] = useState<Partial<Record<LoraField, Draft>>>({});
  const off = disabled || overrides === null || cfg === null;
  const latest = useRef(overrides);
  latest.current = overrides;
  useEffect(() => {
    if (!loaded) void refresh();
  }, [loaded, refresh]);
  useEffect(() => setDrafts({}), [choice.value, preset]);

  const write = (o: Record<string, unknown>): void => onOverrides(JSON.stringify(o));
  const choose = async (value: string): Promise<void> => {
    setChooseError(null);
    const m = policyFor(value, hfModels);
    if (m === undefined) return;
    if (m === null) return write(withPolicyModel(overrides, preset, null));
    setPending(value);
    try {
      const a = await readArch(m);
      write(withPolicyModel(latest.current, preset, { ref: m.ref, arch: a }));
    } catch (e) {
      setChooseError(`${m.manifest.name} cannot be trained here: ${errorText(e)}`);
    } finally {
      setPending(null);
    }
  };

  const lora = cfg?.lora;
  const shown = lora && arch ? loraShown(lora, arch) : null;
  const plan = model && arch ? memoryPlanLine(cfg, arch, model.manifest.summary.dtypes) : null;
  const refused = model && arch ? pretrainedProblem(cfg, arch, model.manifest.name) : null;
  const badDraft = Object.values(drafts).find((d) => d?.error)?.error ?? null;
  // a choice that could not be read changed nothing: it is shown, and the run can start as it was
  const problem = pending
    ? 'the chosen model is being read'
    : !model
      ? null
      : !got
        ? `reading ${model.manifest.name}'s config.json`
        : (got.error ?? (badDraft && `LoRA: ${badDraft}`) ?? refused ?? (plan?.error ? plan.text : null));
  useEffect(() => onProblem(problem), [problem, onProblem]);

  const edit = (kind: LoraField, text: string): void => {
    const parsed = parseLoraField(kind, text);
    setDrafts((d) => ({ ...d, [kind]: { text, error: parsed.error } }));
    if (parsed.value === null || !lora || !arch) return;
    const how = { rank: withLoraRank, alpha: withLoraAlpha, lrRatio: withLoraRatio }[kind];
    write(how(overrides, preset, lora, arch, parsed.value));
  };
  const blur = (kind: LoraField): void => {
    if (drafts[kind] && drafts[kind].error === null) setDrafts(({ [kind]: _gone, ...rest }) => rest);
  };
  const numberField = (kind: LoraField, label: string, value: number, hint: string) => {
    const fid = `${id}-lora-${kind}`;
    const draft = drafts[kind];
    return (
      <div className={`exp-field${draft?.error ? ' invalid' : ''}`}>
        <label htmlFor={fid}>{label}</label>
        <input
          id={fid}
          type="text"
          inputMode={kind === 'rank' ? 'numeric' : 'decimal'}
          spellCheck={false}
          value={draft?.text ?? String(value)}
          onChange={(e) => edit(kind, e.target.value)}
          onBlur={() => blur(kind)}
          aria-invalid={Boolean(draft?.error)}
          aria-describedby={`${fid}-hint${draft?.error ? ` ${fid}-error` : ''}`}
          data-testid={`exp-lora-${kind}`}
        />
        <span className="exp-field-note">
          <span id={`${fid}-hint`} className="hint">
            {hint}
          </span>
        </span>
        {draft?.error && (
          <p id={`${fid}-error`} className="field-error" role="alert" data-testid={`exp-lora-${kind}-error`}>
            {draft.error}
          </p>
        )}
      </div>
    );
  };

  return (
    <fieldset
      className="exp-suite exp-policy"
      data-testid="exp-policy"
      data-source={named ? 'hf' : 'lab'}
      data-arch={model ? (got ? (got.error ? 'error' : 'ready') : 'reading') : ''}
      disabled={off}
    >
      <legend>Policy model</legend>
      <label htmlFor={`${id}-policy`}>The model the run trains</label>{' '}
      <select
        id={`${id}-policy`}
        value={pending ?? choice.value}
        onChange={(e) => void choose(e.target.value)}
        aria-describedby={`${id}-policy-info`}
        data-testid="exp-policy-select"
      >
        {choice.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <p
        id={`${id}-policy-info`}
        className="hint"
        data-testid="exp-policy-info"
        data-name={named?.name ?? ''}
        data-sha256={named?.sha256 ?? ''}
      >
        {choice.detail}
      </p>
      {hfModels.length === 0 && (
        <p className="hint" data-testid="exp-policy-none">
          To train a pretrained model (GPT-2, Llama/SmolLM2, Qwen2), import its Hugging Face folder in the Hugging Face models panel.
        </p>
      )}
      {model && arch && (
        <fieldset className="exp-lora" data-testid="exp-lora" data-on={String(Boolean(lora))}>
          <legend>
            <label>
              <input
                type="checkbox"
                checked={Boolean(lora)}
                onChange={(e) => write(withLoraOn(overrides, preset, arch, e.target.checked))}
                data-testid="exp-lora-on"
              />{' '}
              LoRA (off: full fine-tuning)
            </label>
          </legend>
          {lora && shown ? (
            <div className="exp-fields">
              {numberField('rank', 'Rank', shown.rank, 'the adapters’ rank r')}
              {numberField('alpha', 'Alpha', shown.alpha, `scales the update by alpha / r; default 2 × r = ${2 * shown.rank}`)}
              {numberField(
                'lrRatio',
                'B learning-rate ratio',
                shown.lrRatio,
                'LoRA+: lora_B learns at the learning rate × this; 1: plain LoRA',
              )}
              <div className="exp-field">
                <label htmlFor={`${id}-lora-base`}>Frozen base on the GPU</label>
                <select
                  id={`${id}-lora-base`}
                  value={lora.baseDtype ?? 'auto'}
                  onChange={(e) => write(withLoraBaseDtype(overrides, preset, lora, arch, e.target.value as BaseDtype))}
                  aria-describedby={`${id}-lora-base-hint`}
                  data-testid="exp-lora-baseDtype"
                >
                  {baseDtypeOptions(model.manifest.summary.dtypes).map((o) => (
                    <option key={o.value} value={o.value}>
                      {o.label}
                    </option>
                  ))}
                </select>
                <span className="exp-field-note">
                  <span id={`${id}-lora-base-hint`} className="hint">
                    webgpu: 16-bit halves the frozen weights under the adapters; auto keeps the checkpoint's dtype
                  </span>
                </span>
              </div>
              <span className="exp-lora-label" id={`${id}-targets`}>
                Target modules
              </span>
              <div className="exp-lora-targets" role="group" aria-labelledby={`${id}-targets`} data-testid="exp-lora-targets">
                {loraTargetNames(arch).map((n) => (
                  <label key={n}>
                    <input
                      type="checkbox"
                      checked={shown.targets.includes(n)}
                      onChange={(e) => write(withLoraTarget(overrides, preset, lora, arch, n, e.target.checked))}
                      data-testid={`exp-lora-target-${n}`}
                    />{' '}
                    <code>{n}</code>
                  </label>
                ))}
                <span className="hint">
                  default for {arch.family}: {DEFAULT_LORA_TARGETS[arch.family].join(', ')}
                </span>
              </div>
            </div>
          ) : (
            <p className="hint">Every weight of the model trains, with AdamW moments for each: the largest memory plan.</p>
          )}
        </fieldset>
      )}
      {plan && (
        <p
          className={plan.error ? 'field-error' : 'hint'}
          role={plan.error ? 'alert' : undefined}
          data-testid="exp-memory-plan"
          data-fits={String(!plan.error)}
        >
          {plan.text}
        </p>
      )}
      {(chooseError || got?.error || refused) && (
        <p className="field-error" role="alert" data-testid="exp-policy-error">
          {chooseError ?? got?.error ?? refused}
        </p>
      )}
    </fieldset>
  );
}
