/**
 * Run directories in the browser, the counterpart of run-dir-node.ts: the Origin Private File
 * System when the browser has it, else IndexedDB (decided once per page, like the checkpoint
 * store in container/browser.ts, whose name rule this reuses).
 *
 * OPFS: `runs/<run>/<path>` under navigator.storage.getDirectory(), one directory per path
 * component (`tasks/`, `rollouts/`). A write goes through createWritable(), which writes a swap
 * file and replaces the old file only on close(), so a crash never leaves half a file; an append
 * is the same with the old contents kept (keepExistingData) and the new text written at the end.
 * IndexedDB: database "coderl-runs", store "files", key `<run>/<path>`, value the bytes; an
 * append reads and writes in one transaction. Appends to one store are serialised either way.
 */
import { checkName, committed, done } from '../container/browser';
import type { RunDir } from './run-dir';
import { errorText } from '../util/errors';

export interface BrowserRunDir extends RunDir {
  readonly kind: 'opfs' | 'indexeddb';
  readonly run: string;
  /** every file of the run, as relative paths, sorted */
  files(): Promise<string[]>;
}

export interface RunStorage {
  readonly kind: 'opfs' | 'indexeddb';
  /** the run directory `name` (created on the first write) */
  open(name: string): BrowserRunDir;
  /** names of the stored runs, sorted */
  runs(): Promise<string[]>;
  /** deletes the run directory `name` and every file in it; false when there was none */
  remove(name: string): Promise<boolean>;
}

const OPFS_DIR = 'runs';
const DB_NAME = 'coderl-runs';

/** A run name is one path component: 1-200 characters, no "/", "\" or NUL, not "." or "..". */
export function checkRunName(name: string): void {
  try {
    checkName(name);
  } catch {
    throw new Error(`invalid run name ${JSON.stringify(name)}: use 1-200 characters without "/", "\\" or NUL`);
  }
}

/** The path's components, each checked like a run name. */
function components(path: string): string[] {
  const parts = path.split('/');
  try {
    parts.forEach(checkName);
  } catch {
    throw new Error(`run store: bad file name ${JSON.stringify(path)}`);
  }
  return parts;
}

let storage: Promise<RunStorage> | null = null;

/** OPFS when it works here, else IndexedDB; decided once per page. */
export function runStorage(): Promise<RunStorage> {
  storage ??= (async () => {
    try {
      return await opfsStorage();
    } catch {
      return indexedDbStorage();
    }
  })();
  return storage;
}

/** Runs `fn` after every call queued before it (failures do not block the queue). */
function serialiser(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const next = tail.then(fn, fn);
    tail = next.catch(() => undefined);
    return next;
  };
}

/** The bytes in an ArrayBuffer of their own (what createWritable and IndexedDB take). */
function encode(data: Uint8Array | string): Uint8Array<ArrayBuffer> {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

const isNotFound = (e: unknown) => e instanceof DOMException && (e.name === 'NotFoundError' || e.name === 'TypeMismatchError');

type DirHandle = FileSystemDirectoryHandle & { values(): AsyncIterable<FileSystemHandle> };

async function opfsStorage(): Promise<RunStorage> {
  if (typeof navigator === 'undefined' || typeof navigator.storage?.getDirectory !== 'function') throw new Error('OPFS is not available');
  if (typeof FileSystemFileHandle === 'undefined' || !('createWritable' in FileSystemFileHandle.prototype))
    throw new Error('OPFS cannot write here');
  const root = await (await navigator.storage.getDirectory()).getDirectoryHandle(OPFS_DIR, { create: true });

  return {
    kind: 'opfs',
    async runs() {
      const out: string[] = [];
      for await (const h of (root as DirHandle).values()) if (h.kind === 'directory') out.push(h.name);
      return out.sort();
    },
    async remove(run) {
      checkRunName(run);
      try {
        await root.removeEntry(run, { recursive: true });
        return true;
      } catch (e) {
        if ((e as DOMException).name === 'NotFoundError') return false;
        throw e;
      }
    },
    open(run) {
      checkRunName(run);
      const queue = serialiser();
      /** The directory holding `path`'s file and the file's name; null when a directory is missing and `create` is false. */
      const locate = async (path: string, create: boolean): Promise<{ dir: FileSystemDirectoryHandle; file: string } | null> => {
        const parts = components(path);
        try {
          let dir = await root.getDirectoryHandle(run, { create });
          for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create });
          return { dir, file: parts[parts.length - 1]! };
        } catch (e) {
          if (!create && isNotFound(e)) return null;
          throw e;
        }
      };
      const put = async (path: string, bytes: Uint8Array<ArrayBuffer>, append: boolean): Promise<void> => {
        const at = (await locate(path, true))!;
        const handle = await at.dir.getFileHandle(at.file, { create: true });
        const w = await handle.createWritable({ keepExistingData: append });
        try {
          if (append) await w.seek((await handle.getFile()).size);
          await w.write(bytes);
          await w.close();
        } catch (e) {
          await w.abort().catch(() => undefined);
          throw new Error(`could not write ${run}/${path} to OPFS: ${errorText(e)}`, { cause: e });
        }
      };
      return {
        kind: 'opfs',
        run,
        async read(path) {
          const at = await locate(path, false);
          if (!at) return null;
          try {
            return new Uint8Array(await (await (await at.dir.getFileHandle(at.file)).getFile()).arrayBuffer());
          } catch (e) {
            if (isNotFound(e)) return null;
            throw e;
          }
        },
        write: (path, data) => queue(() => put(path, encode(data), false)),
        append: (path, text) => queue(() => put(path, encode(text), true)),
        async files() {
          const out: string[] = [];
          const walk = async (dir: FileSystemDirectoryHandle, prefix: string): Promise<void> => {
            for await (const h of (dir as DirHandle).values()) {
              if (h.kind === 'file') out.push(prefix + h.name);
              else await walk(h as FileSystemDirectoryHandle, `${prefix}${h.name}/`);
            }
          };
          try {
            await walk(await root.getDirectoryHandle(run), '');
          } catch (e) {
            if (!isNotFound(e)) throw e;
          }
          return out.sort();
        },
      };
    },
  };
}

async function indexedDbStorage(): Promise<RunStorage> {
  if (typeof indexedDB === 'undefined') throw new Error('no browser storage: neither OPFS nor IndexedDB is available');
  const req = indexedDB.open(DB_NAME, 1);
  req.onupgradeneeded = () => req.result.createObjectStore('files');
  const db = await done(req);
  const keysUnder = async (prefix: string): Promise<string[]> =>
    (await done(
      db
        .transaction('files', 'readonly')
        .objectStore('files')
        .getAllKeys(IDBKeyRange.bound(prefix, `${prefix}\uffff`)),
    )) as string[];

  return {
    kind: 'indexeddb',
    async runs() {
      return [...new Set((await keysUnder('')).map((k) => k.slice(0, k.indexOf('/'))))].sort();
    },
    async remove(run) {
      checkRunName(run);
      const keys = await keysUnder(`${run}/`);
      if (!keys.length) return false;
      const tx = db.transaction('files', 'readwrite');
      const finished = committed(tx);
      tx.objectStore('files').delete(IDBKeyRange.bound(`${run}/`, `${run}/\uffff`));
      await finished;
      return true;
    },
    open(run) {
      checkRunName(run);
      const queue = serialiser();
      const key = (path: string) => `${run}/${components(path).join('/')}`;
      return {
        kind: 'indexeddb',
        run,
        async read(path) {
          const v = await done(db.transaction('files', 'readonly').objectStore('files').get(key(path)));
          return v instanceof ArrayBuffer ? new Uint8Array(v) : null;
        },
        write: (path, data) =>
          queue(async () => {
            const tx = db.transaction('files', 'readwrite');
            const finished = committed(tx);
            tx.objectStore('files').put(encode(data).buffer, key(path));
            await finished;
          }),
        append: (path, text) =>
          queue(async () => {
            const k = key(path);
            const add = encode(text);
            const tx = db.transaction('files', 'readwrite');
            const finished = committed(tx);
            const files = tx.objectStore('files');
            const get = files.get(k);
            get.onsuccess = () => {
              const old = get.result instanceof ArrayBuffer ? new Uint8Array(get.result) : new Uint8Array();
              const out = new Uint8Array(old.length + add.length);
              out.set(old);
              out.set(add, old.length);
              files.put(out.buffer, k);
            };
            await finished;
          }),
        async files() {
          return (await keysUnder(`${run}/`)).map((k) => k.slice(run.length + 1)).sort();
        },
      };
    },
  };
}
