/**
 * Can a prefix still be completed to a valid program? The rules, on one tree-sitter tree.
 *
 * tree-sitter always returns a tree; truncation shows up as ERROR or MISSING nodes at the end.
 * A prefix is judged viable when (see `judgePrefix`):
 *  1. every ERROR node reaches the last token, and every MISSING node sits after it (a MISSING
 *     node before real text means a token had to be invented in the middle: `[1, 2;`);
 *  2. brackets balance so far: each `)`, `]`, `}` closes the innermost open `(`, `[`, `{`, `${`
 *     (tree-sitter's leaves already separate strings, templates, regexes and comments);
 *  3. each token inside an ERROR node is one the parse table accepts in the state it was read in
 *     (tree-sitter's lookahead iterator): this catches an error at the last token, which rule 1
 *     cannot tell from truncation (`var x(`, `f(a) {`). The last token, when it touches the end
 *     of the text, may be a partial token: it passes when it is a prefix of an accepted symbol
 *     or a name where a name is accepted (`retu`, `i !` for `!=`, `const c o` for `of`);
 *  4. no `const` declarator without a value is followed by more code (tree-sitter allows it),
 *     and no JSX (tree-sitter's JavaScript grammar includes it; JavaScript does not).
 * When the rules reject, `judgeWithProbes` tries short continuations before giving up: closing
 * what tree-sitter does not lex as an unfinished token (an open block comment, template, string
 * or regex, `1e`, `..`) and finishing a partial keyword or operator (`5 i` -> `5 in `). A
 * continuation that is viable makes the prefix viable.
 *
 * Measured against an exact parser (espree) on HumanEval-X (prefix.test.ts): every prefix of the
 * canonical programs is viable, and no prefix the exact parser calls viable is rejected; of the
 * prefixes made invalid by an injected token, about 4% are still accepted. Known misses: errors
 * at the last token that the merged LR states accept (`(c :`, `i++ {`), semantic early errors
 * (a redeclared `let`), permissive grammar corners (`{ a: 1,, b: 2 }`).
 */
import type { Node, Tree } from 'web-tree-sitter';
import type { JsSyntax } from './ast';

export interface PrefixVerdict {
  viable: boolean;
  /** Where the first problem starts (an offset into the text), when not viable. */
  errorAt: number | null;
  reason: string | null;
}

export const VIABLE: PrefixVerdict = { viable: true, errorAt: null, reason: null };
const CLOSER: Record<string, string> = { '(': ')', '[': ']', '{': '}', '${': '}' };
const CLOSERS = new Set([')', ']', '}']);
const RULE4_WINDOW = 4096;
const NAME_LIKE = /^[\p{L}\p{N}_$\\]+$/u;
const PRIVATE_NAME_START = /^#[\p{L}\p{N}_$\\]*$/u;

/** The rules, then the probes; `reparse(suffix)` parses `text + suffix` (its tree is deleted here). */
export function judgeWithProbes(syntax: JsSyntax, tree: Tree, text: string, reparse: (suffix: string) => Tree): PrefixVerdict {
  const verdict = judgePrefix(syntax, tree, text);
  if (verdict.viable) return verdict;
  for (const probe of closingProbes(text)) {
    const probed = reparse(probe);
    try {
      if (judgePrefix(syntax, probed, text + probe).viable) return VIABLE;
    } finally {
      probed.delete();
    }
  }
  return verdict;
}

/** Suffixes that finish what tree-sitter cannot lex as an unfinished token. */
export function closingProbes(text: string): string[] {
  const esc = /(?:^|[^\\])(?:\\\\)*\\$/.test(text) ? 'n' : ''; // finish a dangling escape first
  const probes: string[] = [];
  if (text.lastIndexOf('/*') > text.lastIndexOf('*/')) probes.push('*/');
  if (text.includes('`')) probes.push(`${esc}\``);
  const line = text.slice(Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r')) + 1);
  for (const q of ['"', "'"]) if (line.includes(q)) probes.push(esc + q);
  if (line.includes('/')) probes.push(`${esc}/`, `${esc}]/`, `${esc})/`); // a regex, maybe in a class or group
  if (/(?:\d[eE][+-]?|\b0[xXbBoO]|\d_)$/.test(text)) probes.push('0');
  if (text.endsWith('..')) probes.push('.');
  return [...probes, ...longerTokens(text)];
}

const KEYWORDS =
  'as async await break case catch class const continue debugger default delete do else export extends finally for from function get if import in instanceof let new of return set static super switch this throw try typeof var void while with yield';
const OPERATORS = '!= !== == === => <= >= << >> >>> >>= <<= && || ?? ?. ... ** **= &&= ||= ??= += -= *= %= ^= |= &= ++ --';
const LONGER = [...KEYWORDS.split(' '), ...OPERATORS.split(' ')];

/**
 * When the text ends in the middle of a word or an operator, the rest of each keyword or operator
 * it could start (`5 i` may become `5 in x`, `a !` may become `a != b`): tree-sitter parses the
 * partial token as what it is now, which can put an ERROR before it.
 */
function longerTokens(text: string): string[] {
  const tail = /(?:[\p{L}\p{N}_$]+|[!=<>&|?.*+\-%^]+)$/u.exec(text)?.[0] ?? '';
  if (tail === '') return [];
  return LONGER.filter((t) => t.length > tail.length && t.startsWith(tail)).map((t) => `${t.slice(tail.length)} `);
}

/** Rules 1 to 4 of the header on one tree. */
export function judgePrefix(syntax: JsSyntax, tree: Tree, text: string): PrefixVerdict {
  const scan = new Scan(syntax, text);
  const root = tree.rootNode;
  scan.visit(root, false);
  // Rule 4 looks at the last RULE4_WINDOW characters and at the unfinished part, to keep a check
  // on a long text cheap (a streaming checker saw every earlier statement when it was the last).
  const firstError = root.children.find((c) => c?.hasError)?.startIndex ?? Infinity;
  const from = Math.max(0, Math.min(firstError, text.length - RULE4_WINDOW));
  for (const { name, node } of syntax.structureQuery.captures(root, { startIndex: from })) {
    if (name === 'jsx') scan.fail(node.startIndex, 'JSX is not JavaScript');
    else scan.constWithoutValue(node.endIndex);
  }
  return scan.verdict();
}

/**
 * One depth-first pass over the parts of the tree that hold errors. A subtree without errors is
 * a complete construct, so its brackets balance and its tokens were accepted: it is skipped whole,
 * which keeps a check proportional to the unfinished part rather than to the whole text.
 */
class Scan {
  private lastEnd = 0;
  private readonly errors: { start: number; end: number }[] = [];
  private readonly missing: number[] = [];
  private readonly constNoValue: number[] = [];
  private readonly open: string[] = [];
  private problemAt = Infinity;
  private problem = '';

  private readonly contentEnd: number;

  constructor(
    private readonly syntax: JsSyntax,
    private readonly text: string,
  ) {
    this.contentEnd = text.trimEnd().length;
  }

  visit(node: Node, inError: boolean): void {
    if (node.isMissing) {
      this.missing.push(node.startIndex);
      return;
    }
    const isError = node.isError;
    if (isError) this.errors.push({ start: node.startIndex, end: node.endIndex });
    if (node.childCount === 0) {
      if (node.type !== 'comment' && node.endIndex > node.startIndex) this.leaf(node, inError || isError);
    } else if (!node.hasError) {
      // A complete construct; its end may be a zero-width automatic `;` after trailing spaces.
      this.lastEnd = Math.max(this.lastEnd, Math.min(node.endIndex, this.contentEnd));
    } else {
      for (const child of node.children) if (child) this.visit(child, inError || isError);
    }
  }

  private leaf(node: Node, inError: boolean): void {
    const { startIndex: start, type } = node;
    this.lastEnd = node.endIndex;
    if (CLOSER[type]) this.open.push(CLOSER[type]);
    else if (CLOSERS.has(type) && this.open.pop() !== type) this.fail(start, `unbalanced '${type}'`);
    if (inError && !this.tokenAccepted(node)) this.fail(start, `unexpected '${this.text.slice(start, node.endIndex)}'`);
  }

  /** Rule 3: the parse table accepts the token, or it is a partial token at the very end. */
  private tokenAccepted(node: Node): boolean {
    const valid = this.syntax.validSymbols(node.parseState);
    if (!node.isError && valid.has(node.grammarType)) return true;
    if (node.endIndex < this.text.length) return false;
    const partial = this.text.slice(node.startIndex);
    if (PRIVATE_NAME_START.test(partial)) return true; // `#`, `#na`: the start of a private name
    if (NAME_LIKE.test(partial) && valid.has('identifier')) return true;
    for (const symbol of valid) if (symbol.length > partial.length && symbol.startsWith(partial)) return true;
    return false;
  }

  constWithoutValue(declaratorEnd: number): void {
    this.constNoValue.push(declaratorEnd);
  }

  fail(at: number, why: string): void {
    if (at < this.problemAt) [this.problemAt, this.problem] = [at, why];
  }

  /** Token-level problems (rules 2 to 4) point at the token; rule 1 only at the ERROR's start. */
  verdict(): PrefixVerdict {
    for (const d of this.constNoValue) if (d < this.lastEnd) this.fail(d, 'const without a value');
    if (this.problemAt === Infinity) {
      for (const e of this.errors) if (e.end < this.lastEnd) this.fail(e.start, 'syntax error before the end');
      for (const m of this.missing) if (m < this.lastEnd) this.fail(m, 'missing token before the end');
    }
    if (this.problemAt === Infinity) return VIABLE;
    return { viable: false, errorAt: this.problemAt, reason: this.problem };
  }
}
