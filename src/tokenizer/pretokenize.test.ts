import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random';
import { MAX_CHUNK_UNITS, pretokenize } from './pretokenize';
import { randomString } from './testing';

describe('pretokenize', () => {
  it('splits code into identifiers, numbers, punctuation runs and indentation', () => {
    const code = 'const f = (a, b2) => {\n  if (a >= 10.5) return $x_1;\r\n\r\n    x  = y;\t\tz \n}';
    expect(pretokenize(code)).toEqual([
      'const',
      ' f',
      ' =',
      ' (',
      'a',
      ',',
      ' b2',
      ')',
      ' =>',
      ' {',
      '\n  ',
      'if',
      ' (',
      'a',
      ' >=',
      ' 10',
      '.',
      '5',
      ')',
      ' return',
      ' $x_1',
      ';',
      '\r\n\r\n    ',
      'x',
      ' ',
      ' =',
      ' y',
      ';',
      '\t',
      '\t',
      'z',
      ' ',
      '\n',
      '}',
    ]);
  });

  it('keeps words with marks and non-Latin letters whole', () => {
    expect(pretokenize('e\u0301t\u00e9 中文 x😀')).toEqual(['e\u0301t\u00e9', ' 中文', ' x', '😀']);
  });

  it('covers every string: chunks concatenate back to the input', () => {
    const rng = new Rng(5);
    for (let k = 0; k < 300; k++) {
      const s = randomString(rng, 1 + Math.floor(rng.next() * 100));
      const chunks = pretokenize(s);
      expect(chunks.join('')).toBe(s);
      expect(chunks.every((c) => c.length > 0 && c.length <= MAX_CHUNK_UNITS)).toBe(true);
    }
  });

  it('cuts long chunks without splitting a surrogate pair', () => {
    const s = 'x ' + '😀'.repeat(40); // the run ' 😀😀...' has 81 units; unit 64 is a high surrogate
    const chunks = pretokenize(s);
    expect(chunks.join('')).toBe(s);
    expect(chunks.map((c) => c.length)).toEqual([1, MAX_CHUNK_UNITS - 1, 18]);
    for (const c of chunks) expect(c.replace(/\p{Cs}/gu, '')).toBe(c); // no lone halves
    expect(pretokenize(' '.repeat(200)).map((c) => c.length)).toEqual([64, 64, 64, 8]);
  });
});
