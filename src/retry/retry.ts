/**
 * The HTTP retry layer: run an attempt, and on a retryable error wait (Retry-After exactly, else
 * backoff with full jitter) and try again, up to maxAttempts. Pure: time, randomness and the
 * shared gate are injected.
 */
import { DEFAULTS } from '../config/defaults.js';
import { fullJitterDelay } from './backoff.js';
import { RetryAfterGate } from './gate.js';
import {
  now as defaultNow,
  random as defaultRandom,
  sleep as defaultSleep,
  type Now,
  type Random,
  type Sleep,
} from './timing.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  sleep: Sleep;
  random: Random;
  now: Now;
  /** The run's gate for this key; without one, Retry-After is still honoured for this call alone. */
  gate?: RetryAfterGate;
  /** Called before each wait: the error, the attempt that failed (1-based), and the planned delay. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** Stops retrying: waits end at once; an attempt in flight is abandoned unless `letAttemptFinish`. */
  signal?: AbortSignal;
  /**
   * Let an attempt already in flight finish when the signal aborts (its result is returned, its
   * error thrown): for paid requests whose answer must not be thrown away.
   */
  letAttemptFinish?: boolean;
}

export type RetryOptions = Partial<RetryPolicy>;

/** What withRetry reads from an error (GatewayError has both fields). */
interface RetryHints {
  retryable?: unknown;
  retryAfterMs?: unknown;
}

export function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as RetryHints).retryable === true;
}

function retryAfterOf(error: unknown): number | undefined {
  const ms = (error as RetryHints).retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

/** Records how many attempts were made on the error finally thrown (as `attempts`). */
function annotate(error: unknown, attempts: number): unknown {
  if (typeof error === 'object' && error !== null && Object.isExtensible(error)) {
    (error as { attempts?: number }).attempts = attempts;
  }
  return error;
}

export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const {
    maxAttempts = DEFAULTS.retry.maxAttempts,
    baseDelayMs = DEFAULTS.retry.baseDelayMs,
    maxDelayMs = DEFAULTS.retry.maxDelayMs,
    sleep = defaultSleep,
    random = defaultRandom,
    now = defaultNow,
    onRetry,
    signal,
    letAttemptFinish = false,
  } = options;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new RangeError(`maxAttempts must be an integer ≥ 1, got ${maxAttempts}`);
  }
  // A private gate when none is shared: Retry-After is then honoured the same way, for this call.
  const gate = options.gate ?? new RetryAfterGate({ now, sleep });

  for (let attempt = 1; ; attempt++) {
    await gate.waitUntilOpen(signal);
    try {
      return await (letAttemptFinish ? fn(attempt) : untilAborted(fn(attempt), signal));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (!isRetryable(error) || attempt >= maxAttempts) throw annotate(error, attempt);

      const retryAfterMs = retryAfterOf(error);
      if (retryAfterMs !== undefined) {
        // Exactly what the server asked, never less; the gate makes every caller on the key wait too.
        gate.closeFor(retryAfterMs);
        onRetry?.(error, attempt, retryAfterMs);
      } else {
        const delayMs = fullJitterDelay(attempt, { baseMs: baseDelayMs, maxMs: maxDelayMs }, random);
        onRetry?.(error, attempt, delayMs);
        await sleep(delayMs, signal);
      }
    }
  }
}

/** The attempt's outcome, or the signal's reason as soon as it aborts (even if the attempt ignores it). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
