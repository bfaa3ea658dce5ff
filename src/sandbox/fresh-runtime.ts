/**
 * A fresh runtime for every run of an Emscripten-compiled interpreter (Pyodide), without paying
 * for a new one: the state a program could leave for the next one is taken once, after the
 * interpreter is ready and before any untrusted code runs, and put back after every run.
 *
 * Where an Emscripten program's state lives, and how each part is put back:
 * - **WebAssembly memory** (the whole interpreter: modules, classes, caches, random and decimal
 *   state, environment variables, the allocator itself): the baseline's bytes are copied back over
 *   the memory (about 2 ms for Pyodide's 31 MB). Memory grown during the run stays allocated but
 *   is unused: the allocator's own state, restored with the rest, does not know it.
 * - **The file system** (MEMFS, JavaScript objects): every file, directory, link and device node
 *   the program created is removed; every baseline entry it removed, replaced, rewrote, truncated
 *   or chmod-ed is put back with its bytes, mode and times; the working directory is reset.
 * - **Open file descriptors** (JavaScript objects: files, pipes, sockets): every descriptor not open
 *   in the baseline is closed.
 * During a run the files may grow by a bounded number of bytes (startRun), since they live in
 * JavaScript memory that no WebAssembly limit covers.
 * Nothing else of the runtime is reachable from the program: python.ts removes every way from
 * Python to JavaScript, so a JavaScript object the program could change is one of the above.
 *
 * The baseline must be taken with no WebAssembly frame on the stack (between calls from
 * JavaScript), and nothing that JavaScript holds may point at an object created during a run
 * (the runner's entry points exist before the baseline; runs return plain strings).
 */

/** An Emscripten FS node, the fields used here. */
export interface FsNode {
  mode: number;
  rdev?: number;
  atime?: number;
  mtime?: number;
  ctime?: number;
  mounted?: unknown;
  contents?: unknown;
  usedBytes?: number;
}

interface FsStat {
  mode: number;
  rdev: number;
}

/** The part of Emscripten's FS object used here. */
export interface EmscriptenFs {
  readdir(path: string): string[];
  lstat(path: string): FsStat;
  lookupPath(path: string, opts: { follow: boolean; follow_mount?: boolean }): { node: FsNode };
  readFile(path: string, opts?: { encoding: 'binary' }): Uint8Array;
  writeFile(path: string, data: Uint8Array): void;
  readlink(path: string): string;
  symlink(target: string, path: string): void;
  mkdir(path: string, mode: number): void;
  mkdev(path: string, mode: number, dev: number): void;
  unlink(path: string): void;
  rmdir(path: string): void;
  close(stream: unknown): void;
  closeStream(fd: number): void;
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
  isLink(mode: number): boolean;
  isChrdev(mode: number): boolean;
  streams: unknown[];
  write(stream: FsStream, buffer: unknown, offset: number, length: number, position?: number, canOwn?: boolean): number;
  truncate(path: string | FsNode, len: number): void;
  ftruncate(fd: number, len: number): void;
  getStream(fd: number): FsStream | null;
  lookupNode?: unknown;
  ErrnoError: new (errno: number) => Error;
  currentPath: string;
  ignorePermissions: boolean;
  nextInode?: number;
}

/** An open file description, the fields used here. */
export interface FsStream {
  node: FsNode;
  position: number;
  flags: number;
  tty?: unknown;
}

/** The parts of an Emscripten module used here. */
export interface EmscriptenModule {
  HEAPU8: Uint8Array;
  FS: EmscriptenFs;
  ERRNO_CODES?: Record<string, number>;
}

const O_APPEND = 0o2000;
const ENOSPC_FALLBACK = 51; // Emscripten's numbering

type Kind = 'dir' | 'file' | 'link' | 'dev';

interface Entry {
  path: string;
  kind: Kind;
  mode: number;
  rdev: number;
  times: [number | undefined, number | undefined, number | undefined];
  bytes?: Uint8Array;
  target?: string;
}

/** What restore() had to undo, for tests and diagnostics. */
export interface RestoreReport {
  closedFds: number;
  removed: string[];
  restored: string[];
}

const kindOf = (fs: EmscriptenFs, mode: number): Kind | undefined =>
  fs.isDir(mode) ? 'dir' : fs.isFile(mode) ? 'file' : fs.isLink(mode) ? 'link' : fs.isChrdev(mode) ? 'dev' : undefined;

const join = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/** `/` and every entry under it, parents before children; mount points other than the root (/proc/self/fd) are left alone. */
function walk(fs: EmscriptenFs, withBytes: boolean): Entry[] {
  const root = fs.lookupPath('/', { follow: false, follow_mount: false }).node;
  const out: Entry[] = [{ path: '/', kind: 'dir', mode: root.mode, rdev: 0, times: [root.atime, root.mtime, root.ctime] }];
  const visit = (dir: string): void => {
    for (const name of fs.readdir(dir).sort()) {
      if (name === '.' || name === '..') continue;
      const path = join(dir, name);
      let node: FsNode;
      let st: FsStat;
      try {
        node = fs.lookupPath(path, { follow: false, follow_mount: false }).node;
        st = fs.lstat(path);
      } catch {
        continue; // a special file system's mount point (/proc/self/fd refuses stat)
      }
      if (node.mounted) continue;
      const kind = kindOf(fs, st.mode);
      if (!kind) continue; // sockets and pipes live outside the tree
      const e: Entry = { path, kind, mode: node.mode, rdev: st.rdev, times: [node.atime, node.mtime, node.ctime] };
      if (kind === 'file' && withBytes) e.bytes = fs.readFile(path, { encoding: 'binary' }).slice();
      if (kind === 'link') e.target = fs.readlink(path);
      out.push(e);
      if (kind === 'dir') visit(path);
    }
  };
  visit('/');
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  const n4 = a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0 ? a.length >> 2 : 0;
  if (n4) {
    const a4 = new Int32Array(a.buffer, a.byteOffset, n4);
    const b4 = new Int32Array(b.buffer, b.byteOffset, n4);
    for (let i = 0; i < n4; i++) if (a4[i] !== b4[i]) return false;
  }
  for (let i = n4 * 4; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The bytes of a file: a MEMFS file's own array without a copy (it may be longer than the file), else a read. */
function fileBytes(fs: EmscriptenFs, path: string): Uint8Array {
  const node = fs.lookupPath(path, { follow: false, follow_mount: false }).node;
  if (node.contents instanceof Uint8Array && typeof node.usedBytes === 'number') return node.contents.subarray(0, node.usedBytes);
  if (node.contents == null && node.usedBytes === 0) return new Uint8Array(0);
  return fs.readFile(path, { encoding: 'binary' });
}

export class FreshRuntime {
  /** bytes the files may still grow by in this run (startRun sets it) */
  private room = Infinity;

  private constructor(
    private readonly mod: EmscriptenModule,
    private readonly heap: Uint8Array,
    private readonly entries: Entry[],
    private readonly fds: Set<number>,
    private readonly cwd: string,
    private readonly nextInode: number | undefined,
  ) {}

  /** Takes the baseline: call once the interpreter is ready, before any untrusted code runs. */
  static take(mod: EmscriptenModule): FreshRuntime {
    const fs = mod.FS;
    const was = fs.ignorePermissions;
    fs.ignorePermissions = true;
    try {
      const fds = new Set<number>();
      fs.streams.forEach((s, fd) => s && fds.add(fd));
      const fresh = new FreshRuntime(mod, mod.HEAPU8.slice(), walk(fs, true), fds, fs.currentPath, fs.nextInode);
      fresh.installQuota();
      return fresh;
    } finally {
      fs.ignorePermissions = was;
    }
  }

  /**
   * Starts a run whose files (and pipe buffers) may grow by at most `bytes` in all: MEMFS keeps
   * them in JavaScript memory, outside the WebAssembly heap's ceiling, so without this one
   * `f.seek(1 << 32); f.write(b'x')` or a write loop fills the worker's memory. Past it, writes
   * and truncations fail with ENOSPC.
   */
  startRun(bytes: number): void {
    this.room = bytes;
  }

  private installQuota(): void {
    const fs = this.mod.FS;
    const enospc = this.mod.ERRNO_CODES?.ENOSPC ?? ENOSPC_FALLBACK;
    const size = (node: FsNode): number => (fs.isFile(node.mode) ? (node.usedBytes ?? 0) : 0);
    const take = (grow: number): void => {
      if (grow <= 0) return;
      if (grow > this.room) throw new fs.ErrnoError(enospc);
      this.room -= grow;
    };
    const { write, truncate, ftruncate } = fs;
    fs.write = (stream, buffer, offset, length, position, canOwn) => {
      if (!stream.tty) {
        const node = stream.node;
        if (!fs.isFile(node.mode))
          take(length); // a pipe's buffer
        else {
          const start = stream.flags & O_APPEND ? size(node) : (position ?? stream.position);
          take(start + length - size(node));
        }
      }
      return write.call(fs, stream, buffer, offset, length, position, canOwn);
    };
    fs.truncate = (path, len) => {
      const node = typeof path === 'string' ? fs.lookupPath(path, { follow: true }).node : path;
      take(len - size(node));
      truncate.call(fs, path, len);
    };
    fs.ftruncate = (fd, len) => {
      const stream = fs.getStream(fd);
      if (stream) take(len - size(stream.node));
      ftruncate.call(fs, fd, len);
    };
  }

  /** Bytes held by the baseline copy of the WebAssembly memory. */
  get heapBytes(): number {
    return this.heap.length;
  }

  /** Puts the baseline back: descriptors, then the file system, then the memory. */
  restore(): RestoreReport {
    const fs = this.mod.FS;
    const report: RestoreReport = { closedFds: 0, removed: [], restored: [] };
    this.room = Infinity; // the restore itself writes
    const was = fs.ignorePermissions;
    fs.ignorePermissions = true; // a program may have chmod-ed a directory to 000
    try {
      fs.streams.forEach((s, fd) => {
        if (!s || this.fds.has(fd)) return;
        try {
          fs.close(s);
        } catch {
          fs.closeStream(fd);
        }
        report.closedFds++;
      });
      fs.currentPath = this.cwd; // first: the working directory may be one the program made (rmdir would say EBUSY)
      this.restoreTree(report);
      if (report.restored.length === 0 && this.nextInode !== undefined) fs.nextInode = this.nextInode;
    } finally {
      fs.ignorePermissions = was;
    }
    this.mod.HEAPU8.set(this.heap);
    return report;
  }

  private restoreTree(report: RestoreReport): void {
    const fs = this.mod.FS;
    const base = new Map(this.entries.map((e) => [e.path, e]));
    const now = walk(fs, false);
    for (const e of now.reverse()) {
      if (e.path === '/') continue;
      const b = base.get(e.path);
      if (b && b.kind === e.kind && (e.kind !== 'dev' || b.rdev === e.rdev)) continue;
      if (e.kind === 'dir') fs.rmdir(e.path);
      else fs.unlink(e.path);
      report.removed.push(e.path);
    }
    for (const b of this.entries) {
      let exists = true;
      try {
        fs.lstat(b.path);
      } catch {
        exists = false;
      }
      let changed = !exists;
      if (!exists) {
        if (b.kind === 'dir') fs.mkdir(b.path, b.mode & 0o7777);
        else if (b.kind === 'dev') fs.mkdev(b.path, b.mode, b.rdev);
        else if (b.kind === 'link') fs.symlink(b.target!, b.path);
        else fs.writeFile(b.path, b.bytes!);
      } else if (b.kind === 'file' && !sameBytes(fileBytes(fs, b.path), b.bytes!)) {
        fs.writeFile(b.path, b.bytes!);
        changed = true;
      } else if (b.kind === 'link' && fs.readlink(b.path) !== b.target) {
        fs.unlink(b.path);
        fs.symlink(b.target!, b.path);
        changed = true;
      }
      const node = fs.lookupPath(b.path, { follow: false, follow_mount: false }).node;
      if (node.mode !== b.mode) {
        node.mode = b.mode;
        changed = true;
      }
      if (node.atime !== b.times[0] || node.mtime !== b.times[1] || node.ctime !== b.times[2]) {
        [node.atime, node.mtime, node.ctime] = b.times;
        changed = true;
      }
      if (changed) report.restored.push(b.path);
    }
  }
}
