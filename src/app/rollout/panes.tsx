/**
 * The rollout view's side panes (panels/RolloutView.tsx): the reward breakdown under the what-if
 * weights (recorded and edited), the per-test results, and the tree-sitter tree whose nodes
 * reveal their range in the editor. The Reward panel (panels/ScratchScorer.tsx) shows the selected
 * rollout with Breakdown and Tests too, and scores a scratch completion's tests with TestTable.
 */
import { useMemo, useState } from 'react';
import type { OutlineNode } from '../../analysis';
import { LineIndex } from '../../analysis/offsets';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import { fmtNum, mean, testLine } from './tokens';
import { rescore, type RewardWeights } from '../../lab/whatif';
import { OUTLINE_NODES, type Outline, type Scored } from '../../store/rollout-scoring';

export function Breakdown({
  record,
  weights,
  edited,
  testId = 'reward-breakdown',
}: {
  record: RolloutRecord;
  weights: RewardWeights | null;
  edited: Scored | null;
  testId?: string;
}) {
  const rec = rescore(record, weights);
  const ed = edited ? rescore({ reward: { total: 0, components: edited.components } }, weights) : null;
  const total = ed ? ed.total : rec.total;
  const names = [...new Set([...rec.components, ...(ed?.components ?? [])].map((c) => c.name))];
  const recordedWeight = (name: string) => record.reward.components.find((c) => c.name === name)?.weight;
  const adv = record.advantages ?? [];
  const kl = record.logprobs.reduce((a, lp, i) => a + (Number.isFinite(record.ref_logprobs?.[i]) ? lp - record.ref_logprobs[i]! : 0), 0);
  return (
    <section
      data-testid={testId}
      data-total={total.toFixed(6)}
      data-recorded-total={record.reward.total.toFixed(6)}
      aria-label="Reward breakdown"
    >
      <h3>Reward{weights ? ' (what-if weights)' : ''}</h3>
      <table>
        <thead>
          <tr>
            <th>component</th>
            <th className="num">raw</th>
            <th className="num">weight</th>
            <th className="num">contribution</th>
            {ed && (
              <>
                <th className="num">edited raw</th>
                <th className="num">edited</th>
                <th className="num">Δ</th>
              </>
            )}
          </tr>
        </thead>
        <tbody>
          {names.map((name) => {
            const r = rec.components.find((c) => c.name === name);
            const e = ed?.components.find((c) => c.name === name);
            const w = (r ?? e)!;
            const changed = recordedWeight(name) !== undefined && recordedWeight(name) !== w.weight;
            return (
              <tr key={name} title={(e ?? r)?.detail}>
                <td>{name}</td>
                <td className="num">{fmtNum(r?.raw ?? null, 3)}</td>
                <td className={`num${changed ? ' rv-weight-changed' : ''}`}>
                  {w.sign < 0 ? '−' : '+'}
                  {fmtNum(w.weight, 3)}
                  {changed ? ` (recorded ${fmtNum(recordedWeight(name)!, 3)})` : ''}
                </td>
                <td className="num">{fmtNum(r?.contribution ?? null, 3)}</td>
                {ed && (
                  <>
                    <td className="num">{fmtNum(e?.raw ?? null, 3)}</td>
                    <td className="num">{fmtNum(e?.contribution ?? null, 3)}</td>
                    <td className="num">{fmtNum((e?.contribution ?? 0) - (r?.contribution ?? 0), 3)}</td>
                  </>
                )}
              </tr>
            );
          })}
        </tbody>
        <tfoot>
          <tr>
            <th>total</th>
            <td />
            <td />
            <th className="num">{fmtNum(rec.total, 3)}</th>
            {ed && (
              <>
                <td />
                <th className="num">{fmtNum(ed.total, 3)}</th>
                <th className="num">{fmtNum(ed.total - rec.total, 3)}</th>
              </>
            )}
          </tr>
        </tfoot>
      </table>
      <dl className="rv-meta">
        <dt>final reward (recorded)</dt>
        <dd>{fmtNum(record.reward.total)}</dd>
        {weights && (
          <>
            <dt>under the what-if weights</dt>
            <dd>{fmtNum(rec.total)}</dd>
          </>
        )}
        {ed && (
          <>
            <dt>edited completion</dt>
            <dd>
              {fmtNum(ed.total)} (Δ {fmtNum(ed.total - rec.total)}; {edited!.tests_passed}/{edited!.tests_total} tests, verdict{' '}
              {edited!.verdict})
            </dd>
          </>
        )}
        <dt>normalised advantage (last token)</dt>
        <dd>{fmtNum(adv.length ? adv[adv.length - 1]! : null)}</dd>
        <dt>mean advantage</dt>
        <dd>{fmtNum(mean(adv))}</dd>
        <dt>KL, Σ (log-prob − ref)</dt>
        <dd>{fmtNum(kl)}</dd>
      </dl>
    </section>
  );
}

const PROGRAM_FAILED = 'the program failed before the tests: ';

/**
 * The one message every test failed with, said once above the table: null unless there are two
 * or more tests, none passed, and all carry the very same message (a program that does not
 * parse, a timeout, tampering: the sandbox then gives every test the run's one reason).
 */
export function sharedFailure(tests: readonly Pick<TestResult, 'status' | 'message'>[]): string | null {
  const m = tests[0]?.message;
  if (tests.length < 2 || !m || tests.some((t) => t.status === 'passed' || t.message !== m)) return null;
  if (m.startsWith(PROGRAM_FAILED)) return `Every test failed to run: ${m.slice(PROGRAM_FAILED.length)}`;
  const status = tests.every((t) => t.status === tests[0]!.status) ? tests[0]!.status : null;
  if (status === 'timeout') return `Every test timed out: ${m.replace(/^timeout: /, '')}`;
  if (status === 'error') return `Every test errored: ${m}`;
  if (status === 'failed') return `Every test failed: ${m}`;
  return `No test passed: ${m}`;
}

/** A test's message without the assertion's source at its end (the row shows the source). */
export function testMessage(t: Pick<TestResult, 'message' | 'source'>): string {
  const m = t.message ?? '';
  return t.source && m.endsWith(`: ${t.source}`) ? m.slice(0, -(t.source.length + 2)) : m;
}

/**
 * The tests' table: status, optionally the line it failed at, the assertion's source and why it
 * did not pass. A message every test shares (sharedFailure) is said once above the table.
 */
export function TestTable({
  tests,
  lineOf,
  testId,
  sharedNote = true,
}: {
  tests: TestResult[];
  /** the editor line a failure points to (`known` false: the function header); no line column without it */
  lineOf?: (t: TestResult) => { line: number; known: boolean };
  testId?: string;
  /** false: the caller says the shared failure itself (the rows leave it out either way) */
  sharedNote?: boolean;
}) {
  const shared = sharedFailure(tests);
  return (
    <>
      {shared && sharedNote && (
        <p className="test-shared" data-testid="tests-shared-failure">
          {shared}
        </p>
      )}
      <table className="test-table" data-testid={testId}>
        <colgroup>
          <col className="test-col-status" />
          {lineOf && <col className="test-col-line" />}
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>status</th>
            {lineOf && <th className="num">line</th>}
            <th>assertion</th>
          </tr>
        </thead>
        <tbody>
          {tests.map((t) => {
            const at = lineOf && t.status !== 'passed' ? lineOf(t) : null;
            const message = shared ? '' : testMessage(t);
            return (
              <tr key={t.name} data-status={t.status}>
                <td className={t.status === 'passed' ? 'ok' : 'bad'}>{t.status}</td>
                {lineOf && (
                  <td
                    className="num"
                    title={at ? (at.known ? 'where it failed' : 'the function header (the failure is in the test code)') : undefined}
                  >
                    {at ? `${at.line}${at.known ? '' : '*'}` : ''}
                  </td>
                )}
                <td className="test-cell">
                  <code className="test-src">{t.source}</code>
                  {message && <span className="test-msg">{message}</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

export function Tests({
  tests,
  edited,
  record,
  prompt,
  entryPoint,
  testId = 'rollout-tests',
}: {
  tests: TestResult[];
  edited: boolean;
  record: RolloutRecord;
  prompt: string;
  entryPoint: string | undefined;
  testId?: string;
}) {
  const passed = tests.filter((t) => t.status === 'passed').length;
  const shared = sharedFailure(tests);
  // the run's message is usually the reason every test shares: said once
  const note = record.message && !edited && !shared?.includes(record.message) ? record.message : null;
  return (
    <section data-testid={testId} data-edited={edited} aria-label="Tests">
      <h3>
        Tests: {passed}/{tests.length} passed{edited ? ` (edited completion; recorded ${record.tests_passed}/${record.tests_total})` : ''}
      </h3>
      {note && <p className="rv-note">{note}</p>}
      <TestTable tests={tests} lineOf={(t) => testLine(t, prompt, entryPoint)} />
    </section>
  );
}

/** Nodes on the way to an ERROR or MISSING node: opened at first. */
function errorPaths(root: OutlineNode): Set<OutlineNode> {
  const on = new Set<OutlineNode>();
  const visit = (n: OutlineNode): boolean => {
    let hit = Boolean(n.error || n.missing);
    for (const c of n.children) hit = visit(c) || hit;
    if (hit) on.add(n);
    return hit;
  };
  visit(root);
  return on;
}

export function AstTree({ outline, onReveal }: { outline: Outline; onReveal(start: number, end: number): void }) {
  const paths = useMemo(() => errorPaths(outline.root), [outline]);
  const index = useMemo(() => new LineIndex(outline.text), [outline]);
  const errors = paths.size > 0;
  return (
    <div className="rv-ast" data-testid="ast-tree" data-errors={errors}>
      {!outline.complete && <p className="rv-note">The tree is cut at {OUTLINE_NODES} nodes.</p>}
      <ul>
        <AstItem node={outline.root} depth={0} paths={paths} index={index} onReveal={onReveal} />
      </ul>
    </div>
  );
}

function AstItem({
  node,
  depth,
  paths,
  index,
  onReveal,
}: {
  node: OutlineNode;
  depth: number;
  paths: Set<OutlineNode>;
  index: LineIndex;
  onReveal(start: number, end: number): void;
}) {
  // open near the root and on the way to a syntax error until the user says otherwise
  const [toggled, setToggled] = useState<boolean | null>(null);
  const open = toggled ?? (depth < 2 || paths.has(node));
  const { line, column } = index.positionAt(node.start);
  const label = node.missing ? `MISSING ${node.type}` : node.error ? 'ERROR' : node.type;
  const cls = node.error ? 'ast-error' : node.missing ? 'ast-missing' : undefined;
  return (
    <li className={cls} data-node={node.type}>
      {node.children.length > 0 ? (
        <button
          type="button"
          className="rv-ast-toggle"
          aria-expanded={open}
          aria-label={`${open ? 'Collapse' : 'Expand'} ${label} at line ${line}`}
          onClick={() => setToggled(!open)}
        >
          {open ? '▾' : '▸'}
        </button>
      ) : (
        <span className="rv-ast-leaf" aria-hidden="true" />
      )}
      <button type="button" className="rv-ast-node" title="Select in the editor" onClick={() => onReveal(node.start, node.end)}>
        {label}
      </button>{' '}
      <span className="rv-ast-pos">
        {line}:{column}
      </span>
      {open && node.children.length > 0 && (
        <ul>
          {node.children.map((c, i) => (
            <AstItem key={i} node={c} depth={depth + 1} paths={paths} index={index} onReveal={onReveal} />
          ))}
          {node.omitted ? <li className="rv-note">… {node.omitted} more</li> : null}
        </ul>
      )}
    </li>
  );
}
