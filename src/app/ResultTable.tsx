/**
 * One table for benchmark results (the Benchmarks panel's engine bench, panels/BenchPanel.tsx, and
 * its ONNX race, onnx/OnnxRace.tsx): columns of a header and a cell each, optionally a row header
 * (`<th scope="row">`) and a data-testid per cell for the e2e tests, and ratio columns (ours /
 * theirs as `1.52x`).
 */
import type { Key, ReactNode } from 'react';

export interface ResultColumn<R> {
  header: ReactNode;
  cell(row: R): ReactNode;
  /** the cell's data-testid */
  testId?(row: R): string;
  /** the cell heads its row (`<th scope="row">`) */
  rowHeader?: boolean;
}

/** A ratio as the tables show it: `1.52x`. */
export const fmtRatio = (x: number): string => `${x.toFixed(2)}x`;

/** ours / theirs as fmtRatio shows it; '—' when theirs is not positive. */
export const ratio = (ours: number, theirs: number): string => (theirs > 0 ? fmtRatio(ours / theirs) : '—');

/** A column of `ours(row) / theirs(row)` (ratio). */
export function ratioColumn<R>(header: ReactNode, ours: (row: R) => number, theirs: (row: R) => number): ResultColumn<R> {
  return { header, cell: (row) => ratio(ours(row), theirs(row)) };
}

export function ResultTable<R>({
  columns,
  rows,
  rowKey,
  caption,
}: {
  columns: readonly ResultColumn<R>[];
  rows: readonly R[];
  rowKey(row: R, index: number): Key;
  caption?: ReactNode;
}) {
  return (
    <table>
      {caption !== undefined && <caption>{caption}</caption>}
      <thead>
        <tr>
          {columns.map((c, i) => (
            <th key={i} scope="col">
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, r) => (
          <tr key={rowKey(row, r)}>
            {columns.map((c, i) => {
              const testId = c.testId?.(row);
              return c.rowHeader ? (
                <th key={i} scope="row" data-testid={testId}>
                  {c.cell(row)}
                </th>
              ) : (
                <td key={i} data-testid={testId}>
                  {c.cell(row)}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
