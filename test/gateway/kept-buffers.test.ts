/**
 * KeptBuffers: the smallest kept buffer that is large enough is handed out; what is kept is
 * bounded in count and in size.
 */
import { describe, expect, it } from 'vitest';
import { KeptBuffers } from '../../src/gateway/kept-buffers.js';

const STEP = 64 * 1024;

describe('KeptBuffers', () => {
  it('makes new buffers in whole steps, and hands back the smallest kept one that is large enough', () => {
    const kept = new KeptBuffers({ count: 4, largest: 2 ** 20, step: STEP });
    const small = kept.take(100_000);
    const large = kept.take(500_000);
    expect(small.byteLength).toBe(2 * STEP);
    expect(large.byteLength).toBe(8 * STEP);
    expect(kept.take(0).byteLength).toBe(STEP);
    kept.keep(large);
    kept.keep(small);
    expect(kept.take(90_000)).toBe(small);
    expect(kept.take(90_000)).toBe(large);
    expect(kept.take(90_000)).not.toBe(large);
  });

  it('keeps at most `count`, the largest of those given back, and none past `largest`', () => {
    const kept = new KeptBuffers({ count: 2, largest: 8 * STEP, step: STEP });
    const buffers = [1, 3, 2, 9].map((steps) => kept.take(steps * STEP));
    for (const buffer of buffers) kept.keep(buffer);
    // 9 steps is past `largest`; of 1, 3 and 2 the two largest stay.
    expect(kept.take(0)).toBe(buffers[2]);
    expect(kept.take(0)).toBe(buffers[1]);
    expect([buffers[0], buffers[3]]).not.toContain(kept.take(0));
  });

  it('keeps a buffer given back twice once', () => {
    const kept = new KeptBuffers({ count: 4, largest: 2 ** 20, step: STEP });
    const buffer = kept.take(STEP);
    kept.keep(buffer);
    kept.keep(buffer);
    expect(kept.take(STEP)).toBe(buffer);
    expect(kept.take(STEP)).not.toBe(buffer);
  });
});
