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
  now: Now;
  /**
   * Who keeps the Retry-After instant. A gate: the caller's (shared by its calls; closed and waited
   * on here). 'transport': the HTTP client owns the key's gate (it closes it the moment a 429
   * arrives and holds every request at it), so a retry here goes again at once and waits there.
   * Neither: a private gate honours Retry-After for this call alone.
   */
  gate?: RetryAfterGate | 'transport';
  /** Called before each wait: the error, the attempt that failed (1-based), and the planned delay. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /**
   * Longest Retry-After waited for (default DEFAULTS.retry.maxRetryAfterMs, `--max-retry-after`).
   * A longer one, asked by the error or still pending at the gate, fails the call at once with a
   * retryable error: the batch is not committed and a re-run sends it.
   */
  maxRetryAfterMs: number;
  /**
   * A 429 with Retry-After is the gateway pacing us, not a failure: it does not spend one of the
   * `maxAttempts`. This many such waits per call at most (a gateway that never lets anything through).
   */
  maxRateLimitWaits: number;
  /** Stops retrying: waits end at once; an attempt in flight is abandoned unless `letAttemptFinish`. */
  signal?: AbortSignal;
  /**
   * Let an attempt already in flight finish when the signal aborts (its result is returned, its
   * error thrown): for paid requests whose answer must not be thrown away.
   */
  letAttemptFinish?: boolean;
}

export type RetryOptions = Partial<RetryPolicy>;

/**
 * The options of a paid request through the gateway client (an embedding, a transcription): the
 * client owns the key's Retry-After gate, so a paced retry goes again at once and waits there, and
 * an attempt already sent finishes when the signal aborts (it is paid for; its answer is kept).
 */
export function paidRequestRetry(options: RetryOptions): RetryOptions {
  return { ...options, gate: 'transport', letAttemptFinish: true };
}

/** What withRetry reads from an error (GatewayError has both fields). */
interface RetryHints {
  retryable?: unknown;
  status?: unknown;
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
    maxRetryAfterMs = DEFAULTS.retry.maxRetryAfterMs,
    maxRateLimitWaits = DEFAULTS.retry.maxRateLimitWaits,
  } = options;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new RangeError(`maxAttempts must be an integer ≥ 1, got ${maxAttempts}`);
  }
  // A private gate when none is shared: Retry-After is then honoured the same way, for this call.
  const gate =
    options.gate === 'transport' ? undefined : (options.gate ?? new RetryAfterGate({ now, sleep }));

  // `attempt` counts the calls made; `failures` the ones that spend an attempt (not pacing 429s).
  let failures = 0;
  let paced = 0;
  for (let attempt = 1; ; attempt++) {
    await gate?.waitUntilOpen(signal, maxRetryAfterMs);
    try {
      return await (letAttemptFinish ? fn(attempt) : untilAborted(fn(attempt), signal));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const retryAfterMs = retryAfterOf(error);
      const pacing =
        retryAfterMs !== undefined && (error as RetryHints).status === 429 && paced < maxRateLimitWaits;
      if (pacing) paced++;
      else failures++;
      if (!isRetryable(error) || failures >= maxAttempts) throw annotate(error, attempt);
      // Past the cap: fail now (retryable for the run: a re-run sends it), never wait an hour silently.
      if (retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs) throw annotate(error, attempt);

      if (retryAfterMs !== undefined) {
        // Exactly what the server asked, never less; the gate makes every caller on the key wait too.
        gate?.closeFor(retryAfterMs);
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
