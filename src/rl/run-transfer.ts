/**
 * Export a stored run directory as one bundle (run-bundle.ts) and import such a bundle into a
 * new run directory, in the browser's run storage (run-dir-browser.ts: OPFS or IndexedDB).
 */
import { packRun, unpackRun, type RunFile } from './run-bundle';
import { checkRunName, runStorage } from './run-dir-browser';

/** Every file of the stored run `name` as one bundle; throws when the run has no files. */
export async function exportRun(name: string): Promise<Blob> {
  const store = (await runStorage()).open(name);
  const files: RunFile[] = [];
  for (const path of await store.files()) {
    const data = await store.read(path);
    if (data === null) throw new Error(`run "${name}": ${path} disappeared while exporting`);
    files.push({ path, data });
  }
  if (files.length === 0) throw new Error(`run "${name}" has no stored files to export`);
  const bytes = packRun(files, { run: name });
  return new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' });
}

/**
 * Writes a bundle's files into the run directory `name` (default: the run the bundle names) and
 * returns that name. The whole bundle is checked before anything is written; a run of that name
 * that already has files is never overwritten.
 */
export async function importRun(bytes: Uint8Array, name?: string): Promise<string> {
  const bundle = unpackRun(bytes);
  const run = name ?? bundle.run;
  checkRunName(run);
  const store = (await runStorage()).open(run);
  const existing = (await store.files()).length;
  if (existing > 0)
    throw new Error(`a run named "${run}" already exists (${existing} files) and was left as it is; import under another name`);
  for (const f of bundle.files) await store.write(f.path, f.data);
  return run;
}
