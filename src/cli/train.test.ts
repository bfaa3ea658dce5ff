/** `coderl train` and `coderl eval` in-process, on a miniature config. */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { MINI_RUN } from '../rl/testing';
import { main } from './main';

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

const MINI = JSON.stringify(MINI_RUN);

describe('coderl train / eval', () => {
  test('train writes a run directory and prints the summary; eval reads its checkpoint and suite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coderl-train-'));
    const t = capture();
    expect(await main(['train', '--preset', 'tiny', '--seed', '2', '--out', dir, '--set', MINI, '--quiet', '--workers', '2'], t.io)).toBe(
      0,
    );
    expect(t.out.join('\n')).toMatch(/SFT: held-out pass@1 [\d.]+%/);
    expect(t.out[t.out.length - 1]).toMatch(/held-out pass@1 change: -?[\d.]+ points; [\d.]+ minutes/);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ preset: 'tiny', seed: 2, backend: 'cpu', rm: null });
    for (const f of ['config.json', 'metrics.jsonl', 'tasks/heldout.jsonl', 'sft.ckpt', 'policy.ckpt', 'rollouts/iter-0001.jsonl'])
      expect(existsSync(join(dir, f)), f).toBe(true);

    const e = capture();
    expect(
      await main(
        [
          'eval',
          '--suite',
          join(dir, 'tasks/heldout.jsonl'),
          '--checkpoint',
          join(dir, 'policy.ckpt'),
          '--k',
          '1,2',
          '--samples',
          '2',
          '--max-new-tokens',
          '10',
          '--workers',
          '2',
          '--out',
          join(dir, 'eval.jsonl'),
        ],
        e.io,
      ),
    ).toBe(0);
    expect(e.out.join('\n')).toMatch(/spec: pass@1 [\d.]+/);
    const heldout = readFileSync(join(dir, 'tasks/heldout.jsonl'), 'utf8').trim().split('\n');
    const recs = readFileSync(join(dir, 'eval.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(recs).toHaveLength(2 * heldout.length);
    for (const r of recs) {
      expect(typeof r.completion).toBe('string');
      expect(['eos', 'stop', 'length', 'no-token']).toContain(r.finish);
      expect(typeof r.passed).toBe('boolean');
    }
    expect(e.out).toEqual(expect.arrayContaining([expect.stringMatching(/^pass@1: [\d.]+$/), expect.stringMatching(/^pass@2: [\d.]+$/)]));
  }, 180_000);

  test('bad input is a usage error naming the problem', async () => {
    const t = capture();
    expect(await main(['train', '--out', '/tmp/never', '--set', '{"rl":{"clip":3}}'], t.io)).toBe(2);
    expect(t.err.join('\n')).toMatch(/config\.rl\.clip: must be a number in \[0\.001, 0\.999\], got 3/);
    const dir = mkdtempSync(join(tmpdir(), 'coderl-suite-'));
    const two = join(dir, 'two.jsonl');
    writeFileSync(
      two,
      '{"task_id":"a","language":"javascript","prompt":"function a(){\\n","entry_point":"a","tests":"console.assert(a()===1);","canonical_solution":"return 1;}"}\n'.repeat(
        1,
      ),
    );
    const f = capture();
    expect(await main(['train', '--out', join(dir, 'run'), '--suite', two], f.io)).toBe(2);
    expect(f.err.join('\n')).toMatch(/coderl train: two\.jsonl: a run needs at least 3 tasks \(train, RL and held-out\), the file has 1/);
    expect(existsSync(join(dir, 'run'))).toBe(false);
    const m = capture();
    expect(await main(['train', '--out', join(dir, 'run'), '--suite', join(dir, 'missing.jsonl')], m.io)).toBe(2);
    expect(m.err.join('\n')).toMatch(/missing\.jsonl/);
    const u = capture();
    expect(await main(['train', '--seed', '1'], u.io)).toBe(2);
    expect(u.err.join('\n')).toMatch(/--out DIR is required/);
    const e = capture();
    expect(await main(['eval', '--suite', 'x.jsonl', '--checkpoint', 'y.ckpt', '--k', '1,a'], e.io)).toBe(2);
    expect(e.err.join('\n')).toMatch(/--k must be comma-separated positive integers/);
    const s = capture();
    expect(await main(['eval', '--suite', 'x.jsonl', '--checkpoint', 'y.ckpt', '--k', '1,5', '--samples', '2'], s.io)).toBe(2);
    expect(s.err.join('\n')).toMatch(/k = 5 needs at least that many --samples/);
  });
});
