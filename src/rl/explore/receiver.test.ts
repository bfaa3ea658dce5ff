import { describe, expect, it } from 'vitest';
import { loadHumanEvalJs, randomString } from '../../tokenizer/testing';
import { Rng } from '../../util/random';
import { apiType, lookup } from './api-graph';
import { exampleArgs } from './doc-types';
import { JsLexer } from './js-lexer';
import { parseJsdocType } from './doc-types';
import { inferReceiver, memberContext } from './receiver';

/** [prefix, receiver type, element type (arrays, when known)] */
const POSITIVE: [string, string, string?][] = [
  ['"abc".', 'string'],
  ["x = 'abc'.sl", 'string'],
  ['`x${1 + 2}y`.', 'string'],
  ['[1, 2].', 'array', 'number'],
  ['["a", "b"].', 'array', 'string'],
  ['(3).', 'number'],
  ['3..', 'number'],
  ['1.5.', 'number'],
  ['/a+b/g.', 'RegExp'],
  ['true.', 'boolean'],
  ['Math.', 'Math'],
  ['JSON.', 'JSON'],
  ['Object.', 'Object'],
  ['Array.', 'Array'],
  ['Number.', 'Number'],
  ['String.', 'String'],
  ['const s = "a,b";\nconst parts = s.split(",").', 'array', 'string'],
  ['const a = [1, 2];\na.map((x) => x * 2).', 'array'],
  ['function f(s) {\n  const t = s.trim();\n  return "x".trim().', 'string'],
  ['/** @param {string} s */\nfunction f(s) {\n  return s.', 'string'],
  ['/**\n * @param {number[]} xs\n */\nconst f = (xs) => xs[0].', 'number'],
  ['/** @param {Array<string>} words */\nconst f = (words) => words.', 'array', 'string'],
  ['const x = "hi";\nx.', 'string'],
  ['let n = 42;\nn.', 'number'],
  ['const m = new Map();\nm.', 'Map'],
  ['const text = "a b";\nconst words = text.split(" ");\nconsole.log(words[0].', 'string'],
  ['const words = "a b".split(" ");\nreturn words.map((w) => w.', 'string'],
  ['const words = "a b".split(" ");\nreturn words.filter(w => w.', 'string'],
  ['const nums = [3, 1];\nnums.reduce((acc, v) => acc + v.', 'number'],
  ['for (const w of "a b".split(" ")) {\n  w.', 'string'],
  ['Math.max(1, 2).', 'number'],
  ['JSON.stringify(x).', 'string'],
  ['Object.keys(o).map((k) => k.', 'string'],
  ['const xs = [];\nxs?.', 'array'],
  ['const s = "a" + b;\ns.', 'string'],
  ['const ok = a === b;\nok.', 'boolean'],
  ['const t = `${a}-${b}`;\nt.', 'string'],
  ['const arr = [1, 2, 3];\nreturn arr\n  .filter(Boolean)\n  .', 'array', 'number'],
  ['Array.prototype.slice.', 'function'],
  ['const s = "abc";\ns.length.', 'number'],
  ['const s = String(x);\ns.', 'string'],
  ['"abc".split("").reverse().join("").', 'string'],
  ['const seen = new Set();\nseen.add(1).', 'Set'],
  ['const n = parseInt(s, 10) % 7;\nn.', 'number'],
  ['const s = "x"; /* a comment. */ s.', 'string'],
  // HumanEval-style prompts: parameter types from the examples in the comment
  ["/* Return length of given string\n  >>> strlen('abc')\n  3\n  */\nconst strlen = (string) => {\n  return string.", 'string'],
  ['/* >>> hasClose([1.0, 2.0, 3.0], 0.5)\n  false */\nconst hasClose = (numbers, threshold) => {\n  numbers.', 'array', 'number'],
  ['/* >>> hasClose([1.0, 2.0, 3.0], 0.5)\n  false */\nconst hasClose = (numbers, threshold) => {\n  threshold.', 'number'],
  ['/*\n  Input: arr = [4, -4, 4], k = 2\n  Output: [4, 4]\n  */\nconst maximum = (arr, k) => {\n  return arr.', 'array', 'number'],
  ['/*\n  For lst = [1,2,3] the output should be -6\n  */\nfunction f(lst) {\n  return lst.', 'array', 'number'],
];

/** Prefixes whose end is not a member access (null context). */
const NOT_MEMBER = [
  '"abc.',
  "'a.b.",
  '// foo.',
  '/* x. */',
  '/* x.',
  '`abc ${x} s.',
  '`abc s.',
  '3.',
  'x = 3.5',
  's. ',
  'const x = 1;\n',
  'x = /a.',
  '[...',
  'if (x).',
  '',
  '.',
  '  \n ',
];

/** Member accesses whose receiver cannot be typed. */
const UNKNOWN_RECEIVER = [
  'foo.',
  'a.b.c.',
  'this.',
  'const s = "x";\nfunction g(s) {\n  return s.',
  '{ const s = "x"; }\ns.',
  'let s = s.',
  'const o = {a: 1};\no.a.',
  'f().',
  'const v = c ? "a" : 1;\nv.',
  'x[0].',
  "/* >>> f('a')\n >>> f(1) */\nconst f = (x) => x.", // examples disagree
];

describe('memberContext', () => {
  it.each(POSITIVE)('%j -> %s', (prefix, type, element) => {
    const ctx = memberContext(prefix);
    expect(ctx, prefix).not.toBeNull();
    expect(ctx!.receiver.type).toBe(type);
    if (element !== undefined) expect(ctx!.receiver.element).toBe(element);
  });

  it.each(NOT_MEMBER)('%j is not a member access', (prefix) => {
    expect(memberContext(prefix)).toBeNull();
    expect(inferReceiver(prefix)).toBe('unknown');
  });

  it.each(UNKNOWN_RECEIVER)('%j has an unknown receiver', (prefix) => {
    const ctx = memberContext(prefix);
    expect(ctx).not.toBeNull();
    expect(ctx!.receiver.type).toBe('unknown');
  });

  it('reports the partial name, the dot offset and optional chaining', () => {
    expect(memberContext('"abc".len')).toMatchObject({ partial: 'len', dot: 5, optional: false });
    expect(memberContext('const a = [];\na?.pu')).toMatchObject({ partial: 'pu', optional: true, receiver: { type: 'array' } });
    expect(memberContext('"abc".length')).toMatchObject({ partial: 'length' });
  });

  it('finds examples of a parameter in a comment', () => {
    expect(exampleArgs("/* >>> f('a', [1]) */", 'f', 'y', 1)).toEqual(['[1]']);
    expect(exampleArgs('/* Input: arr = [4, -4], k = 2 */', null, 'k', 5)).toEqual(['2']);
    expect(exampleArgs('/* For lst = [1,2] the output is 3 */', null, 'lst', 0)).toEqual(['[1,2]']);
    expect(exampleArgs('/* g(1) and x.f(2) */', 'f', 'a', 0)).toEqual([]);
  });

  it('reads JSDoc type expressions', () => {
    expect(parseJsdocType('string')).toEqual({ type: 'string' });
    expect(parseJsdocType('?number')).toEqual({ type: 'number' });
    expect(parseJsdocType('string[]')).toEqual({ type: 'array', element: 'string' });
    expect(parseJsdocType('Array.<number>')).toEqual({ type: 'array', element: 'number' });
    expect(parseJsdocType('Map<string, number>')).toEqual({ type: 'Map' });
    expect(parseJsdocType('string|null')).toEqual({ type: 'string' });
    expect(parseJsdocType('string|number')).toEqual({ type: 'unknown' });
    expect(parseJsdocType('*')).toEqual({ type: 'unknown' });
  });

  it('never throws on random text, with or without a trailing dot', () => {
    const rng = new Rng(7);
    const pieces = [
      '.',
      '(',
      ')',
      '[',
      ']',
      '{',
      '}',
      '"',
      "'",
      '`',
      '${',
      '/',
      '//',
      '/*',
      '*/',
      '\n',
      ' => ',
      'const s = ',
      's',
      'x.map(',
      '3.',
      '?.',
      ',',
      '=',
      '+',
    ];
    const start = performance.now();
    for (let i = 0; i < 3000; i++) {
      let text = i % 2 === 0 ? randomString(rng, 1 + Math.floor(rng.next() * 120)) : '';
      for (let j = Math.floor(rng.next() * 60); j > 0; j--) text += pieces[Math.floor(rng.next() * pieces.length)]!;
      for (const prefix of [text, text + '.', text + 's.', text + '.le']) expect(() => memberContext(prefix)).not.toThrow();
    }
    // deep nesting and long chains hit the depth/visit limits instead of the stack
    expect(() => memberContext('('.repeat(5000) + 'x' + ')'.repeat(5000) + '.')).not.toThrow();
    expect(memberContext('s' + '.s'.repeat(20000) + '.')?.receiver.type).toBe('unknown');
    expect(() => memberContext('const a = b;\n'.repeat(3000) + 'a.')).not.toThrow();
    console.log(`receiver fuzz: 12000 prefixes in ${(performance.now() - start).toFixed(0)} ms`);
  });

  it('types most member accesses in the HumanEval-X canonical solutions, and types them right', () => {
    let sites = 0;
    let typed = 0;
    let right = 0;
    const wrong: string[] = [];
    for (const task of loadHumanEvalJs()) {
      const text = task.prompt + task.canonical_solution;
      const lexer = new JsLexer();
      let fed = 0;
      for (let i = text.indexOf('.'); i >= 0; i = text.indexOf('.', i + 1)) {
        lexer.append(text.slice(fed, i + 1));
        fed = i + 1;
        const ctx = memberContext(lexer);
        if (!ctx) continue;
        sites++;
        const type = ctx.receiver.type;
        if (type === 'unknown' || apiType(type)!.open) continue;
        typed++;
        const name = /^[\w$]*/.exec(text.slice(i + 1))![0];
        if (lookup(type, name)) right++;
        else wrong.push(`${task.task_id}: ${type}.${name}`);
      }
    }
    console.log(
      `HumanEval-X: ${sites} member accesses, ${typed} typed (${((100 * typed) / sites).toFixed(0)}%), ${right} of them name a member of the inferred type`,
    );
    expect(sites).toBeGreaterThan(400);
    expect(typed / sites).toBeGreaterThan(0.8);
    expect(wrong).toEqual([]);
  });

  it('gives the same answer from an incrementally fed lexer', () => {
    const text = 'const words = "a b".split(" ");\nreturn words.map((w) => w.';
    const lx = new JsLexer();
    for (const ch of text) lx.append(ch);
    expect(memberContext(lx)?.receiver).toEqual({ type: 'string' });
  });
});
