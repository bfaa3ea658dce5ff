import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { loadJsSyntax, type JsSyntax, type OutlineNode } from './ast';
import { nodeWasmLoader } from './wasm-node';

let syntax: JsSyntax;
beforeAll(async () => {
  syntax = await loadJsSyntax(nodeWasmLoader);
});

describe('validate', () => {
  test('valid programs have no issues', () => {
    for (const code of [
      '',
      'const f = (a) => a?.b ?? 1;\n',
      'class A { #x = 1; static { this.y = 2; } }\n',
      'for (const [k, v] of Object.entries({})) console.log(`${k}=${v}`);\n',
    ]) {
      expect(syntax.validate(code), code).toEqual({ valid: true, errors: [] });
    }
  });

  test('a stray token is an ERROR naming it, with its range', () => {
    const code = 'const s = "😀é";\nlet y = s ) + 1;\n';
    const { valid, errors } = syntax.validate(code);
    expect(valid).toBe(false);
    expect(errors).toHaveLength(1);
    const [e] = errors;
    expect(e?.kind).toBe('ERROR');
    expect(e?.message).toBe("unexpected ')'");
    expect(e && code.slice(e.start, e.end)).toContain(')'); // UTF-16 offsets despite the emoji
    expect(e?.start).toBeGreaterThan(code.indexOf('\n'));
  });

  test('a token the parser had to invent is a zero-width MISSING node', () => {
    const code = 'let a = [1, 2;\n';
    expect(syntax.validate(code).errors).toEqual([{ kind: 'MISSING', start: 13, end: 13, message: "missing ']'" }]);
    expect(code[13]).toBe(';');
  });

  test('truncated code: the error reaches the end and says so', () => {
    const code = 'function f(a) {\n  return g(a, ';
    const [e] = syntax.validate(code).errors;
    expect(e?.end).toBe(code.trimEnd().length); // the trailing space is not part of it
    expect(e?.message).toMatch(/^unexpected end of input after/);
  });

  test('what the grammar accepts but JavaScript does not: const without a value, JSX', () => {
    const code = 'const a = 1, b;\nconst el = <div>{a}</div>;\nfor (const x of [a]) console.log(x);\n';
    expect(syntax.validate(code).errors).toEqual([
      { kind: 'MISSING', start: code.indexOf('b;') + 1, end: code.indexOf('b;') + 1, message: 'missing initializer in const declaration' },
      { kind: 'ERROR', start: code.indexOf('<div>'), end: code.indexOf(';\nfor'), message: 'JSX is not JavaScript' },
    ]);
  });

  test('an unparsable character is reported where it is', () => {
    const code = 'let a = 1;\nlet b = a # 2;\n';
    const errors = syntax.validate(code).errors;
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.some((e) => e.start <= code.indexOf('#') && e.end > code.indexOf('#'))).toBe(true);
  });
});

describe('outline', () => {
  const count = (n: OutlineNode): number => 1 + n.children.reduce((s, c) => s + count(c), 0);

  test('named nodes with ranges, plus error flags; plain JSON', () => {
    const code = 'const f = (x) => x + 1;\nf(';
    const { root, nodes, complete } = syntax.outline(code);
    expect(JSON.parse(JSON.stringify(root))).toEqual(root);
    expect(complete).toBe(true);
    expect(count(root)).toBe(nodes);
    expect(root).toMatchObject({ type: 'program', start: 0, end: code.length });
    const error = root.children.find((c) => c.error);
    expect(error).toMatchObject({ type: 'ERROR', start: code.lastIndexOf('f(') });
    const arrow = root.children[0]?.children[0]?.children[1];
    expect(arrow).toMatchObject({ type: 'arrow_function', start: code.indexOf('(x)'), end: code.indexOf(';') });
  });

  test('MISSING nodes are kept even when anonymous', () => {
    const { root } = syntax.outline('let a = [1, 2;');
    const flat: OutlineNode[] = [];
    const walk = (n: OutlineNode) => (flat.push(n), n.children.forEach(walk));
    walk(root);
    expect(flat.filter((n) => n.missing).map((n) => [n.type, n.start, n.end])).toEqual([[']', 13, 13]]);
  });

  test('the node budget and depth cap the outline and say what was left out', () => {
    const code = Array.from({ length: 200 }, (_, i) => `const v${i} = [${i}, ${i + 1}];`).join('\n');
    const capped = syntax.outline(code, { maxNodes: 50 });
    expect(capped.nodes).toBe(50);
    expect(count(capped.root)).toBe(50);
    expect(capped.complete).toBe(false);
    expect(capped.root.omitted).toBeGreaterThan(0);
    const shallow = syntax.outline(code, { maxDepth: 1 });
    expect(shallow.root.children.every((c) => c.children.length === 0 && (c.omitted ?? 0) > 0)).toBe(true);
  });
});

describe('wasm loading', () => {
  test('loadJsSyntax is shared: a second call returns the same instance', async () => {
    expect(await loadJsSyntax(nodeWasmLoader)).toBe(syntax);
  });

  test("the browser loader's ?url imports point at the installed wasm files", async () => {
    const { BROWSER_WASM_URLS } = await import('./wasm-browser');
    for (const url of Object.values(BROWSER_WASM_URLS)) {
      // Vite serves node_modules from the project root in dev and tests (`/node_modules/...`).
      expect(url).toMatch(/^\/node_modules\/.+\.wasm$/);
      expect(existsSync(fileURLToPath(new URL(`../..${url}`, import.meta.url))), url).toBe(true);
    }
  });
});
