/**
 * Models: Hugging Face model folders imported into this browser (store/modelsSlice.ts). Import a
 * folder (ImportBox: the directory picker, a file dialog, a drop), see what each stored model is
 * (the loader's architecture line, parameters, dtypes, chat template, size), sample from one
 * (PromptBox), delete it. A refused folder shows the loader's message word for word and stores
 * nothing; the models stored before are untouched. The Evaluate panel and the Experiment setup's
 * KL reference offer the same models.
 */
import { useEffect, useState } from 'react';
import type { StoredHfModel } from '../../hf/browser';
import { hfWeightFormat } from '../../hf/load';
import { formatBytes } from '../../lab/saved-models';
import { STORAGE_NAME } from '../../storage/browser';
import { useLab } from '../../store';
import { ImportBox } from './ImportBox';
import { PromptBox } from './PromptBox';
import './models.css';

export function ModelsPanel() {
  const refresh = useLab((s) => s.refreshModels);
  const store = useLab((s) => s.models.store);
  const importing = useLab((s) => s.models.importing);
  const attempts = useLab((s) => s.models.attempts);
  const error = useLab((s) => s.models.error);
  useEffect(() => {
    void refresh();
  }, [refresh]);

  return (
    <div
      className="models"
      data-testid="models"
      data-state={importing ? 'importing' : error ? 'error' : 'idle'}
      data-attempts={attempts}
      data-store={store ?? 'none'}
    >
      <p className="hint">
        Import a Hugging Face model folder (GPT-2, Llama / SmolLM2 or Qwen2, with safetensors weights). It is checked, then copied into this
        browser{store ? ` (${STORAGE_NAME[store]})` : ''} and is still here after a reload. It runs on the lab&apos;s own engine; Evaluate
        and the Experiment&apos;s KL reference offer it too.
      </p>
      <ImportBox />
      <ImportStatus />
      <ModelList />
      <PromptBox />
    </div>
  );
}

function ImportStatus() {
  const importing = useLab((s) => s.models.importing);
  const error = useLab((s) => s.models.error);
  const notice = useLab((s) => s.models.notice);
  const dismiss = useLab((s) => s.dismissModelError);
  return (
    <>
      {importing && (
        <div className="models-progress" role="status" data-testid="models-importing">
          <progress max={importing.total || 1} value={importing.done} aria-label={`Importing ${importing.name}`} />{' '}
          <span className="hint">{importing.message}…</span>
        </div>
      )}
      {!importing && notice && (
        <p className="hint" role="status" data-testid="models-notice">
          {notice}
        </p>
      )}
      {error && (
        <div className="alert" role="alert" data-testid="models-error">
          <strong>Not imported.</strong> <span data-testid="models-error-text">{error}</span>{' '}
          <button type="button" className="link" onClick={dismiss}>
            Dismiss
          </button>
        </div>
      )}
    </>
  );
}

function ModelList() {
  const items = useLab((s) => s.models.items);
  const loaded = useLab((s) => s.models.loaded);
  const [confirming, setConfirming] = useState<string | null>(null);
  if (!loaded) return null;
  if (items.length === 0)
    return (
      <p className="empty" data-testid="models-empty">
        No models stored yet.
      </p>
    );
  return (
    <ul className="ckpt-list" aria-label="Stored Hugging Face models" data-testid="models-list">
      {items.map((m) => (
        <ModelItem key={m.id} item={m} confirming={confirming === m.id} onConfirm={(on) => setConfirming(on ? m.id : null)} />
      ))}
    </ul>
  );
}

/** The stored dtypes, and how the GPU keeps them (hf/load.ts hfWeightFormat: one 16-bit dtype stays as it is when frozen). */
const dtypeText = (dtypes: string[]): string => {
  if (dtypes.length === 0) return '—';
  if (dtypes.every((d) => d === 'F32')) return 'F32';
  const kept = hfWeightFormat(dtypes) !== 'f32';
  return `${dtypes.join(', ')} (${kept ? 'kept 16-bit on the GPU when frozen: sampling, a LoRA base' : 'widened to F32 on load'})`;
};

function ModelItem({ item, confirming, onConfirm }: { item: StoredHfModel; confirming: boolean; onConfirm(on: boolean): void }) {
  const remove = useLab((s) => s.deleteModel);
  const select = useLab((s) => s.selectModel);
  const selected = useLab((s) => s.models.selected === item.id);
  const manifest = item.complete ? item.manifest : null;
  const name = manifest?.name ?? item.id;
  const s = manifest?.summary ?? null;
  return (
    <li
      className={`ckpt-item models-item${selected ? ' selected' : ''}`}
      data-testid="models-item"
      data-id={item.id}
      data-complete={String(item.complete)}
    >
      <h3 className="ckpt-name">
        {name}
        {item.complete && item.id !== name && <span className="hint"> (stored as {item.id})</span>}
      </h3>
      {s ? (
        <>
          <p className="models-arch" data-testid="models-arch">
            {s.description}
          </p>
          <dl className="kv">
            <dt>Parameters</dt>
            <dd data-testid="models-params">{s.parameters.toLocaleString('en-US')}</dd>
            <dt>Weights</dt>
            <dd data-testid="models-dtypes">{dtypeText(s.dtypes)}</dd>
            <dt>Chat template</dt>
            <dd data-testid="models-chat">{s.chatTemplate ? 'yes (an instruct model)' : 'no (a base model)'}</dd>
            <dt>Tokenizer</dt>
            <dd>
              {s.tokenizerVocab.toLocaleString('en-US')} tokens
              {s.tokenizerVocab !== s.vocabSize && <> ({s.vocabSize.toLocaleString('en-US')} rows in the model)</>}
            </dd>
            <dt>Context</dt>
            <dd>{s.maxPositions.toLocaleString('en-US')} positions</dd>
            <dt>Size</dt>
            <dd data-testid="models-size">
              {formatBytes(item.bytes)} in {manifest?.files.length} files
            </dd>
          </dl>
        </>
      ) : (
        <p className="bad" data-testid="models-problem">
          {item.complete ? null : item.problem}
        </p>
      )}
      {confirming ? (
        <div className="ckpt-confirm" role="group" aria-label={`Confirm deleting ${name}`}>
          <span>Delete “{name}” from this browser? The folder you imported it from is not touched.</span>{' '}
          <button
            type="button"
            className="danger"
            data-testid="models-delete-confirm"
            onClick={() => void remove(item.id).finally(() => onConfirm(false))}
          >
            Delete
          </button>{' '}
          <button type="button" autoFocus onClick={() => onConfirm(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <div className="ckpt-actions">
          {item.complete &&
            (selected ? (
              <span className="hint models-selected" data-testid="models-selected">
                In the prompt box below{' '}
              </span>
            ) : (
              <>
                <button type="button" onClick={() => select(item.id)} aria-label={`Sample from ${name}`} data-testid="models-select">
                  Sample from it
                </button>{' '}
              </>
            ))}
          <button type="button" onClick={() => onConfirm(true)} aria-label={`Delete ${name}`} data-testid="models-delete">
            Delete…
          </button>
        </div>
      )}
    </li>
  );
}
