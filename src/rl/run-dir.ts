import { errorText } from '../util/errors';
/**
 * Where a run keeps its files: a directory on disk for the CLI (run-dir-node.ts), OPFS or
 * IndexedDB in the browser. Names are relative paths with `/` separators.
 */
export interface RunDir {
  read(name: string): Promise<Uint8Array | null>;
  write(name: string, data: Uint8Array | string): Promise<void>;
  append(name: string, text: string): Promise<void>;
}

export async function readText(store: RunDir, name: string): Promise<string | null> {
  const b = await store.read(name);
  return b === null ? null : new TextDecoder().decode(b);
}

export async function readJson<T>(store: RunDir, name: string): Promise<T | null> {
  const t = await readText(store, name);
  if (t === null) return null;
  try {
    return JSON.parse(t) as T;
  } catch (e) {
    throw new Error(`${name}: not valid JSON (${errorText(e)}); remove it to redo its stage`, { cause: e });
  }
}

export function writeJson(store: RunDir, name: string, value: unknown): Promise<void> {
  return store.write(name, `${JSON.stringify(value, null, 2)}\n`);
}

/** An in-memory store (tests, and the app before a run is saved). */
export class MemoryRunDir implements RunDir {
  readonly files = new Map<string, Uint8Array>();

  async read(name: string) {
    return this.files.get(name) ?? null;
  }

  async write(name: string, data: Uint8Array | string) {
    this.files.set(name, typeof data === 'string' ? new TextEncoder().encode(data) : data.slice());
  }

  async append(name: string, text: string) {
    const old = this.files.get(name) ?? new Uint8Array();
    const add = new TextEncoder().encode(text);
    const out = new Uint8Array(old.length + add.length);
    out.set(old);
    out.set(add, old.length);
    this.files.set(name, out);
  }
}
