/**
 * Named files in the browser: the Origin Private File System (OPFS) when this page (or worker)
 * can write there, else IndexedDB; decided once, on first use. No Node imports here.
 *
 * An area is a set of files named by "/"-separated paths, each part a file name (isFileName).
 * OPFS: the folder `layout.opfs` under navigator.storage.getDirectory(), one directory per path
 * part. A write goes through createWritable(), which writes a swap file and replaces the old file
 * only on close(), so a crash never leaves half a file; an append is the same with the old
 * contents kept (keepExistingData) and the new bytes written at the end.
 * IndexedDB: the object store `store` of the database `database`, key `<prefix><path>`, value the
 * bytes (an ArrayBuffer, or a Blob with `blobs`), and where there is a `meta` store (key path
 * "name") a record { name: key, byteLength, savedAt } beside it; a write is one transaction over
 * both, an append reads and writes in one transaction.
 * Writes, appends and deletes in one area run one at a time, in the order they were called.
 */
import { errorText } from '../util/errors';

export type StorageKind = 'opfs' | 'indexeddb';

/** How the kinds are named in messages. */
export const STORAGE_NAME: Record<StorageKind, string> = { opfs: 'OPFS', indexeddb: 'IndexedDB' };

export interface StoredFile {
  /** the path inside the area */
  name: string;
  byteLength: number;
  /** ms since the epoch; null where the storage does not keep it (IndexedDB without a meta store) */
  savedAt: number | null;
}

/** Where an area's files are, in either storage. */
export interface AreaLayout {
  /** the folder's path from the OPFS root, one part per element */
  opfs: readonly string[];
  /** every area of one database names the same stores (the first opened creates them) */
  indexedDb: {
    database: string;
    /** the store of the bytes (keys out of line) */
    store: string;
    /** what every key of this area starts with (default "") */
    prefix?: string;
    /** a store (key path "name") of { name, byteLength, savedAt }, written with the bytes */
    meta?: string;
    /** keep Blobs, not ArrayBuffers */
    blobs?: boolean;
  };
}

export interface FileArea {
  readonly kind: StorageKind;
  /** the file's bytes; null when there is none */
  read(path: string): Promise<Uint8Array | null>;
  /** replaces the file atomically (creating its folders) */
  write(path: string, data: Uint8Array | string): Promise<void>;
  /** adds to the end of the file (creating it) */
  append(path: string, data: Uint8Array | string): Promise<void>;
  /** false when there was no such file */
  delete(path: string): Promise<boolean>;
  /** every file's path, in folders too, sorted */
  names(): Promise<string[]>;
  /** every file with its size and save time, sorted by path */
  list(): Promise<StoredFile[]>;
  /** the area of the folder `name` in this one (nothing is created before a write) */
  folder(name: string): FileArea;
  /** the folders directly in this area, sorted */
  folders(): Promise<string[]>;
  /** deletes the folder `name` and everything in it; false when there was none */
  deleteFolder(name: string): Promise<boolean>;
}

/** A file or folder name: 1 to 200 characters, no "/", "\" or NUL, and not "." or "..". */
export function isFileName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 200 && !/[/\\\0]/.test(name) && name !== '.' && name !== '..';
}

/** The area for `layout`; rejects when the browser has neither OPFS nor IndexedDB. */
export async function fileArea(layout: AreaLayout): Promise<FileArea> {
  const storage = await decide();
  if (storage.kind === 'opfs') return area('opfs', opfsBackend(storage.root, [...layout.opfs]));
  const { database, prefix = '' } = layout.indexedDb;
  return area('indexeddb', idbBackend(await openDatabase(layout), layout.indexedDb, `${database}/`, prefix));
}

// ---------------------------------------------------------------------------------------------
// the decision, once per page

let decided: Promise<{ kind: 'opfs'; root: FileSystemDirectoryHandle } | { kind: 'indexeddb' }> | null = null;

function decide(): NonNullable<typeof decided> {
  decided ??= (async () => {
    try {
      return { kind: 'opfs', root: await opfsRoot() } as const;
    } catch {
      if (typeof indexedDB === 'undefined') throw new Error('no browser storage: neither OPFS nor IndexedDB is available');
      return { kind: 'indexeddb' } as const;
    }
  })();
  return decided;
}

/** The OPFS root; rejects when OPFS or createWritable is missing (Safari's main thread, old browsers). */
async function opfsRoot(): Promise<FileSystemDirectoryHandle> {
  if (typeof navigator === 'undefined' || typeof navigator.storage?.getDirectory !== 'function') {
    throw new Error('OPFS is not available (navigator.storage.getDirectory)');
  }
  if (typeof FileSystemFileHandle === 'undefined' || !('createWritable' in FileSystemFileHandle.prototype)) {
    throw new Error('OPFS cannot write from this context (FileSystemFileHandle.createWritable)');
  }
  return navigator.storage.getDirectory();
}

// ---------------------------------------------------------------------------------------------
// what both storages share: name checks, the queue, error messages, sorting

/** The primitives of one storage for one folder; paths come as checked parts. */
interface Backend {
  /** the location of `path` for messages, e.g. "runs/r1/config.json" */
  where(path: string): string;
  read(parts: string[]): Promise<Uint8Array | null>;
  put(parts: string[], bytes: Uint8Array<ArrayBuffer>, append: boolean): Promise<void>;
  remove(parts: string[]): Promise<boolean>;
  names(): Promise<string[]>;
  list(): Promise<StoredFile[]>;
  folder(name: string): Backend;
  folders(): Promise<string[]>;
  removeFolder(name: string): Promise<boolean>;
}

function area(kind: StorageKind, b: Backend): FileArea {
  const self = b.where('');
  const bad = (path: string) =>
    new Error(
      `bad file name ${JSON.stringify(path)} in ${self}: use "/"-separated parts of 1-200 characters without "\\" or NUL, not "." or ".."`,
    );
  const parts = (path: string): string[] => {
    const out = typeof path === 'string' ? path.split('/') : [];
    if (!out.length || !out.every(isFileName)) throw bad(path);
    return out;
  };
  const folderName = (name: string): string => {
    if (!isFileName(name)) throw bad(name);
    return name;
  };
  const put = async (path: string, data: Uint8Array | string, append: boolean): Promise<void> => {
    const p = parts(path);
    const bytes = ownBytes(data);
    return serialised(self, async () => {
      try {
        await b.put(p, bytes, append);
      } catch (e) {
        throw new Error(`could not write ${b.where(path)} to ${STORAGE_NAME[kind]}: ${errorText(e)}`, { cause: e });
      }
    });
  };
  return {
    kind,
    read: async (path) => b.read(parts(path)),
    write: (path, data) => put(path, data, false),
    append: (path, data) => put(path, data, true),
    delete: async (path) => {
      const p = parts(path);
      return serialised(self, () => b.remove(p));
    },
    names: async () => (await b.names()).sort(byCodeUnits),
    list: async () => (await b.list()).sort((x, y) => byCodeUnits(x.name, y.name)),
    folder: (name) => area(kind, b.folder(folderName(name))),
    folders: async () => (await b.folders()).sort(byCodeUnits),
    deleteFolder: async (name) => {
      const n = folderName(name);
      return serialised(b.folder(n).where(''), () => b.removeFolder(n));
    },
  };
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The bytes in an ArrayBuffer of their own (what createWritable and IndexedDB take), copied so a caller may reuse its array. */
function ownBytes(data: Uint8Array | string): Uint8Array<ArrayBuffer> {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  const copy = new Uint8Array(data.byteLength);
  copy.set(data);
  return copy;
}

const queues = new Map<string, Promise<void>>();

/** Runs `fn` after everything queued under `key` before it (a failure does not block the queue). */
function serialised<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const next = (queues.get(key) ?? Promise.resolve()).then(fn);
  const tail = next.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return next;
}

// ---------------------------------------------------------------------------------------------
// OPFS

type DirHandle = FileSystemDirectoryHandle & { values(): AsyncIterable<FileSystemHandle> };

/** values() is in TypeScript's DOM.AsyncIterable lib, which this project does not load. */
const entries = (dir: FileSystemDirectoryHandle): AsyncIterable<FileSystemHandle> => (dir as DirHandle).values();

/** A missing entry, or one of the other kind (a file where a folder was asked for). */
const isNotFound = (e: unknown): boolean => e instanceof DOMException && (e.name === 'NotFoundError' || e.name === 'TypeMismatchError');

function opfsBackend(root: FileSystemDirectoryHandle, base: string[]): Backend {
  /** The folder `base/...parts`, created when `create`; null when it is missing and not `create`. */
  const dirOf = async (parts: readonly string[], create: boolean): Promise<FileSystemDirectoryHandle | null> => {
    let dir = root;
    try {
      for (const p of [...base, ...parts]) dir = await dir.getDirectoryHandle(p, { create });
      return dir;
    } catch (e) {
      if (!create && isNotFound(e)) return null;
      throw e;
    }
  };
  /** Every file under `dir` as [path, handle]. */
  const walk = async (dir: FileSystemDirectoryHandle | null, prefix = '', out: [string, FileSystemFileHandle][] = []) => {
    if (dir)
      for await (const h of entries(dir)) {
        if (h.kind === 'file') out.push([prefix + h.name, h as FileSystemFileHandle]);
        else await walk(h as FileSystemDirectoryHandle, `${prefix}${h.name}/`, out);
      }
    return out;
  };
  /** Runs `fn`; a missing entry gives `missing` instead. */
  const unlessMissing = async <T>(missing: T, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      if (isNotFound(e)) return missing;
      throw e;
    }
  };

  return {
    where: (path) => [...base, path].join('/'),
    async read(parts) {
      const dir = await dirOf(parts.slice(0, -1), false);
      if (!dir) return null;
      return unlessMissing(
        null,
        async () => new Uint8Array(await (await (await dir.getFileHandle(parts.at(-1)!)).getFile()).arrayBuffer()),
      );
    },
    async put(parts, bytes, append) {
      const file = await (await dirOf(parts.slice(0, -1), true))!.getFileHandle(parts.at(-1)!, { create: true });
      const w = await file.createWritable({ keepExistingData: append });
      try {
        if (append) await w.seek((await file.getFile()).size);
        await w.write(bytes);
        await w.close();
      } catch (e) {
        await w.abort().catch(() => undefined);
        throw e;
      }
    },
    async remove(parts) {
      const dir = await dirOf(parts.slice(0, -1), false);
      return !!dir && unlessMissing(false, async () => (await dir.removeEntry(parts.at(-1)!), true));
    },
    names: async () => (await walk(await dirOf([], false))).map(([path]) => path),
    async list() {
      const out: StoredFile[] = [];
      for (const [name, h] of await walk(await dirOf([], false))) {
        const file = await h.getFile();
        out.push({ name, byteLength: file.size, savedAt: file.lastModified });
      }
      return out;
    },
    folder: (name) => opfsBackend(root, [...base, name]),
    async folders() {
      const out: string[] = [];
      const dir = await dirOf([], false);
      if (dir) for await (const h of entries(dir)) if (h.kind === 'directory') out.push(h.name);
      return out;
    },
    async removeFolder(name) {
      const dir = await dirOf([], false);
      return !!dir && unlessMissing(false, async () => (await dir.removeEntry(name, { recursive: true }), true));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// IndexedDB

/** Resolves with a request's result, rejects with its error. */
function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Resolves when a transaction commits (so a write is durable), rejects when it aborts. */
function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    tx.onerror = () => reject(tx.error);
  });
}

const databases = new Map<string, Promise<IDBDatabase>>();

/** The database of `layout` (version 1, its stores created on first open), opened once per page. */
function openDatabase({ indexedDb: { database, store, meta } }: AreaLayout): Promise<IDBDatabase> {
  let db = databases.get(database);
  if (!db) {
    const req = indexedDB.open(database, 1);
    req.onupgradeneeded = () => {
      if (meta) req.result.createObjectStore(meta, { keyPath: 'name' });
      req.result.createObjectStore(store);
    };
    db = done(req);
    databases.set(database, db);
    db.catch(() => databases.delete(database)); // a later call tries again
  }
  return db;
}

/** Every key that starts with `prefix` (all keys for ""). */
function under(prefix: string): IDBKeyRange | undefined {
  if (!prefix) return undefined;
  const after = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  return IDBKeyRange.bound(prefix, after, false, true);
}

type Stored = ArrayBuffer | Blob;
const sizeOf = (v: Stored): number => (v instanceof Blob ? v.size : v.byteLength);

/** `old` (a stored value, or nothing) with `add` at its end: a Blob in a Blob store or where `old` is one, else an ArrayBuffer. */
function joined(old: unknown, add: Uint8Array<ArrayBuffer>, blobs: boolean): Stored {
  const before = old instanceof Blob || old instanceof ArrayBuffer ? old : null;
  if (blobs || before instanceof Blob) return new Blob(before ? [before, add] : [add]);
  if (!before) return add.buffer;
  const out = new Uint8Array(before.byteLength + add.byteLength);
  out.set(new Uint8Array(before));
  out.set(add, before.byteLength);
  return out.buffer;
}

function idbBackend(db: IDBDatabase, layout: AreaLayout['indexedDb'], label: string, prefix: string): Backend {
  const { store, meta, blobs = false } = layout;
  const stores = meta ? [store, meta] : [store];
  const key = (parts: string[]) => prefix + parts.join('/');
  const keys = async (): Promise<string[]> =>
    (await done(db.transaction(store, 'readonly').objectStore(store).getAllKeys(under(prefix)))) as string[];
  /** Runs `fill` on the stores in one read-write transaction and waits for it to commit. */
  const change = async (fill: (tx: IDBTransaction) => void): Promise<void> => {
    const tx = db.transaction(stores, 'readwrite');
    const finished = committed(tx);
    try {
      fill(tx);
    } catch (e) {
      finished.catch(() => undefined);
      tx.abort();
      throw e;
    }
    await finished;
  };
  /** Deletes the key or range from both stores; false when the bytes store had nothing there. */
  const drop = async (what: string | IDBKeyRange): Promise<boolean> => {
    let count = 0;
    await change((tx) => {
      const n = tx.objectStore(store).count(what); // requests run in order: counted before deleting
      n.onsuccess = () => (count = n.result);
      for (const s of stores) tx.objectStore(s).delete(what);
    });
    return count > 0;
  };

  return {
    where: (path) => label + prefix + path,
    async read(parts) {
      const v = (await done(db.transaction(store, 'readonly').objectStore(store).get(key(parts)))) as unknown;
      if (v instanceof Blob) return new Uint8Array(await v.arrayBuffer());
      return v instanceof ArrayBuffer ? new Uint8Array(v) : null;
    },
    put: (parts, bytes, append) =>
      change((tx) => {
        const k = key(parts);
        const files = tx.objectStore(store);
        const save = (old: unknown) => {
          const value = joined(old, bytes, blobs);
          files.put(value, k);
          if (meta) tx.objectStore(meta).put({ name: k, byteLength: sizeOf(value), savedAt: Date.now() });
        };
        if (!append) return save(undefined);
        const get = files.get(k);
        get.onsuccess = () => save(get.result);
      }),
    remove: (parts) => drop(key(parts)),
    names: async () => (await keys()).map((k) => k.slice(prefix.length)),
    async list() {
      const range = under(prefix);
      if (meta) {
        const all = (await done(db.transaction(meta, 'readonly').objectStore(meta).getAll(range))) as StoredFile[];
        return all.map((m) => ({ name: m.name.slice(prefix.length), byteLength: m.byteLength, savedAt: m.savedAt }));
      }
      const tx = db.transaction(store, 'readonly');
      const [ks, vs] = await Promise.all([done(tx.objectStore(store).getAllKeys(range)), done(tx.objectStore(store).getAll(range))]);
      return ks.map((k, i) => ({ name: (k as string).slice(prefix.length), byteLength: sizeOf(vs[i] as Stored), savedAt: null }));
    },
    folder: (name) => idbBackend(db, layout, label, `${prefix}${name}/`),
    async folders() {
      const names = (await keys()).map((k) => k.slice(prefix.length)).filter((k) => k.includes('/'));
      return [...new Set(names.map((k) => k.slice(0, k.indexOf('/'))))];
    },
    removeFolder: (name) => drop(under(`${prefix}${name}/`)!),
  };
}
