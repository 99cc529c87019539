import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LoopWatch } from '../../src/emulator/loop-watch.js';

describe('LoopWatch', () => {
  let watch: LoopWatch | undefined;
  afterEach(() => watch?.stop());

  it('takes a request read on a turning loop as arrived when it was read', async () => {
    watch = new LoopWatch();
    await sleep(50);
    const now = performance.now();
    expect(watch.earliestArrival(now)).toBe(now);
  });

  it('takes a request read after a stall as possibly arrived at its start', async () => {
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
