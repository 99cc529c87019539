import { describe, expect, it, vi } from 'vitest';
import type { RetryAfterGates } from '../../src/gateway/retry-after-gate.js';
import { type RetryOptions, withRetry } from '../../src/retry/retry.js';
import { sleep } from '../../src/retry/timing.js';
import { FakeTime, turn } from './fake-time.js';
import { gatesOn, heldAtGate } from './held-at-gate.js';

/** Shaped like a GatewayError as far as withRetry cares. */
class Flaky extends Error {
  attempts?: number;
  constructor(
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(retryable ? 'transient' : 'permanent');
  }
}

function policy(time: FakeTime, extra: RetryOptions = {}): RetryOptions {
  return {
    maxAttempts: 5,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    sleep: time.sleep,
    random: () => 0.5,
    ...extra,
  };
}

/** The key's gates of the test's one gateway client, on its fake clock (Retry-After is held there). */
const clients = new WeakMap<FakeTime, RetryAfterGates>();
function clientGates(time: FakeTime): RetryAfterGates {
  const gates = clients.get(time) ?? gatesOn(time);
  clients.set(time, gates);
  return gates;
}

/**
 * An attempt function (`fn`, what goes out) that fails with the given errors, then returns 'ok';
 * records when each attempt went out. `attempt` is what withRetry calls: `fn` held at `gates` first,
 * as the gateway client holds every request (see heldAtGate).
 */
function scriptAt(gates: RetryAfterGates, time: FakeTime, ...failures: Error[]) {
  const startedAt: number[] = [];
  const fn = vi.fn(async (attempt: number) => {
    startedAt.push(time.current);
    const failure = failures[attempt - 1];
    if (failure) throw failure;
    return 'ok';
  });
  return { fn, attempt: heldAtGate(gates, fn), startedAt };
}

const script = (time: FakeTime, ...failures: Error[]) => scriptAt(clientGates(time), time, ...failures);

describe('withRetry', () => {
  it('returns the first success, numbering attempts from 1', async () => {
    const time = new FakeTime();
    const { fn, attempt } = script(time);
    await expect(time.settle(withRetry(attempt, policy(time)))).resolves.toBe('ok');
    expect(fn).toHaveBeenCalledTimes(1);
    expect(fn).toHaveBeenCalledWith(1);
    expect(time.sleeps).toEqual([]);
  });

  it('retries retryable errors after full-jitter backoff and reports each retry', async () => {
    const time = new FakeTime();
    const { fn, attempt, startedAt } = script(time, new Flaky(true), new Flaky(true), new Flaky(true));
    const onRetry = vi.fn();
    await expect(time.settle(withRetry(attempt, policy(time, { onRetry })))).resolves.toBe('ok');
    expect(fn).toHaveBeenCalledTimes(4);
    // random() = 0.5 of caps 100, 200, 400.
    expect(time.sleeps).toEqual([50, 100, 200]);
    expect(startedAt.map((t) => t - startedAt[0]!)).toEqual([0, 50, 150, 350]);
    expect(onRetry.mock.calls.map(([, attempt, delay]) => [attempt, delay])).toEqual([
      [1, 50],
      [2, 100],
      [3, 200],
    ]);
  });

  it('honours Retry-After exactly, ignoring the jitter', async () => {
    const time = new FakeTime();
    const { attempt, startedAt } = script(time, new Flaky(true, 2500), new Flaky(true, 0));
    const onRetry = vi.fn();
    await time.settle(withRetry(attempt, policy(time, { random: () => 0.99, onRetry })));
    expect(startedAt[1]! - startedAt[0]!).toBe(2500);
    // retry-after 0: go again at once, no backoff added.
    expect(startedAt[2]).toBe(startedAt[1]);
    expect(onRetry.mock.calls.map(([, , delay]) => delay)).toEqual([2500, 0]);
  });

  it('never sends before Retry-After elapses, even when the sleeper wakes early', async () => {
    const time = new FakeTime();
    // A sleeper that comes back early (after 90% of the time asked): the client's clock.
    const early: RetryOptions['sleep'] = (ms, signal) => time.sleep(Math.ceil(ms * 0.9), signal);
    const gates = gatesOn({ now: time.now, sleep: early });
    const { attempt, startedAt } = scriptAt(gates, time, new Flaky(true, 1000));
    await time.settle(withRetry(attempt, policy(time, { sleep: early })));
    expect(startedAt[1]! - startedAt[0]!).toBe(1000);
  });

  it('closes the shared gate so concurrent callers on the key wait too', async () => {
    const time = new FakeTime();
    // The client's gate of the key, shared by every call through the client.
    const gate = clientGates(time).gate('api');
    const t0 = time.current;
    // A gets a 429 with Retry-After 3 s; B fails with a plain 503 (50 ms backoff) at the same time.
    const a = script(time, new Flaky(true, 3000));
    const b = script(time, new Flaky(true));
    const runA = withRetry(a.attempt, policy(time));
    const runB = withRetry(b.attempt, policy(time));
    await time.settle(Promise.all([runA, runB]));
    expect(a.startedAt).toEqual([t0, t0 + 3000]);
    expect(b.startedAt).toEqual([t0, t0 + 3000]);

    // A caller that starts while the gate is closed waits as well.
    gate.closeFor(1000);
    const c = script(time);
    const before = time.current;
    await time.settle(withRetry(c.attempt, policy(time)));
    expect(c.startedAt).toEqual([before + 1000]);
  });

  it('throws the last error after maxAttempts, annotated with the attempt count', async () => {
    const time = new FakeTime();
    const errors = [1, 2, 3].map(() => new Flaky(true));
    const { fn, attempt } = script(time, ...errors);
    const run = withRetry(attempt, policy(time, { maxAttempts: 3 }));
    await expect(time.settle(run)).rejects.toBe(errors[2]);
    expect(errors[2]!.attempts).toBe(3);
    expect(fn).toHaveBeenCalledTimes(3);
    expect(time.sleeps).toHaveLength(2);
  });

  it('throws non-retryable errors at once', async () => {
    const time = new FakeTime();
    const permanent = new Flaky(false);
    const { fn, attempt } = script(time, permanent);
    await expect(time.settle(withRetry(attempt, policy(time)))).rejects.toBe(permanent);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(permanent.attempts).toBe(1);

    const plain = new TypeError('a bug');
    await expect(time.settle(withRetry(() => Promise.reject(plain), policy(time)))).rejects.toBe(plain);
    expect(time.sleeps).toEqual([]);
  });

  it('rejects promptly with the signal reason when aborted during a wait', async () => {
    const time = new FakeTime();
    const controller = new AbortController();
    const { fn, attempt } = script(time, new Flaky(true, 60_000));
    const run = withRetry(attempt, policy(time, { signal: controller.signal }));
    await turn();
    expect(time.pendingTimers).toBe(1);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('rejects promptly when aborted during an attempt that ignores the signal', async () => {
    const time = new FakeTime();
    const controller = new AbortController();
    const run = withRetry(() => new Promise<never>(() => {}), policy(time, { signal: controller.signal }));
    await turn();
    controller.abort('stop');
    await expect(run).rejects.toBe('stop');
  });

  it('reports the abort, not the error the aborted attempt threw', async () => {
    const time = new FakeTime();
    const controller = new AbortController();
    const run = withRetry(
      async () => {
        controller.abort('stop');
        throw new Flaky(true);
      },
      policy(time, { signal: controller.signal }),
    );
    await expect(run).rejects.toBe('stop');
  });

  it('does not start when the signal is already aborted', async () => {
    const time = new FakeTime();
    const fn = vi.fn(async () => 'ok');
    await expect(withRetry(fn, policy(time, { signal: AbortSignal.abort('gone') }))).rejects.toBe('gone');
    expect(fn).not.toHaveBeenCalled();
  });

  it('refuses a maxAttempts below 1', async () => {
    await expect(withRetry(async () => 1, { maxAttempts: 0 })).rejects.toThrow(RangeError);
  });
});

describe('sleep (production default)', () => {
  it('resolves after the delay', async () => {
    const start = performance.now();
    await sleep(15);
    expect(performance.now() - start).toBeGreaterThanOrEqual(14);
  });

  it('rejects with the signal reason, already aborted or aborted while sleeping', async () => {
    await expect(sleep(10, AbortSignal.abort('early'))).rejects.toBe('early');
    const controller = new AbortController();
    const sleeping = sleep(60_000, controller.signal);
    controller.abort('late');
    await expect(sleeping).rejects.toBe('late');
  });
});
