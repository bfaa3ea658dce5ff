import { Linter } from 'eslint/universal';
import { describe, expect, test } from 'vitest';
import type { Finding } from './findings';
import { lint, toFinding } from './lint';
import { LineIndex } from './offsets';
import { RULES, eslintConfig } from './rules';

/** The findings of one rule, each as the text it covers. */
function hits(code: string, ruleId: string, findings = lint(code).completion): string[] {
  return findings.filter((f) => f.ruleId === ruleId).map((f) => code.slice(f.start, f.end));
}

/** The one finding of `ruleId`, checked to start where `locator` starts and to begin with `text`. */
function expectHit(code: string, ruleId: string, locator: string, text: string): Finding {
  const found = lint(code).completion.filter((f) => f.ruleId === ruleId);
  expect(found, `${ruleId} in ${JSON.stringify(code)}`).toHaveLength(1);
  const f = found[0] as Finding;
  expect(code.indexOf(locator)).toBeGreaterThanOrEqual(0);
  expect({ start: f.start, text: code.slice(f.start, f.start + text.length) }).toEqual({ start: code.indexOf(locator), text });
  return f;
}

describe('rule hits with exact offsets', () => {
  test.each([
    ['no-undef', 'const x = 1;\nfoo(x);\n', 'foo', 'foo'],
    ['eqeqeq', 'const f = (a, b) => a == b;\nf(1, 2);\n', '==', '=='],
    ['no-unreachable', 'function f() {\n  return 1;\n  f();\n}\nf();\n', 'f();', 'f();'],
    ['no-self-compare', 'const f = (a) => a === a;\nf(1);\n', 'a === a', 'a === a'],
    ['no-dupe-keys', 'const o = { a: 1, b: 2, a: 3 };\nconsole.log(o);\n', 'a: 3', 'a'],
    ['no-unused-vars', 'function f(a) {\n  const unused = a;\n  return a;\n}\nf(1);\n', 'unused', 'unused'],
    ['no-shadow', 'const n = 1;\nfunction f() {\n  const n = 2;\n  return n;\n}\nf(n);\n', 'n = 2', 'n'],
    ['no-eval', 'eval("1");\n', 'eval', 'eval'],
    ['no-new-func', 'const g = new Function("return 1");\ng();\n', 'new Function', 'new Function'],
    ['no-empty', 'function f(x) {\n  if (x) {}\n}\nf(1);\n', '{}', '{}'],
    ['no-constant-condition', 'function f() {\n  if (1 > 0) return 1;\n}\nf();\n', '1 > 0', '1 > 0'],
    ['no-fallthrough', 'function f(x) {\n  switch (x) {\n    case 1: x++;\n    case 2: return x;\n  }\n}\nf(1);\n', 'case 2', 'case 2'],
    ['no-unsafe-finally', 'function f() {\n  try { return 1; } finally { return 2; }\n}\nf();\n', 'return 2;', 'return 2;'],
    ['no-redeclare', 'var a = 1;\nvar a = 2;\nconsole.log(a);\n', 'a = 2', 'a'],
    ['max-params', 'function f(a, b, c, d, e, g) { return a + b + c + d + e + g; }\nf();\n', 'function f(', 'function f('],
    ['no-var', 'var x = 1;\nconsole.log(x);\n', 'var x = 1;', 'var x = 1;'],
  ])('%s', (ruleId, code, locator, text) => {
    expectHit(code, ruleId, locator, text);
  });

  test('severities follow the table: no-undef is an error, eqeqeq a warning, no-var info', () => {
    const found = lint('var x = y == 1;\nconsole.log(x);\n').completion;
    const severity = (id: string) => found.find((f) => f.ruleId === id)?.severity;
    expect([severity('no-undef'), severity('eqeqeq'), severity('no-var')]).toEqual(['error', 'warning', 'info']);
  });

  test('complexity over 10 and nesting over 4 are reported, 10 and 4 are not', () => {
    const ifs = (n: number) => Array.from({ length: n }, (_, i) => `  if (x === ${i}) return ${i};\n`).join('');
    expect(hits(`function f(x) {\n${ifs(9)}  return -1;\n}\nf(1);\n`, 'complexity')).toEqual([]);
    expect(hits(`function f(x) {\n${ifs(10)}  return -1;\n}\nf(1);\n`, 'complexity')).toEqual(['function f']);
    const nest = (n: number) => 'function g(x) {\n' + 'if (x) {\n'.repeat(n) + 'x++;\n' + '}\n'.repeat(n) + '}\ng(1);\n';
    expect(hits(nest(4), 'max-depth')).toEqual([]);
    expect(hits(nest(5), 'max-depth')).toEqual(['if']);
  });

  test('ES2022 built-ins and console are defined; browser and Node globals are not', () => {
    const code = 'console.log(Math.max(1, 2), globalThis, new Map(), Promise.resolve(), new WeakRef({}), 1n);\n';
    expect(lint(code).completion).toEqual([]);
    expect(hits('window.alert(require("fs"), process.env, document);\n', 'no-undef')).toEqual(['window', 'require', 'process', 'document']);
  });

  test('inline eslint-disable comments are ignored and flagged', () => {
    const code = '/* eslint-disable */\nfoo();\n';
    const found = lint(code).completion;
    expect(found.map((f) => f.ruleId).sort()).toEqual(['eslint/inline-config', 'no-undef']);
  });

  test('every rule in the table exists in this ESLint and the config validates', () => {
    const linter = new Linter({ cwd: '/' });
    expect(() => linter.verify('', eslintConfig())).not.toThrow();
    expect(Object.keys(RULES).length).toBeGreaterThan(60);
  });
});

describe('offsets: CRLF, non-ASCII, BOM', () => {
  const cases: [string, string][] = [
    ['CRLF', 'const s = "a";\r\nconsole.log(s);\r\nif (s == 1) foo();\r\n'],
    ['lone CR', 'const s = "a";\rif (s == 1) foo();\r'],
    ['accents and emoji', 'const s = "héllo 😀😀";\nif (s == "😀") foo("é");\n'],
    ['emoji on the same line', 'const s = "😀"; if (s == 1) foo();\n'],
    ['U+2028 in a string', 'const s = "a\u2028b";\nif (s == 1) foo();\n'],
    ['BOM', '\ufeffconst s = 1;\nif (s == 1) foo();\n'],
    ['CRLF + emoji + BOM', '\ufeffconst s = "😀";\r\n\r\nif (s == "é") foo();\r\n'],
  ];
  test.each(cases)('%s', (_, code) => {
    const found = lint(code).completion;
    expect(hits(code, 'no-undef', found)).toEqual(['foo']);
    expect(hits(code, 'eqeqeq', found)).toEqual(['==']);
    expect(found.find((f) => f.ruleId === 'no-undef')?.start).toBe(code.indexOf('foo'));
  });

  test.each(cases)("%s: agrees with the ranges in ESLint's own suggestion fixes", (_, code) => {
    // eqeqeq's suggestion carries a fix with a range in ESLint's own offsets (no BOM): an
    // independent check of the line/column conversion.
    const linter = new Linter({ cwd: '/' });
    const config = { languageOptions: { ecmaVersion: 2022 as const }, rules: { eqeqeq: 'error' as const } };
    const [message] = linter.verify(code, config);
    const fix = message?.suggestions?.[0]?.fix;
    expect(fix).toBeDefined();
    const index = new LineIndex(code);
    const f = toFinding(message as Linter.LintMessage, index);
    expect([f.start, f.end]).toEqual((fix?.range ?? [0, 0]).map((o) => o + index.bom));
  });

  test('LineIndex positions round-trip on every offset', () => {
    const code = '\ufeffa\r\nbé😀\rc\u2028d\n\ne';
    const index = new LineIndex(code);
    for (let o = 1; o <= code.length; o++) {
      const { line, column } = index.positionAt(o);
      expect(index.offsetAt(line, column)).toBe(o);
    }
    expect(index.lineCount).toBe(6);
  });
});

describe('parse errors', () => {
  test('a syntax error is one fatal finding at the offending token', () => {
    const code = 'const f = (x) => {\n  return x ) + 1;\n};\n';
    const report = lint(code);
    expect(report.findings).toHaveLength(1);
    expect(report.fatal).toMatchObject({ ruleId: 'parse-error', severity: 'error', source: 'eslint' });
    expect(code.slice(report.fatal?.start, report.fatal?.end)).toBe(')');
    expect(report.fatal?.message).toMatch(/Unexpected token/);
  });

  test('truncated code: the error sits at the end', () => {
    const code = 'function f(a) {\n  return [a, "é';
    const report = lint(code);
    expect(report.fatal?.message).toMatch(/Unterminated string/);
    expect(report.fatal?.start).toBe(code.lastIndexOf('"'));
    const open = lint('function f(a) {\n  return a;\n');
    expect(open.fatal).toMatchObject({ start: open.program.length, end: open.program.length });
  });
});

describe('completion in the context of its prompt', () => {
  const prompt = '/* Add one. */\nvar unusedInPrompt = 1;\nconst addOne = (x) => {\n';

  test('prompt names are in scope; findings are split by range and re-based', () => {
    const code = '  if (x == 0) return 1;\n  return x + 1;\n}\n';
    const report = lint(code, { prompt });
    expect(report.findings.map((f) => f.ruleId)).toEqual(['no-var', 'eqeqeq']);
    expect(report.completion).toHaveLength(1);
    const [eq] = report.completion;
    expect(code.slice(eq?.start, eq?.end)).toBe('==');
    expect(report.program.slice(report.findings[1]?.start, report.findings[1]?.end)).toBe('==');
  });

  test('complexity of a function whose head is in the prompt counts for the completion', () => {
    const code = Array.from({ length: 11 }, (_, i) => `  if (x === ${i}) return ${i};\n`).join('') + '  return -1;\n}\n';
    const report = lint(code, { prompt });
    const complex = report.completion.find((f) => f.ruleId === 'complexity');
    expect(complex).toBeDefined();
    expect(report.findings.find((f) => f.ruleId === 'complexity')?.start).toBeLessThan(prompt.length);
    expect(complex?.start).toBe(0); // clipped to the completion
    expect(complex?.end).toBe(code.length - 1); // the function ends at its `}`
  });
});
