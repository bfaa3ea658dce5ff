/**
 * Checkpoints stored in this browser: list them with what each holds, create a fresh model from
 * a preset, import a file (validated before it is stored), export (download) and delete.
 */
import { useEffect, useId, useState, type FormEvent } from 'react';
import { downloadBytes } from '../download';
import { useLab } from '../../store';
import type { CheckpointSummary } from '../../store/checkpointSlice';
import { CHECKPOINT_EXT, configSummary, formatBytes, metaEntries, PRESET_NAMES, type PresetName } from '../../lab/saved-models';
import { MODEL_PRESETS } from '../../model/config';
import { OnnxCheckpointActions } from '../onnx/OnnxCheckpointActions';
import { OnnxImport } from '../onnx/OnnxImport';

const STORE_TEXT = {
  opfs: 'the Origin Private File System (OPFS)',
  indexeddb: 'IndexedDB (OPFS is not available in this browser)',
} as const;

export function CheckpointPanel() {
  const refresh = useLab((s) => s.refreshCheckpoints);
  const store = useLab((s) => s.checkpoints.store);
  const busy = useLab((s) => s.checkpoints.busy);
  useEffect(() => {
    void refresh();
  }, [refresh]);

  return (
    <div className="ckpt-panel" data-testid="checkpoints" data-busy={String(busy !== null)}>
      <p className="hint" data-testid="ckpt-store" data-store={store ?? 'none'}>
        {store ? <>Stored in this browser, in {STORE_TEXT[store]}.</> : 'Opening browser storage…'}
      </p>
      <NewModelForm />
      <ImportField />
      <Messages />
      <CheckpointList />
      <OnnxImport />
    </div>
  );
}

function NewModelForm() {
  const create = useLab((s) => s.createCheckpoint);
  const busy = useLab((s) => s.checkpoints.busy !== null);
  const [preset, setPreset] = useState<PresetName>('tiny');
  const [seed, setSeed] = useState('1');
  const id = useId();
  const seedValue = Number(seed);
  const seedOk = seed.trim() !== '' && Number.isSafeInteger(seedValue) && seedValue >= 0;

  function submit(e: FormEvent): void {
    e.preventDefault();
    if (seedOk) void create(preset, seedValue);
  }

  return (
    <form className="form-grid" onSubmit={submit} aria-label="New model">
      <label htmlFor={`${id}-preset`}>Preset</label>
      <select id={`${id}-preset`} value={preset} onChange={(e) => setPreset(e.target.value as PresetName)} data-testid="ckpt-preset">
        {PRESET_NAMES.map((p) => {
          const c = MODEL_PRESETS[p];
          return (
            <option key={p} value={p}>
              {p} (L={c.nLayer}, C={c.dModel})
            </option>
          );
        })}
      </select>
      <label htmlFor={`${id}-seed`}>Seed</label>
      <input
        id={`${id}-seed`}
        className="ckpt-seed"
        type="number"
        min={0}
        step={1}
        value={seed}
        onChange={(e) => setSeed(e.target.value)}
        aria-invalid={!seedOk}
        data-testid="ckpt-seed"
      />
      <button type="submit" disabled={busy || !seedOk} data-testid="ckpt-new">
        New model
      </button>
    </form>
  );
}

function ImportField() {
  const importFile = useLab((s) => s.importCheckpoint);
  const busy = useLab((s) => s.checkpoints.busy !== null);
  const id = useId();
  return (
    <div className="ckpt-row">
      <label htmlFor={id}>Import a checkpoint file ({CHECKPOINT_EXT})</label>
      <input
        id={id}
        type="file"
        accept={`${CHECKPOINT_EXT},application/octet-stream`}
        disabled={busy}
        data-testid="ckpt-import"
        onChange={(e) => {
          const input = e.currentTarget;
          const file = input.files?.[0];
          if (file) void importFile(file).finally(() => (input.value = '')); // the same file can be picked again
        }}
      />
    </div>
  );
}

function Messages() {
  const busy = useLab((s) => s.checkpoints.busy);
  const error = useLab((s) => s.checkpoints.error);
  const notice = useLab((s) => s.checkpoints.notice);
  const dismiss = useLab((s) => s.dismissCheckpointError);
  return (
    <>
      <p className="hint" role="status" data-testid="ckpt-status">
        {busy ? `${busy}…` : notice}
      </p>
      {error && (
        <div className="alert" role="alert" data-testid="ckpt-error">
          {error}{' '}
          <button type="button" className="link" onClick={dismiss}>
            Dismiss
          </button>
        </div>
      )}
    </>
  );
}

function CheckpointList() {
  const items = useLab((s) => s.checkpoints.items);
  const loaded = useLab((s) => s.checkpoints.loaded);
  const [confirming, setConfirming] = useState<string | null>(null);
  if (!loaded) return null;
  if (items.length === 0) {
    return (
      <p className="empty" data-testid="ckpt-empty">
        No checkpoints stored yet. Create a new model or import a file.
      </p>
    );
  }
  return (
    <ul className="ckpt-list" aria-label="Stored checkpoints" data-testid="ckpt-list">
      {items.map((c) => (
        <CheckpointItem key={c.name} item={c} confirming={confirming === c.name} onConfirm={(on) => setConfirming(on ? c.name : null)} />
      ))}
    </ul>
  );
}

function CheckpointItem({ item, confirming, onConfirm }: { item: CheckpointSummary; confirming: boolean; onConfirm(on: boolean): void }) {
  const exportBytes = useLab((s) => s.exportCheckpoint);
  const remove = useLab((s) => s.deleteCheckpoint);
  const busy = useLab((s) => s.checkpoints.busy !== null);
  const info = item.info;
  const c = info?.config;

  async function download(): Promise<void> {
    const bytes = await exportBytes(item.name);
    if (bytes) downloadBytes(item.name, bytes);
  }

  return (
    <li className="ckpt-item" data-testid="ckpt-item" data-name={item.name}>
      <h3 className="ckpt-name">{item.name}</h3>
      <dl className="kv">
        <dt>Size</dt>
        <dd>{formatBytes(item.byteLength)}</dd>
        <dt>Saved</dt>
        <dd>{new Date(item.savedAt).toLocaleString()}</dd>
        {item.problem && (
          <>
            <dt>Problem</dt>
            <dd className="bad" data-testid="ckpt-problem">
              {item.problem}
            </dd>
          </>
        )}
        {info && (
          <>
            <dt>Config</dt>
            <dd data-testid="ckpt-config">{c ? configSummary(c) : `not a model config: ${info.configProblem}`}</dd>
            <dt>Parameters</dt>
            <dd data-testid="ckpt-params">{info.paramCount?.toLocaleString('en-US') ?? '—'}</dd>
            <dt>Optimizer state</dt>
            <dd data-testid="ckpt-optimizer">{info.optimizer ? 'yes (AdamW moments)' : 'no'}</dd>
            <dt>Tokenizer</dt>
            <dd data-testid="ckpt-tokenizer">
              {info.tokenizer ? `yes${info.tokenizerVocab !== null ? ` (${info.tokenizerVocab} tokens)` : ''}` : 'no'}
            </dd>
            <dt>Meta</dt>
            <dd data-testid="ckpt-meta">
              {metaEntries(info.meta)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ') || '—'}
            </dd>
          </>
        )}
      </dl>
      {confirming ? (
        <div className="ckpt-confirm" role="group" aria-label={`Confirm deleting ${item.name}`}>
          <span>Delete “{item.name}” from this browser? This cannot be undone.</span>{' '}
          <button
            type="button"
            className="danger"
            disabled={busy}
            data-testid="ckpt-delete-confirm"
            onClick={() => void remove(item.name).finally(() => onConfirm(false))}
          >
            Delete
          </button>{' '}
          <button type="button" autoFocus onClick={() => onConfirm(false)} data-testid="ckpt-delete-cancel">
            Cancel
          </button>
        </div>
      ) : (
        <div className="ckpt-actions">
          <button
            type="button"
            disabled={busy}
            onClick={() => void download()}
            data-testid="ckpt-export"
            aria-label={`Export ${item.name}`}
          >
            Export
          </button>{' '}
          <button
            type="button"
            disabled={busy}
            onClick={() => onConfirm(true)}
            data-testid="ckpt-delete"
            aria-label={`Delete ${item.name}`}
          >
            Delete…
          </button>
        </div>
      )}
      {info?.config && <OnnxCheckpointActions name={item.name} disabled={busy} />}
    </li>
  );
}
