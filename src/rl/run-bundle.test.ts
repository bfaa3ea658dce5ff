import { describe, expect, it } from 'vitest';
import { crc32, crc32Hex } from '../container/crc32';
import { REFERENCE_MODEL_FILE, REFERENCE_TOKENIZER_FILE } from './reference';
import { packRun, unpackRun, type RunFile } from './run-bundle';

const text = (s: string) => new TextEncoder().encode(s);
const binary = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37 + 11) & 0xff);

const FILES: RunFile[] = [
  { path: 'config.json', data: text('{"seed": 1}\n') },
  { path: 'metrics.jsonl', data: text('{"step":0,"losses/kl":0.1}\n{"step":1,"losses/kl":0.2}\n') },
  { path: 'tasks/train.jsonl', data: text('') }, // an empty file survives too
  { path: 'rollouts/iter-0002.jsonl', data: text('{"reward":1}\n') },
  { path: 'policy.ckpt', data: binary },
];

/** A bundle laid out by hand (magic, header length, header, header CRC, data), for headers packRun refuses to write. */
function rawBundle(header: unknown, data: Uint8Array[] = []): Uint8Array {
  const head = text(JSON.stringify(header));
  const parts = [text('coderl-run\n'), u32(head.length), head, u32(crc32(head)), ...data];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
function u32(x: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, x, true);
  return b;
}
const entry = (path: string, data: Uint8Array) => ({ path, bytes: data.length, crc32: crc32Hex(crc32(data)) });
const header = (files: unknown[], extra: object = {}) => ({ format: 'coderl-run', version: 1, run: 'r', files, ...extra });
const one = text('x');

describe('run bundle', () => {
  it('round-trips text and binary files, paths, order and the run name', () => {
    const bytes = packRun(FILES, { run: 'tiny-seed1' });
    const back = unpackRun(bytes);
    expect(back.run).toBe('tiny-seed1');
    expect(back.files.map((f) => f.path)).toEqual(FILES.map((f) => f.path));
    back.files.forEach((f, i) => expect(f.data).toEqual(FILES[i]!.data));
    // a view into a larger buffer reads the same
    const padded = new Uint8Array(bytes.length + 8);
    padded.set(bytes, 4);
    expect(unpackRun(padded.subarray(4, 4 + bytes.length)).files[4]!.data).toEqual(binary);
  });

  it('carries the files of a run with an ONNX KL reference (rl/reference.ts) under reference/', () => {
    const files = [
      ...FILES,
      { path: REFERENCE_TOKENIZER_FILE, data: text('{"merges":[]}') },
      { path: REFERENCE_MODEL_FILE, data: binary.subarray(0, 300) },
    ];
    const back = unpackRun(packRun(files, { run: 'with-ref' }));
    expect(back.files.map((f) => f.path).slice(-2)).toEqual(['reference/tokenizer.json', 'reference/model.onnx']);
    expect(back.files.at(-1)!.data).toEqual(binary.subarray(0, 300));
  });

  it('rejects a file that is not a bundle', () => {
    expect(() => unpackRun(text('function f() {}\n'))).toThrow(
      'this file is not a Code RL Lab run file: a run file (.coderl-run) starts with the bytes "coderl-run" ' +
        '(one is saved by Experiment → Export run); this file starts with "function" (looks like text; first bytes 66 75 6e 63 74 69 6f 6e)',
    );
    expect(() => unpackRun(new Uint8Array(0))).toThrow(/^this file is not a Code RL Lab run file: .*; this file is empty$/);
    // a checkpoint given to the run import says what it is
    const ckpt = Uint8Array.from([...text('CRLCKPT\0'), 1, 0, 0, 0]);
    expect(() => unpackRun(ckpt)).toThrow(
      /starts with "CRLCKPT\." \(looks like a Code RL Lab checkpoint, which this import does not take;/,
    );
    expect(() => unpackRun(text('PK\x03\x04rest'))).toThrow(/\(looks like a zip archive; first bytes 50 4b 03 04/);
    for (const bad of [text('x'), ckpt]) expect(() => unpackRun(bad)).not.toThrow(/magic|bundle/);
    // cut short inside the format name: truncated, not another kind of file
    expect(() => unpackRun(text('coderl'))).toThrow('run bundle: truncated at byte 6 (the format name needs bytes 0-10)');
  });

  it('rejects a truncated bundle, naming the byte and the file', () => {
    const bytes = packRun(FILES, { run: 'r' });
    expect(() => unpackRun(bytes.subarray(0, bytes.length - 1))).toThrow(
      `run bundle: truncated at byte ${bytes.length - 1} (file 4 (policy.ckpt) needs bytes ${bytes.length - 1000}-${bytes.length - 1})`,
    );
    expect(() => unpackRun(bytes.subarray(0, 13))).toThrow(/truncated at byte 13 \(header length/);
    expect(() => unpackRun(bytes.subarray(0, 40))).toThrow(/truncated at byte 40 \(header/);
  });

  it('rejects bytes after the last file', () => {
    const bytes = packRun(FILES, { run: 'r' });
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expect(() => unpackRun(longer)).toThrow(`run bundle: 3 unexpected bytes after the last file, at byte ${bytes.length}`);
  });

  it('rejects a corrupt file, naming it', () => {
    const bytes = packRun(FILES, { run: 'r' });
    const bad = bytes.slice();
    bad[bytes.length - 1000 - 13 + 2]! ^= 0x01; // inside rollouts/iter-0002.jsonl, just before policy.ckpt
    expect(() => unpackRun(bad)).toThrow('run bundle: file 3 (rollouts/iter-0002.jsonl): checksum mismatch (the file is corrupt)');
  });

  it('rejects a corrupt header', () => {
    const bad = packRun(FILES, { run: 'r' }).slice();
    bad[20]! ^= 0x20;
    expect(() => unpackRun(bad)).toThrow('run bundle: header checksum mismatch (the file is corrupt)');
  });

  it('rejects an unsupported version or format, and a malformed header', () => {
    expect(() => unpackRun(rawBundle(header([entry('a', one)], { version: 2 }), [one]))).toThrow(
      'run bundle: unsupported version 2 (this app reads version 1)',
    );
    expect(() => unpackRun(rawBundle(header([entry('a', one)], { format: 'zip' }), [one]))).toThrow(/header format is "zip"/);
    expect(() => unpackRun(rawBundle(header([{ path: 'a', bytes: -1, crc32: '00000000' }])))).toThrow(/file 0 \(a\): bad byte length -1/);
    expect(() => unpackRun(rawBundle(header([{ path: 'a', bytes: 0, crc32: 'zz' }])))).toThrow(/file 0 \(a\): bad checksum field/);
    expect(() => unpackRun(rawBundle(header([entry('a', one)], { run: '' }), [one]))).toThrow(/no run name/);
  });

  it.each([
    ['/etc/passwd', 'absolute path'],
    ['../evil', '".." component in path'],
    ['tasks/../../evil', '".." component in path'],
    ['./config.json', '"." component in path'],
    ['tasks\\a.jsonl', 'backslash in path'],
    ['', 'empty path'],
    ['tasks//a.jsonl', 'empty path component'],
    ['tasks/', 'empty path component'],
    ['a\0b', 'NUL in path'],
  ])('rejects the unsafe path %j (%s), reading and writing', (path, problem) => {
    const bundle = rawBundle(header([entry('ok', one), entry(path, one)]), [one, one]);
    expect(() => unpackRun(bundle)).toThrow(`run bundle: file 1 (${JSON.stringify(path)}): unsafe path: ${problem}`);
    expect(() => packRun([{ path, data: one }], { run: 'r' })).toThrow(`unsafe path: ${problem}`);
  });

  it('rejects duplicate paths, reading and writing', () => {
    const bundle = rawBundle(header([entry('a', one), entry('b', one), entry('a', one)]), [one, one, one]);
    expect(() => unpackRun(bundle)).toThrow('run bundle: file 2 (a): duplicate path');
    expect(() => packRun([FILES[0]!, FILES[0]!], { run: 'r' })).toThrow('file 1 (config.json): duplicate path');
  });

  it('rejects an empty run, reading and writing', () => {
    expect(() => packRun([], { run: 'r' })).toThrow('run bundle: the run has no files');
    expect(() => unpackRun(rawBundle(header([])))).toThrow('run bundle: the run has no files');
  });
});
