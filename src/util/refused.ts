/**
 * One wording for a file refused because it is not the kind of file it was given as (a
 * checkpoint given to the checkpoint import, a run file given to the run import): a plain
 * sentence saying what the file is not, how such a file starts and where one comes from, then
 * how this file starts and what it looks like, with its first bytes in hex as the technical
 * detail. The UI puts the file's name in front (`Rejected "<name>": ...`, refusedText), as the
 * checkpoint store does.
 */
import { errorText } from './errors';

export interface FileKind {
  /** what such a file is, after "a": "Code RL Lab checkpoint" */
  what: string;
  /** the short name, after "a": "checkpoint file" */
  noun: string;
  /** the bytes every such file starts with */
  magic: Uint8Array;
  /** where a file of this kind comes from */
  origin: string;
}

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** A checkpoint (src/container/format.ts): the lab's model files, and a run's *.ckpt files. */
export const CHECKPOINT_FILE: FileKind = {
  what: 'Code RL Lab checkpoint',
  noun: 'checkpoint file',
  magic: ascii('CRLCKPT\0'),
  origin: 'one is saved by Checkpoints → Export, and by coderl train as policy.ckpt in its run folder',
};

/** A run file (src/rl/run-bundle.ts): a whole run directory as one `.coderl-run` file. */
export const RUN_FILE: FileKind = {
  what: 'Code RL Lab run file',
  noun: 'run file (.coderl-run)',
  magic: ascii('coderl-run\n'),
  origin: 'one is saved by Experiment → Export run',
};

const KINDS = [CHECKPOINT_FILE, RUN_FILE];

const startsWith = (bytes: Uint8Array, sig: ArrayLike<number>): boolean =>
  bytes.length >= sig.length && Array.prototype.every.call(sig, (b: number, i: number) => bytes[i] === b);

/** Well-known file signatures, for saying what a refused file looks like. */
const SIGNATURES: [ArrayLike<number>, string][] = [
  [[0x50, 0x4b, 0x03, 0x04], 'a zip archive'],
  [[0x1f, 0x8b], 'a gzip-compressed file'],
  [[0x89, 0x50, 0x4e, 0x47], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [ascii('GIF8'), 'a GIF image'],
  [ascii('%PDF'), 'a PDF document'],
];

const isText = (b: number): boolean => (b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a || b === 0x0d;

/** What `bytes` look like, or null when nothing is known about them. */
function lookalike(bytes: Uint8Array, kind: FileKind): string | null {
  for (const k of KINDS) {
    if (k !== kind && startsWith(bytes, k.magic)) return `a ${k.what}, which this import does not take`;
  }
  for (const [sig, what] of SIGNATURES) if (startsWith(bytes, sig)) return what;
  // ONNX (protobuf ModelProto): field 1 ir_version, a small varint, then field 2 producer_name or 7 graph
  if (bytes[0] === 0x08 && bytes[1]! > 0 && bytes[1]! < 0x20 && (bytes[2] === 0x12 || bytes[2] === 0x3a)) return 'an ONNX model';
  const head = bytes.subarray(0, 512);
  if (head.every(isText) || isUtf8Text(head)) {
    const first = String.fromCharCode(...head).trimStart()[0];
    return first === '{' || first === '[' ? 'JSON text' : 'text';
  }
  return null;
}

function isUtf8Text(head: Uint8Array): boolean {
  try {
    // a multi-byte character may be cut at the end of `head`: decode without the last 3 bytes
    new TextDecoder('utf-8', { fatal: true }).decode(head.length > 3 ? head.subarray(0, head.length - 3) : head);
    return head.every((b) => b >= 0x80 || isText(b));
  } catch {
    return false;
  }
}

/** Bytes as text, printable ASCII as it is and anything else as ".": what a hex viewer's right column shows. */
export function printable(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes.map((b) => (b >= 0x20 && b < 0x7f ? b : 0x2e)));
}

const hex = (bytes: Uint8Array): string => [...bytes.subarray(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join(' ');

/** The magic without trailing control bytes ("CRLCKPT\0" reads "CRLCKPT"). */
const magicText = (kind: FileKind): string => printable(kind.magic).replace(/\.+$/, '');

/** Whether `bytes` start as a file of `kind` does (a file shorter than the magic counts when it is a prefix of it). */
export function hasMagic(bytes: Uint8Array, kind: FileKind): boolean {
  return bytes.length > 0 && kind.magic.subarray(0, bytes.length).every((b, i) => bytes[i] === b);
}

/**
 * Why `bytes` are not a file of `kind`, as one plain sentence, e.g. `this file is not a Code RL
 * Lab checkpoint: a checkpoint file starts with the bytes "CRLCKPT" (one is saved by ...); this
 * file starts with "PK.." (looks like a zip archive; first bytes 50 4b 03 04 ...)`.
 */
export function notAFile(kind: FileKind, bytes: Uint8Array): string {
  const expected = `this file is not a ${kind.what}: a ${kind.noun} starts with the bytes "${magicText(kind)}" (${kind.origin})`;
  if (bytes.length === 0) return `${expected}; this file is empty`;
  const like = lookalike(bytes, kind);
  const detail = [like && `looks like ${like}`, `first bytes ${hex(bytes)}`].filter(Boolean).join('; ');
  return `${expected}; this file starts with "${printable(bytes.subarray(0, 8))}" (${detail})`;
}

/**
 * How a refused file is shown, the same for every import (the checkpoint store writes the same):
 * `Rejected "<file>": <why>`, or `Rejected "<file>" (as "<name>"): <why>` for an import under another name.
 */
export function refusedText(fileName: string, why: unknown, as?: string): string {
  return `Rejected "${fileName}"${as ? ` (as "${as}")` : ''}: ${errorText(why)}`;
}
