/**
 * Parameter types from the comment in front of a function: JSDoc tags (`@param {string} s`) and,
 * for prompts in the HumanEval style that carry no types, the examples they show — a call of the
 * function (`>>> strlen('abc')`) or an assignment to the parameter (`Input: arr = [4, -4, 4]`).
 * Examples come back as source text; the caller types them (receiver.ts types literals).
 */
import { UNKNOWN, type TypeName, type ValueType } from './api-graph';
import { lexJs, type JsToken } from './js-lexer';

/** The type expression of `@param {T} name` (or `@param name {T}`, `@arg`, `[name]`) in a comment, or undefined. */
export function jsdocParamType(comment: string, name: string): string | undefined {
  const re = /@(?:param|arg|argument)\s*(?:\{([^}]*)\}\s*\[?\s*([A-Za-z_$][\w$]*)|([A-Za-z_$][\w$]*)\s*\{([^}]*)\})/g;
  for (let m = re.exec(comment); m !== null; m = re.exec(comment)) {
    if (m[2] === name) return m[1]!;
    if (m[3] === name) return m[4]!;
  }
  return undefined;
}

/** The type expression of `@type {T}` in a comment, or undefined. */
export function jsdocTypeTag(comment: string): string | undefined {
  return /@type\s*\{([^}]*)\}/.exec(comment)?.[1];
}

const JSDOC_NAMES: Record<string, TypeName> = {
  string: 'string',
  number: 'number',
  int: 'number',
  integer: 'number',
  float: 'number',
  boolean: 'boolean',
  bool: 'boolean',
  array: 'array',
  object: 'object',
  function: 'function',
  regexp: 'RegExp',
  map: 'Map',
  set: 'Set',
};

/** A JSDoc type expression as a ValueType (`string`, `number[]`, `Array<string>`, `Map<K, V>`, `?string`); unions of one type only. */
export function parseJsdocType(expr: string): ValueType {
  const e = expr.trim().replace(/^[?!]/, '').replace(/=$/, '').trim();
  if (e.includes('|')) {
    const parts = e
      .split('|')
      .map((x) => x.trim())
      .filter((x) => x !== 'null' && x !== 'undefined');
    const types = parts.map(parseJsdocType);
    return types.length > 0 && types.every((x) => x.type === types[0]!.type && x.element === types[0]!.element) ? types[0]! : UNKNOWN;
  }
  const list = /^(.+)\[\]$/.exec(e) ?? /^Array\.?<(.+)>$/i.exec(e);
  if (list) return { type: 'array', element: parseJsdocType(list[1]!).type };
  const generic = /^(\w+)\.?</.exec(e);
  const name = JSDOC_NAMES[(generic ? generic[1]! : e).toLowerCase()];
  if (name === 'array') return { type: 'array', element: 'unknown' };
  return name ? { type: name } : UNKNOWN;
}

/** Most example snippets looked at per comment (bounds the cost on long prompts). */
const MAX_EXAMPLES = 16;

/**
 * Source texts a comment shows for parameter `index` (named `name`) of function `fn`: the
 * argument at `index` of each call `fn(...)`, and the right-hand side of each `name = ...`.
 */
export function exampleArgs(comment: string, fn: string | null, name: string, index: number): string[] {
  const body = comment.replace(/^\/[*/]+|\*\/$/g, '');
  const toks = lexJs(body);
  const out: string[] = [];
  for (let i = 0; i < toks.length && out.length < MAX_EXAMPLES; i++) {
    const k = toks[i]!;
    if (k.kind !== 'ident' || toks[i - 1]?.text === '.') continue;
    const next = toks[i + 1];
    if (k.text === fn && next?.text === '(') {
      const arg = splitUntilClose(toks, i + 2)[index];
      if (arg) out.push(body.slice(arg[0], arg[1]));
    } else if (k.text === name && next?.text === '=' && next.kind === 'punct') {
      const [first] = splitUntilClose(toks, i + 2, true);
      if (first) out.push(body.slice(first[0], first[1]));
    }
  }
  return out;
}

const OPERAND = new Set(['ident', 'number', 'string', 'template', 'regex']);

/** Two operands side by side (`6 the`, `] should`): no JavaScript expression continues across them. */
function juxtaposed(a: JsToken, b: JsToken): boolean {
  const aEnds = OPERAND.has(a.kind) || (a.kind === 'punct' && (a.text === ')' || a.text === ']'));
  return (
    aEnds &&
    OPERAND.has(b.kind) &&
    !['in', 'instanceof', 'of'].includes(b.text) &&
    !['return', 'typeof', 'new', 'void', 'await'].includes(a.text)
  );
}

/**
 * Character ranges of the comma-separated items from token `from` up to the first unmatched
 * closer or two operands side by side; with `oneLine`, the first item also ends at a line break.
 */
function splitUntilClose(toks: readonly JsToken[], from: number, oneLine = false): [number, number][] {
  const out: [number, number][] = [];
  let depth = 0;
  let start = -1;
  let end = -1;
  for (let i = from; i < toks.length; i++) {
    const k = toks[i]!;
    if (oneLine && depth === 0 && i > from && k.nl) break;
    if (i > from && juxtaposed(toks[i - 1]!, k)) break; // `[1, 2] the output`: prose after the example
    if (k.kind === 'punct') {
      if (k.text === '(' || k.text === '[' || k.text === '{') depth++;
      else if (k.text === ')' || k.text === ']' || k.text === '}') {
        if (--depth < 0) break;
      } else if (depth === 0 && k.text === ',') {
        if (start >= 0) out.push([start, end]);
        if (oneLine) return out;
        start = -1;
        continue;
      }
    }
    if (start < 0) start = k.start;
    end = k.end;
  }
  if (start >= 0) out.push([start, end]);
  return out;
}
