/**
 * The suites a request can name: the built-in ones (read once from data/benchmarks/, kept), the
 * server's --suite when it is a file (read at start, pinned: never evicted, named by its path),
 * and suites uploaded with POST /v1/suites, kept by the SHA-256 of the bytes uploaded in a
 * bounded LRU. The server is otherwise stateless: a replica that lacks a hash answers 404 naming
 * it, and the client uploads the same bytes again (it knows the hash without asking: sha256 of
 * its body).
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { benchmarkPath } from '../tasks/benchmarks';
import { BUILTIN_SUITES, builtinSuite } from '../tasks/builtin-suites';
import { bytesToText } from '../tasks/bytes';
import { parseSuite } from '../tasks/suite';
import type { Task } from '../tasks/types';
import { fieldError, HttpError } from './config';
import { taskFrom } from './validate';

export interface LoadedSuite {
  /** how messages name it: the built-in name or the hash */
  label: string;
  tasks: Task[];
  byId: Map<string, Task>;
}

function loaded(label: string, tasks: Task[]): LoadedSuite {
  return { label, tasks, byId: new Map(tasks.map((t) => [t.task_id, t])) };
}

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** An upload's tasks: a JSON array of tasks, or JSONL (plain or gzipped); any bad line refuses the whole upload. */
export async function parseUpload(bytes: Uint8Array): Promise<Task[]> {
  const text = await bytesToText(bytes);
  if (text.trimStart().startsWith('[')) {
    let list: unknown;
    try {
      list = JSON.parse(text);
    } catch (e) {
      throw new HttpError(400, `body: not a valid JSON array (${(e as Error).message})`, 'body');
    }
    if (!Array.isArray(list)) throw fieldError('body', 'a JSON body must be an array of tasks');
    const tasks = list.map((t, i) => taskFrom(t, `[${i}]`));
    const dup = tasks.findIndex((t, i) => tasks.findIndex((u) => u.task_id === t.task_id) !== i);
    if (dup >= 0) throw fieldError(`[${dup}].task_id`, `duplicate task_id '${tasks[dup]!.task_id}'`);
    return tasks;
  }
  const { items, issues } = parseSuite(text, 'body');
  if (issues[0]) throw fieldError(`line ${issues[0].line}`, issues[0].message);
  return items;
}

/** The server's --suite could not be used (an unknown name, an unreadable file, a bad line): the CLI exits 2 with this message. */
export class DefaultSuiteError extends Error {
  override readonly name = 'DefaultSuiteError';
}

const HASH = /^[0-9a-f]{64}$/;
const builtinNames = (): string => BUILTIN_SUITES.map((s) => s.name).join(', ');

export class SuiteStore {
  private readonly builtins = new Map<string, Promise<LoadedSuite>>();
  /** suite files the server loaded at start, by the path as given; never evicted */
  private readonly pinned = new Map<string, LoadedSuite>();
  /** insertion order is recency: a hit moves its entry to the end */
  private readonly uploaded = new Map<string, LoadedSuite>();

  constructor(private readonly capacity: number) {}

  /** Stores an upload; returns its hash and task count. */
  async upload(bytes: Uint8Array): Promise<{ suite_hash: string; tasks: number; task_ids: string[] }> {
    const tasks = await parseUpload(bytes);
    if (!tasks.length) throw fieldError('body', 'the suite holds no task');
    const hash = sha256(bytes);
    this.uploaded.delete(hash);
    this.uploaded.set(hash, loaded(hash, tasks));
    while (this.uploaded.size > this.capacity) this.uploaded.delete(this.uploaded.keys().next().value!);
    return { suite_hash: hash, tasks: tasks.length, task_ids: tasks.map((t) => t.task_id) };
  }

  /** An uploaded suite, or 404 naming the hash (`field` says where the request gave it). */
  byHash(hash: string, field: string): LoadedSuite {
    const s = this.uploaded.get(hash);
    if (!s) throw new HttpError(404, `${field}: suite ${hash} is not on this server (upload it with POST /v1/suites, then retry)`, field);
    this.uploaded.delete(hash);
    this.uploaded.set(hash, s);
    return s;
  }

  /**
   * Loads the server's --suite, before it listens: a built-in name stays the built-in; otherwise a
   * path that exists is read (JSONL, plain or gzipped, or a JSON array: any shape parseUpload
   * reads), refused whole on a bad line, and pinned under the path as given; otherwise 64 hex
   * digits are the hash of a suite uploaded later (undefined here); anything else is refused
   * listing the built-in names. Errors are DefaultSuiteError naming the argument (and the line).
   */
  async loadDefault(arg: string): Promise<LoadedSuite | undefined> {
    if (builtinSuite(arg)) {
      try {
        return await this.byName(arg, '--suite');
      } catch (e) {
        throw new DefaultSuiteError(`--suite ${arg}: cannot read the built-in suite: ${(e as Error).message}`);
      }
    }
    const file = await stat(arg).catch(() => undefined);
    if (file) {
      let tasks: Task[];
      try {
        tasks = await parseUpload(new Uint8Array(await readFile(arg)));
      } catch (e) {
        throw new DefaultSuiteError(`--suite ${arg}: ${(e as Error).message.replace(/^body: /, '')}`);
      }
      if (!tasks.length) throw new DefaultSuiteError(`--suite ${arg}: the file holds no task`);
      const s = loaded(arg, tasks);
      this.pinned.set(arg, s);
      return s;
    }
    if (HASH.test(arg.toLowerCase())) return undefined;
    throw new DefaultSuiteError(
      `--suite ${arg}: not a built-in suite (built-in: ${builtinNames()}), a file, or the 64 hex digits of an uploaded suite's hash`,
    );
  }

  /** A built-in suite by name (read once) or a suite file the server loaded at start (by its path); else 400 listing the names. */
  async byName(name: string, field: string): Promise<LoadedSuite> {
    const b = builtinSuite(name);
    if (!b) {
      const file = this.pinned.get(name);
      if (file) return file;
      const files = [...this.pinned.keys()];
      throw fieldError(
        field,
        `'${name}' is not a built-in suite (built-in: ${builtinNames()}${files.length ? `; loaded at start: ${files.join(', ')}` : ''})`,
      );
    }
    let s = this.builtins.get(name);
    if (!s) {
      s = readFile(benchmarkPath(b.file)).then(async (bytes) => loaded(name, parseSuite(await bytesToText(bytes), b.file).items));
      this.builtins.set(name, s);
      s.catch(() => this.builtins.delete(name));
    }
    return s;
  }

  /** A built-in name, a suite file loaded at start (by its path), or an uploaded hash, in that order. */
  async resolve(nameOrHash: string, field: string): Promise<LoadedSuite> {
    if (builtinSuite(nameOrHash) || this.pinned.has(nameOrHash)) return this.byName(nameOrHash, field);
    const hash = nameOrHash.toLowerCase();
    return HASH.test(hash) ? this.byHash(hash, field) : this.byName(nameOrHash, field);
  }

  get size(): number {
    return this.uploaded.size;
  }
}
