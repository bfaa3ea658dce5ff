/** Training alarms. */
import { describe, expect, test } from 'vitest';
import { checkAlarms } from './alarms';
import type { Metrics } from './ppo-loop';

const it = (reward: number, kl: number, entropy: number, heldout?: number): Metrics => ({
  reward: reward,
  'objective/kl': kl,
  'policy/entropy_avg': entropy,
  ...(heldout !== undefined ? { 'eval/heldout_pass@1': heldout } : {}),
});

describe('checkAlarms', () => {
  test('quiet on a healthy run', () => {
    expect(checkAlarms([it(0.3, 0, 0.3, 0.2), it(0.35, 0.1, 0.29), it(0.4, 0.15, 0.28, 0.25)])).toEqual([]);
  });
  test('train reward up while held-out pass@1 falls', () => {
    const a = checkAlarms([it(0.3, 0, 0.3), it(0.3, 0.1, 0.3, 0.3), it(0.5, 0.1, 0.3), it(0.6, 0.1, 0.3, 0.2)]);
    expect(a.some((x) => x.startsWith('overfitting'))).toBe(true);
  });
  test('KL more than doubling in two iterations above half a nat', () => {
    expect(checkAlarms([it(0.3, 0.4, 0.3), it(0.3, 0.6, 0.3), it(0.3, 1.2, 0.3)]).some((x) => x.startsWith('KL accelerating'))).toBe(true);
    expect(checkAlarms([it(0.3, 0.1, 0.3), it(0.3, 0.2, 0.3), it(0.3, 0.3, 0.3)])).toEqual([]);
  });
  test('entropy collapse', () => {
    expect(checkAlarms([it(0.3, 0, 0.4), it(0.3, 0, 0.08)]).some((x) => x.startsWith('entropy collapse'))).toBe(true);
    expect(checkAlarms([it(0.3, 0, 0.04)]).some((x) => x.startsWith('entropy collapse'))).toBe(true);
  });
});
