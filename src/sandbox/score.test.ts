/** Scoring and the `coderl score` command, in-process and as a real process. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, test } from 'vitest';
import { main } from '../cli/main';
import { passAtK, summarize, type ScoreRecord } from './score';
import { BENCHMARKS_DIR } from '../tasks/benchmarks';

const DATA = BENCHMARKS_DIR;
let dir: string;
let suitePath: string;
let completionsPath: string;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      out: (t: string) => void out.push(...t.replace(/\n$/, '').split('\n')),
      err: (t: string) => void err.push(...t.replace(/\n$/, '').split('\n')),
    },
    out,
    err,
  };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'coderl-score-'));
  const lines = gunzipSync(readFileSync(`${DATA}/humaneval-x-js.jsonl.gz`))
    .toString('utf8')
    .trim()
    .split('\n');
  const picked = [0, 1, 2, 112].map((i) => lines[i]!);
  suitePath = join(dir, 'suite.jsonl');
  writeFileSync(suitePath, `${picked.join('\n')}\n{"task_id": "broken"\n`);
  const tasks = picked.map((l) => JSON.parse(l) as { task_id: string; canonical_solution: string });
  const completions = [
    { task_id: tasks[0]!.task_id, completion: tasks[0]!.canonical_solution },
    { task_id: tasks[0]!.task_id, completion: '}' },
    { task_id: tasks[1]!.task_id, completion: tasks[1]!.canonical_solution },
    { task_id: 'JavaScript/999', completion: '}' },
    { task_id: tasks[2]!.task_id, completion: '  while (true) {}\n}\n' },
    { task_id: tasks[3]!.task_id, completion: tasks[3]!.canonical_solution },
  ];
  completionsPath = join(dir, 'samples.jsonl');
  writeFileSync(completionsPath, `${completions.map((c) => JSON.stringify(c)).join('\n')}\n`);
});

describe('pass@k', () => {
  test('the unbiased estimator', () => {
    expect(passAtK(5, 2, 1)).toBeCloseTo(0.4, 12);
    expect(passAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10, 12);
    expect(passAtK(10, 0, 1)).toBe(0);
    expect(passAtK(3, 3, 1)).toBe(1);
  });

  test('pass@1 averages over tasks, not over samples', () => {
    const rec = (task_id: string, passed: boolean) => ({ task_id, passed, verdict: passed ? 'passed' : 'failed' }) as ScoreRecord;
    const s = summarize([rec('a', true), rec('a', false), rec('a', false), rec('a', false), rec('b', true)], 1000);
    expect(s.pass_at_1).toBeCloseTo((0.25 + 1) / 2, 12);
    expect(s).toMatchObject({ completions: 5, passed: 2, failed: 3, tasks: 2, verdicts: { passed: 2, failed: 3 } });
  });
});

describe('coderl score', () => {
  test('scores completions: a JSON line per valid completion, bad lines reported, summary ends "N passed, M failed"', async () => {
    const c = capture();
    const out = join(dir, 'r.jsonl');
    const code = await main(
      ['score', '--suite', suitePath, '--completions', completionsPath, '--workers', '2', '--out', out, '--timeout', '1000'],
      c.io,
    );
    expect(code).toBe(0);
    const records = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ScoreRecord);
    expect(records.map((r) => `${r.index} ${r.task_id} ${r.verdict}`)).toEqual([
      '0 JavaScript/0 passed',
      '1 JavaScript/0 failed',
      '2 JavaScript/1 passed',
      '3 JavaScript/2 timeout',
      '4 JavaScript/112 failed',
    ]);
    expect(records[0]).toMatchObject({
      passed: true,
      tests_total: 7,
      tests_passed: 7,
      tests: expect.any(Array),
      duration_ms: expect.any(Number),
    });
    expect(c.err).toContainEqual(expect.stringMatching(new RegExp(`^coderl score: ${suitePath}:5: bad JSON: `)));
    expect(c.err).toContain(`coderl score: ${completionsPath}:4: unknown task_id 'JavaScript/999': not in the suite`);
    expect(c.out).toContain('pass@1: 0.3750 over 4 tasks (2/5 completions passed)');
    expect(c.out.at(-1)).toBe('2 passed, 3 failed');
  });

  test('--canonical --out -: records on stdout, the summary on stderr', async () => {
    const c = capture();
    expect(await main(['score', '--suite', suitePath, '--canonical', '--out', '-', '--workers', '1'], c.io)).toBe(0);
    expect(c.out.map((l) => (JSON.parse(l) as ScoreRecord).verdict)).toEqual(['passed', 'passed', 'passed', 'failed']);
    expect(c.err.at(-1)).toBe('3 passed, 1 failed');
  });

  test('bad usage is exit 2 with a message', async () => {
    for (const [args, msg] of [
      [['score', '--canonical'], /--suite is required/],
      [['score', '--suite', suitePath], /exactly one of --completions and --canonical/],
      [['score', '--suite', suitePath, '--canonical', '--workers', '0'], /--workers must be a positive integer/],
      [['score', '--suite', join(dir, 'missing.jsonl'), '--canonical'], /cannot read/],
    ] as const) {
      const c = capture();
      expect(await main([...args], c.io)).toBe(2);
      expect(c.err.join('\n')).toMatch(msg);
    }
  });

  test('bin/coderl.mjs runs it as a real process (bundled CLI and bundled worker)', async () => {
    const bin = join(import.meta.dirname, '../../bin/coderl.mjs');
    const out = join(dir, 'x.jsonl');
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [bin, 'score', '--suite', suitePath, '--canonical', '--out', out],
      { timeout: 60_000 },
    );
    expect(stderr.split('\n')).toEqual([expect.stringMatching(/^coderl score: .*suite\.jsonl:5: bad JSON: /), '']);
    const lines = stdout.trim().split('\n');
    expect(lines).toContain('not passed: JavaScript/112 (failed)');
    expect(lines.at(-1)).toBe('3 passed, 1 failed');
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(4);
  }, 60_000);
});
