/**
 * A small, forgiving, incremental JavaScript lexer for receiver inference during decoding.
 *
 * Why not tree-sitter (src/analysis)? It loads asynchronously (wasm) and parses a whole document,
 * while the API guide asks one question per sequence per decode step — "is the text right after a
 * member-access dot, and what is in front of it?" — about a prefix that grows by one token at a
 * time. This lexer is synchronous, never throws, and is incremental: `append` re-lexes only the
 * last token (which the new text may extend) plus the new text, so a step costs O(token) instead
 * of O(document). It knows what matters for a `.`: strings, comments, template literals (with
 * nested `${}`), regular-expression literals (heuristically: after an operator or keyword), and
 * numbers (`3.` is a number, `3..x` and `1.5.x` are member accesses). Everything else is a
 * one-token-per-punctuator stream; unterminated literals run to the end of the text.
 */

/** What a token is; keywords are 'ident' tokens. */
export type TokenKind = 'ident' | 'number' | 'string' | 'template' | 'regex' | 'punct' | 'comment';

/** Which piece of a template literal a 'template' token is: `` `a` `` full, `` `a${ `` head, `}b${` middle, `` }c` `` tail. */
export type TemplatePart = 'full' | 'head' | 'middle' | 'tail';

/** One token; immutable once lexed, except that the last token of a lexer is replaced when text is appended. */
export interface JsToken {
  kind: TokenKind;
  /** character offsets into the source, [start, end) */
  start: number;
  end: number;
  text: string;
  /** a line break lies between the previous token and this one */
  nl: boolean;
  /** strings, comments, regexes and templates: the closing delimiter was seen */
  closed: boolean;
  part?: TemplatePart;
}

/** Multi-character punctuators, longest first within each length (single characters are tokens on their own). */
const PUNCTS = [
  new Set(['>>>=']),
  new Set(['...', '===', '!==', '**=', '<<=', '>>=', '>>>', '&&=', '||=', '??=']),
  new Set(['=>', '==', '!=', '<=', '>=', '&&', '||', '??', '?.', '++', '--', '+=', '-=', '*=', '%=', '&=', '|=', '^=', '**', '<<', '>>']),
];

/** First characters of the multi-character punctuators. */
const MULTI_START = new Set([...PUNCTS.flatMap((set) => [...set].map((p) => p[0]!))]);
const NO_TEMPLATES: number[] = [];

/** Keywords after which a `/` starts a regular expression rather than a division. */
const REGEX_AFTER_KEYWORD = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

const isDigit = (c: number) => c >= 48 && c <= 57;
const isLineBreak = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
function isSpace(c: number): boolean {
  if (c === 32 || c === 9 || c === 11 || c === 12 || isLineBreak(c)) return true;
  return (
    c >= 0x80 &&
    (c === 0xa0 || c === 0xfeff || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x202f || c === 0x205f || c === 0x3000)
  );
}
/** Identifier characters: ASCII letters, digits, `_`, `$`, and (loosely) any non-space non-ASCII unit. */
export function isIdentChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || isDigit(c) || c === 95 || c === 36 || (c >= 0x80 && !isSpace(c));
}
const isIdentStart = (c: number) => isIdentChar(c) && !isDigit(c);

interface State {
  pos: number;
  braceDepth: number;
  /** braceDepth at each open `${`, innermost last */
  templates: number[];
}

/** An incremental lexer: `append` text as it is generated, read `tokens`. Never throws. */
export class JsLexer {
  private src = '';
  private toks: JsToken[] = [];
  private st: State = { pos: 0, braceDepth: 0, templates: [] };
  /** state just before the last token (and the whitespace in front of it) was lexed; kept as fields to spare an allocation per token */
  private lastPos = -1;
  private lastBrace = 0;
  private lastTemplates: number[] = [];

  /** Tokens so far (read-only view; the last one may change on the next append). */
  get tokens(): readonly JsToken[] {
    return this.toks;
  }

  get source(): string {
    return this.src;
  }

  /** A copy sharing the (immutable) tokens: cheap way to start many sequences from one lexed prompt. */
  clone(): JsLexer {
    const c = new JsLexer();
    c.src = this.src;
    c.toks = this.toks.slice();
    c.st = copyState(this.st);
    c.lastPos = this.lastPos;
    c.lastBrace = this.lastBrace;
    c.lastTemplates = this.lastTemplates.slice();
    return c;
  }

  /** Appends text and lexes it, re-lexing the previous last token, which the new text may extend. */
  append(text: string): void {
    if (text === '') return;
    this.src += text;
    if (this.lastPos >= 0) {
      this.toks.pop();
      this.st = { pos: this.lastPos, braceDepth: this.lastBrace, templates: this.lastTemplates.slice() };
      this.lastPos = -1;
    }
    this.run();
  }

  private run(): void {
    const s = this.src;
    while (true) {
      const pos0 = this.st.pos;
      const brace0 = this.st.braceDepth;
      const templates0 = this.st.templates.length === 0 ? NO_TEMPLATES : this.st.templates.slice();
      let pos = pos0;
      let nl = false;
      for (; pos < s.length; pos++) {
        const c = s.charCodeAt(pos);
        if (!isSpace(c)) break;
        if (isLineBreak(c)) nl = true;
      }
      if (pos >= s.length) return; // trailing whitespace is scanned again with the next text (its line breaks matter)
      const tok = this.lexAt(pos, nl);
      this.toks.push(tok);
      this.st.pos = tok.end;
      this.lastPos = pos0;
      this.lastBrace = brace0;
      this.lastTemplates = templates0;
    }
  }

  private lexAt(pos: number, nl: boolean): JsToken {
    const s = this.src;
    const c = s.charCodeAt(pos);
    const c1 = pos + 1 < s.length ? s.charCodeAt(pos + 1) : -1;
    if (c === 96 /* ` */) return this.template(pos + 1, pos, 'full', 'head', nl);
    if (c === 125 /* } */ && this.st.templates.length > 0 && this.st.templates[this.st.templates.length - 1] === this.st.braceDepth) {
      this.st.templates.pop();
      return this.template(pos + 1, pos, 'tail', 'middle', nl);
    }
    if (c === 34 || c === 39) return this.string(pos, c, nl);
    if (c === 47 /* / */) {
      if (c1 === 47) return this.lineComment(pos, nl);
      if (c1 === 42) return this.blockComment(pos, nl);
      if (this.regexAllowed()) {
        const re = this.regex(pos, nl);
        if (re) return re;
      }
    }
    if (isDigit(c) || (c === 46 && isDigit(c1))) return this.number(pos, nl);
    if (isIdentStart(c) || (c === 35 /* # */ && isIdentStart(c1))) {
      let end = pos + 1;
      while (end < s.length && isIdentChar(s.charCodeAt(end))) end++;
      return tok('ident', s, pos, end, nl, true);
    }
    return this.punct(pos, nl);
  }

  private punct(pos: number, nl: boolean): JsToken {
    const s = this.src;
    for (let len = MULTI_START.has(s[pos]!) ? 4 : 1; len >= 2; len--) {
      const p = s.slice(pos, pos + len);
      if (p.length === len && PUNCTS[4 - len]!.has(p) && !(p === '?.' && isDigit(s.charCodeAt(pos + 2))))
        return tok('punct', s, pos, pos + len, nl, true);
    }
    const c = s.charCodeAt(pos);
    if (c === 123) this.st.braceDepth++;
    else if (c === 125) this.st.braceDepth--;
    // a lone surrogate pair half or any other unit: one token per UTF-16 unit keeps offsets simple
    return tok('punct', s, pos, pos + 1, nl, true);
  }

  private number(pos: number, nl: boolean): JsToken {
    const s = this.src;
    let i = pos;
    const digits = (hex: boolean) => {
      while (i < s.length) {
        const c = s.charCodeAt(i);
        if (isDigit(c) || c === 95 || (hex && ((c >= 97 && c <= 102) || (c >= 65 && c <= 70)))) i++;
        else break;
      }
    };
    const radix = s.charCodeAt(i) === 48 ? s.charAt(i + 1).toLowerCase() : '';
    if (radix === 'x' || radix === 'o' || radix === 'b') {
      i += 2;
      digits(radix === 'x');
    } else {
      digits(false);
      if (s.charCodeAt(i) === 46) {
        i++; // `3.` is a number: its dot is never a member access
        digits(false);
      }
      const e = s.charCodeAt(i);
      if (
        (e === 101 || e === 69) &&
        (isDigit(s.charCodeAt(i + 1)) || ((s[i + 1] === '+' || s[i + 1] === '-') && isDigit(s.charCodeAt(i + 2))))
      ) {
        i += 2;
        digits(false);
      }
    }
    if (s.charCodeAt(i) === 110 /* n */) i++;
    return tok('number', s, pos, i, nl, true);
  }

  private string(pos: number, quote: number, nl: boolean): JsToken {
    const s = this.src;
    let i = pos + 1;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c === quote) return tok('string', s, pos, i + 1, nl, true);
      if (c === 92 /* \ */) i += s.charCodeAt(i + 1) === 13 && s.charCodeAt(i + 2) === 10 ? 3 : 2;
      else if (c === 10 || c === 13)
        break; // unterminated at the line end: back to code
      else i++;
    }
    return tok('string', s, pos, Math.min(i, s.length), nl, false);
  }

  /** Template characters from `from` up to the closing backtick (`closedPart`) or a `${` (`openPart`). */
  private template(from: number, pos: number, closedPart: TemplatePart, openPart: TemplatePart, nl: boolean): JsToken {
    const s = this.src;
    let i = from;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c === 96) return { ...tok('template', s, pos, i + 1, nl, true), part: closedPart };
      if (c === 92) i += 2;
      else if (c === 36 && s.charCodeAt(i + 1) === 123) {
        this.st.templates.push(this.st.braceDepth);
        return { ...tok('template', s, pos, i + 2, nl, true), part: openPart };
      } else i++;
    }
    return { ...tok('template', s, pos, s.length, nl, false), part: closedPart };
  }

  private lineComment(pos: number, nl: boolean): JsToken {
    const s = this.src;
    let i = pos + 2;
    while (i < s.length && !isLineBreak(s.charCodeAt(i))) i++;
    return tok('comment', s, pos, i, nl, i < s.length);
  }

  private blockComment(pos: number, nl: boolean): JsToken {
    const s = this.src;
    const close = s.indexOf('*/', pos + 2);
    return close < 0 ? tok('comment', s, pos, s.length, nl, false) : tok('comment', s, pos, close + 2, nl, true);
  }

  /** A regex literal at `pos`, or null when a line break comes first (then the `/` was a division after all). */
  private regex(pos: number, nl: boolean): JsToken | null {
    const s = this.src;
    let i = pos + 1;
    let inClass = false;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (isLineBreak(c)) return null;
      if (c === 92) i += 2;
      else {
        if (c === 91) inClass = true;
        else if (c === 93) inClass = false;
        else if (c === 47 && !inClass) {
          i++;
          while (i < s.length && isIdentChar(s.charCodeAt(i))) i++;
          return tok('regex', s, pos, i, nl, true);
        }
        i++;
      }
    }
    return tok('regex', s, pos, s.length, nl, false);
  }

  /** Whether a `/` here starts a regex: after nothing, an operator, an open bracket, `}` or an expression keyword. */
  private regexAllowed(): boolean {
    for (let k = this.toks.length - 1; k >= 0; k--) {
      const t = this.toks[k]!;
      if (t.kind === 'comment') continue;
      if (t.kind === 'ident') return REGEX_AFTER_KEYWORD.has(t.text);
      if (t.kind === 'punct') return t.text !== ')' && t.text !== ']';
      if (t.kind === 'template') return t.part === 'head' || t.part === 'middle';
      return false;
    }
    return true;
  }
}

function tok(kind: TokenKind, s: string, start: number, end: number, nl: boolean, closed: boolean): JsToken {
  return { kind, start, end, text: s.slice(start, end), nl, closed };
}

function copyState(st: State): State {
  return { pos: st.pos, braceDepth: st.braceDepth, templates: st.templates.length === 0 ? [] : st.templates.slice() };
}

/** Lexes a whole text at once. */
export function lexJs(text: string): readonly JsToken[] {
  const lx = new JsLexer();
  lx.append(text);
  return lx.tokens;
}
