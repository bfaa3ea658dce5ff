import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { fmtRatio, ratio, ratioColumn, ResultTable, type ResultColumn } from './ResultTable';

interface Row {
  n: number;
  ours: number;
  theirs: number;
}

const ROWS: Row[] = [
  { n: 128, ours: 30, theirs: 20 },
  { n: 256, ours: 5, theirs: 0 },
];

describe('ratio', () => {
  it('shows ours / theirs with two decimals and an x, or a dash when theirs is not positive', () => {
    expect(fmtRatio(1.5)).toBe('1.50x');
    expect(ratio(3, 2)).toBe('1.50x');
    expect(ratio(1, 3)).toBe('0.33x');
    expect(ratio(5, 0)).toBe('—');
    expect(ratio(5, -1)).toBe('—');
  });
});

describe('ResultTable', () => {
  it('renders the markup the panels wrote by hand: column headers, a row header, cell test ids, a ratio column', () => {
    const columns: ResultColumn<Row>[] = [
      { header: 'n', cell: (r) => r.n, rowHeader: true },
      { header: 'ours', cell: (r) => r.ours, testId: (r) => `ours-${r.n}` },
      { header: 'theirs', cell: (r) => r.theirs },
      ratioColumn<Row>(
        'ours/theirs',
        (r) => r.ours,
        (r) => r.theirs,
      ),
    ];
    const got = renderToStaticMarkup(<ResultTable columns={columns} rows={ROWS} rowKey={(r) => r.n} />);
    const want = renderToStaticMarkup(
      <table>
        <thead>
          <tr>
            <th scope="col">n</th>
            <th scope="col">ours</th>
            <th scope="col">theirs</th>
            <th scope="col">ours/theirs</th>
          </tr>
        </thead>
        <tbody>
          {ROWS.map((r) => (
            <tr key={r.n}>
              <th scope="row">{r.n}</th>
              <td data-testid={`ours-${r.n}`}>{r.ours}</td>
              <td>{r.theirs}</td>
              <td>{ratio(r.ours, r.theirs)}</td>
            </tr>
          ))}
        </tbody>
      </table>,
    );
    expect(got).toBe(want);
    expect(got).toContain('<td>1.50x</td>');
    expect(got).toContain('<td>—</td>');
  });

  it('puts a caption first, and gives a row-header cell its test id too', () => {
    const html = renderToStaticMarkup(
      <ResultTable
        columns={[{ header: 'engine', cell: (r: Row) => `e${r.n}`, rowHeader: true, testId: (r: Row) => `engine-${r.n}` }]}
        rows={ROWS.slice(0, 1)}
        rowKey={(r) => r.n}
        caption={<>tiny: B=2</>}
      />,
    );
    expect(html).toBe(
      '<table><caption>tiny: B=2</caption><thead><tr><th scope="col">engine</th></tr></thead>' +
        '<tbody><tr><th scope="row" data-testid="engine-128">e128</th></tr></tbody></table>',
    );
  });
});
