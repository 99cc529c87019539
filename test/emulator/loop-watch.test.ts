import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LoopWatch } from '../../src/emulator/loop-watch.js';

describe('LoopWatch', () => {
  let watch: LoopWatch | undefined;
  afterEach(() => watch?.stop());

  it('takes a request read on a turning loop as arrived when it was read, and one read after a stall at its start', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let clock = 0;
      watch = new LoopWatch(() => clock);
      clock = 50;
      vi.advanceTimersByTime(50);
      expect(watch.earliestArrival(50)).toBe(50);
      // 200 ms with no turn of the loop: a request read now may have come at its start.
      clock = 250;
      expect(watch.earliestArrival(250)).toBe(60);
    } finally {
      watch?.stop();
      watch = undefined;
      vi.useRealTimers();
    }
  });

  it('sees a real stall of the thread', async () => {
    watch = new LoopWatch();
    await sleep(30);
    const stalled = performance.now();
    while (performance.now() - stalled < 200) {
      // the thread is busy: no timer turns
    }
    const readAt = performance.now();
    const earliest = watch.earliestArrival(readAt);
    expect(earliest).toBeLessThanOrEqual(stalled + 10);
    expect(readAt - earliest).toBeGreaterThan(180);
  });
});
