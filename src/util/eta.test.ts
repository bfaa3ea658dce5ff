import { describe, expect, test } from 'vitest';
import { formatEta, phaseEta } from './eta';

describe('phase ETA', () => {
  test('the rate so far, projected over what is left', () => {
    // 25% of the phase in 10 s: 30 s left
    expect(phaseEta({ t: 0, p: 0 }, 0.25, 10_000)).toBeCloseTo(30, 9);
    // a resumed phase: from 40% to 60% in 4 s, so 8 s for the last 40%
    expect(phaseEta({ t: 1000, p: 0.4 }, 0.6, 5000)).toBeCloseTo(8, 9);
  });
  test('nothing to say before the phase has moved, or after it ended', () => {
    expect(phaseEta(null, 0.5, 10_000)).toBeNull();
    expect(phaseEta({ t: 0, p: 0 }, 0.01, 10_000)).toBeNull();
    expect(phaseEta({ t: 0, p: 0 }, 0.5, 500)).toBeNull();
    expect(phaseEta({ t: 0, p: 0 }, 1, 10_000)).toBeNull();
    expect(phaseEta({ t: 0, p: 0.7 }, 0.6, 10_000)).toBeNull();
  });
  test('formatting', () => {
    expect(formatEta(44.6)).toBe('45 s');
    expect(formatEta(185)).toBe('3 min 05 s');
    expect(formatEta(3720)).toBe('1 h 02 min');
    expect(formatEta(-3)).toBe('0 s');
  });
});
