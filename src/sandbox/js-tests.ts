/**
 * JavaScript test code: finds its `console.assert(...)` call sites (each one is a test) and
 * rewrites them to call the harness instead:
 *
 *   console.assert(EXPR, ...)   ->   __coderl_a(__coderl_b(K), EXPR, ...)
 *
 * `__coderl_b(K)` tells the host that assertion K has started (so an exception while its
 * arguments are evaluated is charged to it), `__coderl_a` records EXPR's truthiness host-side.
 * Both are parameters of the function that wraps the test code (see quickjs.ts), so the program
 * under test can neither reach nor replace them. The rewrite keeps every line where it was.
 *
 * The scan is lexical, not a full parse: it skips comments, strings, template text and regular
 * expression literals (regex vs division by the previous significant character). Test code is
 * trusted suite data, so this is enough; a site is `console.assert` followed by `(`.
 */

export interface AssertSite {
  index: number;
  /** offset of `console` in the test code */
  start: number;
  /** offset just past the `(` */
  argsStart: number;
  /** 1-based line of `console` */
  line: number;
  /** the call's source text, whitespace collapsed, at most 160 characters */
  source: string;
}

const REGEX_BEFORE = new Set('(,=:[!&|?{};+-*%<>~^'.split(''));
const REGEX_KEYWORDS = /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/;

/** 1 for each character that is code, 0 inside comments, strings, template text and regexes. */
export function codeMask(src: string): Uint8Array {
  const mask = new Uint8Array(src.length);
  const braces: number[] = []; // open-brace depth at each `${`, to know where a template resumes
  let depth = 0;
  let last = ''; // previous significant code character
  let i = 0;
  const skipTemplate = (): void => {
    // i is inside template text; stop after the closing backtick or after `${`
    while (i < src.length) {
      const c = src[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        last = '`';
        return;
      } else if (c === '$' && src[i + 1] === '{') {
        braces.push(depth);
        depth++;
        i += 2;
        last = '{';
        return;
      } else i++;
    }
  };
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
      continue;
    }
    if (c === '"' || c === "'") {
      i++;
      while (i < src.length && src[i] !== c && src[i] !== '\n') i += src[i] === '\\' ? 2 : 1;
      i++;
      last = c;
      continue;
    }
    if (c === '`') {
      i++;
      skipTemplate();
      continue;
    }
    if (c === '/' && (last === '' || REGEX_BEFORE.has(last) || REGEX_KEYWORDS.test(src.slice(Math.max(0, i - 8), i).trimEnd()))) {
      i++;
      let inClass = false;
      while (i < src.length && src[i] !== '\n' && (inClass || src[i] !== '/')) {
        if (src[i] === '\\') i++;
        else if (src[i] === '[') inClass = true;
        else if (src[i] === ']') inClass = false;
        i++;
      }
      i++;
      while (i < src.length && /[a-z]/i.test(src[i] as string)) i++;
      last = '/';
      continue;
    }
    if (c === '}' && braces.length && braces[braces.length - 1] === depth - 1) {
      braces.pop();
      depth--;
      i++;
      skipTemplate();
      continue;
    }
    mask[i] = 1;
    if (c === '{') depth++;
    else if (c === '}') depth--;
    if (!/\s/.test(c)) last = c;
    i++;
  }
  return mask;
}

/** Offset of the `)` closing the call whose arguments start at `from`, or -1. */
function closingParen(src: string, mask: Uint8Array, from: number): number {
  let d = 1;
  for (let i = from; i < src.length; i++) {
    if (!mask[i]) continue;
    if (src[i] === '(') d++;
    else if (src[i] === ')' && --d === 0) return i;
  }
  return -1;
}

export function findAssertSites(src: string): AssertSite[] {
  const mask = codeMask(src);
  const sites: AssertSite[] = [];
  const re = /console\s*\.\s*assert\s*\(/g;
  for (const m of src.matchAll(re)) {
    const start = m.index;
    if (!mask[start]) continue;
    const before = src.slice(0, start).trimEnd();
    if (/[\w$.]$/.test(before)) continue; // part of a longer name or a member access
    const argsStart = start + m[0].length;
    const close = closingParen(src, mask, argsStart);
    const text = src.slice(start, close < 0 ? undefined : close + 1).replace(/\s+/g, ' ');
    sites.push({
      index: sites.length,
      start,
      argsStart,
      line: 1 + countNewlines(src, 0, start),
      source: text.length > 160 ? `${text.slice(0, 157)}...` : text,
    });
  }
  return sites;
}

function countNewlines(src: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (src[i] === '\n') n++;
  return n;
}

export const ASSERT_FN = '__coderl_a';
export const BEGIN_FN = '__coderl_b';

/** The test code with every site rewritten to call the harness; lines are preserved. */
export function instrumentTests(src: string, sites: readonly AssertSite[]): string {
  let out = '';
  let at = 0;
  for (const s of sites) {
    const newlines = '\n'.repeat(countNewlines(src, s.start, s.argsStart));
    out += `${src.slice(at, s.start)}${ASSERT_FN}(${newlines}${BEGIN_FN}(${s.index}), `;
    at = s.argsStart;
  }
  return out + src.slice(at);
}
