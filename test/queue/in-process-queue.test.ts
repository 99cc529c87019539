import { describe, expect, it } from 'vitest';
import type { Batch } from '../../src/domain.js';
import { InProcessQueue } from '../../src/queue/in-process-queue.js';

const batch = (n: number): Batch => ({ batchId: `b${n}`, model: 'm', chunks: [], tokens: 0 });
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('InProcessQueue', () => {
  it('keeps every slot busy: a sliding window, not waves', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const starts: number[] = [];
    const t0 = Date.now();
    // Batch 0 is slow; the others are quick. In waves, everything would wait for batch 0.
    const queue = new InProcessQueue(
      async (b) => {
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        starts.push(Date.now() - t0);
        await delay(b.batchId === 'b0' ? 200 : 10);
        inFlight -= 1;
      },
      { concurrency: 4 },
    );
    for (let i = 0; i < 40; i++) await queue.push(batch(i));
    await queue.drain();
    expect(maxInFlight).toBe(4);
    expect(starts).toHaveLength(40);
    // 39 quick batches over 3 free slots take ~130 ms; all must have started before the slow one ends.
    expect(Math.max(...starts)).toBeLessThan(190);
  });

  it('applies backpressure: push waits while a window of batches is queued', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const queue = new InProcessQueue(() => gate, { concurrency: 2 });
    let accepted = 0;
    const producer = (async () => {
      for (let i = 0; i < 10; i++) {
        await queue.push(batch(i));
        accepted += 1;
      }
    })();
    await delay(20);
    // 2 running + 2 waiting; the push of the 4th waits for room.
    expect(accepted).toBeLessThanOrEqual(4);
    release();
    await producer;
    await queue.drain();
    expect(accepted).toBe(10);
  });

  it('a thrown error is fatal: the run stops and drain rejects with it', async () => {
    const seen: string[] = [];
    const queue = new InProcessQueue(
      async (b, signal) => {
        if (signal.aborted) return;
        seen.push(b.batchId);
        if (b.batchId === 'b3') throw new Error('402 credits');
        await delay(5);
      },
      { concurrency: 2 },
    );
    await expect(
      (async () => {
        for (let i = 0; i < 50; i++) await queue.push(batch(i));
      })(),
    ).rejects.toThrow('402 credits');
    await expect(queue.drain()).rejects.toThrow('402 credits');
    expect(seen.length).toBeLessThan(10);
  });
});
