/**
 * Checkpoints in the browser: the Origin Private File System (OPFS) when the browser has it, else
 * IndexedDB. No Node imports here; Node has node.ts.
 *
 * OPFS: files in the directory "checkpoints" of navigator.storage.getDirectory(), written through
 * createWritable(), which writes a swap file and replaces the old file only on close(): atomic.
 * IndexedDB: database "coderl-checkpoints", store "meta" (name, byteLength, savedAt) and store
 * "data" (name -> Blob), both written in one transaction: atomic too.
 */
import { CheckpointError } from './header';
import { errorText } from '../util/errors';

export interface StoredCheckpoint {
  name: string;
  byteLength: number;
  /** ms since the epoch */
  savedAt: number;
}

export interface CheckpointStore {
  readonly kind: 'opfs' | 'indexeddb';
  save(name: string, bytes: Uint8Array): Promise<void>;
  /** throws a CheckpointError when there is no checkpoint of that name */
  load(name: string): Promise<Uint8Array>;
  /** sorted by name */
  list(): Promise<StoredCheckpoint[]>;
  /** false when there was nothing of that name */
  delete(name: string): Promise<boolean>;
}

const OPFS_DIR = 'checkpoints';
const DB_NAME = 'coderl-checkpoints';

/** Names are file names: 1 to 200 characters, no "/", "\", NUL, and not "." or "..". */
export function checkName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 200 || /[/\\\0]/.test(name) || name === '.' || name === '..') {
    throw new CheckpointError(`invalid checkpoint name ${JSON.stringify(name)}: use 1-200 characters without "/", "\\" or NUL`);
  }
}

let defaultStore: Promise<CheckpointStore> | null = null;

/** OPFS when it works here, else IndexedDB; decided once per page. */
export function browserCheckpointStore(): Promise<CheckpointStore> {
  defaultStore ??= (async () => {
    try {
      return await openOpfsStore();
    } catch {
      return openIndexedDbStore();
    }
  })();
  return defaultStore;
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

/** A copy of the bytes in an ArrayBuffer of their own (what Blob and FileSystemWritableFileStream take). */
function ownBuffer(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

const isNotFound = (e: unknown) => e instanceof DOMException && e.name === 'NotFoundError';

/** The OPFS store; rejects when OPFS or createWritable is missing (Safari's main thread, old browsers). */
export async function openOpfsStore(): Promise<CheckpointStore> {
  if (typeof navigator === 'undefined' || typeof navigator.storage?.getDirectory !== 'function') {
    throw new CheckpointError('OPFS is not available (navigator.storage.getDirectory)');
  }
  if (typeof FileSystemFileHandle === 'undefined' || !('createWritable' in FileSystemFileHandle.prototype)) {
    throw new CheckpointError('OPFS cannot write from this context (FileSystemFileHandle.createWritable)');
  }
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(OPFS_DIR, { create: true });
  return {
    kind: 'opfs',
    async save(name, bytes) {
      checkName(name);
      const file = await dir.getFileHandle(name, { create: true });
      const writable = await file.createWritable({ keepExistingData: false });
      try {
        await writable.write(ownBuffer(bytes));
        await writable.close();
      } catch (e) {
        await writable.abort().catch(() => undefined);
        throw new CheckpointError(`could not save checkpoint "${name}" to OPFS: ${errorText(e)}`, { cause: e });
      }
    },
    async load(name) {
      checkName(name);
      try {
        const file = await (await dir.getFileHandle(name)).getFile();
        return new Uint8Array(await file.arrayBuffer());
      } catch (e) {
        if (isNotFound(e)) throw new CheckpointError(`checkpoint "${name}" not found in browser storage (OPFS)`, { cause: e });
        throw e;
      }
    },
    async list() {
      const out: StoredCheckpoint[] = [];
      // values() is in TypeScript's DOM.AsyncIterable lib, which this project does not load
      const entries = (dir as unknown as { values(): AsyncIterable<FileSystemHandle> }).values();
      for await (const handle of entries) {
        if (handle.kind !== 'file') continue;
        const file = await (handle as FileSystemFileHandle).getFile();
        out.push({ name: handle.name, byteLength: file.size, savedAt: file.lastModified });
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async delete(name) {
      checkName(name);
      try {
        await dir.removeEntry(name);
        return true;
      } catch (e) {
        if (isNotFound(e)) return false;
        throw e;
      }
    },
  };
}

/** Resolves with a request's result, rejects with its error. */
export function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Resolves when a transaction commits (so a save is durable), rejects when it aborts. */
export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new CheckpointError('IndexedDB transaction aborted'));
    tx.onerror = () => reject(tx.error);
  });
}

export async function openIndexedDbStore(): Promise<CheckpointStore> {
  if (typeof indexedDB === 'undefined') throw new CheckpointError('no browser storage: neither OPFS nor IndexedDB is available');
  const req = indexedDB.open(DB_NAME, 1);
  req.onupgradeneeded = () => {
    req.result.createObjectStore('meta', { keyPath: 'name' });
    req.result.createObjectStore('data');
  };
  const db = await done(req);
  return {
    kind: 'indexeddb',
    async save(name, bytes) {
      checkName(name);
      const tx = db.transaction(['meta', 'data'], 'readwrite');
      const finished = committed(tx);
      const meta: StoredCheckpoint = { name, byteLength: bytes.byteLength, savedAt: Date.now() };
      tx.objectStore('data').put(new Blob([ownBuffer(bytes)]), name);
      tx.objectStore('meta').put(meta);
      await finished;
    },
    async load(name) {
      checkName(name);
      const blob = await done(db.transaction('data', 'readonly').objectStore('data').get(name));
      if (!(blob instanceof Blob)) throw new CheckpointError(`checkpoint "${name}" not found in browser storage (IndexedDB)`);
      return new Uint8Array(await blob.arrayBuffer());
    },
    async list() {
      const all = (await done(db.transaction('meta', 'readonly').objectStore('meta').getAll())) as StoredCheckpoint[];
      return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async delete(name) {
      checkName(name);
      const tx = db.transaction(['meta', 'data'], 'readwrite');
      const finished = committed(tx);
      const count = done(tx.objectStore('meta').count(name)); // requests run in order: counted before deleting
      tx.objectStore('meta').delete(name);
      tx.objectStore('data').delete(name);
      await finished;
      return (await count) > 0;
    },
  };
}
