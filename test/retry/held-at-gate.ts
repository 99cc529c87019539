/**
 * What GatewayClient does around each attempt, for tests of withRetry without HTTP: the attempt waits
 * at its key's gate (the client's own RetryAfterGates), and an answer carrying Retry-After closes the
 * gate. withRetry keeps no wait of its own; this is where a retry after a 429 is held.
 */
import { RetryAfterGates } from '../../src/gateway/retry-after-gate.js';
import type { FakeTime } from './fake-time.js';

/** The gates of a client on `time`'s clock, with no cap unless one is given. */
export function gatesOn(
  time: Pick<FakeTime, 'now' | 'sleep'>,
  maxWaitMs = Number.POSITIVE_INFINITY,
): RetryAfterGates {
  return new RetryAfterGates({ maxWaitMs, clock: { now: time.now, sleep: time.sleep } });
}

export function heldAtGate<T>(
  gates: RetryAfterGates,
  attempt: (n: number) => Promise<T>,
  signal?: AbortSignal,
): (n: number) => Promise<T> {
  return async (n) => {
    await gates.waitUntilOpen('api', signal);
    try {
      return await attempt(n);
    } catch (error) {
      const ms = (error as { retryAfterMs?: unknown }).retryAfterMs;
      if (typeof ms === 'number') gates.asked('api', ms);
      throw error;
    }
  };
}
