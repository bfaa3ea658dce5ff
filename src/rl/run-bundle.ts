/**
 * A run directory as one file (`<run>.coderl-run`), to move a run between browsers or machines.
 * Pure: bytes in, bytes out; run-transfer.ts reads and writes the run store.
 *
 * Layout (integers little-endian):
 *   magic    11 bytes  ASCII "coderl-run\n"
 *   hlen     u32       byte length of the header
 *   header   hlen      UTF-8 JSON {format: "coderl-run", version: 1, run, files: [{path, bytes, crc32}]}
 *   hcrc     u32       CRC-32 of the header bytes
 *   data               each file's bytes, in header order, back to back; nothing after the last
 * `crc32` is the file's CRC-32 (zlib's) as 8 hex digits. Paths are relative, `/`-separated, with
 * no empty, "." or ".." component, no backslash and no NUL, and appear once each.
 */
import { crc32, crc32Hex } from '../container/crc32';
import { errorText } from '../util/errors';
import { hasMagic, notAFile, RUN_FILE } from '../util/refused';

export const RUN_BUNDLE_FORMAT = 'coderl-run';
export const RUN_BUNDLE_VERSION = 1;
export const RUN_BUNDLE_EXT = '.coderl-run';

const MAGIC = RUN_FILE.magic; // `${RUN_BUNDLE_FORMAT}\n`

export interface RunFile {
  path: string;
  data: Uint8Array;
}

interface HeaderEntry {
  path: string;
  bytes: number;
  crc32: string;
}

interface Header {
  format: string;
  version: number;
  run: string;
  files: HeaderEntry[];
}

const fail = (msg: string): never => {
  throw new Error(`run bundle: ${msg}`);
};

/** Why `path` is not a safe relative file path, or null. */
function pathProblem(path: unknown): string | null {
  if (typeof path !== 'string') return 'not a string';
  if (path === '') return 'empty path';
  if (path.startsWith('/')) return 'absolute path';
  if (path.includes('\\')) return 'backslash in path';
  if (path.includes('\0')) return 'NUL in path';
  for (const part of path.split('/')) {
    if (part === '') return 'empty path component';
    if (part === '.' || part === '..') return `"${part}" component in path`;
  }
  return null;
}

/** Throws unless `files` is a non-empty list of safe, distinct paths. */
function checkFiles(paths: unknown[]): void {
  if (paths.length === 0) fail('the run has no files');
  const seen = new Set<unknown>();
  paths.forEach((p, i) => {
    const problem = pathProblem(p);
    if (problem) fail(`file ${i} (${JSON.stringify(p)}): unsafe path: ${problem}`);
    if (seen.has(p)) fail(`file ${i} (${p as string}): duplicate path`);
    seen.add(p);
  });
}

/** The run's files as one bundle (see the layout above). */
export function packRun(files: RunFile[], meta: { run: string }): Uint8Array {
  if (typeof meta.run !== 'string' || meta.run === '') fail('empty run name');
  checkFiles(files.map((f) => f.path));
  const header: Header = {
    format: RUN_BUNDLE_FORMAT,
    version: RUN_BUNDLE_VERSION,
    run: meta.run,
    files: files.map((f) => ({ path: f.path, bytes: f.data.byteLength, crc32: crc32Hex(crc32(f.data)) })),
  };
  const head = new TextEncoder().encode(JSON.stringify(header));
  const dataBytes = files.reduce((n, f) => n + f.data.byteLength, 0);
  const out = new Uint8Array(MAGIC.length + 4 + head.length + 4 + dataBytes);
  const view = new DataView(out.buffer);
  let at = 0;
  out.set(MAGIC, at);
  at += MAGIC.length;
  view.setUint32(at, head.length, true);
  at += 4;
  out.set(head, at);
  at += head.length;
  view.setUint32(at, crc32(head), true);
  at += 4;
  for (const f of files) {
    out.set(f.data, at);
    at += f.data.byteLength;
  }
  return out;
}

/** The run name and files of a bundle; throws an Error naming the problem and where. */
export function unpackRun(bytes: Uint8Array): { run: string; files: RunFile[] } {
  // a file cut short inside the magic is a truncated run file (below); anything else is another kind of file
  if (!hasMagic(bytes, RUN_FILE)) throw new Error(notAFile(RUN_FILE, bytes));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (at: number, n: number, what: string): void => {
    if (at + n > bytes.length) fail(`truncated at byte ${bytes.length} (${what} needs bytes ${at}-${at + n - 1})`);
  };
  need(0, MAGIC.length, 'the format name');
  let at = MAGIC.length;
  need(at, 4, 'header length');
  const hlen = view.getUint32(at, true);
  at += 4;
  need(at, hlen + 4, 'header');
  const head = bytes.subarray(at, at + hlen);
  at += hlen;
  if (view.getUint32(at, true) !== crc32(head)) fail('header checksum mismatch (the file is corrupt)');
  at += 4;
  const header = parseHeader(head);
  const files: RunFile[] = [];
  header.files.forEach((e, i) => {
    need(at, e.bytes, `file ${i} (${e.path})`);
    const data = bytes.slice(at, at + e.bytes);
    if (crc32Hex(crc32(data)) !== e.crc32) fail(`file ${i} (${e.path}): checksum mismatch (the file is corrupt)`);
    files.push({ path: e.path, data });
    at += e.bytes;
  });
  if (at !== bytes.length) fail(`${bytes.length - at} unexpected bytes after the last file, at byte ${at}`);
  return { run: header.run, files };
}

/** The header JSON, checked field by field. */
function parseHeader(head: Uint8Array): Header {
  let h: Partial<Header>;
  try {
    h = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(head)) as Partial<Header>;
  } catch (e) {
    return fail(`header is not valid JSON (${errorText(e)})`);
  }
  if (typeof h !== 'object' || h === null || h.format !== RUN_BUNDLE_FORMAT)
    fail(`header format is ${JSON.stringify(h?.format)}, not "${RUN_BUNDLE_FORMAT}"`);
  if (h.version !== RUN_BUNDLE_VERSION)
    fail(`unsupported version ${JSON.stringify(h.version)} (this app reads version ${RUN_BUNDLE_VERSION})`);
  if (typeof h.run !== 'string' || h.run === '') fail('header has no run name');
  if (!Array.isArray(h.files)) fail('header has no file list');
  const files = h.files as unknown[];
  files.forEach((e, i) => {
    const f = e as Partial<HeaderEntry> | null;
    if (typeof f !== 'object' || f === null) return fail(`file ${i}: not an object`);
    if (!Number.isSafeInteger(f.bytes) || f.bytes! < 0) fail(`file ${i} (${String(f.path)}): bad byte length ${JSON.stringify(f.bytes)}`);
    if (typeof f.crc32 !== 'string' || !/^[0-9a-f]{8}$/.test(f.crc32))
      fail(`file ${i} (${String(f.path)}): bad checksum field ${JSON.stringify(f.crc32)}`);
  });
  checkFiles(files.map((f) => (f as HeaderEntry).path));
  return h as Header;
}
