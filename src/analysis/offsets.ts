/**
 * Line/column <-> offset conversion with ESLint's notion of a line: lines end at `\r\n`, `\r`,
 * `\n`, U+2028 or U+2029 (ESLint's `astUtils.createGlobalLinebreakMatcher`), and columns count
 * UTF-16 code units, so an astral character (an emoji) is two columns, as it is one `.length` 2.
 * ESLint reports `line` 1-based and `column` 1-based (`endColumn` exclusive); a leading BOM is
 * stripped by ESLint before it computes locations, so offsets into the original text shift by one.
 */

const LINE_BREAK = /\r\n|[\r\n\u2028\u2029]/g;

export class LineIndex {
  /** Offset of the first code unit of each line (0-based line number -> offset). */
  readonly lineStarts: number[];
  /** 1 when the text starts with U+FEFF (ESLint's locations then exclude it), else 0. */
  readonly bom: number;

  constructor(readonly text: string) {
    this.bom = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    const starts = [this.bom];
    for (const m of text.matchAll(LINE_BREAK)) starts.push(m.index + m[0].length);
    this.lineStarts = starts;
  }

  get lineCount(): number {
    return this.lineStarts.length;
  }

  /**
   * Offset of ESLint's 1-based `line` and 1-based `column`, clamped into the text (a location
   * one past the end of a line, as ESLint gives for an exclusive `endColumn`, stays on that line).
   */
  offsetAt(line: number, column: number): number {
    const i = Math.min(Math.max(line - 1, 0), this.lineStarts.length - 1);
    const start = this.lineStarts[i] ?? 0;
    return Math.min(Math.max(start + column - 1, start), this.text.length);
  }

  /** ESLint-style 1-based line and 1-based column of an offset. */
  positionAt(offset: number): { line: number; column: number } {
    const o = Math.min(Math.max(offset, 0), this.text.length);
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.lineStarts[mid] ?? 0) <= o) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: o - (this.lineStarts[lo] ?? 0) + 1 };
  }
}
