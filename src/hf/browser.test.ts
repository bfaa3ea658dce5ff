/**
 * The browser's model folders (browser.ts) in Node, on fakes of what the browser gives: Files with
 * a webkitRelativePath (a directory input), FileSystemEntry-like drop entries, and an in-memory
 * OPFS of directory and file handles whose writables collect the streamed chunks. The copy is
 * checked with the loader itself on data/hf-fixtures/qwen2.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { FileArea } from '../storage/browser';
import {
  areaModelDirs,
  directoryFolder,
  filesFolder,
  filesOfEntries,
  HfModelStore,
  MANIFEST_FILE,
  modelId,
  opfsModelDirs,
  pickedFiles,
  summarizeHfModel,
  type CopyProgress,
  type DirHandleLike,
  type EntryLike,
  type FileHandleLike,
} from './browser';
import { isModelFile } from './folder';
import { describeHfModel, loadHfFolder } from './load';

const FIXTURE = join(import.meta.dirname, '../../data/hf-fixtures/qwen2');
const fixtureNames = readdirSync(FIXTURE).sort();

/** A File as a directory input gives it: `webkitRelativePath` is `<picked>/<path>`. */
function file(path: string, data: Uint8Array | string = path): File {
  const f = new File([data as BlobPart], path.split('/').pop()!);
  if (path.includes('/')) Object.defineProperty(f, 'webkitRelativePath', { value: path });
  return f;
}
const fixtureFiles = (prefix = 'qwen2/'): File[] => fixtureNames.map((n) => file(prefix + n, readFileSync(join(FIXTURE, n))));

const notFound = (what: string) => Object.assign(new Error(`${what} not found`), { name: 'NotFoundError' });

/** An in-memory directory handle; `failWrite` makes the writable of a file of that name fail mid-way. */
class FakeDir implements DirHandleLike {
  readonly kind = 'directory';
  readonly entries = new Map<string, FakeDir | FakeFile>();
  constructor(
    readonly name: string,
    readonly failWrite?: string,
  ) {}
  async *values() {
    yield* this.entries.values();
  }
  async getFileHandle(name: string, o?: { create?: boolean }): Promise<FileHandleLike> {
    const e = this.entries.get(name);
    if (e instanceof FakeFile) return e;
    if (e || !o?.create) throw notFound(name);
    const f = new FakeFile(name, this.failWrite === name);
    this.entries.set(name, f);
    return f;
  }
  async getDirectoryHandle(name: string, o?: { create?: boolean }): Promise<DirHandleLike> {
    const e = this.entries.get(name);
    if (e instanceof FakeDir) return e;
    if (e || !o?.create) throw notFound(name);
    const d = new FakeDir(name, this.failWrite);
    this.entries.set(name, d);
    return d;
  }
  async removeEntry(name: string) {
    if (!this.entries.delete(name)) throw notFound(name);
  }
}

class FakeFile implements FileHandleLike {
  readonly kind = 'file';
  data = new Uint8Array();
  /** sizes of the chunks the last write received */
  chunks: number[] = [];
  constructor(
    readonly name: string,
    readonly fail = false,
  ) {}
  async getFile() {
    return new File([this.data as BlobPart], this.name);
  }
  async createWritable() {
    const parts: Uint8Array[] = [];
    return new WritableStream<Uint8Array>({
      write: (c) => {
        if (this.fail) throw new Error('QuotaExceededError: the disk is full');
        parts.push(c);
      },
      close: () => {
        // like OPFS: the file changes only when the writable closes
        this.chunks = parts.map((p) => p.byteLength);
        this.data = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
        let o = 0;
        for (const p of parts) this.data.set(p, (o += p.byteLength) - p.byteLength);
      },
    });
  }
}

/** A Blob that can only be streamed: a copy that read it whole into memory would throw. */
class StreamOnly extends Blob {
  override arrayBuffer(): Promise<ArrayBuffer> {
    throw new Error('read whole');
  }
}

async function storeWithQwen2(root = new FakeDir('')) {
  const store = new HfModelStore(opfsModelDirs(root));
  const src = filesFolder('qwen2', pickedFiles(fixtureFiles()).files);
  const m = await loadHfFolder(src);
  const summary = summarizeHfModel(m, { name: 'qwen2/', sha256: 'a'.repeat(64) }, describeHfModel(m));
  return { store, src, m, summary, root };
}

describe('picked and dropped files', () => {
  test("a directory input: the picked folder's own files, named after it; a parent of one model folder picks that one", () => {
    const got = pickedFiles([...fixtureFiles(), file('qwen2/onnx/model.onnx')]);
    expect(got.name).toBe('qwen2');
    expect(got.files.map((f) => f.name).sort()).toEqual(fixtureNames);
    const parent = pickedFiles([file('models/README.md'), ...fixtureFiles('models/qwen2/')]);
    expect(parent.name).toBe('qwen2');
    expect(parent.files).toHaveLength(fixtureNames.length);
    expect(pickedFiles([file('a.json'), file('config.json')])).toEqual({ name: null, files: expect.any(Array) });
    expect(pickedFiles([])).toEqual({ name: null, files: [] });
  });

  test('filesFolder reads lazily and refuses two files of one name', async () => {
    const f = filesFolder('qwen2', pickedFiles(fixtureFiles()).files);
    expect((await f.files()).sort()).toEqual(fixtureNames);
    expect(await f.read('config.json')).toEqual(new Uint8Array(readFileSync(join(FIXTURE, 'config.json'))));
    await expect(f.read('nope.json')).rejects.toThrow('qwen2: no file nope.json');
    expect(() => filesFolder('x', [file('a/config.json'), file('b/config.json')])).toThrow(
      'x: two of the files given are named config.json; give the files of one model folder',
    );
  });

  test('a drop: one folder (its own files), loose files, and more than one folder refused', async () => {
    const fileEntry = (f: File): EntryLike => ({ isFile: true, isDirectory: false, name: f.name, file: (ok) => ok(f) });
    const dirEntry = (name: string, kids: EntryLike[]): EntryLike => {
      const batches = [kids.slice(0, 3), kids.slice(3), []];
      return { isFile: false, isDirectory: true, name, createReader: () => ({ readEntries: (ok) => ok(batches.shift() ?? []) }) };
    };
    const kids = [...fixtureFiles().map(fileEntry), dirEntry('onnx', [])];
    const folder = await filesOfEntries([dirEntry('qwen2', kids)]);
    expect(folder.name).toBe('qwen2');
    expect(folder.files.map((f) => f.name).sort()).toEqual(fixtureNames); // every batch read, subfolders left out
    const loose = await filesOfEntries(fixtureFiles().map(fileEntry));
    expect(loose.name).toBeNull();
    expect(loose.files).toHaveLength(fixtureNames.length);
    await expect(filesOfEntries([dirEntry('a', []), dirEntry('b', [])])).rejects.toThrow(
      'drop one model folder (or the files of one), not 2 items with 2 folders among them',
    );
  });

  test('a directory handle (showDirectoryPicker) as a folder', async () => {
    const dir = new FakeDir('qwen2');
    for (const n of fixtureNames) ((await dir.getFileHandle(n, { create: true })) as FakeFile).data = readFileSync(join(FIXTURE, n));
    await dir.getDirectoryHandle('sub', { create: true });
    const f = directoryFolder(dir);
    expect((await f.files()).sort()).toEqual(fixtureNames);
    expect((await loadHfFolder(f)).arch.hfArchitecture).toBe('Qwen2ForCausalLM');
    await expect(f.read('nope')).rejects.toThrow('qwen2: no file nope');
  });
});

describe('HfModelStore on an in-memory OPFS', () => {
  test('a copy holds the model files only, streamed, then the manifest; it loads back as the same model', async () => {
    const { store, src, m, summary, root } = await storeWithQwen2();
    const seen: CopyProgress[] = [];
    const saved = await store.save(src, { name: 'qwen2', summary, onProgress: (p) => seen.push(p), now: 5 });
    const copied = fixtureNames.filter(isModelFile);
    expect(copied).not.toContain('expected.json');
    expect(saved.id).toBe('qwen2');
    expect(saved.manifest.files.map((f) => f.name)).toEqual(copied);
    const dir = (await (await root.getDirectoryHandle('hf-models')).getDirectoryHandle('qwen2')) as FakeDir;
    expect([...dir.entries.keys()]).toEqual([...copied, MANIFEST_FILE]); // the manifest last
    expect(seen.at(-1)).toMatchObject({ filesDone: copied.length, bytesDone: saved.bytes, bytes: saved.bytes });

    const list = await store.list();
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ id: 'qwen2', complete: true, manifest: { name: 'qwen2', savedAt: 5, summary } });
    const back = await loadHfFolder(await store.open('qwen2'));
    expect(back.parameters).toBe(m.parameters);
    expect(back.weights.get('lm_head.weight')).toEqual(m.weights.get('lm_head.weight'));
    expect(summary).toMatchObject({ architecture: 'Qwen2ForCausalLM', chatTemplate: true, vocabSize: 512, tokenizerVocab: 459 });
    expect(summary.description).toMatch(/^Qwen2ForCausalLM: 2 layers.*F16\)$/);
  });

  test('a big file is streamed in chunks, never read whole', async () => {
    const root = new FakeDir('');
    const store = new HfModelStore(opfsModelDirs(root));
    const big = new StreamOnly(Array.from({ length: 48 }, () => new Uint8Array(1 << 16)));
    const src = { ...filesFolder('m', []), files: async () => ['model.safetensors'], blob: async () => big };
    const { summary } = await storeWithQwen2();
    await store.save(src, { name: 'm', summary });
    const f = (await (
      await (await root.getDirectoryHandle('hf-models')).getDirectoryHandle('m')
    ).getFileHandle('model.safetensors')) as FakeFile;
    expect(f.data.byteLength).toBe(3 << 20);
    expect(f.chunks.length).toBeGreaterThan(1);
  });

  test('a second import of a name gets a new id; nothing stored is replaced', async () => {
    const { store, src, summary } = await storeWithQwen2();
    await store.save(src, { name: 'qwen2', summary });
    const again = await store.save(src, { name: 'qwen2', summary });
    expect(again.id).toBe('qwen2-2');
    expect((await store.list()).map((x) => x.id)).toEqual(['qwen2', 'qwen2-2']);
    expect(modelId('Qwen/Qwen2.5 0.5B')).toBe('Qwen-Qwen2.5-0.5B');
    expect(modelId('..')).toBe('model');
  });

  test('a copy that fails is removed and named in the error; one without a manifest is listed as unfinished', async () => {
    const root = new FakeDir('', 'model-00002-of-00002.safetensors');
    const { store, src, summary } = await storeWithQwen2(root);
    await expect(store.save(src, { name: 'qwen2', summary })).rejects.toThrow(
      /^could not copy qwen2\/model-00002-of-00002\.safetensors into this browser's storage \(OPFS\): QuotaExceededError: the disk is full; nothing was kept$/,
    );
    expect(await store.list()).toEqual([]);

    // a copy stopped before its manifest (the tab closed): listed, never opened
    const dirs = opfsModelDirs(root);
    await dirs.write('half', 'config.json', new Blob(['{}']));
    const [half] = await store.list();
    expect(half).toEqual({
      id: 'half',
      complete: false,
      bytes: 2,
      problem: 'half: an import that did not finish (no manifest.json in its copy); delete it and import the folder again',
    });
    await expect(store.open('half')).rejects.toThrow(/did not finish/);
    expect(await store.remove('half')).toBe(true);
    expect(await store.remove('half')).toBe(false);
    await expect(store.open('half')).rejects.toThrow('no model half is stored in this browser; import its folder again');
  });

  test('a stored file of another size than the manifest says is refused', async () => {
    const { store, src, summary } = await storeWithQwen2();
    await store.save(src, { name: 'qwen2', summary });
    await store.dirs.write('qwen2', 'tokenizer.json', new Blob(['{}']));
    const f = await store.open('qwen2');
    await expect(f.read('tokenizer.json')).rejects.toThrow(
      /^qwen2\/tokenizer\.json: the stored copy has 2 bytes, its manifest says \d+ \(the copy is damaged\)/,
    );
    await store.dirs.write('qwen2', MANIFEST_FILE, new Blob(['{"format":"x"}']));
    expect((await store.list())[0]).toMatchObject({
      complete: false,
      problem: 'qwen2/manifest.json: not a model manifest of this app; delete it and import the folder again',
    });
  });
});

describe('HfModelStore on a file area (the IndexedDB fallback)', () => {
  test('save, list, open and remove through FileArea calls', async () => {
    const files = new Map<string, Uint8Array>();
    const area = (prefix: string): FileArea =>
      ({
        kind: 'indexeddb',
        read: async (p: string) => files.get(prefix + p) ?? null,
        write: async (p: string, d: Uint8Array) => void files.set(prefix + p, d.slice()),
        list: async () =>
          [...files]
            .filter(([k]) => k.startsWith(prefix))
            .map(([k, v]) => ({ name: k.slice(prefix.length), byteLength: v.byteLength, savedAt: null })),
        folder: (n: string) => area(`${prefix}${n}/`),
        folders: async () => [...new Set([...files.keys()].map((k) => k.split('/')[0]!))].sort(),
        deleteFolder: async (n: string) => {
          const ks = [...files.keys()].filter((k) => k.startsWith(`${n}/`));
          ks.forEach((k) => files.delete(k));
          return ks.length > 0;
        },
      }) as unknown as FileArea;
    const store = new HfModelStore(areaModelDirs(area('')));
    const { src, summary, m } = await storeWithQwen2();
    const saved = await store.save(src, { name: 'qwen2', summary });
    expect(files.has(`qwen2/${MANIFEST_FILE}`)).toBe(true);
    expect((await store.list())[0]).toMatchObject({ id: 'qwen2', complete: true, bytes: saved.bytes });
    expect((await loadHfFolder(await store.open('qwen2'))).parameters).toBe(m.parameters);
    expect(await store.remove('qwen2')).toBe(true);
    expect(await store.list()).toEqual([]);
  });
});
