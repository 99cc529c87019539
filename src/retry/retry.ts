/**
 * The HTTP retry layer: run an attempt, and on a retryable error try again, after backoff with full
 * jitter, up to maxAttempts. Pure: time and randomness are injected.
 *
 * It keeps no Retry-After wait: that is the gateway client's, which holds every request on a key at
 * the key's gate (gateway/retry-after-gate.ts). An error carrying Retry-After is tried again at once,
 * with no backoff added, and the client holds the attempt until the instant the server asked. An
 * attempt that does not go through a GatewayClient gets no Retry-After wait (src/ has none).
 */
import { DEFAULTS } from '../config/defaults.js';
import { fullJitterDelay } from './backoff.js';
import {
  random as defaultRandom,
  sleep as defaultSleep,
  onAbort,
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
  /** Called before each retry: the error, the attempt that failed (1-based), and the planned delay. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /**
   * A 429 with Retry-After is the gateway pacing us, not a failure: it does not spend one of the
   * `maxAttempts`. This many such retries per call at most (a gateway that never lets anything through).
   */
  maxRateLimitWaits: number;
  /** Stops retrying: waits end at once; an attempt in flight is abandoned unless `letAttemptFinish`. */
  signal?: AbortSignal;
  /**
   * Let an attempt already in flight finish when the signal aborts (its result is returned, its
   * error thrown): for paid requests whose answer must not be thrown away. The attempt must then
   * stop its own waits on the signal (the client's `letRequestFinish` does).
   */
  letAttemptFinish?: boolean;
}

export type RetryOptions = Partial<RetryPolicy>;

/** What withRetry reads from an error (GatewayError has these fields). */
interface RetryHints {
  retryable?: unknown;
  /** Retryable, but not now: the wait asked is past the client's cap (GatewayError.retryLater). */
  retryLater?: unknown;
  status?: unknown;
  retryAfterMs?: unknown;
}

export function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as RetryHints).retryable === true;
}

/** The hints of a thrown value; none for a primitive (`throw undefined`). */
function hintsOf(error: unknown): RetryHints {
  return typeof error === 'object' && error !== null ? (error as RetryHints) : {};
}

function retryAfterOf(hints: RetryHints): number | undefined {
  const ms = hints.retryAfterMs;
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
    onRetry,
    signal,
    letAttemptFinish = false,
    maxRateLimitWaits = DEFAULTS.retry.maxRateLimitWaits,
  } = options;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new RangeError(`maxAttempts must be an integer ≥ 1, got ${maxAttempts}`);
  }

  // `attempt` counts the calls made; `failures` the ones that spend an attempt (not pacing 429s).
  let failures = 0;
  let paced = 0;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return await (letAttemptFinish ? fn(attempt) : untilAborted(fn(attempt), signal));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const hints = hintsOf(error);
      const retryAfterMs = retryAfterOf(hints);
      const pacing = retryAfterMs !== undefined && hints.status === 429 && paced < maxRateLimitWaits;
      if (pacing) paced++;
      else failures++;
      // Past the client's cap (retryLater): fail now, retryable for the run, never wait an hour.
      if (!isRetryable(error) || hints.retryLater === true || failures >= maxAttempts)
        throw annotate(error, attempt);

      if (retryAfterMs !== undefined) {
        // Again at once: the client holds the attempt at its key's gate exactly as long as asked.
        onRetry?.(error, attempt, retryAfterMs);
      } else {
        const delayMs = fullJitterDelay(failures, { baseMs: baseDelayMs, maxMs: maxDelayMs }, random);
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
    // One shared listener per signal, however many attempts are in flight (see onAbort).
    const off = signal.aborted ? () => {} : onAbort(signal, () => reject(signal.reason));
    if (signal.aborted) reject(signal.reason);
    promise.then(
      (value) => {
        off();
        resolve(value);
      },
      (error: unknown) => {
        off();
        reject(error);
      },
    );
  });
}
