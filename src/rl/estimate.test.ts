/** The run-time estimate: the cost model against the figures it was measured from, and time left during a run. */
import { describe, expect, test } from 'vitest';
import { resolveConfig } from './config';
import { estimateRun, modelWork, runEta, WORK_PHASES, type RunProgressState, type TaskCounts } from './estimate';

/** The built-in families' splits under every preset's shares (setup says: 351 train, 39 val, 225 rl, 225 held-out). */
const COUNTS: TaskCounts = { train: 351, val: 39, rl: 225, heldout: 225, trainEval: 48, rlEval: 48 };
const fill = <T>(v: T) => Object.fromEntries(WORK_PHASES.map((p) => [p, v])) as Record<(typeof WORK_PHASES)[number], T>;

describe('estimateRun', () => {
  test('tiny on cpu: its phases near the figures they were measured from (docs/results.md)', () => {
    const e = estimateRun(resolveConfig('tiny'), COUNTS, 'cpu');
    const s = Object.fromEntries(e.phases.map((p) => [p.phase, p.seconds]));
    // SFT counts all 500 steps it may take (a measured run stopped early at 450 steps: 100 s)
    expect(s.sft).toBeGreaterThan(100);
    expect(s.sft).toBeLessThan(130);
    expect(s['sft-eval']).toBeGreaterThan(18);
    expect(s['sft-eval']).toBeLessThan(34);
    // 50 iterations of 32 x 8 rollouts: twice the sampling, scoring and update of 16 x 8's 7.1 s
    expect(s.ppo! / 50).toBeGreaterThan(11);
    expect(s.ppo! / 50).toBeLessThan(17);
    expect(e.upperBound).toBe(true);
  });

  test('quick fits its 3-minute promise on cpu; a software GPU is estimated slower; a bigger model costs more', () => {
    const q = resolveConfig('quick');
    expect(estimateRun(q, COUNTS, 'cpu').seconds).toBeLessThan(180);
    expect(estimateRun(q, COUNTS, 'webgpu-software').seconds).toBeGreaterThan(5 * estimateRun(q, COUNTS, 'cpu').seconds);
    expect(modelWork(q.model)).toBe(1);
    expect(modelWork(resolveConfig('small').model)).toBeGreaterThan(5);
    expect(estimateRun(resolveConfig('small'), COUNTS, 'cpu').seconds).toBeGreaterThan(
      estimateRun(resolveConfig('tiny'), COUNTS, 'cpu').seconds,
    );
  });

  test('phases the config turns off cost nothing; a calibration scales model work, not sandbox scoring', () => {
    const off = estimateRun(resolveConfig('quick', { rm: { enabled: false } }), COUNTS, 'cpu');
    expect(off.phases.find((p) => p.phase === 'rm')!.seconds).toBe(0);
    expect(off.phases.find((p) => p.phase === 'rm-samples')!.work).toBe('off');
    const a = estimateRun(resolveConfig('quick'), COUNTS, 'cpu', 2, 1).seconds;
    const b = estimateRun(resolveConfig('quick'), COUNTS, 'cpu', 2, 2).seconds;
    expect(b).toBeGreaterThan(a);
    expect(b).toBeLessThan(2 * a);
  });
});

describe('runEta', () => {
  const est = estimateRun(resolveConfig('quick'), COUNTS, 'cpu');
  const sec = (p: string) => est.phases.find((x) => x.phase === p)!.seconds;

  test('before any phase is timed: the estimate, less what the active phase has done', () => {
    const state: RunProgressState = {
      phases: { ...fill('pending'), setup: 'done', sft: 'active' },
      progress: { ...fill(0), setup: 1, sft: 0.5 },
      took: {},
    };
    const r = runEta(est, state, null);
    expect(r.scale).toBe(1);
    expect(r.phases.setup).toBeUndefined();
    expect(r.phases.sft).toBeCloseTo(sec('sft') / 2, 6);
    expect(r.total).toBeCloseTo(est.seconds - sec('setup') - sec('sft') / 2, 6);
  });

  test('the active phase at its own rate; pending phases scaled by how the finished ones compared with their estimate', () => {
    const state: RunProgressState = {
      phases: { ...fill('pending'), setup: 'done', sft: 'done', 'sft-eval': 'active' },
      progress: { ...fill(0), setup: 1, sft: 1, 'sft-eval': 0.3 },
      took: { setup: sec('setup') * 2000, sft: sec('sft') * 2000 }, // twice as slow as estimated
    };
    const r = runEta(est, state, 12);
    expect(r.scale).toBeCloseTo(2, 6);
    expect(r.phases['sft-eval']).toBe(12);
    expect(r.phases.ppo).toBeCloseTo(2 * sec('ppo'), 6);
    expect(r.total).toBeCloseTo(12 + 2 * (sec('rm-samples') + sec('rm') + sec('ppo') + sec('eval')), 6);
  });

  test('off phases are left out', () => {
    const state: RunProgressState = { phases: { ...fill('pending'), rm: 'off', 'rm-samples': 'off' }, progress: fill(0), took: {} };
    const r = runEta(est, state, null);
    expect(r.phases.rm).toBeUndefined();
    expect(r.total).toBeCloseTo(est.seconds - sec('rm') - sec('rm-samples'), 6);
  });
});
