import { describe, expect, test } from 'vitest';
import { errorText } from './errors';

describe('errorText', () => {
  test('an Error gives its message, or its name when the message is empty', () => {
    expect(errorText(new Error('disk full'))).toBe('disk full');
    expect(errorText(new TypeError(''))).toBe('TypeError');
  });
  test('strings, numbers and objects are shown; nothing is never empty', () => {
    expect(errorText('no such file')).toBe('no such file');
    expect(errorText(42)).toBe('42');
    expect(errorText({ toString: () => 'custom' })).toBe('custom');
    expect(errorText(undefined)).toBe('unknown error');
    expect(errorText(null)).toBe('unknown error');
    expect(errorText('')).toBe('unknown error');
  });
  test('a value whose toString throws still gives text', () => {
    const hostile = {
      toString() {
        throw new Error('no');
      },
    };
    expect(errorText(hostile)).toBe('[object Object]');
  });
});
