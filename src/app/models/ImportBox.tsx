/**
 * Importing a Hugging Face model folder: a drop zone around two buttons. "Choose folder…" opens
 * Chrome's directory picker (window.showDirectoryPicker) where there is one, else the file dialog
 * of an <input webkitdirectory>; "Choose files…" takes the folder's files picked one by one. What
 * was picked goes to the model worker (store/modelsSlice.ts importModel), which checks it with
 * the loader before anything is stored.
 */
import { useRef, useState, type DragEvent } from 'react';
import { droppedFiles, pickedFiles } from '../../hf/browser';
import type { ModelSource } from '../../rl/model-protocol';
import { useLab } from '../../store';
import { errorText } from '../../util/errors';

type DirectoryPicker = (o?: { id?: string; mode?: 'read' }) => Promise<FileSystemDirectoryHandle>;
const directoryPicker = (): DirectoryPicker | null =>
  typeof window !== 'undefined' && typeof (window as { showDirectoryPicker?: unknown }).showDirectoryPicker === 'function'
    ? (window as unknown as { showDirectoryPicker: DirectoryPicker }).showDirectoryPicker
    : null;

export function ImportBox() {
  const importModel = useLab((s) => s.importModel);
  const importing = useLab((s) => s.models.importing);
  const folderInput = useRef<HTMLInputElement>(null);
  const filesInput = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const [pickError, setPickError] = useState<string | null>(null);
  const busy = importing !== null;

  const fromFiles = (list: FileList | null, label: string): void => {
    if (!list?.length) return;
    const { name, files } = pickedFiles(list);
    void importModel({ kind: 'files', name, label, files });
  };

  async function chooseFolder(): Promise<void> {
    setPickError(null);
    const pick = directoryPicker();
    if (!pick) return folderInput.current?.click();
    let handle: FileSystemDirectoryHandle;
    try {
      handle = await pick.call(window, { id: 'coderl-hf-model', mode: 'read' });
    } catch (e) {
      if (e instanceof DOMException && e.name === 'AbortError') return; // the dialog was cancelled
      folderInput.current?.click(); // the picker is refused here (e.g. a sandboxed frame): the file dialog instead
      return;
    }
    void importModel({ kind: 'directory', handle });
  }

  function drop(e: DragEvent<HTMLDivElement>): void {
    e.preventDefault();
    setOver(false);
    if (busy) return;
    setPickError(null);
    // the entries are taken now, inside the event; reading them goes on after it
    droppedFiles(e.dataTransfer).then(
      ({ name, files }) =>
        files.length ? void importModel({ kind: 'files', name, label: 'the dropped files', files } satisfies ModelSource) : undefined,
      (err: unknown) => setPickError(errorText(err)),
    );
  }

  return (
    <div
      className={`models-drop${over ? ' over' : ''}`}
      data-testid="models-drop"
      onDragOver={(e) => {
        e.preventDefault();
        e.dataTransfer.dropEffect = busy ? 'none' : 'copy';
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
    >
      <div className="models-drop-buttons">
        <button type="button" className="primary" disabled={busy} onClick={() => void chooseFolder()} data-testid="models-choose-folder">
          Choose folder…
        </button>
        <button type="button" disabled={busy} onClick={() => filesInput.current?.click()} data-testid="models-choose-files">
          Choose files…
        </button>
        <span className="hint">or drop the model folder here</span>
      </div>
      <input
        ref={folderInput}
        type="file"
        multiple
        hidden
        // the attribute React does not know: a folder picker in every Chromium, Firefox and Safari
        {...{ webkitdirectory: '' }}
        data-testid="models-folder-input"
        onChange={(e) => {
          fromFiles(e.currentTarget.files, 'the picked folder');
          e.currentTarget.value = ''; // the same folder can be picked again
        }}
      />
      <input
        ref={filesInput}
        type="file"
        multiple
        hidden
        accept=".json,.safetensors"
        data-testid="models-files-input"
        onChange={(e) => {
          fromFiles(e.currentTarget.files, 'the picked files');
          e.currentTarget.value = '';
        }}
      />
      {pickError && (
        <p className="field-error" role="alert" data-testid="models-pick-error">
          {pickError}
        </p>
      )}
    </div>
  );
}
