/**
 * One gate per API key, shared by every request of a run. A 429 with Retry-After closes it, and no
 * request on that key goes out until it reopens: retrying only the request that got the 429, while
 * the other workers keep sending, breaks the server's Retry-After over and over.
 *
 * Waiting is bounded: a caller may say how long it is willing to wait (`--max-retry-after`); a gate
 * closed for longer fails the caller at once (RetryAfterTooLongError, or the error the closer
 * supplied) instead of waiting an hour in silence.
 */
import { EmbedpipeError } from '../errors.js';
import { now as defaultNow, sleep as defaultSleep, type Now, type Sleep } from './timing.js';

export interface GateOptions {
  now?: Now;
  sleep?: Sleep;
}

/** The gate is closed for longer than the caller accepts to wait. Not retryable by itself. */
export class RetryAfterTooLongError extends EmbedpipeError {
  readonly retryable = false;
  constructor(
    /** The instant the gate opens (ms since the epoch). */
    readonly until: number,
    readonly maxWaitMs: number,
  ) {
    super(
      `the gateway asked to wait until ${new Date(until).toISOString()}, longer than the ${Math.round(maxWaitMs / 1000)} s allowed (--max-retry-after)`,
    );
    this.name = 'RetryAfterTooLongError';
  }
}

/** A response asked to wait: the gate of its key is closed until `until`. */
export interface RetryAfterEvent {
  status: number;
  retryAfterMs: number;
  /** Ms since the epoch: nothing goes out on the key before. */
  until: number;
  /** The gate was open before this answer (a new wait, not one extended). */
  newWait: boolean;
  /** Whether the wait is longer than maxRetryAfterMs (requests fail instead of waiting). */
  pastCap: boolean;
  /** The in-flight window after this answer (undefined without maxInFlight). */
  window: number | undefined;
}

/** Builds the error thrown to a caller that will not wait until `until` (see closeFor). */
export type TooLongError = (until: number, maxWaitMs: number) => Error;

export class RetryAfterGate {
  #openAt = 0;
  #tooLong: TooLongError | undefined;
  readonly #now: Now;
  readonly #sleep: Sleep;

  constructor({ now = defaultNow, sleep = defaultSleep }: GateOptions = {}) {
    this.#now = now;
    this.#sleep = sleep;
  }

  /** The instant (ms since the epoch, by the gate's clock) from which requests may go out again. */
  get openAt(): number {
    return this.#openAt;
  }

  get isOpen(): boolean {
    return this.#now() >= this.#openAt;
  }

  /**
   * Keeps the gate closed for at least `ms` from now. Extends the closed time, never shortens it.
   * `tooLong` builds what a caller unwilling to wait that long is thrown (default RetryAfterTooLongError).
   */
  closeFor(ms: number, tooLong?: TooLongError): void {
    const until = this.#now() + Math.max(0, ms);
    if (until >= this.#openAt) this.#tooLong = tooLong;
    this.#openAt = Math.max(this.#openAt, until);
  }

  /**
   * Resolves once the gate is open; rejects with the signal's reason if it aborts first, and at once
   * when the gate stays closed longer than `maxWaitMs`.
   */
  async waitUntilOpen(signal?: AbortSignal, maxWaitMs = Number.POSITIVE_INFINITY): Promise<void> {
    // A loop, because another request may extend the closed time while we sleep.
    for (;;) {
      signal?.throwIfAborted();
      const wait = this.#openAt - this.#now();
      if (wait <= 0) return;
      if (wait > maxWaitMs) {
        throw (this.#tooLong ?? ((until, max) => new RetryAfterTooLongError(until, max)))(
          this.#openAt,
          maxWaitMs,
        );
      }
      // The default sleep registers one abort listener per signal, however many wait (see onAbort).
      await this.#sleep(wait, signal);
    }
  }
}
