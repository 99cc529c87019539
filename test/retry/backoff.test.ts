import { describe, expect, it } from 'vitest';
import { fullJitterDelay } from '../../src/retry/backoff.js';

const options = { baseMs: 500, maxMs: 30_000 };

describe('fullJitterDelay', () => {
  it('spans 0 up to the exponential cap, scaled by random()', () => {
    expect(fullJitterDelay(1, options, () => 0)).toBe(0);
    expect(fullJitterDelay(1, options, () => 0.5)).toBe(250);
    expect(fullJitterDelay(2, options, () => 0.5)).toBe(500);
    expect(fullJitterDelay(3, options, () => 0.5)).toBe(1000);
    expect(fullJitterDelay(4, options, () => 0.999)).toBeCloseTo(3996);
  });

  it('never exceeds maxMs, even for huge attempt numbers', () => {
    expect(fullJitterDelay(7, options, () => 0.999_999)).toBeLessThan(30_000);
    expect(fullJitterDelay(7, options, () => 0.5)).toBe(15_000);
    expect(fullJitterDelay(5_000, options, () => 0.5)).toBe(15_000);
  });

  it('stays within [0, cap) over many draws of the real random()', () => {
    for (let attempt = 1; attempt <= 10; attempt++) {
      const cap = Math.min(options.maxMs, options.baseMs * 2 ** (attempt - 1));
      for (let i = 0; i < 200; i++) {
        const delay = fullJitterDelay(attempt, options);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(cap);
      }
    }
  });
});
