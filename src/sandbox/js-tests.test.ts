import { describe, expect, test } from 'vitest';
import { codeMask, findAssertSites, instrumentTests } from './js-tests';
import { scanTampering } from './tamper-scan';

const code = (src: string): string => [...codeMask(src)].map((m, i) => (m ? src[i] : '_')).join('');

describe('assertion sites', () => {
  test('each console.assert( call is a site, with its line; comments, strings, templates and regexes are skipped', () => {
    const src = [
      'const t = () => {', // 1
      '  console.assert(f(1) === 2)', // 2
      '  // console.assert(false)', // 3
      '  const s = "console.assert(x)"; const r = /console.assert(/', // 4
      '  console', // 5
      '    .assert(', // 6
      '      g(`${h(1)} console.assert(`) === 3)', // 7
      '  /* console.assert(0) */ myconsole.assert(1); x.console.assert(2)', // 8
      '  for (let i = 0; i < 3; i++) console.assert(i / 2 < 2, "msg")', // 9
      '}',
    ].join('\n');
    const sites = findAssertSites(src);
    expect(sites.map((s) => s.line)).toEqual([2, 5, 9]);
    expect(sites[0]!.source).toBe('console.assert(f(1) === 2)');
    expect(sites[1]!.source).toBe('console .assert( g(`${h(1)} console.assert(`) === 3)');
  });

  test('the rewrite keeps every line in place and calls the harness', () => {
    const src = 'console.assert(a)\nconsole\n.assert(\nb, "m")\n  console.assert()\n';
    const out = instrumentTests(src, findAssertSites(src));
    expect(out.split('\n')).toHaveLength(src.split('\n').length);
    expect(out).toBe('__coderl_a(__coderl_b(0), a)\n__coderl_a(\n__coderl_b(1), \nb, "m")\n  __coderl_a(__coderl_b(2), )\n');
  });

  test('the code mask follows nested templates and tells regexes from division', () => {
    expect(code('a = `x${`y${z}`}w` + 1')).toBe('a = ________z_____ + 1');
    expect(code('x = a / b / c; y = /re/g.test(s)')).toBe('x = a / b / c; y = _____.test(s)');
    expect(code("return /a'b/.test(s) ? 'q' : 1")).toBe('return _____.test(s) ? ___ : 1');
  });
});

describe('static tampering scan', () => {
  test('finds writes and deletes on built-ins in code only', () => {
    expect(scanTampering('}\nObject.prototype.toJSON = () => 1')).toEqual({ line: 2, text: 'Object.prototype.toJSON =' });
    expect(scanTampering('  delete Array.prototype.join\n}')?.line).toBe(1);
    expect(scanTampering('String.prototype[Symbol.iterator] = f')).toBeDefined();
    expect(scanTampering('Math.max ||= f')).toBeDefined();
  });

  test('leaves ordinary code alone', () => {
    for (const ok of [
      'const n = Math.max(a, b) === 3',
      'if (Object.keys(o).length == 2) x = JSON.stringify(o)',
      '// Array.prototype.map = 1',
      'const s = "JSON.stringify = 1"',
      'obj.Array.x = 1; myJSON.stringify = 2',
      'const f = (a) => Array.from(a).map((x) => x * 2)',
    ])
      expect(scanTampering(ok), ok).toBeUndefined();
  });
});
