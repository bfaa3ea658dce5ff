/**
 * The page decides where runs and models live (OPFS, or IndexedDB where OPFS is missing there)
 * and reads them back from there; storage/browser.ts decides once per context, so a worker
 * (run-worker.ts, model-worker.ts, eval-worker.ts) whose page chose IndexedDB hides OPFS from
 * itself before its first use of storage.
 */
import type { StorageKind } from '../storage/browser';

export function followPageStorage(kind: StorageKind): void {
  if (kind === 'indexeddb' && typeof navigator !== 'undefined' && navigator.storage) {
    Object.defineProperty(navigator.storage, 'getDirectory', { value: undefined, configurable: true });
  }
}
