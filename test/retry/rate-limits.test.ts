/**
 * The retry layer under rate limits, on a fake clock: a 429 with Retry-After paces and does not spend
 * attempts, a Retry-After past the cap fails at once, waiters add no abort listener each, and the
 * AIMD window halves once per burst of 429s and grows back additively. The Retry-After wait is the
 * gateway client's: attempts are held at its gates (heldAtGate), never by withRetry.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RetryAfterTooLongError } from '../../src/gateway/errors.js';
import { RetryAfterGate } from '../../src/gateway/retry-after-gate.js';
import { withRetry } from '../../src/retry/retry.js';
import { sleep } from '../../src/retry/timing.js';
import { AdaptiveWindow } from '../../src/retry/window.js';
import { FakeTime, turn } from './fake-time.js';
import { gatesOn, heldAtGate } from './held-at-gate.js';

class Limited extends Error {
  readonly retryable = true;
  readonly status = 429;
  constructor(
    readonly retryAfterMs: number,
    /** Set by the client on an answer asking for longer than its --max-retry-after. */
    readonly retryLater = false,
  ) {
    super('429');
  }
}

const policy = (time: FakeTime, extra = {}) => ({
  sleep: time.sleep,
  random: () => 0.5,
  baseDelayMs: 100,
  maxDelayMs: 1000,
  ...extra,
});

describe('429 with Retry-After', () => {
  it('waits as asked and does not spend attempts', async () => {
    const time = new FakeTime();
    let calls = 0;
    const result = await time.settle(
      withRetry(
        heldAtGate(gatesOn(time), async () => {
          calls++;
          if (calls <= 20) throw new Limited(1000);
          return 'ok';
        }),
        policy(time, { maxAttempts: 2 }),
      ),
    );
    expect(result).toBe('ok');
    expect(calls).toBe(21);
  });

  it('still bounds the waits (maxRateLimitWaits), then counts them as attempts', async () => {
    const time = new FakeTime();
    let calls = 0;
    const failing = withRetry(
      heldAtGate(gatesOn(time), async () => {
        calls++;
        throw new Limited(10);
      }),
      policy(time, { maxAttempts: 2, maxRateLimitWaits: 5 }),
    );
    await expect(time.settle(failing)).rejects.toBeInstanceOf(Limited);
    expect(calls).toBe(5 + 2);
  });

  it('fails at once, without waiting, when Retry-After is past maxRetryAfterMs', async () => {
    const time = new FakeTime();
    // The client's cap is 300 s: it throws such an answer `retryLater` (client-retry-after.test.ts).
    const gates = gatesOn(time, 300_000);
    const error = new Limited(3_600_000, true);
    const failing = withRetry(
      heldAtGate(gates, async () => {
        throw error;
      }),
      policy(time),
    );
    await expect(time.settle(failing)).rejects.toBe(error);
    expect(time.sleeps).toEqual([]);
  });

  it('a gate closed past the cap refuses callers at once, with the client’s error', async () => {
    const time = new FakeTime();
    const gate = new RetryAfterGate(time);
    gate.closeFor(3_600_000);
    await expect(gate.waitUntilOpen(undefined, 300_000)).rejects.toBeInstanceOf(RetryAfterTooLongError);
    // Whoever closed it (this client's answer, another worker's): one error, a retryable 429 for later.
    const gates = gatesOn(time, 300_000);
    gates.gate('api').closeFor(3_600_000);
    const refused = await withRetry(
      heldAtGate(gates, async () => 'never'),
      policy(time),
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RetryAfterTooLongError);
    expect(refused).toMatchObject({ retryable: true, retryLater: true, status: 429, attempts: 1 });
    expect(time.sleeps).toEqual([]);
    // Within the cap it waits as before.
    const short = new RetryAfterGate(time);
    short.closeFor(1000);
    await time.settle(short.waitUntilOpen(undefined, 300_000));
  });
});

describe('abort listeners', () => {
  it('100 waiters at a closed gate add one listener to the signal, removed when they leave', async () => {
    const gate = new RetryAfterGate();
    gate.closeFor(50);
    const controller = new AbortController();
    const waiters = Array.from({ length: 100 }, () => gate.waitUntilOpen(controller.signal));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    await Promise.all(waiters);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('sleeps aborted together all reject, and leave no listener', async () => {
    const controller = new AbortController();
    const sleeping = Array.from({ length: 20 }, () => sleep(60_000, controller.signal));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort(new Error('stop'));
    const outcomes = await Promise.allSettled(sleeping);
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('attempts in flight under withRetry share one listener', async () => {
    const controller = new AbortController();
    const release: Array<() => void> = [];
    const calls = Array.from({ length: 30 }, () =>
      withRetry(() => new Promise<void>((resolve) => release.push(resolve)), { signal: controller.signal }),
    );
    await turn();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const r of release) r();
    await Promise.all(calls);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('AdaptiveWindow (AIMD)', () => {
  it('halves once for a burst of 429s answering requests sent together', async () => {
    const window = new AdaptiveWindow(16);
    const tickets = await Promise.all(Array.from({ length: 16 }, () => window.acquire()));
    for (const t of tickets) window.release(t, 'limited');
    expect(window.limit).toBe(8);
    // A request sent after the decrease can decrease again.
    const next = await window.acquire();
    window.release(next, 'limited');
    expect(window.limit).toBe(4);
  });

  it('grows back by about one per window of successes, up to the max', async () => {
    const window = new AdaptiveWindow(8);
    const t = await window.acquire();
    window.release(t, 'limited');
    window.release(await window.acquire(), 'limited');
    window.release(await window.acquire(), 'limited');
    expect(window.limit).toBe(1);
    let successes = 0;
    while (window.limit < 4) {
      window.release(await window.acquire(), 'ok');
      successes++;
    }
    // 1 → 2 → 3 → 4 takes about 1 + 2 + 3 successes, not one each.
    expect(successes).toBeGreaterThanOrEqual(5);
    expect(successes).toBeLessThanOrEqual(8);
    for (let i = 0; i < 200; i++) window.release(await window.acquire(), 'ok');
    expect(window.limit).toBe(8);
  });

  it('holds requests beyond the window in order, and lets one out per slot given back', async () => {
    const window = new AdaptiveWindow(2);
    const a = await window.acquire();
    const b = await window.acquire();
    const order: string[] = [];
    const c = window.acquire().then((t) => {
      order.push('c');
      return t;
    });
    const d = window.acquire().then((t) => {
      order.push('d');
      return t;
    });
    await turn();
    expect(order).toEqual([]);
    window.release(a, 'ok');
    await turn();
    expect(order).toEqual(['c']);
    window.release(b, 'other');
    window.release(await c, 'ok');
    await d;
    expect(order).toEqual(['c', 'd']);
  });

  it('a waiter whose signal aborts leaves the queue', async () => {
    const window = new AdaptiveWindow(1);
    const a = await window.acquire();
    const controller = new AbortController();
    const waiting = window.acquire(controller.signal);
    expect(window.queued).toBe(1);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(window.queued).toBe(0);
    window.release(a, 'ok');
    expect(window.active).toBe(0);
  });
});
