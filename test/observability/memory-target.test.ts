import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { holdMemoryTarget, MemoryTarget } from '../../src/observability/memory-target.js';

/**
 * A target of 100 bytes over a fake clock, a fake resident size and a fake heap. A collection takes
 * `collectMs` of the clock and frees `frees` bytes of the heap, allocated again before the next
 * check; the resident size does not move (the allocator keeps the pages). `growing`: the heap
 * growing factors set, in order.
 */
function fake(rssBytes: number, { collectMs = 10, frees = 5 } = {}) {
  const state = { now: 0, rss: rssBytes, heap: 50, collected: 0, frees, growing: [] as number[] };
  const target = new MemoryTarget({
    heapGrowingPercent: 30,
    heapReleaseShare: 0.9,
    setHeapGrowing: (percent) => state.growing.push(percent),
    targetBytes: 100,
    minGapMs: 1_000,
    maxGapMs: 64_000,
    maxShare: 0.02,
    rss: () => state.rss,
    heap: () => state.heap,
    now: () => state.now,
    collect: () => {
      state.collected += 1;
      state.now += collectMs;
      state.heap -= state.frees;
      queueMicrotask(() => {
        state.heap += state.frees;
      });
    },
  });
  return { state, target };
}

/** The times at which `target` collected, checked every 100 ms for `ms`. */
async function collectionTimes(state: { now: number }, target: MemoryTarget, ms: number): Promise<number[]> {
  const times: number[] = [];
  for (let t = 0; t < ms; t += 100) {
    state.now = Math.max(state.now, t);
    const at = state.now;
    if (target.check()) times.push(at);
    await Promise.resolve();
  }
  return times;
}

describe('the memory target', () => {
  it('collects nothing below the target', async () => {
    const { state, target } = fake(100);
    expect(await collectionTimes(state, target, 10_000)).toEqual([]);
    expect(target.report()).toEqual({ collections: 0, collectingMs: 0 });
  });

  it('past the target collects at once, then at most once a second', async () => {
    const { state, target } = fake(101);
    expect(await collectionTimes(state, target, 4_000)).toEqual([0, 1_000, 2_000, 3_000]);
    expect(target.report()).toEqual({ collections: 4, collectingMs: 40 });
    // Back under it: nothing more, however long it waits.
    state.rss = 90;
    state.now = 60_000;
    expect(target.check()).toBe(false);
    expect(state.collected).toBe(4);
  });

  it('spaces slow collections so that they take at most 2% of the time', async () => {
    const { state, target } = fake(1_000, { collectMs: 100 });
    // 100 ms each: one every 5 s, 12 in a minute (one a second would be 60, 10% of the time).
    expect((await collectionTimes(state, target, 60_000)).length).toBe(12);
    expect(target.report().collectingMs / 60_000).toBeLessThanOrEqual(0.02 + 1e-9);
  });

  it('waits twice as long after each collection that freed next to nothing, up to a minute', async () => {
    // Freeing nothing: the live data is over the target, or an idle worker's pages are the allocator's.
    const { state, target } = fake(1_000, { frees: 0 });
    const times = await collectionTimes(state, target, 200_000);
    expect(times.slice(0, 8)).toEqual([0, 2_000, 6_000, 14_000, 30_000, 62_000, 126_000, 190_000]);
    // Once one frees something again, the wait is a second again.
    state.frees = 50;
    state.now = 260_000;
    expect(target.check()).toBe(true);
    state.now = 261_000;
    expect(target.check()).toBe(true);
  });

  it("holds V8's heap growing factor past the target, and gives it back below it and when stopped", async () => {
    const { state, target } = fake(50);
    await collectionTimes(state, target, 1_000);
    expect(state.growing).toEqual([]);
    state.rss = 1_000;
    await collectionTimes(state, target, 3_000);
    // Set once, not at every check.
    expect(state.growing).toEqual([30]);
    state.rss = 50;
    expect(target.check()).toBe(false);
    expect(state.growing).toEqual([30, 0]);
    target.stop();
    expect(state.growing).toEqual([30, 0]);
    state.rss = 1_000;
    target.check();
    target.stop();
    expect(state.growing).toEqual([30, 0, 30, 0]);
  });

  it('holds the factor between its own collections too', () => {
    const { state, target } = fake(1_000);
    expect(target.check()).toBe(true);
    state.now = 500;
    expect(target.check()).toBe(false);
    state.rss = 50;
    state.now = 600;
    target.check();
    // Back under the target before the next collection was due: V8's own factor at once.
    expect(state.growing).toEqual([30, 0]);
  });

  it('keeps the factor while resident memory is just under the target, gives it back under 90% of it', () => {
    const { state, target } = fake(101);
    target.check();
    expect(state.growing).toEqual([30]);
    // Just after a collection: V8 sets its next limit now, and must still use the factor.
    for (const rss of [95, 91, 99, 101, 90.5]) {
      state.rss = rss;
      target.check();
    }
    expect(state.growing).toEqual([30]);
    state.rss = 89;
    target.check();
    expect(state.growing).toEqual([30, 0]);
    // Under the target and never past it since: nothing held.
    state.rss = 95;
    target.check();
    expect(state.growing).toEqual([30, 0]);
  });

  it('a growing percent of 0 leaves the factor to V8', () => {
    const growing: number[] = [];
    const target = new MemoryTarget({
      targetBytes: 100,
      heapGrowingPercent: 0,
      setHeapGrowing: (percent) => growing.push(percent),
      rss: () => 1_000,
      collect: () => {},
    });
    target.check();
    target.stop();
    expect(growing).toEqual([]);
  });

  it('V8 honours the factor set at run time: the heap of a process past the target stays far lower', async () => {
    // The built module in a process of its own (the factor is process-wide): ~30 MB kept, and
    // garbage that lives long enough to reach the old generation, with and without a target.
    const [free, held] = await Promise.all([peakHeapMb('free'), peakHeapMb('held')]);
    expect(held).toBeLessThan(free * 0.7);
  });

  it("collects with V8's own full collection, exposed at run time", () => {
    // The real collector and resident size: any process is past a 1-byte target.
    const target = new MemoryTarget({ targetBytes: 1 });
    expect(target.check()).toBe(true);
    expect(target.report().collections).toBe(1);
    target.stop();
  });

  it('held by a timer: checks every 100 ms and says what it cost when it stops', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      pretty: false,
      destination: { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream,
    });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const held = holdMemoryTarget(1 / 2 ** 20, logger);
      vi.advanceTimersByTime(100);
      const report = held.stop();
      expect(report.collections).toBe(1);
      vi.advanceTimersByTime(5_000);
      expect(held.stop().collections).toBe(1);
    } finally {
      vi.useRealTimers();
    }
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.collections !== undefined);
    expect(logged).toMatchObject({
      collections: 1,
      msg: 'collected garbage early to stay near the memory target',
    });
  });

  it('0 is no target: no timer, nothing collected', () => {
    const held = holdMemoryTarget(0, createLogger({ level: 'silent' }));
    expect(held.stop()).toEqual({ collections: 0, collectingMs: 0 });
  });
});

const execFileAsync = promisify(execFile);

const HEAP_CHILD = `
const { MemoryTarget } = await import(process.env.MEMORY_TARGET_MODULE);
const kept = Array.from({ length: 150_000 }, (_, i) => ({ i, text: ('kept ' + i).padEnd(48, '.') }));
const target = process.argv[1] === 'held' ? new MemoryTarget({ targetBytes: 1, collect: () => {} }) : undefined;
target?.check();
const ring = new Array(32);
let peak = 0;
for (let round = 0; round < 300; round++) {
  ring[round % ring.length] = Array.from({ length: 4_000 }, (_, i) => ({ round, i, text: ('dropped ' + i).padEnd(48, '.') }));
  peak = Math.max(peak, process.memoryUsage().heapTotal);
}
target?.stop();
process.stdout.write(String(peak / 2 ** 20 + kept.length * 0));
`;

/** The peak heap (MB) of a child that churns garbage, `held` past a 1-byte target, or `free` of one. */
async function peakHeapMb(mode: 'free' | 'held'): Promise<number> {
  const module = new URL('../../dist/observability/memory-target.js', import.meta.url).href;
  const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', HEAP_CHILD, mode], {
    env: { ...process.env, MEMORY_TARGET_MODULE: module },
  });
  return Number(stdout);
}
