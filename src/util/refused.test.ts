import { describe, expect, test } from 'vitest';
import { CHECKPOINT_FILE, hasMagic, notAFile, printable, refusedText, RUN_FILE } from './refused';

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe('refused files', () => {
  test('one sentence shape for every kind: what the file is not, how such a file starts and where it comes from, how this one starts', () => {
    for (const kind of [CHECKPOINT_FILE, RUN_FILE]) {
      const why = notAFile(kind, bytes('PK\x03\x04\x14\0\0\0'));
      expect(why).toMatch(
        new RegExp(
          `^this file is not a ${kind.what}: a .* starts with the bytes "[^"]+" \\(one is saved by [^)]+\\); this file starts with "PK\\.{6}" \\(looks like a zip archive; first bytes 50 4b 03 04 14 00 00 00\\)$`,
        ),
      );
      expect(why).not.toMatch(/magic|bundle/);
    }
  });

  test('the UI wording puts the file name first, for the checkpoint and the run import alike', () => {
    expect(refusedText('foo.bin', new Error(notAFile(RUN_FILE, bytes('hello'))))).toBe(
      'Rejected "foo.bin": this file is not a Code RL Lab run file: a run file (.coderl-run) starts with the bytes "coderl-run" ' +
        '(one is saved by Experiment → Export run); this file starts with "hello" (looks like text; first bytes 68 65 6c 6c 6f)',
    );
    expect(refusedText('a.crlckpt', 'it was no longer stored')).toBe('Rejected "a.crlckpt": it was no longer stored');
  });

  test('lookalikes and the magic check', () => {
    expect(notAFile(RUN_FILE, Uint8Array.from([0x1f, 0x8b, 8, 0]))).toMatch(/looks like a gzip-compressed file/);
    expect(notAFile(RUN_FILE, Uint8Array.from([0x08, 0x07, 0x12, 0x07, 0x70]))).toMatch(/looks like an ONNX model/);
    expect(notAFile(CHECKPOINT_FILE, new TextEncoder().encode('  [1, 2] é'))).toMatch(/looks like JSON text/);
    expect(notAFile(CHECKPOINT_FILE, Uint8Array.from([0, 1, 2, 250]))).toMatch(/starts with "\.\.\.\." \(first bytes 00 01 02 fa\)$/);
    expect(printable(bytes('ab\ncd'))).toBe('ab.cd');
    expect(hasMagic(bytes('CRLC'), CHECKPOINT_FILE)).toBe(true);
    expect(hasMagic(bytes('CRLCKPT\0rest'), CHECKPOINT_FILE)).toBe(true);
    expect(hasMagic(bytes(''), CHECKPOINT_FILE)).toBe(false);
    expect(hasMagic(bytes('CRLX'), CHECKPOINT_FILE)).toBe(false);
  });
});
