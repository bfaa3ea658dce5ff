import { describe, expect, it } from 'vitest';
import { randomString } from '../../tokenizer/testing';
import { Rng } from '../../util/random';
import { JsLexer, lexJs } from './js-lexer';

const show = (text: string) => lexJs(text).map((t) => `${t.kind}:${t.text}`);

describe('JsLexer', () => {
  it('lexes strings, comments, templates, regexes and numbers', () => {
    expect(show('a.b?.c')).toEqual(['ident:a', 'punct:.', 'ident:b', 'punct:?.', 'ident:c']);
    expect(show('x ? .5 : 1')).toEqual(['ident:x', 'punct:?', 'number:.5', 'punct::', 'number:1']);
    expect(show('3..x 1.5.y 0x1F.z 3.')).toEqual([
      'number:3.',
      'punct:.',
      'ident:x',
      'number:1.5',
      'punct:.',
      'ident:y',
      'number:0x1F',
      'punct:.',
      'ident:z',
      'number:3.',
    ]);
    expect(show("\"a.b\" 'c\\'d' // e.f\n/* g.h */")).toEqual(['string:"a.b"', "string:'c\\'d'", 'comment:// e.f', 'comment:/* g.h */']);
    expect(show('`a${b.c + `d${e}`}f`.g')).toEqual([
      'template:`a${',
      'ident:b',
      'punct:.',
      'ident:c',
      'punct:+',
      'template:`d${',
      'ident:e',
      'template:}`',
      'template:}f`',
      'punct:.',
      'ident:g',
    ]);
    expect(show('`${ {a: 1}.a }`')).toEqual([
      'template:`${',
      'punct:{',
      'ident:a',
      'punct::',
      'number:1',
      'punct:}',
      'punct:.',
      'ident:a',
      'template:}`',
    ]);
    expect(show('x = /a.b[/]/g.test(s)')).toEqual([
      'ident:x',
      'punct:=',
      'regex:/a.b[/]/g',
      'punct:.',
      'ident:test',
      'punct:(',
      'ident:s',
      'punct:)',
    ]);
    expect(show('a / b / c')).toEqual(['ident:a', 'punct:/', 'ident:b', 'punct:/', 'ident:c']);
    expect(show('x = a\n/ 2')).toEqual(['ident:x', 'punct:=', 'ident:a', 'punct:/', 'number:2']);
    expect(show('(a) => a === b')).toEqual(['punct:(', 'ident:a', 'punct:)', 'punct:=>', 'ident:a', 'punct:===', 'ident:b']);
  });

  it('marks unterminated literals and line breaks', () => {
    const [s] = lexJs('"abc');
    expect(s).toMatchObject({ kind: 'string', closed: false });
    expect(lexJs('"abc\nx').map((t) => [t.kind, t.nl])).toEqual([
      ['string', false],
      ['ident', true],
    ]);
    expect(lexJs('/* a').at(-1)).toMatchObject({ kind: 'comment', closed: false });
    expect(lexJs('`a ${b} c').at(-1)).toMatchObject({ kind: 'template', part: 'tail', closed: false });
  });

  it('gives the same tokens fed piece by piece as all at once', () => {
    const rng = new Rng(11);
    const pieces = [
      '.',
      '?',
      '?.',
      '=',
      '>',
      '/',
      '*',
      '`',
      '${',
      '}',
      '{',
      '"',
      "'",
      '\\',
      '\n',
      '\r\n',
      ' ',
      '3',
      '.5',
      'e',
      'x',
      'const',
      '//',
      '/*',
      '*/',
      '0x',
      ')',
    ];
    for (let i = 0; i < 400; i++) {
      let text = i % 3 === 0 ? randomString(rng, 40) : '';
      for (let j = 0; j < 80; j++) text += pieces[Math.floor(rng.next() * pieces.length)]!;
      const whole = lexJs(text);
      const lx = new JsLexer();
      for (let at = 0; at < text.length;) {
        const n = 1 + Math.floor(rng.next() * 5);
        lx.append(text.slice(at, at + n));
        at += n;
      }
      expect(lx.tokens).toEqual(whole);
      expect(whole.map((t) => t.text).join('').length).toBeLessThanOrEqual(text.length);
    }
  });

  it('clones share the prefix and diverge independently', () => {
    const base = new JsLexer();
    base.append('const s = "a');
    const a = base.clone();
    const b = base.clone();
    a.append('b";\ns.');
    b.append('\n');
    expect(a.tokens.at(-1)!.text).toBe('.');
    expect(b.tokens.at(-1)).toMatchObject({ kind: 'string', text: '"a', closed: false });
    expect(base.tokens.at(-1)!.text).toBe('"a');
  });
});
