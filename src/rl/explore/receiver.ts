/**
 * Receiver-type inference for the text right before a member-access dot, for API-guided decoding.
 *
 * `memberContext(prefix)` answers: does `prefix` end right after `receiver.` (or `receiver?.`),
 * possibly partway through a member name, and if so what is the receiver's type? It walks the
 * tokens of js-lexer.ts backwards (a synchronous hand lexer rather than tree-sitter: see the
 * note at the top of js-lexer.ts — it runs once per sequence per decode step). Types come from:
 *
 * - literals: `"a".`, `` `t`. ``, `[1, 2].`, `(3).`, `3..`, `/re/.`, `true.`
 * - namespaces: `Math.`, `JSON.`, `Object.`, `Array.`, `Number.`, `String.`
 * - member chains through the API graph: `s.split(",").` -> array of string, `a.map(f).` -> array,
 *   `s.trim().` -> string, `words[0].` -> the element type, `new Map().` -> Map
 * - variables, looked up backwards with closed blocks skipped (a rough lexical scope):
 *   `const/let/var x = <expr>` (and plain assignments), `for (const x of <array>)`, arrow/function
 *   parameters of array callbacks (`words.map((w) => w.` types `w` as the element of `words`), and
 *   parameters documented in the comment before their function: JSDoc (`@param {string} s`), or
 *   the examples of HumanEval-style prompts (`>>> strlen('abc')`, `Input: arr = [1, 2]`; doc-types.ts).
 *
 * Anything else is `unknown`. The walk is bounded (recursion depth and a token-visit budget), so
 * arbitrary text costs little and never throws.
 */
import { UNKNOWN, memberResult, type TypeName, type ValueType } from './api-graph';
import { exampleArgs, jsdocParamType, jsdocTypeTag, parseJsdocType } from './doc-types';
import { JsLexer, lexJs, type JsToken } from './js-lexer';

/** A member access at the end of a prefix: `<receiver>.<partial>`. */
export interface MemberContext {
  /** the inferred type of the expression before the dot */
  receiver: ValueType;
  /** identifier characters already typed after the dot ('' right after it) */
  partial: string;
  /** character offset of the `.` (or of the `?` of `?.`) */
  dot: number;
  /** `?.` rather than `.` */
  optional: boolean;
}

/** Token visits one inference may spend before it gives up with `unknown`. */
export const VISIT_BUDGET = 20_000;
const MAX_DEPTH = 32;

const t = (type: TypeName): ValueType => ({ type });
const STR = t('string');
const NUM = t('number');
const BOOL = t('boolean');

const KEYWORDS = new Set([
  'break',
  'case',
  'catch',
  'class',
  'const',
  'continue',
  'debugger',
  'default',
  'delete',
  'do',
  'else',
  'export',
  'extends',
  'finally',
  'for',
  'function',
  'if',
  'import',
  'in',
  'instanceof',
  'new',
  'return',
  'super',
  'switch',
  'this',
  'throw',
  'try',
  'typeof',
  'var',
  'void',
  'while',
  'with',
  'yield',
  'let',
  'await',
  'null',
  'true',
  'false',
  'of',
]);
/** Keywords followed by a parenthesised *expression* (not a statement head like `if (`). */
const EXPR_KEYWORDS = new Set([
  'return',
  'typeof',
  'void',
  'await',
  'yield',
  'case',
  'in',
  'of',
  'delete',
  'throw',
  'else',
  'do',
  'instanceof',
]);
const GLOBAL_VALUES: Record<string, ValueType> = {
  Math: t('Math'),
  JSON: t('JSON'),
  Object: t('Object'),
  Array: t('Array'),
  Number: t('Number'),
  String: t('String'),
  NaN: NUM,
  Infinity: NUM,
  undefined: t('undefined'),
};
const GLOBAL_CALLS: Record<string, ValueType> = {
  String: STR,
  Number: NUM,
  parseInt: NUM,
  parseFloat: NUM,
  Boolean: BOOL,
  isNaN: BOOL,
  isFinite: BOOL,
  Array: { type: 'array', element: 'unknown' },
  Object: t('object'),
  RegExp: t('RegExp'),
};
const CONSTRUCTED: Record<string, ValueType> = {
  Map: t('Map'),
  Set: t('Set'),
  RegExp: t('RegExp'),
  Object: t('object'),
  String: STR,
  Number: NUM,
  Boolean: BOOL,
  Array: { type: 'array', element: 'unknown' },
};
/** Callback parameter types of higher-order methods: per receiver type, per method, per parameter. */
type ParamRef = 'element' | 'number' | 'string' | 'receiver' | 'unknown';
const ITERATE: ParamRef[] = ['element', 'number', 'receiver'];
const CALLBACK_PARAMS: Partial<Record<TypeName, Record<string, ParamRef[]>>> = {
  array: {
    map: ITERATE,
    filter: ITERATE,
    forEach: ITERATE,
    some: ITERATE,
    every: ITERATE,
    find: ITERATE,
    findIndex: ITERATE,
    findLast: ITERATE,
    findLastIndex: ITERATE,
    flatMap: ITERATE,
    reduce: ['unknown', 'element', 'number', 'receiver'],
    reduceRight: ['unknown', 'element', 'number', 'receiver'],
    sort: ['element', 'element'],
    toSorted: ['element', 'element'],
  },
  string: { replace: ['string'], replaceAll: ['string'] },
  Map: { forEach: ['unknown', 'unknown', 'receiver'] },
  Set: { forEach: ['unknown', 'unknown', 'receiver'] },
};
const COMPARE = new Set(['==', '===', '!=', '!==', '<', '>', '<=', '>=']);
const ARITH = new Set(['-', '*', '/', '%', '**', '&', '|', '^', '<<', '>>', '>>>']);
const ASSIGN = new Set(['=', '+=', '-=', '*=', '/=', '%=', '**=', '<<=', '>>=', '>>>=', '&=', '|=', '^=', '&&=', '||=', '??=']);

/**
 * The member-access context at the end of `prefix` (a string, or a lexer already fed the text), or
 * null when the text does not end right after a `.`/`?.` plus optional identifier characters, in
 * code (not in a string, comment, template text or regex). A receiver that cannot be typed is
 * `{type: 'unknown'}`.
 */
export function memberContext(prefix: string | JsLexer): MemberContext | null {
  const lexer = typeof prefix === 'string' ? lexed(prefix) : prefix;
  const site = memberSite(lexer);
  if (!site) return null;
  const receiver = new Inference(lexer.tokens).receiverBefore(site.dotIndex);
  if (!receiver) return null;
  return { receiver, partial: site.partial, dot: site.dot, optional: site.optional };
}

/** Where the member access at the end of the lexed text is: the dot token's index and offset, and the partial name. */
export function memberSite(lexer: JsLexer): { dotIndex: number; dot: number; partial: string; optional: boolean } | null {
  const toks = lexer.tokens;
  const n = toks.length;
  const last = toks[n - 1];
  if (!last || last.end !== lexer.source.length) return null;
  const isDot = (k: JsToken | undefined) => k !== undefined && k.kind === 'punct' && (k.text === '.' || k.text === '?.');
  if (isDot(last)) return { dotIndex: n - 1, dot: last.start, partial: '', optional: last.text === '?.' };
  const dot = toks[n - 2];
  if (last.kind === 'ident' && isDot(dot) && dot!.end === last.start)
    return { dotIndex: n - 2, dot: dot!.start, partial: last.text, optional: dot!.text === '?.' };
  return null;
}

/** The receiver's type name at the end of `prefix` ('unknown' when it is not a member access or cannot be typed). */
export function inferReceiver(prefix: string): TypeName | 'unknown' {
  return memberContext(prefix)?.receiver.type ?? 'unknown';
}

function lexed(text: string): JsLexer {
  const lx = new JsLexer();
  lx.append(text);
  return lx;
}

/** One backward walk over a token list; holds the budget and recursion depth. */
class Inference {
  private visits = 0;
  /** recursion depth (public so a nested inference over a snippet continues the count) */
  depth = 0;

  constructor(private readonly toks: readonly JsToken[]) {}

  /** Type of the expression ending just before the dot at `dotIndex`; null when no expression ends there. */
  receiverBefore(dotIndex: number): ValueType | null {
    const r = this.exprEndingAt(this.prev(dotIndex));
    return r ? r.type : null;
  }

  // --- token helpers ---------------------------------------------------------------------

  private prev(i: number): number {
    i--;
    while (i >= 0 && this.toks[i]!.kind === 'comment') i--;
    return i;
  }

  private next(i: number): number {
    i++;
    while (i < this.toks.length && this.toks[i]!.kind === 'comment') i++;
    return i;
  }

  private punct(i: number, text: string): boolean {
    const k = this.toks[i];
    return k !== undefined && k.kind === 'punct' && k.text === text;
  }

  private word(i: number, text?: string): boolean {
    const k = this.toks[i];
    return k !== undefined && k.kind === 'ident' && (text === undefined ? !KEYWORDS.has(k.text) : k.text === text);
  }

  private isDot(i: number): boolean {
    return this.punct(i, '.') || this.punct(i, '?.');
  }

  private isDecl(i: number): boolean {
    return this.word(i, 'const') || this.word(i, 'let') || this.word(i, 'var');
  }

  /** Whether the token at i can end an expression (so a following `[`/`+` is postfix/binary). */
  private endsExpr(i: number): boolean {
    const k = this.toks[i];
    if (!k) return false;
    if (k.kind === 'ident') return !KEYWORDS.has(k.text) || ['this', 'super', 'null', 'true', 'false'].includes(k.text);
    if (k.kind === 'template') return k.part === 'full' || k.part === 'tail';
    if (k.kind === 'punct') return k.text === ')' || k.text === ']';
    return k.kind !== 'comment';
  }

  private spent(): boolean {
    return ++this.visits > VISIT_BUDGET;
  }

  /** Index of the opener matching the closer at j, or -1. */
  private matchBack(j: number): number {
    let depth = 0;
    for (let i = j; i >= 0; i--) {
      if (this.spent()) return -1;
      const k = this.toks[i]!;
      if (k.kind !== 'punct') continue;
      if (k.text === ')' || k.text === ']' || k.text === '}') depth++;
      else if (k.text === '(' || k.text === '[' || k.text === '{') if (--depth === 0) return pairs(k.text, this.toks[j]!.text) ? i : -1;
    }
    return -1;
  }

  /** Index of the closer matching the opener at i (not beyond `limit`), or -1. */
  private matchForward(i: number, limit = this.toks.length): number {
    let depth = 0;
    for (let j = i; j < limit; j++) {
      if (this.spent()) return -1;
      const k = this.toks[j]!;
      if (k.kind !== 'punct') continue;
      if (k.text === '(' || k.text === '[' || k.text === '{') depth++;
      else if (k.text === ')' || k.text === ']' || k.text === '}') if (--depth === 0) return pairs(this.toks[i]!.text, k.text) ? j : -1;
    }
    return -1;
  }

  private guarded<T>(fallback: T, f: () => T): T {
    if (this.depth >= MAX_DEPTH || this.spent()) return fallback;
    this.depth++;
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  // --- expressions -----------------------------------------------------------------------

  /** The postfix expression (primary plus member/call/index chain) ending at token j, or null. */
  private exprEndingAt(j: number): { type: ValueType; start: number } | null {
    if (j < 0) return null;
    return this.guarded({ type: UNKNOWN, start: j }, () => {
      // out of depth or budget: an expression we cannot type
      const k = this.toks[j]!;
      switch (k.kind) {
        case 'number':
          return { type: NUM, start: j };
        case 'string':
          return { type: STR, start: j };
        case 'regex':
          return { type: t('RegExp'), start: j };
        case 'template':
          if (k.part === 'full') return { type: STR, start: j };
          return k.part === 'tail' ? { type: STR, start: this.templateStart(j) } : null;
        case 'ident':
          return this.identExpr(j);
        case 'punct':
          if (k.text === ')') return this.callOrParens(j);
          if (k.text === ']') return this.indexOrArray(j);
          return null;
        default:
          return null;
      }
    });
  }

  private identExpr(j: number): { type: ValueType; start: number } | null {
    const name = this.toks[j]!.text;
    const p = this.prev(j);
    if (this.isDot(p)) {
      const r = this.exprEndingAt(this.prev(p));
      return r ? { type: memberResult(r.type, name, false), start: r.start } : null;
    }
    if (name === 'true' || name === 'false') return { type: BOOL, start: j };
    if (name === 'this' || name === 'super' || name === 'null') return { type: UNKNOWN, start: j };
    if (KEYWORDS.has(name)) return null;
    const global = GLOBAL_VALUES[name];
    if (global) return { type: global, start: j };
    return { type: this.lookupVariable(name, j), start: j };
  }

  private callOrParens(j: number): { type: ValueType; start: number } | null {
    const o = this.matchBack(j);
    if (o < 0) return null;
    const c = this.prev(o);
    if (this.word(c)) {
      const name = this.toks[c]!.text;
      const pc = this.prev(c);
      if (this.isDot(pc)) {
        const r = this.exprEndingAt(this.prev(pc));
        return r ? { type: memberResult(r.type, name, true), start: r.start } : null;
      }
      if (this.word(pc, 'new')) return { type: CONSTRUCTED[name] ?? UNKNOWN, start: pc };
      if (this.word(pc, 'function')) return null; // `function f(x)`: a declaration head
      return { type: GLOBAL_CALLS[name] ?? UNKNOWN, start: c };
    }
    const kw = this.toks[c];
    if (kw?.kind === 'ident' && KEYWORDS.has(kw.text) && !EXPR_KEYWORDS.has(kw.text)) return null; // if (...) / while (...)
    if (c >= 0 && this.endsExpr(c) && !(kw?.kind === 'ident' && KEYWORDS.has(kw.text))) {
      const callee = this.exprEndingAt(c); // f()(x), a[0](x), `tag`(x)
      return { type: UNKNOWN, start: callee ? callee.start : c };
    }
    return { type: this.typeOfRange(this.next(o), this.prev(j)), start: o };
  }

  private indexOrArray(j: number): { type: ValueType; start: number } | null {
    const o = this.matchBack(j);
    if (o < 0) return null;
    const c = this.prev(o);
    if (this.endsExpr(c)) {
      const obj = this.exprEndingAt(c);
      if (!obj) return null;
      return { type: indexed(obj.type), start: obj.start };
    }
    return { type: { type: 'array', element: this.elementType(o, j) }, start: o };
  }

  /** Start index of the template literal whose tail is at j. */
  private templateStart(j: number): number {
    let open = 0;
    for (let i = j; i >= 0; i--) {
      const k = this.toks[i]!;
      if (k.kind !== 'template') continue;
      if (k.part === 'tail') open++;
      else if (k.part === 'head' && --open === 0) return i;
    }
    return j;
  }

  /** Common element type of the array literal between brackets o and j ('unknown' when mixed or empty). */
  private elementType(o: number, j: number): TypeName | 'unknown' {
    let common: TypeName | 'unknown' | null = null;
    for (const [a, b] of this.segments(this.next(o), this.prev(j), ',').slice(0, 32)) {
      if (this.punct(a, '...')) return 'unknown';
      const e = this.typeOfRange(a, b).type;
      if (common !== null && e !== common) return 'unknown';
      common = e;
    }
    return common ?? 'unknown';
  }

  /** Ranges [a, b] of the tokens a..b split at top-level `sep` tokens (separators excluded). */
  private segments(a: number, b: number, sep: string, binaryOnly = false): [number, number][] {
    const out: [number, number][] = [];
    let depth = 0;
    let from = a;
    for (let i = a; i <= b; i++) {
      if (this.spent()) break;
      const k = this.toks[i]!;
      if (k.kind === 'punct') {
        if (k.text === '(' || k.text === '[' || k.text === '{') depth++;
        else if (k.text === ')' || k.text === ']' || k.text === '}') depth--;
        else if (depth === 0 && k.text === sep && (!binaryOnly || this.endsExpr(this.prev(i)))) {
          out.push([from, this.prev(i)]);
          from = this.next(i);
        }
      } else if (k.kind === 'template') {
        if (k.part === 'head') depth++;
        else if (k.part === 'tail') depth--;
      }
    }
    if (from <= b) out.push([from, b]);
    return out;
  }

  /** Type of the whole expression spanning tokens a..b (rough operator-precedence rules). */
  private typeOfRange(a: number, b: number): ValueType {
    if (a < 0 || a > b || b >= this.toks.length) return UNKNOWN;
    return this.guarded(UNKNOWN, () => {
      const ops = this.topLevelOps(a, b);
      if (ops.lastComma >= 0) return this.typeOfRange(this.next(ops.lastComma), b);
      if (ops.firstAssign >= 0) return this.typeOfRange(this.next(ops.firstAssign), b);
      if (ops.ternary || ops.logical) return UNKNOWN;
      if (ops.compare) return BOOL;
      if (ops.plus) {
        const types = this.segments(a, b, '+', true).map(([x, y]) => this.typeOfRange(x, y).type);
        if (types.includes('string')) return STR;
        return types.every((x) => x === 'number') ? NUM : UNKNOWN;
      }
      if (ops.arith) return NUM;
      const first = this.toks[a]!;
      if (first.kind === 'punct' && ['-', '+', '~', '++', '--'].includes(first.text)) return NUM;
      if (first.kind === 'punct' && first.text === '!') return BOOL;
      if (this.word(a, 'typeof')) return STR;
      if (this.word(a, 'void')) return t('undefined');
      if (this.punct(b, '++') || this.punct(b, '--')) return NUM;
      const r = this.exprEndingAt(b);
      return r && r.start === a ? r.type : UNKNOWN;
    });
  }

  private topLevelOps(a: number, b: number) {
    const ops = { lastComma: -1, firstAssign: -1, ternary: false, logical: false, compare: false, plus: false, arith: false };
    let depth = 0;
    for (let i = a; i <= b; i++) {
      if (this.spent()) break;
      const k = this.toks[i]!;
      if (k.kind === 'template') depth += k.part === 'head' ? 1 : k.part === 'tail' ? -1 : 0;
      if (k.kind === 'ident' && depth === 0 && (k.text === 'instanceof' || k.text === 'in')) ops.compare = true;
      if (k.kind !== 'punct') continue;
      const p = k.text;
      if (p === '(' || p === '[' || p === '{') depth++;
      else if (p === ')' || p === ']' || p === '}') depth--;
      if (depth !== 0) continue;
      if (p === ',') ops.lastComma = i;
      else if (ASSIGN.has(p) && ops.firstAssign < 0) ops.firstAssign = i;
      else if (p === '?') ops.ternary = true;
      else if (p === '&&' || p === '||' || p === '??') ops.logical = true;
      else if (COMPARE.has(p)) ops.compare = true;
      else if (p === '+' && i > a && this.endsExpr(this.prev(i))) ops.plus = true;
      else if (ARITH.has(p) && i > a && this.endsExpr(this.prev(i))) ops.arith = true;
    }
    return ops;
  }

  // --- variables -------------------------------------------------------------------------

  /** The type of variable `name` as used at token `use`, from the nearest visible binding before it. */
  private lookupVariable(name: string, use: number): ValueType {
    return this.guarded(UNKNOWN, () => {
      for (let k = use - 1; k >= 0; k--) {
        if (this.spent()) return UNKNOWN;
        const tok = this.toks[k]!;
        if (tok.kind === 'punct' && tok.text === '}') {
          const m = this.matchBack(k); // a closed block: its declarations are out of scope here
          if (m >= 0) k = m;
          continue;
        }
        if (tok.kind !== 'ident' || tok.text !== name) continue;
        const r = this.binding(k, use, name);
        if (r !== null) return r;
      }
      return UNKNOWN;
    });
  }

  /** The type bound to `name` at token k, or null when k does not bind it (a use, a property key, ...). */
  private binding(k: number, use: number, name: string): ValueType | null {
    const p = this.prev(k);
    const n = this.next(k);
    if (this.isDot(p)) return null;
    if (this.word(p, 'function') || this.word(p, 'class')) return t('function');
    if (this.punct(n, '=')) {
      const v = this.typeOfRange(this.next(n), this.initEnd(this.next(n), use));
      if (v.type !== 'unknown') return v;
      if (this.isDecl(p)) {
        const tag = this.commentsBefore(p)
          .map(jsdocTypeTag)
          .find((x) => x !== undefined);
        return tag === undefined ? UNKNOWN : parseJsdocType(tag);
      }
      return null; // an assignment we cannot type: look further back
    }
    if (this.isDecl(p) && (this.word(n, 'of') || this.word(n, 'in')) && this.punct(this.prev(p), '(')) {
      if (this.word(n, 'in')) return STR;
      const close = this.matchForward(this.prev(p), use);
      const v = this.typeOfRange(this.next(n), close < 0 ? this.prev(use) : this.prev(close));
      if (v.type === 'array') return v.element && v.element !== 'unknown' ? t(v.element) : UNKNOWN;
      return v.type === 'string' ? STR : UNKNOWN;
    }
    if (this.isDecl(p)) return UNKNOWN; // `let x;`: assignments after it were seen first
    const param = this.paramOf(k);
    return param ? this.paramType(param, name) : null;
  }

  /** Last token index of the initializer starting at a (before `limit`): up to `;`, `,`, an unmatched closer or a new line's statement. */
  private initEnd(a: number, limit: number): number {
    let depth = 0;
    let last = a;
    for (let i = a; i < limit; i++) {
      if (this.spent()) break;
      const k = this.toks[i]!;
      if (k.kind === 'comment') continue;
      if (
        depth === 0 &&
        i > a &&
        k.nl &&
        this.endsExpr(last) &&
        (k.kind !== 'punct' || k.text === '{') &&
        !this.word(i, 'instanceof') &&
        !this.word(i, 'in')
      )
        break;
      if (
        k.kind === 'ident' &&
        depth === 0 &&
        ['const', 'let', 'var', 'return', 'if', 'for', 'while', 'function', 'class'].includes(k.text)
      )
        break;
      if (k.kind === 'template') depth += k.part === 'head' ? 1 : k.part === 'tail' ? -1 : 0;
      if (k.kind === 'punct') {
        if (k.text === '(' || k.text === '[' || k.text === '{') depth++;
        else if (k.text === ')' || k.text === ']' || k.text === '}') {
          if (--depth < 0) break;
        } else if (depth === 0 && (k.text === ';' || k.text === ',')) break;
      }
      last = i;
    }
    return last;
  }

  /** If the identifier at k is a function parameter: its position, the list's `(` (or k) and where the function starts. */
  private paramOf(k: number): { index: number; headStart: number } | null {
    if (this.punct(this.next(k), '=>')) return { index: 0, headStart: this.word(this.prev(k), 'async') ? this.prev(k) : k };
    let o = -1;
    let index = 0;
    let depth = 0;
    for (let i = this.prev(k); i >= 0; i = this.prev(i)) {
      if (this.spent()) return null;
      const x = this.toks[i]!;
      if (x.kind !== 'punct') continue;
      if (x.text === ')' || x.text === ']' || x.text === '}') depth++;
      else if (x.text === '(' || x.text === '[' || x.text === '{') {
        if (depth-- === 0) {
          o = x.text === '(' ? i : -1;
          break;
        }
      } else if (x.text === ',' && depth === 0) index++;
      else if (depth === 0 && x.text !== '=' && x.text !== '...') return null; // `f(a + s)`: an expression, not a parameter list
    }
    if (o < 0) return null;
    const close = this.matchForward(o);
    if (close < 0) return null;
    const before = this.prev(o);
    if (this.punct(this.next(close), '=>')) return { index, headStart: this.word(before, 'async') ? before : o };
    if (this.word(before, 'function')) return { index, headStart: before };
    if (this.word(before) && this.word(this.prev(before), 'function')) return { index, headStart: this.prev(before) };
    if (this.word(before) && this.punct(this.next(close), '{')) return { index, headStart: before }; // method shorthand
    return null;
  }

  /** A parameter's type: from the array method it is a callback of, else from the comment before the function. */
  private paramType(param: { index: number; headStart: number }, name: string): ValueType {
    const open = this.prev(param.headStart);
    const method = this.prev(open);
    if (this.punct(open, '(') && this.word(method) && this.isDot(this.prev(method))) {
      const recv = this.exprEndingAt(this.prev(this.prev(method)));
      const refs = recv && recv.type.type !== 'unknown' ? CALLBACK_PARAMS[recv.type.type]?.[this.toks[method]!.text] : undefined;
      const ref = refs?.[param.index];
      if (recv && ref) {
        if (ref === 'element') return recv.type.element && recv.type.element !== 'unknown' ? t(recv.type.element) : UNKNOWN;
        if (ref === 'receiver') return recv.type;
        return ref === 'unknown' ? UNKNOWN : t(ref);
      }
    }
    const comments = this.commentsBefore(param.headStart);
    for (const c of comments) {
      const tag = jsdocParamType(c, name);
      if (tag !== undefined) return parseJsdocType(tag);
    }
    const fn = this.functionName(param.headStart);
    const examples = comments.flatMap((c) => exampleArgs(c, fn, name, param.index)).map((src) => typeOfSource(src, this.depth + 1));
    const known = examples.filter((v) => v.type !== 'unknown');
    return known.length > 0 && known.every((v) => v.type === known[0]!.type) ? known[0]! : UNKNOWN;
  }

  /** The name a function is declared under: `function f(`, `const f = (...) =>`, `f(...) {`; null when anonymous. */
  private functionName(headStart: number): string | null {
    if (this.word(headStart, 'function')) return this.word(this.next(headStart)) ? this.toks[this.next(headStart)]!.text : null;
    if (this.word(headStart) && !this.word(headStart, 'async')) return this.toks[headStart]!.text;
    const eq = this.prev(headStart);
    return this.punct(eq, '=') && this.word(this.prev(eq)) ? this.toks[this.prev(eq)]!.text : null;
  }

  /** Texts of the comments among the few tokens before `at` (up to the previous `;`, `{` or `}`), nearest first. */
  private commentsBefore(at: number): string[] {
    const out: string[] = [];
    for (let i = at - 1, seen = 0; i >= 0 && seen < 8; i--) {
      const k = this.toks[i]!;
      if (k.kind === 'comment') out.push(k.text);
      else if (k.kind === 'punct' && (k.text === ';' || k.text === '{' || k.text === '}')) break;
      else seen++;
    }
    return out;
  }

  /** Type of the whole token list (a snippet lexed on its own). */
  typeOfAll(): ValueType {
    return this.typeOfRange(0, this.toks.length - 1);
  }
}

/** Type of a standalone expression's source (`'abc'`, `[1.0, 2.0]`, `-4`), at recursion depth `depth`. */
function typeOfSource(src: string, depth: number): ValueType {
  if (depth >= MAX_DEPTH || src.length > 2000) return UNKNOWN;
  const inf = new Inference(lexJs(src));
  inf.depth = depth;
  return inf.typeOfAll();
}

/** The type of `v[i]`: an array's element, a string's character. */
function indexed(v: ValueType): ValueType {
  if (v.type === 'string') return STR;
  return v.type === 'array' && v.element !== undefined && v.element !== 'unknown' ? t(v.element) : UNKNOWN;
}

function pairs(open: string, close: string): boolean {
  return (open === '(' && close === ')') || (open === '[' && close === ']') || (open === '{' && close === '}');
}
