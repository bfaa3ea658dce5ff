/**
 * The streaming prefix checker for constrained sampling: push generated text, ask whether it
 * can still become a valid program (the rules are in `viability.ts`), or mask candidate next
 * tokens. Each push re-parses incrementally (`tree.edit` + `parse(text, oldTree)`), and each
 * candidate is parsed incrementally from the prefix's tree.
 *
 * tree-sitter's incremental reparse can recover from errors differently than a parse from scratch
 * (seen here when a new backtick turns earlier tokens into a template), so a rejection is always
 * confirmed on a fresh parse: incremental parsing only ever speeds up acceptances.
 * Once a prefix is judged not viable the checker stays so: no extension can repair it.
 */
import { Edit, type Point, type Tree } from 'web-tree-sitter';
import type { JsSyntax } from './ast';
import { judgeWithProbes, type PrefixVerdict } from './viability';

export type { PrefixVerdict } from './viability';

export class PrefixChecker {
  private tree: Tree | null = null;
  private current = '';
  private end: Point = { row: 0, column: 0 };
  private verdict: PrefixVerdict | null = null;

  constructor(
    private readonly syntax: JsSyntax,
    initial = '',
  ) {
    this.push(initial);
  }

  get text(): string {
    return this.current;
  }

  /** Appends generated text; the tree is updated incrementally (unless already not viable). */
  push(chunk: string): this {
    if (chunk === '' && this.tree) return this;
    if (this.verdict && !this.verdict.viable) {
      this.current += chunk; // sticky: no extension of a dead prefix is viable
      return this;
    }
    const next = parseAppended(this.syntax, this.tree, this.current, this.end, chunk);
    this.tree?.delete();
    this.tree = next;
    this.current += chunk;
    this.end = advance(this.end, chunk);
    this.verdict = null;
    return this;
  }

  /** Whether some continuation makes the text pushed so far a valid program. */
  canStillBeValid(): boolean {
    return this.check().viable;
  }

  /** The verdict with where and why, cached until the next push. */
  check(): PrefixVerdict {
    if (!this.tree) throw new Error('prefix checker used after delete()');
    if (!this.verdict) {
      const { verdict, fresh } = judge(this.syntax, this.tree, this.current, this.end);
      if (fresh) {
        // a rejection re-parsed from scratch
        this.tree.delete();
        this.tree = fresh;
      }
      this.verdict = verdict;
    }
    return this.verdict;
  }

  /** For each candidate continuation: can `text + candidate` still become valid? Reuses the tree. */
  viableNext(candidates: readonly string[]): boolean[] {
    if (!this.canStillBeValid() || !this.tree) return candidates.map(() => false);
    const tree = this.tree;
    return candidates.map((candidate) => {
      if (candidate === '') return true;
      const next = parseAppended(this.syntax, tree, this.current, this.end, candidate);
      const { verdict, fresh } = judge(this.syntax, next, this.current + candidate, advance(this.end, candidate));
      next.delete();
      fresh?.delete();
      return verdict.viable;
    });
  }

  /** Frees the wasm-side tree. */
  delete(): void {
    this.tree?.delete();
    this.tree = null;
  }
}

/** Judges an incrementally parsed tree; a rejection is confirmed on a fresh parse, returned with it. */
function judge(syntax: JsSyntax, tree: Tree, text: string, end: Point): { verdict: PrefixVerdict; fresh: Tree | null } {
  const verdict = judgeWithProbes(syntax, tree, text, (probe) => parseAppended(syntax, tree, text, end, probe));
  if (verdict.viable) return { verdict, fresh: null };
  const fresh = syntax.parse(text);
  return { verdict: judgeWithProbes(syntax, fresh, text, (probe) => syntax.parse(text + probe)), fresh };
}

/** Parses `text + suffix` reusing `tree` (a parse of `text`, left untouched) when given. */
function parseAppended(syntax: JsSyntax, tree: Tree | null, text: string, end: Point, suffix: string): Tree {
  if (!tree) return syntax.parse(text + suffix);
  const old = tree.copy();
  const at = text.length;
  const newEnd = advance(end, suffix);
  old.edit(
    new Edit({
      startIndex: at,
      oldEndIndex: at,
      newEndIndex: at + suffix.length,
      startPosition: end,
      oldEndPosition: end,
      newEndPosition: newEnd,
    }),
  );
  try {
    return syntax.parse(text + suffix, old);
  } finally {
    old.delete();
  }
}

/** tree-sitter's point after `text` starting at `p` (rows split at `\n`, columns in code units). */
export function advance(p: Point, text: string): Point {
  const nl = text.lastIndexOf('\n');
  if (nl < 0) return { row: p.row, column: p.column + text.length };
  let rows = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) rows++;
  return { row: p.row + rows, column: text.length - nl - 1 };
}
