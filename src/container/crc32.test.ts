import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { crc32, crc32Hex, crc32Update } from './crc32';

const ascii = (s: string) => new TextEncoder().encode(s);

describe('crc32', () => {
  it('matches the published check values', () => {
    expect(crc32(ascii('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    expect(crc32(ascii('a'))).toBe(0xe8b7be43);
    expect(crc32(ascii('The quick brown fox jumps over the lazy dog'))).toBe(0x414fa339);
    expect(crc32(new Uint8Array(32))).toBe(0x190a55ad); // 32 zero bytes
    expect(crc32Hex(0xcbf43926)).toBe('cbf43926');
    expect(crc32Hex(0x1a)).toBe('0000001a');
  });

  it('agrees with zlib on random data, whole and in pieces', () => {
    const rng = new Rng(7);
    for (let k = 0; k < 50; k++) {
      const bytes = Uint8Array.from({ length: Math.floor(rng.next() * 3000) }, () => Math.floor(rng.next() * 256));
      const cut = Math.floor(rng.next() * bytes.length);
      expect(crc32(bytes)).toBe(zlibCrc32(bytes));
      expect(crc32Update(crc32(bytes.subarray(0, cut)), bytes.subarray(cut))).toBe(crc32(bytes));
    }
  });
});
