/**
 * Run directories in the browser, the counterpart of run-dir-node.ts, in the file area "runs" of
 * storage/browser.ts: the Origin Private File System when the browser has it, else IndexedDB
 * (decided once per page, for checkpoints and runs alike).
 *
 * OPFS: `runs/<run>/<path>` under navigator.storage.getDirectory(), one directory per path
 * component (`tasks/`, `rollouts/`); writes and appends are atomic (a swap file replaced on close).
 * IndexedDB: database "coderl-runs", store "files", key `<run>/<path>`, value the bytes; an
 * append reads and writes in one transaction. Writes and appends to one run are serialised.
 */
import type { RunDir } from './run-dir';
import { fileArea, isFileName, type AreaLayout, type StorageKind } from '../storage/browser';

export interface BrowserRunDir extends RunDir {
  readonly kind: StorageKind;
  readonly run: string;
  /** every file of the run, as relative paths, sorted */
  files(): Promise<string[]>;
}

export interface RunStorage {
  readonly kind: StorageKind;
  /** the run directory `name` (created on the first write) */
  open(name: string): BrowserRunDir;
  /** names of the stored runs, sorted */
  runs(): Promise<string[]>;
  /** deletes the run directory `name` and every file in it; false when there was none */
  remove(name: string): Promise<boolean>;
}

const RUNS: AreaLayout = { opfs: ['runs'], indexedDb: { database: 'coderl-runs', store: 'files' } };

/** A run name is one path component: 1-200 characters, no "/", "\" or NUL, not "." or "..". */
export function checkRunName(name: string): void {
  if (!isFileName(name)) throw new Error(`invalid run name ${JSON.stringify(name)}: use 1-200 characters without "/", "\\" or NUL`);
}

/** OPFS when it works here, else IndexedDB; decided once per page. */
export async function runStorage(): Promise<RunStorage> {
  const runs = await fileArea(RUNS);
  return {
    kind: runs.kind,
    runs: () => runs.folders(),
    async remove(run) {
      checkRunName(run);
      return runs.deleteFolder(run);
    },
    open(run) {
      checkRunName(run);
      const dir = runs.folder(run);
      return {
        kind: dir.kind,
        run,
        read: (path) => dir.read(path),
        write: (path, data) => dir.write(path, data),
        append: (path, text) => dir.append(path, text),
        files: () => dir.names(),
      };
    },
  };
}
