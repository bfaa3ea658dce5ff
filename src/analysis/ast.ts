/**
 * AST validation with tree-sitter's JavaScript grammar: the syntax errors of a program (ERROR
 * nodes: text the parser had to skip; MISSING nodes: tokens it had to invent), an outline of the
 * tree for the UI, and, in `prefix.ts`, whether a prefix can still be completed. tree-sitter
 * parses anything (it recovers from errors), incrementally, in about 0.05 ms per small function.
 * Offsets are UTF-16 code units, as tree-sitter's JS binding gives them.
 */
import { Parser, Query, type Language, type LookaheadIterator, type Node, type Tree } from 'web-tree-sitter';
import { PrefixChecker } from './prefix';
import { loadJavaScript, type WasmLoader } from './treesitter';

export interface SyntaxIssue {
  kind: 'ERROR' | 'MISSING';
  /** ERROR: the skipped text; MISSING: zero-width, where the token should be. */
  start: number;
  end: number;
  message: string;
}

export interface SyntaxCheck {
  valid: boolean;
  errors: SyntaxIssue[];
}

/** A serialisable view of the tree (named nodes, plus every ERROR and MISSING node). */
export interface OutlineNode {
  type: string;
  start: number;
  end: number;
  named: boolean;
  error?: true;
  missing?: true;
  children: OutlineNode[];
  /** How many children were left out because the outline hit its node budget or depth. */
  omitted?: number;
}

export interface OutlineOptions {
  /** At most this many nodes in the outline (default 2000). */
  maxNodes?: number;
  /** Children below this depth are left out (default 64). */
  maxDepth?: number;
  /** Include anonymous nodes (punctuation, keywords); default false. */
  anonymous?: boolean;
}

const STRUCTURE_QUERY = `
(lexical_declaration kind: "const" (variable_declarator !value) @const)
[(jsx_element) (jsx_self_closing_element) (jsx_opening_element)] @jsx
`;

/** The JavaScript parser with its analyses; create it with `loadJsSyntax`. */
export class JsSyntax {
  readonly parser: Parser;
  /** Finds what the grammar accepts but JavaScript does not: `const` without a value, and JSX. */
  readonly structureQuery: Query;
  private readonly lookahead: LookaheadIterator;
  private readonly validSets = new Map<number, ReadonlySet<string>>();

  constructor(readonly language: Language) {
    this.parser = new Parser();
    this.parser.setLanguage(language);
    const it = language.lookaheadIterator(0);
    if (!it) throw new Error('tree-sitter: no lookahead iterator for the JavaScript grammar');
    this.lookahead = it;
    this.structureQuery = new Query(language, STRUCTURE_QUERY);
  }

  /** Parses `text`; pass `old` (edited to match `text`) to reuse its unchanged parts. */
  parse(text: string, old?: Tree | null): Tree {
    const tree = this.parser.parse(text, old ?? null);
    if (!tree) throw new Error('tree-sitter returned no tree');
    return tree;
  }

  /**
   * Syntax errors of `code`: ERROR and MISSING nodes, plus what tree-sitter's grammar accepts but
   * JavaScript does not (a `const` without a value, JSX). Valid means none.
   */
  validate(code: string): SyntaxCheck {
    const tree = this.parse(code);
    try {
      const errors = syntaxIssues(tree.rootNode, code, this);
      return { valid: errors.length === 0, errors };
    } finally {
      tree.delete();
    }
  }

  /** The tree as plain objects, capped in size. */
  outline(code: string, opts: OutlineOptions = {}): { root: OutlineNode; nodes: number; complete: boolean } {
    const tree = this.parse(code);
    try {
      return buildOutline(tree.rootNode, opts);
    } finally {
      tree.delete();
    }
  }

  /** A streaming checker: push text, ask whether it can still become a valid program. */
  createPrefixChecker(initial = ''): PrefixChecker {
    return new PrefixChecker(this, initial);
  }

  /** For each candidate continuation of `prefix`: can `prefix + candidate` still become valid? */
  viableNextTokens(prefix: string, candidates: readonly string[]): boolean[] {
    const checker = this.createPrefixChecker(prefix);
    try {
      return checker.viableNext(candidates);
    } finally {
      checker.delete();
    }
  }

  /** Grammar names of the symbols the parse table accepts in `state` (cached per state). */
  validSymbols(state: number): ReadonlySet<string> {
    let set = this.validSets.get(state);
    if (!set) {
      const names = new Set<string>();
      if (this.lookahead.resetState(state)) for (const name of this.lookahead) names.add(name);
      this.validSets.set(state, names);
      set = names;
    }
    return set;
  }
}

let shared: Promise<JsSyntax> | null = null;

/** Loads tree-sitter and the JS grammar once per page or process (later calls share it). */
export function loadJsSyntax(load: WasmLoader): Promise<JsSyntax> {
  shared ??= loadJavaScript(load).then((language) => new JsSyntax(language));
  shared.catch(() => (shared = null));
  return shared;
}

/** The ERROR and MISSING nodes under `root`, outermost ERRORs only, in text order. */
export function syntaxIssues(root: Node, text: string, syntax: JsSyntax): SyntaxIssue[] {
  const issues: SyntaxIssue[] = [];
  const contentEnd = text.trimEnd().length;
  const visit = (node: Node): void => {
    if (node.isMissing) {
      const what = node.isNamed ? node.type.replaceAll('_', ' ') : `'${node.type}'`;
      issues.push({ kind: 'MISSING', start: node.startIndex, end: node.startIndex, message: `missing ${what}` });
    } else if (node.isError) {
      issues.push({ kind: 'ERROR', start: node.startIndex, end: node.endIndex, message: errorMessage(node, contentEnd, syntax) });
    } else if (node.hasError) {
      for (const child of node.children) visit(child);
    }
  };
  visit(root);
  // What the grammar accepts and JavaScript does not: `const x;`, and JSX (outermost, outside ERRORs).
  for (const { name, node } of syntax.structureQuery.captures(root)) {
    if (name === 'const') {
      issues.push({ kind: 'MISSING', start: node.endIndex, end: node.endIndex, message: 'missing initializer in const declaration' });
    } else if (!node.parent?.type.startsWith('jsx_') && !insideError(node)) {
      issues.push({ kind: 'ERROR', start: node.startIndex, end: node.endIndex, message: 'JSX is not JavaScript' });
    }
  }
  return issues.sort((a, b) => a.start - b.start || a.end - b.end);
}

function insideError(node: Node): boolean {
  for (let p = node.parent; p; p = p.parent) if (p.isError) return true;
  return false;
}

function errorMessage(node: Node, contentEnd: number, syntax: JsSyntax): string {
  const bad = firstUnexpectedLeaf(node, syntax);
  if (bad) return `unexpected ${quote(bad.text)}`;
  if (node.endIndex >= contentEnd) return `unexpected end of input after ${quote(node.text)}`;
  return `unexpected ${quote(node.text)}`;
}

/** The first leaf in an ERROR that its parse state does not accept: the token the parser tripped on. */
function firstUnexpectedLeaf(node: Node, syntax: JsSyntax): Node | null {
  if (node.childCount === 0) return node.isError ? node : null;
  for (const child of node.children) {
    if (child.childCount === 0 && !child.isMissing && !syntax.validSymbols(child.parseState).has(child.grammarType)) {
      return child;
    }
    if (child.isError) return firstUnexpectedLeaf(child, syntax);
  }
  return null;
}

function quote(text: string): string {
  const line = text.split(/\r\n|[\r\n]/, 1)[0] ?? '';
  const short = line.slice(0, 24);
  return `'${short}${short.length < text.length ? '…' : ''}'`;
}

function buildOutline(root: Node, opts: OutlineOptions): { root: OutlineNode; nodes: number; complete: boolean } {
  const maxNodes = opts.maxNodes ?? 2000;
  const maxDepth = opts.maxDepth ?? 64;
  let nodes = 0;
  let complete = true;
  const keep = (n: Node) => opts.anonymous || n.isNamed || n.isError || n.isMissing;
  const build = (node: Node, depth: number): OutlineNode => {
    nodes++;
    const out: OutlineNode = { type: node.type, start: node.startIndex, end: node.endIndex, named: node.isNamed, children: [] };
    if (node.isError) out.error = true;
    if (node.isMissing) out.missing = true;
    const kids = node.children.filter(keep);
    for (const [i, child] of kids.entries()) {
      if (nodes >= maxNodes || depth >= maxDepth) {
        out.omitted = kids.length - i;
        complete = false;
        break;
      }
      out.children.push(build(child, depth + 1));
    }
    return out;
  };
  return { root: build(root, 0), nodes, complete };
}
