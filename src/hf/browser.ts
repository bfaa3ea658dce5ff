/**
 * Hugging Face model folders in the browser (folder.ts ModelFolder), and the copies the app keeps.
 *
 * Where a folder comes from:
 * - pickedFiles / filesFolder: an <input type=file multiple webkitdirectory> (each File carries its
 *   webkitRelativePath), or plain multiple files; read lazily from the File objects;
 * - directoryFolder: a directory handle (window.showDirectoryPicker where Chrome has it, or a
 *   folder in OPFS);
 * - droppedFiles: a drop's DataTransfer items (a folder, or loose files). The entries must be
 *   taken during the drop event itself, so it does that before its first await.
 *
 * Where the copies live: HfModelStore, one folder per model, `hf-models/<id>/`, in OPFS (IndexedDB
 * where this browser has no OPFS, as storage/browser.ts decides for everything else). Only the
 * model's files are copied (folder.ts isModelFile), each streamed from its File to an OPFS
 * writable (File.stream() piped to createWritable(): a multi-gigabyte safetensors file is never
 * held in memory; the IndexedDB fallback holds one file at a time). `manifest.json` is written
 * last and lists every file with its size: a folder without it is an import that did not finish
 * and is never offered as a model, and a stored file whose size is not the manifest's is refused.
 */
import { fileArea, STORAGE_NAME, type AreaLayout, type FileArea, type StorageKind } from '../storage/browser';
import { errorText } from '../util/errors';
import { HF_FILES, isModelFile, type ModelFolder } from './folder';
import type { HfModel } from './load';

/** A folder whose files are Blobs (a picked or dropped File, an OPFS file): what a copy streams from. */
export interface BlobFolder extends ModelFolder {
  /** the file as a Blob (nothing read yet); throws naming the folder and the file when there is none */
  blob(file: string): Promise<Blob>;
}

const bytesOf = async (b: Blob): Promise<Uint8Array> => new Uint8Array(await b.arrayBuffer());

/** A folder of files given by name (picked or dropped); two files of one name are refused. */
export function filesFolder(name: string, files: readonly File[]): BlobFolder {
  const byName = new Map<string, File>();
  for (const f of files) {
    if (byName.has(f.name)) throw new Error(`${name}: two of the files given are named ${f.name}; give the files of one model folder`);
    byName.set(f.name, f);
  }
  const blob = async (file: string): Promise<Blob> => {
    const f = byName.get(file);
    if (!f) throw new Error(`${name}: no file ${file}`);
    return f;
  };
  return {
    name,
    files: async () => [...byName.keys()],
    blob,
    read: async (file) => {
      const b = await blob(file);
      try {
        return await bytesOf(b);
      } catch (e) {
        throw new Error(`${name}/${file}: cannot be read (${errorText(e)})`, { cause: e });
      }
    },
  };
}

/** The model files of a pick: the folder's name (null for loose files) and the files directly in it. */
export interface PickedFiles {
  name: string | null;
  files: File[];
}

const parentOf = (path: string): string => path.slice(0, Math.max(0, path.lastIndexOf('/')));

/**
 * What a file input gave: with webkitdirectory every file's webkitRelativePath is
 * `<picked folder>/<path>`; the model is the picked folder's own files, or, when it has no
 * config.json and exactly one folder inside it has, that folder's (a parent of the model was
 * picked). Loose files (no relative paths) are taken as they are.
 */
export function pickedFiles(list: ArrayLike<File>): PickedFiles {
  const all = Array.from(list);
  const rel = (f: File): string => (f as File & { webkitRelativePath?: string }).webkitRelativePath ?? '';
  if (!all.length || !all.every((f) => rel(f).includes('/'))) return { name: null, files: all };
  const dirs = new Map<string, File[]>();
  for (const f of all) {
    const dir = parentOf(rel(f));
    dirs.set(dir, [...(dirs.get(dir) ?? []), f]);
  }
  const root = rel(all[0]!).split('/')[0]!;
  const hasConfig = (d: string) => (dirs.get(d) ?? []).some((f) => f.name === HF_FILES.config);
  const withConfig = [...dirs.keys()].filter(hasConfig);
  const dir = hasConfig(root) || withConfig.length !== 1 ? root : withConfig[0]!;
  return { name: dir.split('/').pop()!, files: dirs.get(dir) ?? [] };
}

// ---------------------------------------------------------------------------------------------
// directory handles (showDirectoryPicker, OPFS): the parts used, so tests can pass fakes

export interface FileHandleLike {
  readonly kind: 'file';
  readonly name: string;
  getFile(): Promise<File>;
  createWritable(): Promise<WritableStream<Uint8Array>>;
}

export interface DirHandleLike {
  readonly kind: 'directory';
  readonly name: string;
  values(): AsyncIterable<FileHandleLike | DirHandleLike>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileHandleLike>;
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<DirHandleLike>;
  removeEntry(name: string, options?: { recursive?: boolean }): Promise<void>;
}

/** A real handle as the parts used here (values() is missing from TypeScript's DOM lib). */
export const asDirHandle = (h: FileSystemDirectoryHandle): DirHandleLike => h as unknown as DirHandleLike;

/** A missing entry, or one of the other kind. */
const isNotFound = (e: unknown): boolean =>
  typeof e === 'object' && e !== null && ['NotFoundError', 'TypeMismatchError'].includes((e as { name?: string }).name ?? '');

/** The files directly in a directory handle (a picked folder: subfolders are not read). */
export function directoryFolder(dir: DirHandleLike, name = dir.name): BlobFolder {
  const blob = async (file: string): Promise<Blob> => {
    try {
      return await (await dir.getFileHandle(file)).getFile();
    } catch (e) {
      throw new Error(isNotFound(e) ? `${name}: no file ${file}` : `${name}/${file}: cannot be read (${errorText(e)})`, { cause: e });
    }
  };
  return {
    name,
    async files() {
      const out: string[] = [];
      for await (const h of dir.values()) if (h.kind === 'file') out.push(h.name);
      return out;
    },
    blob,
    read: async (file) => bytesOf(await blob(file)),
  };
}

// ---------------------------------------------------------------------------------------------
// drops

/** The parts of FileSystemEntry a drop's reading uses (lib.dom's, or a test's fake). */
export interface EntryLike {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly name: string;
  file?(ok: (f: File) => void, fail?: (e: unknown) => void): void;
  createReader?(): { readEntries(ok: (entries: EntryLike[]) => void, fail?: (e: unknown) => void): void };
}

const fileOf = (e: EntryLike): Promise<File> => new Promise((ok, fail) => e.file!(ok, fail));

/** Every entry of a directory (readEntries gives them in batches until an empty one). */
async function entriesOf(dir: EntryLike): Promise<EntryLike[]> {
  const reader = dir.createReader!();
  const out: EntryLike[] = [];
  for (;;) {
    const batch = await new Promise<EntryLike[]>((ok, fail) => reader.readEntries(ok, fail));
    if (!batch.length) return out;
    out.push(...batch);
  }
}

/** What was dropped, as picked files: one folder (its own files), or loose files. */
export async function filesOfEntries(entries: readonly EntryLike[]): Promise<PickedFiles> {
  const dirs = entries.filter((e) => e.isDirectory);
  if (dirs.length > 1 || (dirs.length === 1 && entries.length > 1)) {
    throw new Error(`drop one model folder (or the files of one), not ${entries.length} items with ${dirs.length} folders among them`);
  }
  if (dirs.length === 1) {
    const files = (await entriesOf(dirs[0]!)).filter((e) => e.isFile);
    return { name: dirs[0]!.name, files: await Promise.all(files.map(fileOf)) };
  }
  return { name: null, files: await Promise.all(entries.filter((e) => e.isFile).map(fileOf)) };
}

/**
 * The files of a drop. Call it in the drop handler itself: the items' entries are taken before
 * the first await (the DataTransfer is emptied once the event is over).
 */
export function droppedFiles(dt: DataTransfer): Promise<PickedFiles> {
  const items = Array.from(dt.items).filter((i) => i.kind === 'file');
  const entries = items.map((i) => (typeof i.webkitGetAsEntry === 'function' ? i.webkitGetAsEntry() : null));
  if (entries.length && entries.every((e) => e !== null)) return filesOfEntries(entries as unknown as EntryLike[]);
  return Promise.resolve({ name: null, files: Array.from(dt.files) });
}

// ---------------------------------------------------------------------------------------------
// the stored copies

/** Where the copies are: OPFS `hf-models/`, else the IndexedDB database below (Blobs). */
export const HF_MODELS_LAYOUT: AreaLayout = {
  opfs: ['hf-models'],
  indexedDb: { database: 'coderl-hf-models', store: 'files', meta: 'meta', blobs: true },
};

/** Written last into a model's folder: the copy is complete exactly when it is there. */
export const MANIFEST_FILE = 'manifest.json';

/** What the app shows of a stored model without reading its weights (from the load that checked it). */
export interface HfModelSummary {
  /** describeHfModel's line, e.g. "Qwen2ForCausalLM: 2 layers, ... (38.9k parameters, F16)" */
  description: string;
  /** config.json architectures[0] */
  architecture: string;
  parameters: number;
  /** the stored dtypes of the weights */
  dtypes: string[];
  /** tokenizer_config.json has a chat_template */
  chatTemplate: boolean;
  /** the model's vocabulary (config.json vocab_size) and the tokenizer's */
  vocabSize: number;
  tokenizerVocab: number;
  /** positions the model was trained for */
  maxPositions: number;
  eosIds: number[];
  /** what config.rl.reference records when a run uses it as its KL reference (rl/reference.ts hfReferenceRef) */
  ref: { name: string; sha256: string };
}

/**
 * The summary of a loaded model; `description` is load.ts describeHfModel(m), passed in so that
 * this module does not load the loader (the page imports it for pickedFiles and droppedFiles).
 */
export function summarizeHfModel(m: HfModel, ref: { name: string; sha256: string }, description: string): HfModelSummary {
  return {
    description,
    architecture: m.arch.hfArchitecture,
    parameters: m.parameters,
    dtypes: [...m.dtypes],
    chatTemplate: m.chatTemplate !== null,
    vocabSize: m.arch.vocabSize,
    tokenizerVocab: m.tokenizer.vocabSize,
    maxPositions: m.arch.maxPositions,
    eosIds: [...m.eosIds],
    ref,
  };
}

export interface HfManifest {
  format: 'coderl-hf-model';
  version: 1;
  /** the folder's name as the user had it (the id is this name made unique) */
  name: string;
  /** ms since the epoch */
  savedAt: number;
  /** every copied file and its size, in the order copied (manifest.json itself excluded) */
  files: { name: string; bytes: number }[];
  summary: HfModelSummary;
}

/** A stored model: complete (its manifest read) or a copy that did not finish (or is unreadable). */
export type StoredHfModel =
  /** bytes: the size of its files, the manifest left out */
  { id: string; complete: true; manifest: HfManifest; bytes: number } | { id: string; complete: false; problem: string; bytes: number };

/** The storage primitives of the model store: one folder per model id. */
export interface ModelDirs {
  readonly kind: StorageKind;
  ids(): Promise<string[]>;
  /** the files of a model's folder with their sizes ([] when there is none) */
  list(id: string): Promise<{ name: string; bytes: number }[]>;
  /** a stored file, or null */
  blob(id: string, file: string): Promise<Blob | null>;
  /** writes a file (replacing it only once all of it is written); `onBytes` hears of each chunk's size */
  write(id: string, file: string, data: Blob, onBytes?: (n: number) => void): Promise<void>;
  /** deletes a model's folder; false when there was none */
  remove(id: string): Promise<boolean>;
}

/** A stream that passes its chunks on, telling `on` of each one's size. */
const counting = (on: (n: number) => void) =>
  new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, ctl) {
      on(chunk.byteLength);
      ctl.enqueue(chunk);
    },
  });

/** Model folders under `root`/hf-models in OPFS (or any directory handle: tests pass fakes). */
export function opfsModelDirs(root: DirHandleLike, base = HF_MODELS_LAYOUT.opfs[0]!): ModelDirs {
  const top = async (create: boolean): Promise<DirHandleLike | null> => {
    try {
      return await root.getDirectoryHandle(base, { create });
    } catch (e) {
      if (!create && isNotFound(e)) return null;
      throw e;
    }
  };
  const dirOf = async (id: string, create: boolean): Promise<DirHandleLike | null> => {
    const t = await top(create);
    if (!t) return null;
    try {
      return await t.getDirectoryHandle(id, { create });
    } catch (e) {
      if (!create && isNotFound(e)) return null;
      throw e;
    }
  };
  return {
    kind: 'opfs',
    async ids() {
      const t = await top(false);
      const out: string[] = [];
      if (t) for await (const h of t.values()) if (h.kind === 'directory') out.push(h.name);
      return out.sort();
    },
    async list(id) {
      const d = await dirOf(id, false);
      const out: { name: string; bytes: number }[] = [];
      if (d) for await (const h of d.values()) if (h.kind === 'file') out.push({ name: h.name, bytes: (await h.getFile()).size });
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async blob(id, file) {
      const d = await dirOf(id, false);
      if (!d) return null;
      try {
        return await (await d.getFileHandle(file)).getFile();
      } catch (e) {
        if (isNotFound(e)) return null;
        throw e;
      }
    },
    async write(id, file, data, onBytes) {
      const d = (await dirOf(id, true))!;
      const w = await (await d.getFileHandle(file, { create: true })).createWritable();
      // pipeTo closes the writable (the file is replaced then) or aborts it on a failure (the old file stays)
      const stream = data.stream() as ReadableStream<Uint8Array>;
      await (onBytes ? stream.pipeThrough(counting(onBytes)) : stream).pipeTo(w);
    },
    async remove(id) {
      const t = await top(false);
      if (!t) return false;
      try {
        await t.removeEntry(id, { recursive: true });
        return true;
      } catch (e) {
        if (isNotFound(e)) return false;
        throw e;
      }
    },
  };
}

/** Model folders in a storage/browser.ts file area (the IndexedDB fallback): one file in memory at a time. */
export function areaModelDirs(area: FileArea): ModelDirs {
  return {
    kind: area.kind,
    ids: () => area.folders(),
    list: async (id) => (await area.folder(id).list()).map((f) => ({ name: f.name, bytes: f.byteLength })),
    async blob(id, file) {
      const b = await area.folder(id).read(file);
      return b && new Blob([b as Uint8Array<ArrayBuffer>]);
    },
    async write(id, file, data, onBytes) {
      await area.folder(id).write(file, await bytesOf(data));
      onBytes?.(data.size);
    },
    remove: (id) => area.deleteFolder(id),
  };
}

/** A folder name made of the characters every storage takes: letters, digits, ".", "_", "-" (at most 100). */
export function modelId(name: string): string {
  const s = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[.-]+/, '')
    .slice(0, 100);
  return s || 'model';
}

const isManifest = (v: unknown): v is HfManifest => {
  const m = v as Partial<HfManifest> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    m.format === 'coderl-hf-model' &&
    m.version === 1 &&
    typeof m.name === 'string' &&
    Array.isArray(m.files) &&
    m.files.every((f) => typeof f?.name === 'string' && Number.isSafeInteger(f?.bytes)) &&
    typeof m.summary?.ref?.sha256 === 'string'
  );
};

/** How a copy is going: bytes of the model files written so far, of all of them. */
export interface CopyProgress {
  file: string;
  files: number;
  filesDone: number;
  bytes: number;
  bytesDone: number;
}

export class HfModelStore {
  constructor(readonly dirs: ModelDirs) {}

  get kind(): StorageKind {
    return this.dirs.kind;
  }

  /** Every stored model, complete ones and copies that did not finish, sorted by id. */
  async list(): Promise<StoredHfModel[]> {
    const out: StoredHfModel[] = [];
    for (const id of await this.dirs.ids()) {
      const files = await this.dirs.list(id);
      const bytes = files.reduce((s, f) => s + (f.name === MANIFEST_FILE ? 0 : f.bytes), 0);
      try {
        out.push({ id, complete: true, manifest: await this.manifest(id), bytes });
      } catch (e) {
        out.push({ id, complete: false, problem: errorText(e), bytes });
      }
    }
    return out;
  }

  /** The manifest of a complete copy; throws saying what is wrong with any other. */
  async manifest(id: string): Promise<HfManifest> {
    const b = await this.dirs.blob(id, MANIFEST_FILE);
    if (!b && !(await this.dirs.list(id)).length) throw new Error(`no model ${id} is stored in this browser; import its folder again`);
    if (!b)
      throw new Error(`${id}: an import that did not finish (no ${MANIFEST_FILE} in its copy); delete it and import the folder again`);
    let m: unknown;
    try {
      m = JSON.parse(await b.text());
    } catch (e) {
      throw new Error(`${id}/${MANIFEST_FILE}: not JSON (${errorText(e)}); delete it and import the folder again`, { cause: e });
    }
    if (!isManifest(m)) throw new Error(`${id}/${MANIFEST_FILE}: not a model manifest of this app; delete it and import the folder again`);
    return m;
  }

  /** A complete copy as a folder (named as the user's folder was); a file of another size than the manifest's is refused. */
  async open(id: string): Promise<BlobFolder> {
    const m = await this.manifest(id);
    const sizes = new Map(m.files.map((f) => [f.name, f.bytes]));
    const blob = async (file: string): Promise<Blob> => {
      const want = sizes.get(file);
      const b = want === undefined ? null : await this.dirs.blob(id, file);
      if (!b) throw new Error(`${m.name}: no file ${file} in its stored copy (${STORAGE_NAME[this.kind]} hf-models/${id})`);
      if (b.size !== want)
        throw new Error(
          `${m.name}/${file}: the stored copy has ${b.size} bytes, its manifest says ${want} (the copy is damaged); delete it and import the folder again`,
        );
      return b;
    };
    return { name: m.name, files: async () => [...sizes.keys()], blob, read: async (file) => bytesOf(await blob(file)) };
  }

  /**
   * Copies the model files of `source` (isModelFile; the loader has checked them) into a new
   * folder, streamed, then writes the manifest. The id is the name made unique: nothing stored is
   * replaced. A copy that fails is removed (and, if even that fails, stays without a manifest).
   */
  async save(
    source: BlobFolder,
    o: { name: string; summary: HfModelSummary; onProgress?: (p: CopyProgress) => void; now?: number },
  ): Promise<StoredHfModel & { complete: true }> {
    const taken = new Set(await this.dirs.ids());
    const base = modelId(o.name);
    let id = base;
    for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
    const names = (await source.files()).filter(isModelFile).sort();
    const blobs = await Promise.all(names.map((n) => source.blob(n)));
    const p: CopyProgress = { file: '', files: names.length, filesDone: 0, bytes: blobs.reduce((s, b) => s + b.size, 0), bytesDone: 0 };
    const files: HfManifest['files'] = [];
    try {
      for (const [i, name] of names.entries()) {
        p.file = name;
        o.onProgress?.({ ...p });
        await this.dirs.write(id, name, blobs[i]!, (n) => {
          p.bytesDone += n;
          o.onProgress?.({ ...p });
        });
        files.push({ name, bytes: blobs[i]!.size });
        p.filesDone++;
      }
      const manifest: HfManifest = {
        format: 'coderl-hf-model',
        version: 1,
        name: o.name,
        savedAt: o.now ?? Date.now(),
        files,
        summary: o.summary,
      };
      await this.dirs.write(id, MANIFEST_FILE, new Blob([JSON.stringify(manifest, null, 2)]));
      o.onProgress?.({ ...p, file: '' });
      return { id, complete: true, manifest, bytes: p.bytes };
    } catch (e) {
      await this.dirs.remove(id).catch(() => false);
      throw new Error(
        `could not copy ${o.name}/${p.file} into this browser's storage (${STORAGE_NAME[this.kind]}): ${errorText(e)}; nothing was kept`,
        { cause: e },
      );
    }
  }

  /** Deletes a stored model (or a copy that did not finish); false when there was none. */
  remove(id: string): Promise<boolean> {
    return this.dirs.remove(id);
  }
}

/** The model store of this page or worker: OPFS when storage/browser.ts chose it, else IndexedDB. */
export async function hfModelStore(): Promise<HfModelStore> {
  const area = await fileArea(HF_MODELS_LAYOUT);
  if (area.kind === 'opfs') return new HfModelStore(opfsModelDirs(asDirHandle(await navigator.storage.getDirectory())));
  return new HfModelStore(areaModelDirs(area));
}
