import { Linter } from 'eslint/universal';
import { beforeAll, describe, expect, test } from 'vitest';
import { Rng } from '../util/random';
import { loadJsSyntax, type JsSyntax } from './ast';
import { LineIndex } from './offsets';
import { cpuMs, humanEvalJs } from './testdata';
import { nodeWasmLoader } from './wasm-node';

let syntax: JsSyntax;
beforeAll(async () => {
  syntax = await loadJsSyntax(nodeWasmLoader);
});

function verdict(text: string) {
  const checker = syntax.createPrefixChecker(text);
  try {
    return checker.check();
  } finally {
    checker.delete();
  }
}

/**
 * The reference: espree (ESLint's parser, an exact ECMAScript parser) decides whether a prefix
 * can be completed. It stops at the first error; the prefix is viable when that error is only
 * the end of the input, or an unterminated string/template/comment/regex that closing repairs.
 */
const linter = new Linter({ cwd: '/' });
const PARSE_ONLY: Linter.Config = {
  languageOptions: { ecmaVersion: 2022, sourceType: 'script', parserOptions: { ecmaFeatures: { globalReturn: true } } },
};
function exactViable(text: string, depth = 0): boolean {
  const fatal = linter.verify(text, PARSE_ONLY).find((m) => m.fatal);
  if (!fatal) return true;
  const at = new LineIndex(text).offsetAt(fatal.line, fatal.column);
  const msg = fatal.message;
  if (at >= text.length) return true; // the parser only ran out of input
  const oneLine = !/[\n\r\u2028\u2029]/.test(text.slice(at));
  const closeWith = (...suffixes: string[]) => depth < 4 && suffixes.some((s) => exactViable(text + s, depth + 1));
  if (/Unterminated comment/.test(msg)) return closeWith('*/');
  if (/Unterminated template/.test(msg)) return closeWith('`', '}`');
  if (/Unterminated (regexp|regular expression)/.test(msg)) return oneLine && closeWith('/', ']/', ')/');
  if (/Unterminated string/.test(msg)) return oneLine && closeWith(text[at] ?? '"', `n${text[at] ?? '"'}`);
  if (/Invalid number|Expected number/.test(msg) && /[eE+\-_xXbBoO]$/.test(text)) return closeWith('0');
  if (text.endsWith('..')) return closeWith('.');
  // The offending token reaches the end: it may be the start of a longer one (`!` of `!=`, `o` of `of`).
  const tail = /(?:[\p{L}\p{N}_$]+|[!=<>&|?.*+\-%^]+)$/u.exec(text)?.[0] ?? '';
  return text.length - tail.length <= at && closeWith(...longerTokens(tail));
}

const KEYWORDS =
  'as async await break case catch class const continue debugger default delete do else extends finally for from function get if in instanceof let new of return set static super switch this throw try typeof var void while with yield'.split(
    ' ',
  );
const OPERATORS = '!= !== == === => <= >= << >> >>> >>= <<= && || ?? ?. ... ** **= &&= ||= ??= += -= *= /= %= ^= |= &= ++ --'.split(' ');
function longerTokens(tail: string): string[] {
  return [...KEYWORDS, ...OPERATORS].filter((t) => t.length > tail.length && t.startsWith(tail)).map((t) => `${t.slice(tail.length)} `);
}

describe('a table of prefixes', () => {
  test.each([
    ['empty', ''],
    ['open call', 'foo('],
    ['unclosed string', 'let s = "abc ( ['],
    ['unclosed string ending in a backslash', 'let s = "a\\'],
    ['unclosed template across lines', 'x = `line1\nline2 ${a'],
    ['unclosed comment with brackets', 'let a = 1; /* unclosed ( ] }'],
    ['line comment with brackets', 'let x = 1; // c ) ]'],
    ['unclosed regex', 'x = /ab(c'],
    ['partial keyword', 'function f() { retu'],
    ['partial operator', 'if (i !'],
    ['partial `of`', 'for (const c o'],
    ['partial exponent', 'x = 1e'],
    ['partial spread', 'x = [..'],
    ['partial private name', 'class A { #'],
    ['destructuring parameter', 'function f( {'],
    ['open arrow', 'const f = (a, b) => {\n  if (a'],
    ['open method', 'class A { m() {'],
    ['trailing comma', 'const o = { a: 1, '],
    ['ASI across lines', 'let a = b\nlet c = d'],
  ])('viable: %s', (_, text) => {
    expect(verdict(text)).toEqual({ viable: true, errorAt: null, reason: null });
    expect(exactViable(text)).toBe(true);
  });

  test.each([
    ['stray ) mid-expression', 'const f = (a) => {\n  return a ) + 1', ') + 1'],
    ['mismatched bracket', 'x = (1, 2]', ']'],
    ['mismatched bracket in a template', 'x = `a${b]`', ']'],
    ['extra }', 'if (a) {\n  b();\n}}', '}'],
    ['invented ] before ;', 'let a = [1, 2;', ';'],
    ['call followed by a block', 'f(a, b) {', '{'],
    ['declaration followed by (', 'var current(', '('],
    ['two operators', 'x = 1 +* 2', '*'],
    ['const without a value, then more code', 'const x;\nlet y = 1', ';'],
    ['two strings', 'const s = "abc" "def";', '"abc"'],
    ['JSX', 'const a = 1;\n<div>', '<div>'],
  ])('not viable: %s', (_, text, at) => {
    const v = verdict(text);
    expect(v.viable).toBe(false);
    expect(v.errorAt).toBe(text.lastIndexOf(at));
    expect(exactViable(text)).toBe(false);
    expect(v.reason).toBeTruthy();
  });
});

describe('every prefix of valid programs is viable', () => {
  const own = [
    'const re = /[(\\]]+/g; // a regex with brackets\nconst s = `a ${re.source} b`;\nconsole.log(s, "}", \'(\');\n',
    'class Stack {\n  #items = [];\n  push(x) { this.#items.push(x); return this; }\n  get size() { return this.#items.length; }\n}\n',
    'const fib = (n) => (n < 2 ? n : fib(n - 1) + fib(n - 2));\n/* done */\nlabel: for (const [i, v] of [1, 2].entries()) { if (v > i) continue label; }\n',
    'async function* g(a = 1, ...rest) {\n  try { yield await a ?? rest?.[0]; } catch { } finally { a **= 2; }\n}\n',
  ];
  const programs = [
    ...own,
    ...humanEvalJs()
      .slice(0, 24)
      .map((t) => t.prompt + t.canonical_solution),
  ];

  test(`${programs.length} programs, one character at a time, streaming`, () => {
    let steps = 0;
    const t0 = cpuMs();
    for (const program of programs) {
      const checker = syntax.createPrefixChecker();
      for (const ch of program) {
        checker.push(ch);
        steps++;
        if (!checker.canStillBeValid())
          expect.fail(`rejected ${JSON.stringify(checker.text.slice(-60))}: ${JSON.stringify(checker.check())}`);
      }
      checker.delete();
    }
    console.log(`prefix checker: ${steps} pushes, ${((cpuMs() - t0) / steps).toFixed(3)} ms CPU per push + check`);
  });
});

describe('after an early syntax error, no prefix is viable', () => {
  test.each([
    ['const f = (a) => {\n  return a ) + 1;\n};\nf(1);\n', 'a )'],
    ['let a = [1, 2;\nlet b = 3;\n', '2;'],
    ['if (a) {\n  b();\n}}\nc();\n', '}}'],
    ['const s = "abc" "def";\nconsole.log(s);\n', '"abc" "'],
    ['x = 1 +* 2;\ny = 3;\n', '+*'],
    ['function f() {\n  return [1, 2);\n}\n', '2)'],
  ])('%j', (program, marker) => {
    const bad = program.indexOf(marker) + marker.length; // the first prefix that holds the error
    expect([exactViable(program.slice(0, bad - 1)), exactViable(program.slice(0, bad))]).toEqual([true, false]);
    expect(verdict(program.slice(0, bad - 1)).viable).toBe(true);
    const checker = syntax.createPrefixChecker(program.slice(0, bad - 1));
    for (let i = bad; i <= program.length; i++) {
      expect(verdict(program.slice(0, i)).viable, JSON.stringify(program.slice(0, i))).toBe(false);
      checker.push(program[i - 1] ?? '');
      expect(checker.canStillBeValid()).toBe(false);
    }
    checker.delete();
  });
});

describe('agreement with an exact parser on corrupted HumanEval programs', () => {
  test('no false rejections; few false acceptances', () => {
    const rng = new Rng(7);
    const junk = [
      ')',
      ']',
      '}',
      ' else ',
      ' = ',
      '.',
      ',',
      ' let ',
      ' 5 ',
      '@',
      '#',
      ' function ',
      ' return ',
      ' => ',
      '(',
      '{',
      '[',
      '"',
      '`',
      ' if ',
      ':',
      '?',
      '+',
      ';',
    ];
    const counts = { viable: 0, notViable: 0, falseReject: 0, falseAccept: 0 };
    const rejected: string[] = [];
    for (const task of humanEvalJs().slice(0, 40)) {
      const code = task.prompt + task.canonical_solution;
      const bodyStart = task.prompt.lastIndexOf('*/') + 2;
      for (let k = 0; k < 6; k++) {
        const at = bodyStart + Math.floor(rng.next() * (code.length - bodyStart));
        const j = junk[Math.floor(rng.next() * junk.length)] ?? ')';
        const corrupted = code.slice(0, at) + j + code.slice(at);
        for (const extra of [0, 3, 12, Infinity]) {
          const prefix = corrupted.slice(0, at + j.length + extra);
          const exact = exactViable(prefix);
          const ours = verdict(prefix).viable;
          counts[exact ? 'viable' : 'notViable']++;
          if (exact && !ours) {
            counts.falseReject++;
            rejected.push(prefix);
          }
          if (!exact && ours) counts.falseAccept++;
        }
      }
    }
    console.log(
      'prefix checker vs espree:',
      JSON.stringify(counts),
      `false acceptance ${((100 * counts.falseAccept) / counts.notViable).toFixed(1)}%`,
    );
    expect(rejected).toEqual([]);
    expect(counts.notViable).toBeGreaterThan(400);
    expect(counts.falseAccept / counts.notViable).toBeLessThan(0.12);
  });
});

describe('viableNextTokens', () => {
  test('masks candidate continuations, matching the exact parser', () => {
    const prefix = 'const f = (a, b) => a ';
    const candidates = ['+ b', ')', '=> 1', '* (', ';\n', '}', 'b', '?? 0', '. x', '=== b ? 1 : 2;', '"s"', ''];
    const expected = [true, false, true, true, true, false, false, true, true, true, false, true];
    expect(syntax.viableNextTokens(prefix, candidates)).toEqual(expected);
    expect(candidates.map((c) => exactViable(prefix + c))).toEqual(expected);
  });

  test('a dead prefix has no viable continuation', () => {
    expect(syntax.viableNextTokens('x = ) ', ['1', ';', ''])).toEqual([false, false, false]);
  });

  test('incremental parses give the same tree as parsing from scratch, chunks of any shape', () => {
    const chunks = ['const s = "é', '😀"', ';\r\n', 'if (s) {\n  ', 'f(s,\n\n', '1)', ' }\n', '// 😀 done', '\n'];
    const checker = syntax.createPrefixChecker();
    for (const chunk of chunks) {
      checker.push(chunk);
      const fresh = syntax.parse(checker.text);
      const next = syntax.createPrefixChecker(checker.text);
      expect(checker.check()).toEqual(next.check());
      expect(checker['tree']?.rootNode.toString()).toBe(fresh.rootNode.toString());
      next.delete();
      fresh.delete();
    }
    checker.delete();
  });

  test('speed: per candidate, reusing the parsed prefix', () => {
    const programs = humanEvalJs()
      .slice(0, 40)
      .map((t) => t.prompt + t.canonical_solution);
    const candidates = [' ', ')', '}', 'x', ';', '(', ' = ', 'return', '.', ']', '\n', '"'];
    const t0 = cpuMs();
    let n = 0;
    for (const p of programs) n += syntax.viableNextTokens(p.slice(0, Math.floor(p.length * 0.7)), candidates).length;
    const perCandidate = (cpuMs() - t0) / n;
    console.log(
      `viableNextTokens: ${perCandidate.toFixed(3)} ms CPU per candidate (${n} candidates, prefixes of ~${Math.round((programs.reduce((s, p) => s + p.length, 0) * 0.7) / programs.length)} chars)`,
    );
    expect(perCandidate).toBeLessThan(5);
  });

  test('speed on a long text: incremental parses, checks that skip complete code', () => {
    const doc =
      humanEvalJs()
        .map((t) => t.prompt + t.canonical_solution)
        .join('\n') + 'const tail = (x) => {\n  return x';
    const chunks = [' +', ' 1', ';\n', 'if (x', ') {', ' f(x, [', '1]); }', '\n'];
    const checker = syntax.createPrefixChecker(doc);
    let t0 = cpuMs();
    for (const chunk of chunks) expect(checker.push(chunk).canStillBeValid()).toBe(true);
    const perPush = (cpuMs() - t0) / chunks.length;
    t0 = cpuMs();
    for (const chunk of chunks) syntax.parse(doc + chunk).delete();
    const freshParse = (cpuMs() - t0) / chunks.length;
    // Printed, not asserted: on a shared machine these vary several-fold from run to run.
    console.log(
      `long text (${doc.length} chars): ${perPush.toFixed(2)} ms CPU per push + check, vs ${freshParse.toFixed(2)} ms for a parse from scratch`,
    );
    checker.delete();
  });
});
