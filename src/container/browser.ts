/**
 * Checkpoints in the browser, in the file area "checkpoints" of storage/browser.ts: the Origin
 * Private File System (OPFS) when the browser has it, else IndexedDB. No Node imports here; Node
 * has node.ts.
 *
 * OPFS: files in the directory "checkpoints" of navigator.storage.getDirectory(), written
 * atomically through a swap file.
 * IndexedDB: database "coderl-checkpoints", store "meta" (name, byteLength, savedAt) and store
 * "data" (name -> Blob), both written in one transaction: atomic too.
 */
import { CheckpointError } from './header';
import { fileArea, isFileName, STORAGE_NAME, type AreaLayout, type FileArea, type StorageKind } from '../storage/browser';

export interface StoredCheckpoint {
  name: string;
  byteLength: number;
  /** ms since the epoch */
  savedAt: number;
}

export interface CheckpointStore {
  readonly kind: StorageKind;
  save(name: string, bytes: Uint8Array): Promise<void>;
  /** throws a CheckpointError when there is no checkpoint of that name */
  load(name: string): Promise<Uint8Array>;
  /** sorted by name */
  list(): Promise<StoredCheckpoint[]>;
  /** false when there was nothing of that name */
  delete(name: string): Promise<boolean>;
}

const CHECKPOINTS: AreaLayout = {
  opfs: ['checkpoints'],
  indexedDb: { database: 'coderl-checkpoints', store: 'data', meta: 'meta', blobs: true },
};

/** Names are file names: 1 to 200 characters, no "/", "\", NUL, and not "." or "..". */
export function checkName(name: string): void {
  if (!isFileName(name)) {
    throw new CheckpointError(`invalid checkpoint name ${JSON.stringify(name)}: use 1-200 characters without "/", "\\" or NUL`);
  }
}

/** OPFS when it works here, else IndexedDB; decided once per page. */
export async function browserCheckpointStore(): Promise<CheckpointStore> {
  return checkpointStore(await fileArea(CHECKPOINTS));
}

export async function saveCheckpointBrowser(name: string, bytes: Uint8Array): Promise<void> {
  return (await browserCheckpointStore()).save(name, bytes);
}
export async function loadCheckpointBrowser(name: string): Promise<Uint8Array> {
  return (await browserCheckpointStore()).load(name);
}
export async function listCheckpointsBrowser(): Promise<StoredCheckpoint[]> {
  return (await browserCheckpointStore()).list();
}
export async function deleteCheckpointBrowser(name: string): Promise<boolean> {
  return (await browserCheckpointStore()).delete(name);
}

function checkpointStore(area: FileArea): CheckpointStore {
  return {
    kind: area.kind,
    async save(name, bytes) {
      checkName(name);
      await area.write(name, bytes);
    },
    async load(name) {
      checkName(name);
      const bytes = await area.read(name);
      if (!bytes) throw new CheckpointError(`checkpoint "${name}" not found in browser storage (${STORAGE_NAME[area.kind]})`);
      return bytes;
    },
    async list() {
      return (await area.list()).map((f) => ({ name: f.name, byteLength: f.byteLength, savedAt: f.savedAt ?? 0 }));
    },
    async delete(name) {
      checkName(name);
      return area.delete(name);
    },
  };
}
